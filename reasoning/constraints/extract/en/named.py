"""English constraint extraction on a spaCy doc.

Each detector looks for the *head* of a requirement (a unit noun such as
"words" or "bullet points", a trigger lemma such as "comma", "lowercase",
"postscript", a payload marker such as "keywords" or "the letter") and then
parses its parameters with typed parsers: numbers, ranges and relations
through :mod:`reasoning.constraints.quantities`, word lists from quoted
strings or comma / "and" / "or" lists, negation from the dependency parse (a
``neg`` child of the governing verb, or a governing "without", "avoid",
"refrain"; "don't forget to" is not a negation).

Reading rules worth knowing:

- a count of words or sentences needs a comparison ("at least", "under",
  "or more", "exactly", "300+") or a range ("20 to 25", "5 or 6"): "a 500
  word essay" describes, it does not require; a range gives two constraints
  (``at least`` the low end, ``at most`` the high end);
- paragraphs count as ``paragraph_count`` only when the prompt speaks of the
  ``***`` divider (IFEval's and our verifier's definition); with blank-line
  paragraphs they take part in ``nth_paragraph_first_word``;
- keywords to include need quotes or an explicit list after "keywords" /
  "the words"; a bare category ("competitors") is not a keyword.
"""

from __future__ import annotations

import re

from reasoning.constraints.extract.en.context import Context, Quantity
from reasoning.constraints.extract.en.phrases import (
    _QUOTED,
    _STOPS,
    _flip_if_negated,
    _in_quotes,
    _negated,
    _num,
    _number_at,
    _payload,
    _quantity_left,
    _quantity_right,
    _quoted_list,
    _with_range,
    relation_after_unit,
)
from reasoning.constraints.extract.found import Found
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.extract.sentence_bounds import sentence_bounds
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ordinal, parse_number, relation_after, relation_before
from reasoning.language import LANGUAGE_NAMES, language_code

__all__ = [
    "detect_capital_words",
    "detect_case",
    "detect_citation_window",
    "detect_cite_sources",
    "detect_constrained",
    "detect_divider_template",
    "detect_flags",
    "detect_highlights",
    "detect_jurisdiction",
    "detect_keywords",
    "detect_language",
    "detect_letters",
    "detect_named_counts",
    "detect_nth_paragraph",
    "detect_postscript",
    "detect_precision",
    "detect_repeat",
    "detect_start_end",
    "drop_blank_line_paragraphs",
    "prune_restated",
]

# ---------------------------------------------------------------- detectors: counts


def _splitter(text: str, unit_lemma: str) -> str | None:
    """The marker word of sections written "Section X" / "SECTION 1" / "PARAGRAPH X"."""
    for match in re.finditer(r"(?<![\w*])([A-Z][A-Za-z]{2,})\s+(X|\{?N\}?|#|\d)\b", text):
        word = match.group(1)
        lowered = word.lower()
        placeholder = not match.group(2).isdigit()
        if lowered in ("section", "part", "chapter", "day", "step", "slide", "act", "scene"):
            return word
        if lowered == unit_lemma and (placeholder or word.isupper()):
            return word
    return None


def _capital_context(ctx: Context, i: int) -> bool:
    """Whether "words" at ``i`` are words in capital letters (a different kind)."""
    window: list[str] = []
    for lower in ctx.lowers[i + 1 : min(len(ctx.lowers), i + 9)]:
        if lower in _STOPS:
            break
        window.append(lower)
    return bool(re.search(r"capital|\bcaps\b|uppercase|upper case|capitali[sz]ed", " ".join(window)))


_WRITING_VERBS = frozenset({"write", "give", "answer", "respond", "reply", "use", "compose", "produce", "provide",
                            "summarize", "summarise", "explain", "describe", "tell", "keep", "limit", "offer",
                            "draft", "create", "make", "return", "output", "deliver", "present", "review", "outline",
                            "recap", "narrate", "recount"})


def _asked_to_write(ctx: Context, first: int, unit: int) -> bool:
    """Whether a bare number of sentences / paragraphs is how many to write ("give three sentences").

    A sentence that is only the number and its unit (with what is said of it:
    "Three sentences, each ending with '!'") asks for that many, as a verb of writing would.

    The unit's governing verb (through "in" / "with" / "of": "answer in two
    paragraphs", "a reply of four sentences") is a verb of writing, and no
    determiner points at sentences already there ("translate the two
    sentences below"). "In N sentences" hung by the parser on a relative
    clause's verb ("the film you watched in five sentences") is the main verb's.
    """
    if first > 0 and ctx.lowers[first - 1] in ("the", "these", "those", "following", "above", "my", "his", "her",
                                                 "their", "its", "first", "last"):
        return False
    following = ctx.lowers[unit + 1 : unit + 3]
    if following and (following[0] in ("below", "above", "from", "that", "which") or following[:1] == ["of"] and (
            following[1:] and following[1] in ("the", "this", "that", "your", "my", "his", "her", "their", "it"))):
        return False
    node = ctx.tokens[unit]
    if first == node.sent.start and (node.dep_ == "ROOT" or ctx.lowers[unit + 1 : unit + 2] in ([","], ["."], [";"])):
        return True  # a verbless request of its own: "Three sentences." / "Two paragraphs, each under 50 words."
    through_in = first > 0 and ctx.lowers[first - 1] == "in"
    for _ in range(6):
        if node.head is node:
            break
        node = node.head
        if node.pos_ in ("VERB", "AUX") and node.dep_ == "relcl" and through_in \
                and node.lemma_.lower() not in _WRITING_VERBS:
            continue  # "review the film you watched in five sentences": "in N sentences" is the review's
        if node.pos_ in ("VERB", "AUX") or node.dep_ == "ROOT":
            return node.lemma_.lower() in _WRITING_VERBS
    return False


def _hyphenated_length(ctx: Context, quantity: Quantity, unit: int) -> bool:
    """Whether the count is a length joined to the unit before a noun ("a 100-word ad", "a three-sentence reply").

    The compound names the length of the thing to write, so its count is
    exact; a determiner pointing at a text already there ("the 50-word
    summary above") is no request.
    """
    doc = ctx.doc
    if not (quantity.last == unit - 2 and doc[unit - 1].text == "-" and doc[unit].lower_ == doc[unit].lemma_.lower()):
        return False
    if unit + 1 >= len(doc) or doc[unit + 1].pos_ not in ("NOUN", "PROPN", "ADJ"):
        return False
    return not (quantity.first > 0 and ctx.lowers[quantity.first - 1] in (
        "the", "these", "those", "following", "above", "my", "his", "her", "their", "its"))


def detect_named_counts(ctx: Context) -> None:
    doc = ctx.doc
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in ("word", "sentence", "paragraph", "bullet", "point", "section", "part",
                         "placeholder", "stanza"):
            continue
        if lemma == "point" and not (i > 0 and ctx.lemmas[i - 1] == "bullet"):
            continue
        if lemma == "bullet" and i + 1 < len(doc) and ctx.lemmas[i + 1] == "point":
            continue
        if lemma == "word" and (_capital_context(ctx, i) or (i + 1 < len(doc) and doc[i + 1].is_quote)):
            continue
        if lemma in ("section", "part", "word") and any(
            h in _HIGHLIGHT_LEMMAS for h in ctx.lemmas[max(doc[i].sent.start, i - 6) : min(len(doc), i + 4)]
        ):
            continue
        quantity = _quantity_left(ctx, i)
        if quantity is not None:
            quantity = relation_after_unit(ctx, quantity, i)  # "twelve words or fewer"
        end_i = i
        if quantity is not None and quantity.relation is None and quantity.high is None \
                and lemma in ("word", "sentence", "paragraph") and _hyphenated_length(ctx, quantity, i):
            quantity.relation = Relation.EXACTLY  # "a 100-word advertisement", "a three-sentence reply"
        if quantity is not None and quantity.relation is None and quantity.high is None \
                and lemma in ("sentence", "paragraph") and _asked_to_write(ctx, quantity.first, i):
            quantity.relation = Relation.EXACTLY  # "give three sentences", "answer in two paragraphs"
        if quantity is None and lemma in ("word", "sentence") and ctx.lowers[i] in ("words", "sentences"):
            quantity = _quantity_right(ctx, i)
            if quantity is not None:
                end_i = quantity.last
        if quantity is None:
            continue
        start, end = ctx.chars(min(quantity.first, i), max(end_i, quantity.last))
        if lemma in ("word", "sentence"):
            kind = Kind.WORD_COUNT if lemma == "word" else Kind.SENTENCE_COUNT
            for relation, n in quantity.bounds():
                ctx.add(kind, {"relation": str(_flip_if_negated(ctx, i, relation)), "n": n}, start, end)
            continue
        n = quantity.high if quantity.high is not None else quantity.n
        if lemma in ("bullet", "point") and quantity.high is None and quantity.relation in (
                Relation.AT_MOST, Relation.LESS_THAN):
            # "5 bullet points or fewer": a bound on the bullets, which bullet_count (exactly n) does not say
            relation = _flip_if_negated(ctx, i, quantity.relation)
            ctx.add(Kind.COUNT, {"unit": "bullets", "relation": str(relation), "n": quantity.n}, start, end)
        elif lemma in ("bullet", "point"):
            ctx.add(Kind.BULLET_COUNT, {"n": n}, start, end)
        elif lemma == "placeholder":
            ctx.add(Kind.PLACEHOLDERS, {"n": n}, start, end)
        else:
            splitter = _splitter(ctx.text, lemma)
            if ctx.has_divider:
                ctx.add(Kind.PARAGRAPH_COUNT, {"n": n}, start, end, confidence=0.85)
            elif splitter is not None:
                ctx.add(Kind.SECTIONS, {"splitter": splitter, "n": n}, start, end)
            elif lemma == "paragraph":
                stated = quantity.relation if quantity.high is None else Relation.AT_MOST
                ctx.add(Kind.PARAGRAPH_COUNT, {"n": n, "_blank_lines": True,
                                               "_relation": str(_flip_if_negated(ctx, i, stated or Relation.EXACTLY)),
                                               "_stated": stated is not None},
                        start, end, confidence=0.6)
                if quantity.high is not None:
                    ctx.add(Kind.PARAGRAPH_COUNT, {"n": quantity.n, "_blank_lines": True,
                                                   "_relation": str(Relation.AT_LEAST), "_stated": True},
                            start, end, confidence=0.6)


def _stated_pieces(ctx: Context, before_char: int) -> tuple[int, int, int] | None:
    """(n, start, end) of the last exact count of a plural noun before ``before_char`` ("just the first 5 steps")."""
    found: tuple[int, int, int] | None = None
    for i, token in enumerate(ctx.tokens):
        if token.idx >= before_char:
            break
        if token.tag_ == "NNS":
            quantity = _quantity_left(ctx, i)
            if quantity is not None and quantity.relation in (None, Relation.EXACTLY) and quantity.high is None:
                start, end = ctx.chars(quantity.first, i)
                found = (quantity.n, start, end)
    return found


def detect_divider_template(ctx: Context) -> None:
    """A format shown with ``***`` lines: as many paragraphs as the template has (an open one, ending
    in "...", as many as the request counts: "the first 5 steps")."""
    if not ctx.has_divider or any(f.kind == Kind.PARAGRAPH_COUNT and "_blank_lines" not in f.params for f in ctx.found):
        return
    separators = list(re.finditer(r"\n\s*\*\*\*\s*\n", ctx.text))
    if separators:
        first, last = separators[0], separators[-1]
        before = ctx.text[: first.start()].rsplit("\n", 1)[-1].strip()
        after = ctx.text[last.end() :].split("\n", 1)[0].strip()
        if re.fullmatch(r"(?:\.{2,}|…+)", after):
            # an open template ("Step 1 ... *** Step 2 ... *** ..."): as many pieces as the request counts
            stated = _stated_pieces(ctx, first.start())
            if stated is not None:
                ctx.add(Kind.PARAGRAPH_COUNT, {"n": stated[0]}, stated[1], stated[2], confidence=0.7)
            return
        closed = bool(before) and bool(after) and not before.endswith(":") and len(before) <= 60 and len(after) <= 60
        if len(separators) >= 2 or closed:  # "[code snippet 1]\n***\n[code snippet 2]": the pieces shown
            ctx.add(Kind.PARAGRAPH_COUNT, {"n": len(separators) + 1}, first.start() + 1, last.end() - 1, confidence=0.7)
            return
    match = re.search(r"\*\*\*", ctx.text)
    if match is None:
        return
    span = ctx.doc.char_span(match.start(), match.end(), alignment_mode="expand")
    if span is None or not len(span):
        return
    sent = span[0].sent
    previous = ctx.doc[sent.start - 1].sent if sent.start > 0 else sent
    for i in range(previous.start, sent.end):
        if ctx.tokens[i].pos_ == "NOUN" and ctx.tokens[i].tag_ in ("NNS",):
            quantity = _quantity_left(ctx, i)
            if quantity is not None and (quantity.relation in (None, Relation.EXACTLY)):
                start, end = ctx.chars(quantity.first, i)
                ctx.add(Kind.PARAGRAPH_COUNT, {"n": quantity.n}, start, end, confidence=0.7)
                return
    if re.search(r"(?:two|2)\s+(?:parts|paragraphs|sections|snippets)|\b(?:thinking|answer)\b.{0,40}\*\*\*", ctx.text, re.IGNORECASE | re.DOTALL):
        ctx.add(Kind.PARAGRAPH_COUNT, {"n": 2}, match.start(), match.end(), confidence=0.5)


_NTH = re.compile(
    r"(?:(?P<ord>first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|final|\d+(?:st|nd|rd|th))\s+paragraph"
    r"|paragraph\s+(?P<num>\d+))"
    r"[^.\n]{0,40}?(?:start|begin)s?\s+with\s+(?:the\s+)?(?:word\s+)?[\"“']?(?P<word>[A-Za-z][\w'-]*)"
    r"|(?:start|begin)\s+(?:the\s+)?(?:(?P<ord2>first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d+(?:st|nd|rd|th))\s+paragraph"
    r"|paragraph\s+(?P<num2>\d+))\s+with\s+(?:the\s+)?(?:word\s+)?[\"“']?(?P<word2>[A-Za-z][\w'-]*)",
    re.IGNORECASE,
)


def detect_nth_paragraph(ctx: Context) -> None:
    """"The second paragraph must start with the word X" with the paragraph count."""
    match = _NTH.search(ctx.text)
    if match is None:
        return
    counts = [f for f in ctx.found if f.kind == Kind.PARAGRAPH_COUNT]
    if counts:
        total = int(counts[0].params["n"])
    else:
        two = re.search(r"\b(two|2)[- ]paragraph", ctx.text, re.IGNORECASE)
        if two is None:
            return
        total = 2
    word = (match.group("word") or match.group("word2")).lower()
    label = (match.group("ord") or match.group("ord2") or "").lower()
    number = match.group("num") or match.group("num2")
    if label in ("last", "final"):
        nth = total
    elif label:
        nth = ordinal(label) or 1
    else:
        nth = int(number)
    ctx.found = [f for f in ctx.found if f.kind != Kind.PARAGRAPH_COUNT]
    start = min([match.start()] + [f.start for f in counts])
    end = max([match.end()] + [f.end for f in counts])
    ctx.add(Kind.NTH_PARAGRAPH_FIRST_WORD, {"n": total, "nth": nth, "first_word": word}, start, end)


def drop_blank_line_paragraphs(ctx: Context) -> None:
    """Blank-line paragraph counts without a first-word rule are counts of the form's (blank-line) paragraphs.

    Only a count whose relation is stated ("in exactly two paragraphs", "at
    most three paragraphs", "answer in two paragraphs", a bare number read as
    how many to write) is kept; IFEval's ``***`` paragraphs stay
    ``paragraph_count``.
    """
    kept: list[Found] = []
    for f in ctx.found:
        if not (f.kind == Kind.PARAGRAPH_COUNT and "_blank_lines" in f.params):
            kept.append(f)
            continue
        if not f.params.get("_stated"):
            continue
        params = {"unit": "paragraphs", "relation": str(f.params["_relation"]), "n": int(f.params["n"])}
        kept.append(Found(kind=Kind.COUNT, params=params, start=f.start, end=f.end, confidence=f.confidence,
                          hardness=f.hardness))
    ctx.found = kept


_HIGHLIGHT_LEMMAS = frozenset({"highlight", "italicize", "italicise", "italic", "emphasize", "bold"})
_HIGHLIGHT_UNITS = frozenset({"section", "part", "phrase", "word", "keyword", "text", "name", "sentence", "area", "point", "span"})


def _each_counted(ctx: Context, i: int, start: int, end: int) -> int | None:
    """The number of the pieces a highlight is asked of one by one ("highlight each section name" after
    "the proposal should contain 5 or more sections"): the count of that noun elsewhere in the prompt."""
    for j in range(max(start, i - 6), min(end - 1, i + 6)):
        if ctx.lowers[j] not in ("each", "every") or ctx.lemmas[j + 1] not in _HIGHLIGHT_UNITS:
            continue
        counted = _counted(ctx, ctx.lemmas[j + 1], start, end)
        if counted is not None:
            return counted
    return None


def _counted(ctx: Context, noun: str, start: int = 0, end: int = 0) -> int | None:
    """The count written before a mention of ``noun`` (a lemma) outside the tokens ``start..end``, the
    first mention that has one above 0 ("the proposal should contain 5 or more sections": 5); what "each
    section" asks of one by one is that many pieces."""
    for k, lemma in enumerate(ctx.lemmas):
        if lemma == noun and not start <= k < end:
            quantity = _quantity_left(ctx, k)
            if quantity is not None and quantity.n > 0:
                return quantity.n
    return None


def detect_highlights(ctx: Context) -> None:
    """"Highlight at least 3 sections with markdown, i.e. *highlighted section*".

    Several mentions (an instruction and its example sentence) make one
    constraint: the first with an explicit count, else the first.
    """
    seen_sentences: set[int] = set()
    candidates: list[tuple[bool, int, int, int]] = []
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in _HIGHLIGHT_LEMMAS:
            continue
        sent = ctx.tokens[i].sent
        if sent.start in seen_sentences:
            continue
        sentence = sent.text.lower()
        if not (ctx.has_markdown_example or "markdown" in sentence or "*" in sentence):
            continue
        if re.search(r"capital|\bcaps\b", sentence) and lemma == "highlight":
            continue
        n: int | None = None
        explicit = True
        end_i = i
        for j in range(max(sent.start, i - 6), min(sent.end, i + 10)):
            if ctx.lemmas[j] in _HIGHLIGHT_UNITS:
                quantity = _quantity_left(ctx, j)
                if quantity is not None:
                    n, end_i = quantity.n, j
                    break
        if n is None and i + 1 < len(ctx.tokens):
            number = _num(ctx.tokens[i + 1])
            if number is not None:
                n, end_i = number, i + 1
        if n is None:
            n = _each_counted(ctx, i, sent.start, sent.end)  # "5 or more sections ... highlight each section name"
        if n is None:
            twice = next((j for j in range(i, min(sent.end, i + 10)) if ctx.lowers[j] in ("twice", "thrice")), None)
            n = 2 if twice is not None and ctx.lowers[twice] == "twice" else 3 if twice is not None else 1
            explicit = twice is not None
        seen_sentences.add(sent.start)
        start, end = ctx.chars(min(i, end_i), max(i, end_i))
        candidates.append((explicit, n, start, end))
    if candidates:
        explicit_first = [c for c in candidates if c[0]]
        _, n, start, end = (explicit_first or candidates)[0]
        ctx.add(Kind.HIGHLIGHTED_SECTIONS, {"n": n}, start, end)


# ---------------------------------------------------------------- detectors: words and letters

_KEYWORD_HEADS = frozenset({"word", "keyword", "term", "phrase", "line", "name"})
_VERB_HEADS = frozenset({"include", "mention", "contain", "use", "say", "write"})


def _count_after(ctx: Context, start: int, limit: int = 16) -> Quantity | None:
    """"N times" / "twice" / "at least once" / "N or more times" after token ``start``."""
    doc = ctx.doc
    end = min(len(doc), start + limit)
    for j in range(start, end):
        lower = ctx.lowers[j]
        if (lower in _STOPS or lower in ("but", "while", "whereas")) and j > start:
            return None
        if j > start + 1 and ctx.lemmas[j] in ("word", "keyword", "letter", "phrase"):
            return None

        word_count = lower in ("once", "twice", "thrice")
        if not word_count and not (lower in ("times", "time") and j > 0):
            continue
        anchor = j
        if not word_count:
            anchor = j - 1
            while anchor > start and ctx.lowers[anchor] in ("or", "more", "fewer", "less", "+"):
                anchor -= 1
        number = _number_at(doc, anchor)
        if number is None:
            continue
        value, first, last = number
        ranged = _with_range(doc, value, first, last, start)
        if ranged is not None:
            ranged.last = j
            return ranged
        between = relation_after(ctx.lowers[last + 1 : j]) if last + 1 < j else None
        after = relation_after(ctx.lowers[j + 1 : j + 8])
        before = relation_before(ctx.lowers[max(start, first - 6) : first])
        relation = (between or after or before or (Relation.EXACTLY, 0))[0]
        return Quantity(relation, value, first, j + (after[1] if after else 0))
    return None


_LISTING = frozenset({"the", "following", "these", "keywords", "words", "terms", "items", "phrases", "keyword", "word"})


def _listing_colon(ctx: Context, i: int) -> bool:
    """"include the following keywords: a, b" (only keyword-ish words before the colon)."""
    if ctx.lemmas[i] not in ("include", "mention", "contain"):
        return False
    for j in range(i + 1, min(len(ctx.lowers), i + 5)):
        if ctx.lowers[j] == ":":
            return True
        if ctx.lowers[j] not in _LISTING:
            return False
    return False


def _governed_by(ctx: Context, i: int, lemmas: frozenset[str]) -> bool:
    node = ctx.tokens[i]
    for _ in range(4):
        if node.lemma_.lower() in lemmas:
            return True
        if node.head is node:
            return False
        node = node.head
    return False


_FLIPPED = {
    Relation.MORE_THAN: Relation.AT_MOST,
    Relation.AT_LEAST: Relation.LESS_THAN,
    Relation.LESS_THAN: Relation.AT_LEAST,
    Relation.AT_MOST: Relation.MORE_THAN,
}
"""The relation a negated count means: "not more than 2 times" is "at most 2"."""

_POSITION_VERBS = frozenset(
{"end", "finish", "start", "begin", "conclude", "close", "describe", "rewrite"})


_TOPIC_VERBS = frozenset({"mean", "define", "explain", "translate", "spell", "pronounce", "derive", "originate",
                          "etymology", "origin", "meaning", "definition"})
_INCLUDING_VERBS = frozenset({"include", "use", "mention", "contain", "have", "feature", "put", "add", "incorporate",
                              "say", "write", "repeat", "appear", "insert", "end", "start", "begin"})


def _word_as_topic(ctx: Context, i: int) -> bool:
    """Whether "the word X" at ``i`` is what the request is about, not a word to write.

    "What does the word 'jock' mean?", "explain what the word 'entropy'
    means", "the origin of the phrase 'break a leg'": the word's governing
    verbs (or the noun it belongs to) ask for its meaning, or the sentence is
    a question with no verb of including words.
    """
    sent = ctx.tokens[i].sent
    node = ctx.tokens[i]
    for _ in range(3):
        if node.head is node:
            break
        node = node.head
        if node.lemma_.lower() in _INCLUDING_VERBS:
            return False
        if node.lemma_.lower() in _TOPIC_VERBS:
            return True
    question = sent.text.rstrip().endswith("?")
    return question and not any(t.lemma_.lower() in _INCLUDING_VERBS for t in sent)


def detect_keywords(ctx: Context) -> None:
    """Keyword presence, absence and frequency."""
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in _KEYWORD_HEADS and lemma not in _VERB_HEADS:
            continue
        if _in_quotes(ctx, i):
            continue
        if lemma in _VERB_HEADS:
            nxt = ctx.tokens[i + 1] if i + 1 < len(ctx.tokens) else None
            if nxt is None or not (nxt.is_quote or _listing_colon(ctx, i)):
                continue
        if lemma in ("word", "keyword", "term", "phrase") and _capital_context(ctx, i):
            continue
        if lemma == "word" and _quantity_left(ctx, i) is not None:
            continue
        if lemma == "name" and _count_after(ctx, i + 1, limit=8) is None:
            continue
        if _governed_by(ctx, i, _POSITION_VERBS) or ctx.lowers[max(0, i - 2) : i][:1] in (["after"], ["before"]):
            continue
        head_of = ctx.tokens[i].head
        if (lemma in _KEYWORD_HEADS and head_of.pos_ == "ADP" and head_of.lower_ in ("about", "for", "on", "regarding")
                and head_of.head.pos_ in ("NOUN", "PROPN")):
            continue

        negated = _negated(ctx, i)
        if not negated and lemma in ("word", "term", "phrase") and _word_as_topic(ctx, i):
            continue
        plural_head = ctx.lowers[i] in ("words", "keywords", "terms", "phrases")
        bare = negated or plural_head or lemma == "keyword" or (lemma in _VERB_HEADS and _listing_colon(ctx, i))
        words, end_char, quoted = _payload(ctx, i, allow_bare=bare or lemma in ("word", "name"))

        words = [w for w in words if w.strip() and len(w) <= 60 and re.search(r"[^\W\d_]", w)]
        if not words:
            continue
        count = _count_after(ctx, i + 1, limit=22)
        start = ctx.tokens[i].idx
        negated_limit = negated and count is not None and count.high is None and count.relation in _FLIPPED
        if negated and not negated_limit:
            ctx.add(Kind.FORBIDDEN_WORDS, {"words": words}, start, end_char)
        elif negated_limit and count is not None and count.relation is not None:
            ctx.add(Kind.KEYWORD_FREQUENCY,
                    {"keyword": words[0], "relation": str(_FLIPPED[count.relation]), "n": count.n},
                    start, max(end_char, ctx.chars(count.last, count.last)[1]))
        elif count is not None and len(words) == 1:
            for relation, n in count.bounds():
                ctx.add(Kind.KEYWORD_FREQUENCY, {"keyword": words[0], "relation": str(relation), "n": n},
                        start, max(end_char, ctx.chars(count.last, count.last)[1]))
            if count.relation in (Relation.LESS_THAN, Relation.AT_MOST) and count.n >= 1 \
                    and ctx.lowers[count.first - 1 : count.first] == ["only"]:
                # "only up to twice": the word is there, at most twice (an exact count already says so)
                ctx.add(Kind.KEYWORDS_PRESENT, {"keywords": words}, start, end_char, confidence=0.6)
        elif quoted or bare:
            ctx.add(Kind.KEYWORDS_PRESENT, {"keywords": words}, start, end_char, confidence=0.8)


_SYMBOL_NAMES = {"exclamation": "!", "hashtag": "#", "hash": "#", "question": "?", "dollar": "$", "ampersand": "&"}


def detect_letters(ctx: Context) -> None:
    """"The letter q should appear at least 6 times", "6 or more exclamation marks"."""
    doc = ctx.doc
    for i, lemma in enumerate(ctx.lemmas):
        if lemma in ("letter", "character") and not (i > 0 and ctx.lemmas[i - 1] in ("capital", "lowercase", "uppercase")):
            letter, last = None, i
            for j in range(i + 1, min(len(doc), i + 4)):
                raw = ctx.tokens[j].text.strip("\"'“”‘’")
                if len(raw) == 1 and raw.isalpha():
                    letter, last = raw.lower(), j
                    break
                if ctx.tokens[j].is_alpha and not ctx.tokens[j].is_quote and len(raw) > 1:
                    break
            if letter is None:
                continue
            count = _count_after(ctx, last + 1, limit=16)
            start = ctx.tokens[i].idx
            if count is None:
                if _negated(ctx, i):
                    ctx.add(Kind.LETTER_FREQUENCY, {"letter": letter, "relation": str(Relation.LESS_THAN), "n": 1},
                            start, ctx.chars(last, last)[1])
                continue
            for relation, n in count.bounds():
                relation = _flip_if_negated(ctx, count.first, relation)
                ctx.add(Kind.LETTER_FREQUENCY, {"letter": letter, "relation": str(relation), "n": n},
                        start, ctx.chars(count.last, count.last)[1])
            continue
        symbol = _SYMBOL_NAMES.get(lemma)
        if symbol is None:
            continue
        unit = i
        if i + 1 < len(doc) and ctx.lemmas[i + 1] in ("mark", "sign", "symbol"):
            unit = i + 1
        elif lemma != "hashtag":
            continue
        quantity = _quantity_left(ctx, i)
        if quantity is None:
            continue
        quantity = relation_after_unit(ctx, quantity, unit)
        start, end = ctx.chars(quantity.first, max(unit, quantity.last))
        for relation, n in quantity.bounds() or [(Relation.AT_LEAST, quantity.n)]:
            if lemma == "hashtag" and unit == i:
                # "three hashtags": '#' words ("#travel"), not three '#' characters
                ctx.add(Kind.COUNT, {"unit": "hashtags", "relation": str(relation), "n": n}, start, end, confidence=0.7)
                continue
            ctx.add(Kind.LETTER_FREQUENCY, {"letter": symbol, "relation": str(relation), "n": n},
                    start, end, confidence=0.7)


_CAPITAL_TOKENS = frozenset({"capital", "capitals", "caps", "capitalized", "capitalised", "uppercase"})


def detect_capital_words(ctx: Context) -> None:
    """Counts of words in capital letters ("at least 5 words in all caps")."""
    doc = ctx.doc
    for i, lower in enumerate(ctx.lowers):
        if lower not in _CAPITAL_TOKENS and not (lower == "upper" and ctx.lowers[i + 1 : i + 2] == ["case"]):
            continue
        sent_start = doc[i].sent.start
        word_candidates = [j for j in range(i - 1, max(sent_start, i - 8) - 1, -1) if ctx.lemmas[j] in ("word", "phrase")]
        counted = [j for j in word_candidates if _quantity_left(ctx, j) is not None]
        word_i: int | None = (counted or word_candidates)[0] if (counted or word_candidates) else None
        if word_i is None and i + 1 < len(doc) and ctx.lemmas[i + 1] == "word":
            word_i = i + 1
        if word_i is None:
            continue
        if any(ctx.lowers[j] in ("all", "every", "each", "entire") for j in range(max(sent_start, word_i - 2), word_i)) \
                and ctx.lowers[word_i - 1 : word_i] != ["such"]:
            continue
        quantity = _quantity_left(ctx, word_i) if word_i < i else _quantity_left(ctx, i)
        if quantity is not None and quantity.relation is None and quantity.high is None:
            quantity = None
        if quantity is None:
            quantity = _count_after(ctx, i + 1, limit=14)
        if quantity is None:
            quantity = _quantity_right(ctx, i, limit=14)
        start = ctx.tokens[min(word_i, i)].idx
        if quantity is None:
            if re.search(r"\b(?:use|include|add|have)\s+(?:some\s+|a\s+few\s+|several\s+|few\s+)?(?:\w+\s+)?words?\b", doc[sent_start:i].text.lower()):
                ctx.add(Kind.CAPITAL_WORD_FREQUENCY, {"relation": str(Relation.AT_LEAST), "n": 1},
                        start, ctx.chars(i, i)[1], confidence=0.6)
            continue
        for relation, n in quantity.bounds():
            relation = _flip_if_negated(ctx, min(word_i, i), relation)
            ctx.add(Kind.CAPITAL_WORD_FREQUENCY, {"relation": str(relation), "n": n},
                    start, ctx.chars(max(i, quantity.last), max(i, quantity.last))[1])


_CASE_LOWER = re.compile(
    r"(?:all\s+)?lower[ -]?case|no\s+capital\s+letters|without\s+(?:using\s+)?(?:any\s+)?capital\s+letters"
    r"|not?\s+(?:use\s+|contain\s+|include\s+|have\s+)?(?:any\s+)?capital\s+letters|capital\s+letters\s+(?:are\s+)?not\s+allowed"
    r"|lowercases|not\s+a\s+single\s+(?:letter|word|character)[^.]{0,60}?\bcapitali[sz]ed",
    re.IGNORECASE,
)
#: "lowercase letters are not allowed": a lowercase mention that restates an
#: all-capitals instruction rather than asking for lowercase.
_LOWER_DENIED = re.compile(
    r"lower[ -]?case\s+(?:letters?\s+)?(?:are\s+|is\s+)?(?:not\s+(?:allowed|permitted)|forbidden|prohibited)",
    re.IGNORECASE,
)
_CASE_UPPER = re.compile(
    r"all\s+(?:in\s+)?capital\s+letters|all\s+caps\b|(?:in|use|using)\s+(?:only\s+)?(?:all\s+)?upper[ -]?case|capitali[sz]e\s+all"
    r"|only\s+(?:use\s+)?capital\s+letters|no\s+lower[ -]?case|entirely\s+in\s+capital|in\s+all\s+capitals"
    r"|(?:in|use)\s+capital\s+letters\s+only|all\s+uppercase|(?:should|must)\s+be\s+(?:in\s+)?capitali[sz]ed"
    r"|capitali[sz]e\s+(?:every|each)\s+(?:letter|word)"
    r"|(?:not|n't|never)\s+(?:\w+\s+){0,2}?(?:contain|have|use|include)\s+(?:any\s+)?lower[ -]?case\s+letters"
    r"|not\s+a\s+single\s+(?:letter|word|character)[^.]{0,60}?\blower[ -]?case",

    re.IGNORECASE,
)


def detect_case(ctx: Context) -> None:
    text = ctx.text
    capital_words = [(f.start, f.end) for f in ctx.found if f.kind == Kind.CAPITAL_WORD_FREQUENCY]
    upper_spans: list[tuple[int, int]] = []
    for match in _CASE_UPPER.finditer(text):
        sentence_start = sentence_bounds(text, match.start(), match.start(), ".\n")[0]
        before = text[sentence_start : match.start()].lower()
        if re.search(r"\b(?:words?|phrases?)\b", before) and not re.search(r"\b(?:all|every|each)\s+(?:your\s+|the\s+)?words?\b|entire|whole", before):
            continue
        if any(s - 60 <= match.start() <= e + 5 for s, e in capital_words):
            continue
        upper_spans.append((match.start(), match.end()))
    if upper_spans:
        ctx.add(Kind.ALL_CAPITALS, {}, *upper_spans[0])
    for match in _CASE_LOWER.finditer(text):
        if any(s <= match.start() < e for s, e in upper_spans):
            continue
        if upper_spans and _LOWER_DENIED.search(text, match.start(), min(len(text), match.end() + 40)):
            continue
        ctx.add(Kind.ALL_LOWERCASE, {}, match.start(), match.end())
        break


# ---------------------------------------------------------------- detectors: format


def _sentence_chars(ctx: Context, char: int) -> tuple[int, int]:
    span = ctx.doc.char_span(char, min(len(ctx.text), char + 1), alignment_mode="expand")
    if span is None or not len(span):
        return char, min(len(ctx.text), char + 1)
    sent = span[0].sent
    return sent.start_char, sent.end_char


_EACH_ITEM = re.compile(r"\b(?:each|every|all)\s+(?!(?:of\s+)?(?:the\s+|your\s+)?(?:sentence|line|paragraph|response|answer|reply)s?\b)\w+",
                        re.IGNORECASE)
_WHOLE = re.compile(r"\b(?:entire|whole|full)\b|\b(?:your|the)\s+(?:response|answer|reply|output)\b", re.IGNORECASE)


def _quotes_each_item(text: str, start: int, end: int) -> bool:
    """"With double quotes around each quotation": quoted items in the answer, not the answer quoted."""
    sentence_start, sentence_end = sentence_bounds(text, start, end, with_mark=False)
    sentence = text[sentence_start:sentence_end]
    return _EACH_ITEM.search(sentence) is not None and _WHOLE.search(sentence) is None


def detect_flags(ctx: Context) -> None:
    """Kinds without parameters, read from trigger lemmas with their negation."""
    text = ctx.text
    for i, lemma in enumerate(ctx.lemmas):
        if (lemma == "comma" or ctx.lowers[i] in ("comma", "commas")) and _negated(ctx, i):
            if _quantity_left(ctx, i) is not None:
                continue  # "not more than two commas": a count of commas, not none
            left = i
            while left > ctx.tokens[i].sent.start and ctx.lowers[left - 1] not in (",", ";", ".") and i - left < 10:
                left -= 1
            ctx.add(Kind.NO_COMMA, {}, *ctx.chars(left, i))
            break
    quote = re.search(
        r"\b(?:wrap|enclose|put|surround|place|in)[^.]{0,60}?(?:double\s+quot\w*(?:\s+marks?)?|quotation\s+marks?)"
        r"|(?:double\s+quot\w*(?:\s+marks?)?|quotation\s+marks)[^.]{0,40}?\b(?:around|wrapping)\b",
        text, re.IGNORECASE,
    )
    if quote and not _quotes_each_item(text, quote.start(), quote.end()):
        ctx.add(Kind.QUOTATION, {}, quote.start(), quote.end())
    title = re.search(r"double\s+angular\s+brackets|<<[^<>\n]{1,60}>>", text, re.IGNORECASE)
    if title:
        ctx.add(Kind.TITLE, {}, title.start(), title.end())
    for json_match in re.finditer(r"\bJSON\b", text, re.IGNORECASE):
        before = text[max(0, json_match.start() - 1) : json_match.start()]
        if before in ("'", '"', "“", "‘"):
            continue
        ctx.add(Kind.JSON_FORMAT, {}, *_sentence_chars(ctx, json_match.start()))
        break
    two = re.search(r"separat\w*[^.]{0,80}?(?:\*{6}|\b(?:6|six)\s+asterisks?)|(?:\*{6}|\b(?:6|six)\s+asterisks?)[^\n]{0,40}?separat\w*",
                    text, re.IGNORECASE)
    if two:
        ctx.add(Kind.TWO_RESPONSES, {}, two.start(), two.end())


def detect_postscript(ctx: Context) -> None:
    text = ctx.text
    match = re.search(r"post\s?-?script|\bP\.\s?P\.\s?S\b|\bP\.\s?S\.", text, re.IGNORECASE)
    if match is None:
        return
    marker_match = re.search(r"\b(P\.\s?P\.\s?S\.?|P\.\s?S\.?)", text[match.start():])
    marker = "P.S."
    end = match.end()
    if marker_match is not None:
        raw = marker_match.group(1).replace(" ", "")
        marker = "P.P.S" if raw.upper().startswith("P.P.S") else "P.S."
        end = match.start() + marker_match.end()
    ctx.add(Kind.POSTSCRIPT, {"marker": marker}, match.start(), end)


def _phrase_group(tag: str) -> str:
    return (r"(?:exactly\s+)?(?:like\s*)?:?\s*(?:[\"“](?P<q" + tag + r">[^\"”\n]{1,200})[\"”]"
            r"|(?<!\w)['‘](?P<s" + tag + r">[^'’\n]{1,200}?)['’](?!\w)"
            r"|\n*(?P<raw" + tag + r">[^\n\"“'‘]{1,120}?)(?:\s*$|\n))")


_END = re.compile(
    r"(?:\b(?:end|finish|conclude|close|sign\s+off|wrap\s+up)(?:s|ed)?\s+(?:your\s+|the\s+|it\s+|this\s+|each\s+)?(?:entire\s+|whole\s+)?(?:[\w-]+\s+){0,2}?"
    r"with\s*(?:exactly\s+)?(?:(?:these|those|the\s+following|this|the|a)\b)?\s*(?:exact\s+)?(?:phrase|sentence|words?|question|line|text)?(?:\s+of)?\s*" + _phrase_group("1") +
    r"|(?:very\s+)?(?:last|final)\s+(?:sentence|line|words?|phrase)\s+of\s+your\s+(?:\w+\s+)?(?:response|answer|reply)\s+(?:should|must)\s+(?:be|read)\s*" + _phrase_group("2") +
    r"|(?:very\s+)?end\s+of\s+your\s+(?:entire\s+)?(?:response|answer|reply)\s+(?:should|must)\s+(?:be|read)\s*" + _phrase_group("3") + ")",
    re.IGNORECASE | re.MULTILINE,
)
_START = re.compile(
    r"(?:start|begin)\w*\s+(?:(?:your\s+)?(?:entire\s+)?(?:response|answer|reply)|it)\s+with\s+(?:the\s+)?(?:exact\s+)?"
    r"(?:phrase|sentence|words?)?\s*:?\s*(?:[\"“](?P<q>[^\"”\n]{1,200})[\"”]|(?<!\w)['‘](?P<s>[^'’\n]{1,200}?)['’](?!\w))",
    re.IGNORECASE,
)
#: "..., and start it with '...'": "it" is the answer only when the sentence asks for it (a verb of writing before).
_ASKED_BEFORE = re.compile(r"\b(?:write|give|draft|compose|tell|create|make|produce|prepare|send)\b[^.;\n]*$",
                           re.IGNORECASE)


_END_MARK = re.compile(
    r"\b(?:end|finish|conclude|close)(?:s|ed|ing)?\s+(?:[\w-]+\s+){0,4}?with\s+(?:a|an|the|one)\s+"
    r"(?P<mark>question|exclamation|period|full\s+stop)(?:\s+(?:mark|point))?\b(?P<rest>[^\n.!?。！？]*)",
    re.IGNORECASE,
)
_MARKS = {"question": "?", "exclamation": "!", "period": ".", "full stop": "."}


def _end_mark(ctx: Context) -> tuple[int, int] | None:
    """"Finish with a question", "end your reply with an exclamation mark": the answer's last character.

    Read as the end phrase ``?`` / ``!`` / ``.`` for the whole answer; said of
    each sentence, line or paragraph ("every sentence must end with ...") it is
    a wrapper of each with nothing on the left. The span is returned to keep
    the phrase readers off it. A quoted text after it ("end with the question
    'What next?'") is a phrase, left to them.
    """
    for match in _END_MARK.finditer(ctx.text):
        if any(q in match.group("rest") for q in "\"'“‘"):
            continue
        sentence_start = sentence_bounds(ctx.text, match.start(), match.start())[0]
        # "every sentence must end with ..." or "end every sentence with ...": the pieces before the mark word
        before = ctx.text[sentence_start : match.start("mark")].lower()
        span = (match.start(), match.start("rest"))
        mark = _MARKS[" ".join(match.group("mark").lower().split())]
        each = re.search(r"\b(?:each|every|all)\s+(?:of\s+(?:the|your)\s+)?(?P<unit>sentence|line|paragraph)", before)
        if each is None:
            ctx.add(Kind.END_PHRASE, {"phrase": mark}, *span)
        else:
            # each piece closes with the mark: a wrapper of every sentence / line / paragraph with nothing on its left
            ctx.add(Kind.WRAP, {"left": "", "right": mark, "unit": each.group("unit") + "s"},
                    sentence_start + each.start(), span[1])
        return span
    return None


def detect_start_end(ctx: Context) -> None:
    marked = _end_mark(ctx)
    for match in _END.finditer(ctx.text):
        if marked is not None and match.start() < marked[1] and marked[0] < match.end():
            continue
        phrase = next((match.group(f"{g}{t}") for t in "123" for g in "qs" if match.group(f"{g}{t}")), None)

        if phrase is None:
            raw = next((match.group(f"raw{t}") for t in "123" if match.group(f"raw{t}")), None)
            if raw is None or len(raw.split()) > 14 or not raw.strip():
                continue
            phrase = raw.strip()
        if not re.search(r"\w", phrase) or re.search(r"post\s?-?script|^\s*(?:starting|p\.\s?(?:p\.\s?)?s)", phrase, re.IGNORECASE):
            continue
        ctx.add(Kind.END_PHRASE, {"phrase": phrase.strip()}, match.start(), match.end())
        break
    start = _START.search(ctx.text)
    if start is not None and start.group(0).lower().split()[1] == "it" \
            and not _ASKED_BEFORE.search(ctx.text, sentence_bounds(ctx.text, start.start(), start.start())[0],
                                         start.start()):
        start = None  # "it" names something else than the answer written
    if start is not None:
        ctx.add(Kind.START_PHRASE, {"phrase": (start.group("q") or start.group("s")).strip()}, start.start(),
                start.end())


_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def detect_constrained(ctx: Context) -> None:
    text = ctx.text
    found = [m for o in _OPTIONS if (m := re.search(re.escape(o.rstrip(".")), text))]
    if len(found) >= 2:
        ctx.add(Kind.CONSTRAINED_RESPONSE, {"options": list(_OPTIONS)},
                min(m.start() for m in found), max(m.end() for m in found))
        return
    match = re.search(r"(?:answer|respond|reply)\s+with\s+(?:exactly\s+)?one\s+of\s+the\s+following\s+(?:options|phrases)\s*:?\s*(?P<list>[^\n]+)",
                      text, re.IGNORECASE)
    if match is not None:
        options, _ = _quoted_list(ctx, match.start("list"), match.end("list"))
        if len(options) >= 2:
            ctx.add(Kind.CONSTRAINED_RESPONSE, {"options": options}, match.start(), match.end())


_REPEAT = re.compile(
    r"\b(?:repeat|repleat|restate)\b(?:[\s,]+\w+){0,4}?[\s,]+(?:request|question|sentence|prompt|instruction|query|text|it|line)\b",

    re.IGNORECASE,
)


def repeat_text(text: str, start: int, end: int) -> str | None:
    """The text a request to repeat read at ``text[start:end]`` refers to, or None.

    The first line when named ("repeat the first line"), a long quoted string
    on the request's line, the block before the request's line, or the block
    after it.
    """
    line_start = text.rfind("\n", 0, start) + 1
    quoted = [q for q in _QUOTED.finditer(text, line_start, text.find("\n", end) if "\n" in text[end:] else len(text))
              if len(next(g for g in q.groups() if g)) >= 20]
    if re.search(r"first\s+line", text[start : end + 20], re.IGNORECASE):
        prompt_to_repeat = text.split("\n", 1)[0]  # named, before any quote on the line
    elif quoted:
        prompt_to_repeat = next(g for g in quoted[0].groups() if g)
    elif text[:line_start].strip():
        prompt_to_repeat = text[:line_start]
    else:
        sentence_end = re.search(r"[.!?:]\s", text[end:])  # the request's sentence, or its colon
        block = text.find("\n\n", end)
        if block == -1:
            if sentence_end is None:
                return None
            block = end + sentence_end.end() - 2
        prompt_to_repeat = text[block:]
    return prompt_to_repeat.strip() or None


def detect_repeat(ctx: Context) -> None:
    """"First repeat the request above word for word": the text to repeat is the other block."""
    text = ctx.text
    match = _REPEAT.search(text)
    if match is None:
        return
    prompt_to_repeat = repeat_text(text, match.start(), match.end())
    if prompt_to_repeat is None:
        return
    span_end = text.find("\n", match.end())
    ctx.add(Kind.REPEAT_PROMPT, {"prompt_to_repeat": prompt_to_repeat}, match.start(),
            span_end if span_end != -1 else len(text))


_LANGUAGE_NAMES_RE = alternation(n for n, _ in LANGUAGE_NAMES.values())
_LANGUAGE = re.compile(
    r"(?:\b(?:in|using|use|into|with|respond|answer|reply|write)\s+(?:only\s+)?(?:the\s+)?(?:only\s+)?(?:entirely\s+)?(?:fluent\s+)?"
    r"|\bonly\s+(?:in\s+)?|\bentirely\s+in\s+|\bexcept\s+)"
    r"(?P<name>" + _LANGUAGE_NAMES_RE + r")\b(?:\s+language)?",
    re.IGNORECASE,
)


def detect_language(ctx: Context) -> None:
    for match in _LANGUAGE.finditer(ctx.text):
        name = match.group("name")
        code = language_code(name)
        if code is None or not name[0].isupper():
            continue
        context = ctx.text[max(0, match.start() - 80) : match.end() + 60].lower()
        if not re.search(r"respon|answer|reply|writ|language|entire|output|only|rewrite|translat|explain|speak|in\s+" + re.escape(name.lower()), context):
            continue
        if re.match(r"\s+(?:style|accent|food|culture|history|people|grammar|words?|version|translation)\b", ctx.text[match.end() : match.end() + 14], re.IGNORECASE):
            continue
        ctx.add(Kind.RESPONSE_LANGUAGE, {"language": code}, match.start(), match.end())


# ---------------------------------------------------------------- detectors: domain

_YEAR = r"(?P<year>1[5-9]\d\d|20\d\d)"


def detect_citation_window(ctx: Context) -> None:
    text = ctx.text
    before = re.compile(
        r"(?:do\s+not|don't|never|not|no)\s+(?:cite|use|reference|rely\s+on|quote|include|citing|sources?|literature|rules?|references?)\b[^.;]{0,60}?"
        r"(?:before|prior\s+to|older\s+than|earlier\s+than|pre-?)\s*" + _YEAR,
        re.IGNORECASE,
    )
    for match in before.finditer(text):
        ctx.add(Kind.CITATION_TIME_WINDOW, {"not_before": f"{match.group('year')}-01-01"}, match.start(), match.end())
    since = re.compile(
        r"(?:only\s+)?(?:cite|use|reference|rely\s+on)\b[^.;]{0,60}?(?:(?:from|since|published\s+in|in\s+force\s+from)\s+" + _YEAR
        + r"\s*(?:on(?:wards?)?|or\s+later|and\s+later)?|after\s+(?P<after>1[5-9]\d\d|20\d\d))",
        re.IGNORECASE,
    )
    for match in since.finditer(text):
        if any(f.kind == Kind.CITATION_TIME_WINDOW and f.start <= match.start() < f.end for f in ctx.found):
            continue
        year = int(match.group("after")) + 1 if match.group("after") else int(match.group("year"))
        ctx.add(Kind.CITATION_TIME_WINDOW, {"not_before": f"{year}-01-01"}, match.start(), match.end())


_CITE_OBJECTS = frozenset({"source", "rule", "reference", "regulation", "paper", "study", "evidence", "law", "fact", "citation"})


def detect_cite_sources(ctx: Context) -> None:
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in ("cite", "citation") or _negated(ctx, i):
            continue
        if any(f.kind == Kind.CITATION_TIME_WINDOW and f.start <= ctx.tokens[i].idx < f.end for f in ctx.found):
            continue
        token = ctx.tokens[i]
        n = 1
        last = i
        for child in token.children:
            if child.dep_ in ("conj", "cc", "punct"):
                continue
            for sub in child.subtree:
                last = max(last, sub.i)
            if child.lemma_.lower() in _CITE_OBJECTS:
                quantity = _quantity_left(ctx, child.i)
                if quantity is not None:
                    n = quantity.n
        ctx.add(Kind.CITE_SOURCES, {"min": max(1, n)}, token.idx, ctx.chars(last, last)[1], confidence=0.8)
        return


_JURISDICTIONS = {
    "eu": "EU", "european union": "EU", "us": "US", "u.s.": "US", "united states": "US", "american": "US",
    "uk": "GB", "u.k.": "GB", "united kingdom": "GB", "british": "GB", "chinese": "CN",
    "china": "CN", "prc": "CN", "singapore": "SG", "hong kong": "HK", "swiss": "CH", "switzerland": "CH",
    "german": "DE", "germany": "DE", "french": "FR", "france": "FR", "cyprus": "CY", "cypriot": "CY",
}
_JURISDICTION = re.compile(
    r"(?:under|according\s+to|per|in\s+line\s+with|governed\s+by|apply|only)\s+(?:the\s+)?(?P<name>"
    + alternation(_JURISDICTIONS)
    + r")\s+(?:law|laws|rules|regulations?|regulatory|jurisdiction|legislation|requirements|directives?)"
    r"|jurisdiction\s*(?:of|:|is)?\s+(?:the\s+)?(?P<name2>"
    + alternation(_JURISDICTIONS) + r")\b",
    re.IGNORECASE,
)


def detect_jurisdiction(ctx: Context) -> None:
    match = _JURISDICTION.search(ctx.text)
    if match is None:
        return
    code = _JURISDICTIONS.get((match.group("name") or match.group("name2") or "").lower())
    if code is not None:
        ctx.add(Kind.JURISDICTION, {"code": code}, match.start(), match.end(), confidence=0.8)


def detect_precision(ctx: Context) -> None:
    match = re.search(r"(?:to|with|at)\s+(?:exactly\s+)?(?P<n>\d+|one|two|three|four|five|zero)\s+decimal(?:\s+places?|s)?",
                      ctx.text, re.IGNORECASE)
    if match is None:
        return
    decimals = parse_number([match.group("n")])
    if decimals is not None:
        ctx.add(Kind.NUMERIC_PRECISION, {"decimals": decimals}, match.start(), match.end())


def _inside_parentheses(text: str, start: int) -> bool:
    opened = text.rfind("(", 0, start)
    return opened != -1 and text.rfind(")", opened, start) == -1 and text.find(")", start) != -1


_LITERAL_ESCAPES = re.compile(r"(?:\\[ntr])+")


def prune_restated(ctx: Context) -> None:
    """Drop readings that restate or are implied by another reading.

    - a count in parentheses restating a count of the same kind outside them
      ("under 3 sentences (just 1 or 2 sentences)");
    - keywords that are the end or start phrase (its presence is implied);
    - "some words in capitals" (at least 1) next to a larger lower bound;
    - "keywords" that are escape sequences written out ("\\n\\n").
    """
    found = ctx.found
    phrases = {str(f.params.get("phrase", "")).lower() for f in found if f.kind in (Kind.END_PHRASE, Kind.START_PHRASE)}
    # "sign off with exactly these words: talk soon": words of the phrase, read where the phrase is
    said = [(f.start, f.end, {w.lower() for w in re.findall(r"\w+", str(f.params.get("phrase", "")))})
            for f in found if f.kind in (Kind.END_PHRASE, Kind.START_PHRASE)]
    kept: list[Found] = []
    for f in found:
        if f.kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT) and _inside_parentheses(ctx.text, f.start) and any(
            g.kind == f.kind and not _inside_parentheses(ctx.text, g.start) for g in found
        ):
            continue
        if f.kind == Kind.KEYWORDS_PRESENT:
            words = [w for w in f.params.get("keywords", []) if not _LITERAL_ESCAPES.fullmatch(str(w))]
            words = [w for w in words if str(w).lower() not in phrases and not any(
                start <= f.start and f.end <= end and str(w).lower() in inside for start, end, inside in said)]
            if not words:
                continue
            f = Found(kind=f.kind, params={"keywords": words}, start=f.start, end=f.end,
                      confidence=f.confidence, hardness=f.hardness)
        if f.kind == Kind.CAPITAL_WORD_FREQUENCY and f.params.get("relation") == Relation.AT_LEAST and f.params.get("n") == 1 \
                and any(g.kind == f.kind and g.params.get("relation") in (Relation.AT_LEAST, Relation.MORE_THAN)
                        and int(g.params.get("n", 0)) > 1 for g in found):
            continue
        kept.append(f)
    ctx.found = kept
