"""English constraint extraction on a spaCy doc.

Each detector looks for the *head* of a requirement (a unit noun such as
"words" or "bullet points", a trigger lemma such as "comma", "lowercase",
"postscript", a payload marker such as "keywords" or "the letter") and then
parses its parameters with typed parsers: numbers and relations through
:mod:`reasoning.constraints.quantities`, word lists from quoted strings or
comma / "and" / "or" lists, negation from the dependency parse (a ``neg``
child of the governing verb, or a governing "without", "avoid", "refrain").

Detectors never look at the whole prompt with one pattern: each works on the
tokens around its head, so a requirement keeps a precise source span and
phrasings that differ in word order still parse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from spacy.tokens import Doc, Span as SpacySpan, Token

from reasoning.constraints.found import Found
from reasoning.constraints.model import Hardness, Kind, Relation
from reasoning.constraints.quantities import ordinal, parse_number, relation_after, relation_before
from reasoning.language import LANGUAGE_NAMES, language_code

__all__ = ["extract_english"]

_NEG_WORDS = frozenset({"not", "n't", "never", "no", "without", "nor"})
_NEG_VERBS = frozenset({"avoid", "refrain", "exclude", "omit", "forbid", "prohibit", "ban", "skip"})
_QUOTED = re.compile(r"\"([^\"\n]{1,80})\"|“([^”\n]{1,80})”|'([^'\n]{1,80})'(?!\w)|‘([^’\n]{1,80})’")


# ---------------------------------------------------------------- helpers


def _num(token: Token) -> int | None:
    """The integer a token writes ("3", "three", "twice"), or None."""
    if token.like_num or token.lower_ in ("once", "twice", "thrice", "dozen"):
        return parse_number([token.text])
    return None


def _number_at(doc: Doc, i: int) -> tuple[int, int, int] | None:
    """(value, first index, last index) of a number ending at token ``i``.

    Joins "twenty - five" and "one hundred" into one number.
    """
    value = _num(doc[i])
    if value is None:
        return None
    first = i
    while first - 2 >= 0 and doc[first - 1].text == "-" and _num(doc[first - 2]) is not None:
        first -= 2
    while first - 1 >= 0 and _num(doc[first - 1]) is not None and doc[first - 1].lower_ not in ("once", "twice"):
        first -= 1
    words = [t.text for t in doc[first : i + 1] if t.text != "-"]
    joined = parse_number(words)
    return (joined, first, i) if joined is not None else (value, i, i)


def _negated(token: Token) -> bool:
    """Whether a requirement headed near ``token`` is negated in its clause."""
    node: Token | None = token
    for _ in range(4):
        if node is None:
            break
        if node.lemma_.lower() in _NEG_VERBS or node.lower_ == "without":
            return True
        if any(child.dep_ == "neg" for child in node.children):
            return True
        if any(child.lower_ in ("without",) for child in node.children if child.i < token.i):
            return True
        if node.head is node:
            break
        node = node.head
    sent = token.sent
    window = [t for t in doc_slice(token.doc, max(sent.start, token.i - 7), token.i)]
    for t in reversed(window):
        if t.text in (";", ".") or t.lower_ in ("but", "then"):
            break
        if t.lower_ in ("without", "never", "n't", "not") or t.lemma_.lower() in _NEG_VERBS:
            return True
        if t.lower_ == "no" and (t.i + 1 < len(token.doc) and token.doc[t.i + 1].lower_ not in ("more", "less", "fewer")):
            return True
    return False


def doc_slice(doc: Doc, start: int, end: int) -> SpacySpan:
    return doc[max(0, start) : max(0, min(len(doc), end))]


def _quoted_in(text: str, start: int, end: int) -> list[tuple[str, int, int]]:
    """Quoted strings wholly inside ``text[start:end]`` with their offsets."""
    found: list[tuple[str, int, int]] = []
    for match in _QUOTED.finditer(text, start, end):
        value = next(g for g in match.groups() if g is not None)
        found.append((value.strip(), match.start(), match.end()))
    return found


_LIST_STOP = frozenset(
    "in into at for to from anywhere throughout within when while as if so the your this that these those "
    "should must may can will is are be than more less".split()
)


def _word_list(doc: Doc, start: int, end: int) -> tuple[list[str], int]:
    """Words listed from token ``start`` ("a, b and c", "a or b"); (words, end char)."""
    words: list[str] = []
    last = doc[start].idx if start < len(doc) else 0
    i = start
    while i < min(end, len(doc)):
        t = doc[i]
        if t.text in (",", ":") or t.lower_ in ("and", "or", "nor") or t.text in ('"', "'", "“", "”", "‘", "’"):
            i += 1
            continue
        if t.is_punct or t.lower_ in _LIST_STOP or t.like_num:
            break
        if not t.is_alpha and not re.fullmatch(r"[\w'-]+", t.text):
            break
        words.append(t.text)
        last = t.idx + len(t.text)
        i += 1
        if i < len(doc) and doc[i].text not in (",", ":") and doc[i].lower_ not in ("and", "or", "nor"):
            break
    return words, last


def _payload(doc: Doc, text: str, head: Token, *, max_tokens: int = 30) -> tuple[list[str], int]:
    """The words a keyword / forbidden-word requirement names, after ``head``.

    Quoted strings in the rest of the clause win; otherwise a comma / "and"
    list that starts right after the head. Returns (words, end char).
    """
    sent = head.sent
    stop = min(sent.end, head.i + max_tokens)
    for t in doc_slice(doc, head.i + 1, stop):
        if t.text in (".", ";", "!", "?") and t.i > head.i + 1:
            stop = t.i
            break
    region_end = doc[stop - 1].idx + len(doc[stop - 1].text) if stop - 1 > head.i else head.idx + len(head.text)
    quoted = _quoted_in(text, head.idx + len(head.text), region_end)
    if quoted:
        chained: list[tuple[str, int, int]] = [quoted[0]]
        for item in quoted[1:]:
            gap = text[chained[-1][2] : item[1]]
            if re.fullmatch(r"[\s,;:]*(?:and|or|nor|&)?[\s,;:]*", gap):
                chained.append(item)
        return [q[0] for q in chained], chained[-1][2]
    first = head.i + 1
    while first < stop and (doc[first].text in (":", ",", "-") or doc[first].lower_ in ("the", "following", "like", "such", "as", "words", "keywords", "word", "keyword")):
        first += 1
    if first >= stop:
        return [], head.idx + len(head.text)
    return _word_list(doc, first, stop)


# -------------------------------------------------------------- quantities

_SKIPPABLE = frozenset(
    "very short long different distinct separate unique markdown total complete full "
    "bullet text key main new additional more".split()
)


def _quantity_left(doc: Doc, unit: Token) -> tuple[Relation | None, int, int] | None:
    """(relation, n, first token index) for a number a few tokens before ``unit``."""
    sent_start = unit.sent.start
    j = unit.i - 1
    steps = 0
    while j >= sent_start and steps < 5:
        t = doc[j]
        number = _number_at(doc, j)
        if number is not None:
            value, first, last = number
            after = relation_after([x.lower_ for x in doc[last + 1 : unit.i]])
            before = relation_before([x.lower_ for x in doc[max(sent_start, first - 4) : first]])
            relation: Relation | None = None
            start = first
            if after is not None:
                relation = after[0]
            elif before is not None:
                relation, width = before
                start = first - width
            return relation, value, start
        if not (t.text in ("-", "+") or t.lower_ in _SKIPPABLE or t.lower_ in ("or", "more", "fewer", "less")
                or t.pos_ in ("ADJ", "ADV") or t.dep_ == "compound"):
            return None
        j -= 1
        steps += 1
    return None


def _quantity_right(doc: Doc, unit: Token, limit: int = 10) -> tuple[Relation | None, int, int] | None:
    """(relation, n, last token index) for "words ... should be at least 300"."""
    end = min(unit.sent.end, unit.i + limit)
    for j in range(unit.i + 1, end):
        t = doc[j]
        if t.text in (".", ";", "!", "?"):
            return None
        if t.lemma_.lower() in _UNIT_LEMMAS and j > unit.i + 1:
            return None
        number = _number_at(doc, j)
        if number is None:
            continue
        value, first, last = number
        if last + 1 < len(doc) and doc[last + 1].lower_ in ("times", "time", "%", "percent"):
            return None
        before = relation_before([x.lower_ for x in doc[max(unit.i + 1, first - 4) : first]])
        after = relation_after([x.lower_ for x in doc[last + 1 : min(len(doc), last + 3)]])
        if before is None and after is None:
            verb = doc[first - 1].lemma_.lower() if first > 0 else ""
            if verb in ("exceed", "surpass"):
                return Relation.MORE_THAN, value, last
            return None
        relation = after[0] if after is not None else before[0] if before is not None else None
        return relation, value, last
    return None


def _flip_if_negated(doc: Doc, unit: Token, relation: Relation | None) -> Relation | None:
    """"should not exceed 50 words" / "not longer than 30 words" -> at most."""
    if relation not in (Relation.MORE_THAN, Relation.LESS_THAN):
        return relation
    window = doc_slice(doc, max(unit.sent.start, unit.i - 8), unit.i)
    if any(t.dep_ == "neg" or t.lower_ in ("n't", "not") for t in window):
        return Relation.AT_MOST if relation == Relation.MORE_THAN else Relation.AT_LEAST
    return relation


_UNIT_LEMMAS = frozenset(
    {"word", "sentence", "paragraph", "bullet", "point", "section", "part", "placeholder",
     "highlight", "line", "time", "letter"}
)


# ---------------------------------------------------------------- detectors


class _Ctx:
    """What every detector needs: the doc, the text and prompt-wide cues."""

    def __init__(self, doc: Doc, text: str) -> None:
        self.doc = doc
        self.text = text
        lowered = text.lower()
        self.has_divider = "***" in text or "markdown divider" in lowered
        self.blank_line_paragraphs = bool(
            re.search(r"two new ?lines|double line break|\\n\\n|blank line|two line breaks|empty line|2 new lines", lowered)
        )
        self.found: list[Found] = []

    def add(self, kind: Kind, params: dict[str, object], start: int, end: int,
            confidence: float = 0.9, hardness: Hardness | None = None) -> None:
        self.found.append(Found(kind=kind, params=dict(params), start=start, end=end,
                                confidence=confidence, hardness=hardness))


def _span_chars(doc: Doc, first: int, last: int) -> tuple[int, int]:
    return doc[first].idx, doc[last].idx + len(doc[last].text)


def _detect_counts(ctx: _Ctx) -> None:
    doc = ctx.doc
    for unit in doc:
        lemma = unit.lemma_.lower()
        lower = unit.lower_
        if lemma not in ("word", "sentence", "paragraph", "bullet", "point", "section", "part",
                         "placeholder", "highlight"):
            continue
        if lemma == "point" and not (unit.i > 0 and doc[unit.i - 1].lemma_.lower() == "bullet"):
            continue
        if lemma == "bullet" and unit.i + 1 < len(doc) and doc[unit.i + 1].lemma_.lower() == "point":
            continue
        quantity = _quantity_left(doc, unit)
        start_i = None
        end_i = unit.i
        if quantity is not None:
            relation, n, start_i = quantity
            tail = relation_after([t.lower_ for t in doc[unit.i + 1 : unit.i + 3]])
            if relation is None and tail is not None:
                relation = tail[0]
                end_i = unit.i + tail[1]
        elif lemma in ("word", "sentence"):
            right = _quantity_right(doc, unit)
            if right is None:
                continue
            relation, n, end_i = right
            start_i = unit.i
        else:
            continue
        relation = _flip_if_negated(doc, unit, relation)
        start, end = _span_chars(doc, start_i, end_i)
        sent_lemmas = {t.lemma_.lower() for t in unit.sent}
        if lemma == "word" and lower in ("word", "words") and not _is_keyword_mention(doc, unit):
            ctx.add(Kind.WORD_COUNT, {"relation": str(relation or Relation.EXACTLY), "n": n}, start, end)
        elif lemma == "sentence":
            ctx.add(Kind.SENTENCE_COUNT, {"relation": str(relation or Relation.EXACTLY), "n": n}, start, end)
        elif lemma in ("bullet", "point"):
            ctx.add(Kind.BULLET_COUNT, {"n": n}, start, end)
        elif lemma == "placeholder":
            ctx.add(Kind.PLACEHOLDERS, {"n": n}, start, end)
        elif lemma == "highlight" or ("highlight" in sent_lemmas and lemma in ("section", "part", "word")):
            ctx.add(Kind.HIGHLIGHTED_SECTIONS, {"n": n}, start, end)
        elif lemma == "paragraph" or (lemma in ("section", "part") and ctx.has_divider and _mentions_divider(unit.sent, doc)):
            ctx.add(Kind.PARAGRAPH_COUNT, {"n": n}, start, end, confidence=0.8)
        elif lemma in ("section", "part"):
            splitter = _section_splitter(ctx.text)
            if splitter is not None:
                ctx.add(Kind.SECTIONS, {"splitter": splitter, "n": n}, start, end)


def _mentions_divider(sent: SpacySpan, doc: Doc) -> bool:
    nxt = doc[sent.end : min(len(doc), sent.end + 25)]
    return "***" in sent.text or "divider" in sent.text.lower() or "***" in nxt.text


_SPLITTER = re.compile(r"(?<![\w*])([A-Z][A-Za-z]{2,})\s+(?:X|\{?N\}?|#|\d)\b")


def _section_splitter(text: str) -> str | None:
    """The word that marks sections ("Section" in "Section X" / "SECTION 1")."""
    for match in _SPLITTER.finditer(text):
        word = match.group(1)
        if word.lower() in ("section", "part", "paragraph", "chapter", "day", "step", "slide", "act", "scene"):
            return word
    return None


def _is_keyword_mention(doc: Doc, unit: Token) -> bool:
    """"the word 'risk'" names a keyword, it is not a unit of length."""
    nxt = doc[unit.i + 1] if unit.i + 1 < len(doc) else None
    return nxt is not None and (nxt.is_quote or nxt.text.startswith(("\"", "'", "“")))


def _detect_paragraph_structure(ctx: _Ctx) -> None:
    """Paragraph counts and "paragraph N starts with the word X"."""
    doc = ctx.doc
    text = ctx.text
    pattern = re.compile(
        r"(?:(?P<ord>first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|final|\d+(?:st|nd|rd|th))\s+paragraph"
        r"|paragraph\s+(?P<num>\d+))"
        r"[^.\n]{0,40}?(?:start|begin)s?\s+with\s+(?:the\s+)?(?:word\s+)?[\"“']?(?P<word>[A-Za-z][\w'-]*)",
        re.IGNORECASE,
    )
    alt = re.compile(
        r"(?:start|begin)\s+the\s+(?P<ord>first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d+(?:st|nd|rd|th))"
        r"\s+paragraph\s+with\s+(?:the\s+)?(?:word\s+)?[\"“']?(?P<word>[A-Za-z][\w'-]*)",
        re.IGNORECASE,
    )
    matches = list(pattern.finditer(text)) + list(alt.finditer(text))
    if not matches:
        return
    counts = [f for f in ctx.found if f.kind == Kind.PARAGRAPH_COUNT]
    total = int(counts[0].params["n"]) if counts else _paragraph_total(doc)
    if total is None:
        return
    for match in matches:
        word = match.group("word").lower()
        label = (match.group("ord") or "").lower()
        if label in ("last", "final"):
            nth = total
        elif label:
            nth = ordinal(label) or 1
        else:
            nth = int(match.group("num"))
        start = min([match.start()] + [f.start for f in counts])
        ctx.found = [f for f in ctx.found if f.kind != Kind.PARAGRAPH_COUNT]
        ctx.add(Kind.NTH_PARAGRAPH_FIRST_WORD, {"n": total, "nth": nth, "first_word": word},
                start, max([match.end()] + [f.end for f in counts]))
        return


def _paragraph_total(doc: Doc) -> int | None:
    for unit in doc:
        if unit.lemma_.lower() == "paragraph":
            quantity = _quantity_left(doc, unit)
            if quantity is not None:
                return quantity[1]
    return None


_FREQ_HEADS = ("word", "keyword", "letter", "character", "name", "term", "phrase")
_SYMBOL_NAMES = {"exclamation": "!", "hashtag": "#", "hash": "#", "question": "?", "asterisk": "*",
                 "dollar": "$", "at": "@", "percent": "%", "ampersand": "&"}


def _count_after(doc: Doc, start: int, limit: int = 14) -> tuple[Relation, int, int] | None:
    """A "N times" / "twice" / "at least once" count after token ``start``."""
    end = min(len(doc), start + limit)
    for j in range(start, end):
        t = doc[j]
        if t.text in (".", ";", "!", "?") and j > start:
            return None
        if t.lower_ in ("once", "twice", "thrice") or (
            t.lower_ in ("times", "time") and j > 0 and _num(doc[j - 1]) is not None
        ):
            last = j
            number = _number_at(doc, j if t.lower_ in ("once", "twice", "thrice") else j - 1)
            if number is None:
                return None
            value, first, _ = number
            before = relation_before([x.lower_ for x in doc[max(start, first - 4) : first]])
            after = relation_after([x.lower_ for x in doc[last + 1 : min(len(doc), last + 3)]])
            between = relation_after([x.lower_ for x in doc[number[2] + 1 : j]])
            relation = (after or between or before or (Relation.EXACTLY, 0))[0]
            if before is None and after is None and between is None and j + 2 < len(doc):
                if doc[first - 1].lower_ == "only" if first > 0 else False:
                    relation = Relation.EXACTLY
            return relation, value, last
    return None


def _detect_frequencies(ctx: _Ctx) -> None:
    """Keyword, letter and capital-word frequencies; keyword presence and absence."""
    doc = ctx.doc
    text = ctx.text
    for head in doc:
        lemma = head.lemma_.lower()
        if lemma not in _FREQ_HEADS and lemma not in ("include", "mention", "contain", "use", "say"):
            continue
        if lemma in ("letter", "character"):
            _letter(ctx, head)
            continue
        if lemma in ("include", "mention", "contain", "use", "say") and not _has_direct_quote(doc, head):
            continue
        if lemma in ("word", "keyword", "term", "phrase", "name") and _capital_words_head(doc, head):
            continue
        if lemma == "word" and _quantity_left(doc, head) is not None:
            continue
        if lemma in ("word", "name") and head.lower_ in ("words", "names") and not _followed_by_list(doc, text, head):
            continue
        words, end_char = _payload(doc, text, head)
        words = [w for w in words if w.strip() and len(w) <= 60]
        if not words:
            continue
        count = _count_after(doc, head.i + 1, limit=18)
        start = head.idx
        if lemma in ("include", "mention", "contain", "use", "say") and head.i > 0:
            start = head.idx
        if _negated(head):
            ctx.add(Kind.FORBIDDEN_WORDS, {"words": words}, start, end_char)
        elif count is not None and len(words) == 1:
            relation, n, last = count
            ctx.add(Kind.KEYWORD_FREQUENCY, {"keyword": words[0], "relation": str(relation), "n": n},
                    start, max(end_char, doc[last].idx + len(doc[last].text)))
        else:
            ctx.add(Kind.KEYWORDS_PRESENT, {"keywords": words}, start, end_char, confidence=0.8)


def _has_direct_quote(doc: Doc, head: Token) -> bool:
    nxt = doc[head.i + 1] if head.i + 1 < len(doc) else None
    return nxt is not None and nxt.is_quote


def _followed_by_list(doc: Doc, text: str, head: Token) -> bool:
    rest = text[head.idx + len(head.text) : head.idx + len(head.text) + 3]
    return bool(re.match(r"\s*[:\"“'‘]", rest))


def _capital_words_head(doc: Doc, head: Token) -> bool:
    window = doc_slice(doc, head.i, head.i + 6).text.lower()
    return bool(re.search(r"(all[ -])?capital|all[ -]caps|uppercase|in caps", window))


def _letter(ctx: _Ctx, head: Token) -> None:
    doc = ctx.doc
    nxt = doc[head.i + 1 : head.i + 4]
    letter: str | None = None
    for t in nxt:
        raw = t.text.strip("\"'“”‘’")
        if len(raw) == 1 and raw.isalpha():
            letter = raw.lower()
            break
    if letter is None:
        return
    count = _count_after(doc, head.i + 1, limit=16)
    start = head.idx
    if _negated(head) and (count is None or count[1] == 0):
        ctx.add(Kind.LETTER_FREQUENCY, {"letter": letter, "relation": str(Relation.LESS_THAN), "n": 1},
                start, nxt[-1].idx + len(nxt[-1].text))
        return
    if count is None:
        return
    relation, n, last = count
    ctx.add(Kind.LETTER_FREQUENCY, {"letter": letter, "relation": str(relation), "n": n},
            start, doc[last].idx + len(doc[last].text))


def _detect_symbols(ctx: _Ctx) -> None:
    """"6 or more exclamation marks", "at least 4 hashtags" -> letter frequency of a symbol."""
    doc = ctx.doc
    for head in doc:
        symbol = _SYMBOL_NAMES.get(head.lemma_.lower())
        if symbol is None:
            continue
        unit = head
        if head.i + 1 < len(doc) and doc[head.i + 1].lemma_.lower() in ("mark", "sign", "symbol"):
            unit = doc[head.i + 1]
        elif head.lemma_.lower() not in ("hashtag",):
            continue
        quantity = _quantity_left(doc, head)
        if quantity is None:
            continue
        relation, n, first = quantity
        start, end = _span_chars(doc, first, unit.i)
        ctx.add(Kind.LETTER_FREQUENCY, {"letter": symbol, "relation": str(relation or Relation.AT_LEAST), "n": n},
                start, end, confidence=0.7)


def _detect_capital_words(ctx: _Ctx) -> None:
    """"words with all capital letters ... less than 10 times"."""
    text = ctx.text
    doc = ctx.doc
    pattern = re.compile(
        r"(words?\s+(?:with|in|that\s+are\s+in|be\s+in)\s+(?:all\s+)?(?:capital\s+letters|capitals|caps|uppercase)"
        r"|all[ -]caps?\s+words?|all[ -]capital(?:ized)?\s+words?|capitalized\s+words?|words?\s+in\s+all[ -]caps"
        r"|words?\s+(?:with|in)\s+all\s+capital)",
        re.IGNORECASE,
    )
    for match in pattern.finditer(text):
        span = doc.char_span(match.start(), match.end(), alignment_mode="expand")
        if span is None:
            continue
        count = _count_after(doc, span.end, limit=14)
        if count is None:
            quantity = _quantity_left(doc, span[0]) if len(span) else None
            if quantity is None or quantity[0] is None:
                following = _quantity_right(doc, span[-1], limit=14)
                if following is None:
                    continue
                relation, n, last = following
            else:
                relation, n, _ = quantity
                last = span.end - 1
        else:
            relation, n, last = count
        relation = _flip_if_negated(doc, span[0], relation)
        ctx.add(Kind.CAPITAL_WORD_FREQUENCY, {"relation": str(relation or Relation.AT_LEAST), "n": n},
                match.start(), doc[last].idx + len(doc[last].text))


_CASE_LOWER = re.compile(
    r"(all\s+)?lower[ -]?case|no\s+capital\s+letters|without\s+(?:using\s+)?(?:any\s+)?capital\s+letters"
    r"|not?\s+(?:use\s+)?(?:any\s+)?capital\s+letters|capital\s+letters\s+(?:are\s+)?not\s+allowed",
    re.IGNORECASE,
)
_CASE_UPPER = re.compile(
    r"all\s+(?:in\s+)?capital\s+letters|all\s+caps\b|(?:in|use|using)\s+(?:only\s+)?(?:all\s+)?upper[ -]?case|capitali[sz]e\s+all|"
    r"only\s+(?:use\s+)?capital\s+letters|no\s+lower[ -]?case|entirely\s+in\s+capital|in\s+all\s+capitals"
    r"|(?:in|use)\s+capital\s+letters\s+only|all\s+uppercase",
    re.IGNORECASE,
)


def _detect_case(ctx: _Ctx) -> None:
    text = ctx.text
    capital_word_spans = [(f.start, f.end) for f in ctx.found if f.kind == Kind.CAPITAL_WORD_FREQUENCY]
    for match in _CASE_UPPER.finditer(text):
        if re.search(r"words?\s+(?:with|in)\s*$", text[max(0, match.start() - 15) : match.start()], re.IGNORECASE):
            continue
        if any(s - 40 <= match.start() <= e for s, e in capital_word_spans):
            continue
        if "no lower" in match.group(0).lower() and any(f.kind == Kind.ALL_CAPITALS for f in ctx.found):
            continue
        ctx.add(Kind.ALL_CAPITALS, {}, match.start(), match.end())
        break
    for match in _CASE_LOWER.finditer(text):
        if any(f.kind == Kind.ALL_CAPITALS and abs(f.start - match.start()) < 60 for f in ctx.found):
            continue
        ctx.add(Kind.ALL_LOWERCASE, {}, match.start(), match.end())
        break


def _detect_flags(ctx: _Ctx) -> None:
    """Kinds without parameters, read from trigger lemmas with their negation."""
    doc = ctx.doc
    text = ctx.text
    for token in doc:
        lemma = token.lemma_.lower()
        if lemma in ("comma",) and _negated(token):
            ctx.add(Kind.NO_COMMA, {}, *_clause_span(doc, token))
            break
    quote = re.search(
        r"(wrap|enclose|put|surround|place|in)[^.]{0,60}?(double\s+quot\w*(\s+marks?)?|quotation\s+marks?)"
        r"|(double\s+quot\w*(\s+marks?)?|quotation\s+marks)\s+(around|wrapping)",
        text, re.IGNORECASE,
    )
    if quote:
        ctx.add(Kind.QUOTATION, {}, quote.start(), quote.end())
    title = re.search(r"double\s+angular\s+brackets|<<[^<>\n]{1,60}>>", text, re.IGNORECASE)
    if title:
        ctx.add(Kind.TITLE, {}, title.start(), title.end())
    json_match = re.search(r"\bJSON\b", text, re.IGNORECASE)
    if json_match and not _json_negated(doc, json_match.start()):
        ctx.add(Kind.JSON_FORMAT, {}, *_sentence_of(doc, json_match.start()))
    two = re.search(
        r"(?:two|2)\s+(?:\w+\s+){0,3}?(?:responses|answers|versions|jokes|limericks|critiques|poems|options|alternatives|itinerar\w+|stories|songs|letters|emails|cover\s+letters)"
        r"[^.]{0,80}?(?:\*{6}|6\s+asterisk|six\s+asterisk)"
        r"|separate\w*[^.]{0,60}?(?:\*{6}|6\s+asterisk|six\s+asterisk)",
        text, re.IGNORECASE,
    )
    if two:
        ctx.add(Kind.TWO_RESPONSES, {}, two.start(), two.end())


def _json_negated(doc: Doc, char: int) -> bool:
    span = doc.char_span(char, char + 4, alignment_mode="expand")
    if span is None or not len(span):
        return False
    token = span[0]
    window = doc_slice(doc, max(token.sent.start, token.i - 6), token.i).text.lower()
    return bool(re.search(r"\b(keywords?|words?)\b", window)) or token.dep_ == "pobj" and "include" in window


def _clause_span(doc: Doc, token: Token) -> tuple[int, int]:
    left = token.i
    while left > token.sent.start and doc[left - 1].text not in (",", ";", ".") and token.i - left < 10:
        left -= 1
    return doc[left].idx, token.idx + len(token.text)


def _sentence_of(doc: Doc, char: int) -> tuple[int, int]:
    span = doc.char_span(char, char + 1, alignment_mode="expand")
    if span is None or not len(span):
        return char, char + 4
    sent = span[0].sent
    return sent.start_char, sent.end_char


def _detect_postscript(ctx: _Ctx) -> None:
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


_PHRASE = r"[\"“](?P<q>[^\"”\n]{1,200})[\"”]|(?P<raw>[^\n]{1,120}?)(?:\s*$|\n)"


def _detect_start_end(ctx: _Ctx) -> None:
    text = ctx.text
    end_pattern = re.compile(
        r"(?:end|finish|conclude|close)\w*\s+(?:your\s+|the\s+|it\s+|this\s+|each\s+)?(?:entire\s+|whole\s+)?(?:response|answer|reply|poem|song|email|letter|story|essay|post|article|message|speech|rap|blog\s+post)?"
        r"\s*with\s+(?:this|the)?\s*(?:exact\s+)?(?:phrase|sentence|words?)?(?:\s+of)?\s*:?\s*(?:" + _PHRASE + ")"
        r"|(?:very\s+)?(?:last|final|end)\s+(?:sentence|line|words?|phrase)\s+of\s+your\s+(?:response|answer|reply)\s+(?:should|must)\s+(?:be|read)\s*:?\s*(?:" + _PHRASE.replace("?P<q>", "?P<q2>").replace("?P<raw>", "?P<raw2>") + ")"
        r"|(?:very\s+)?end\s+of\s+your\s+(?:response|answer)\s+should\s+read\s*:?\s*(?:" + _PHRASE.replace("?P<q>", "?P<q3>").replace("?P<raw>", "?P<raw3>") + ")",
        re.IGNORECASE | re.MULTILINE,
    )
    for match in end_pattern.finditer(text):
        phrase = next((match.group(g) for g in ("q", "q2", "q3") if match.group(g)), None)
        if phrase is None:
            raw = next((match.group(g) for g in ("raw", "raw2", "raw3") if match.group(g)), None)
            if raw is None or len(raw.split()) > 14 or not raw.strip():
                continue
            phrase = raw.strip()
        if re.match(r"(a|an|the)\s+(postscript|post script|p\.)", phrase, re.IGNORECASE):
            continue
        ctx.add(Kind.END_PHRASE, {"phrase": phrase.strip()}, match.start(), match.end())
        break
    start_pattern = re.compile(
        r"(?:start|begin)\w*\s+(?:your\s+)?(?:entire\s+)?(?:response|answer|reply)\s+with\s+(?:the\s+)?(?:exact\s+)?(?:phrase|sentence|words?)?\s*:?\s*[\"“](?P<q>[^\"”\n]{1,200})[\"”]",
        re.IGNORECASE,
    )
    match = start_pattern.search(text)
    if match is not None:
        ctx.add(Kind.START_PHRASE, {"phrase": match.group("q").strip()}, match.start(), match.end())


_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


def _detect_constrained(ctx: _Ctx) -> None:
    text = ctx.text
    found = [m for o in _OPTIONS if (m := re.search(re.escape(o.rstrip(".")), text))]
    if len(found) >= 2:
        start = min(m.start() for m in found)
        end = max(m.end() for m in found)
        ctx.add(Kind.CONSTRAINED_RESPONSE, {"options": list(_OPTIONS)}, start, end)
        return
    match = re.search(r"(?:answer|respond|reply)\s+with\s+(?:exactly\s+)?one\s+of\s+the\s+following\s+(?:options|phrases)\s*:?\s*(?P<list>[^\n]+)", text, re.IGNORECASE)
    if match is not None:
        options = [q for q, _, _ in _quoted_in(text, match.start("list"), match.end("list"))]
        if len(options) >= 2:
            ctx.add(Kind.CONSTRAINED_RESPONSE, {"options": options}, match.start(), match.end())


_REPEAT = re.compile(
    r"(?:first\s+)?repeat\s+(?:the|this|my)?\s*(?:exact\s+)?(?:request|question|sentence|prompt|instruction|query|text)"
    r"|repeat\s+the\s+(?:request|question)\s+(?:above|below)"
    r"|(?:first\s+)?(?:write|say|copy)\s+(?:out\s+)?(?:the\s+)?(?:exact\s+)?(?:request|question|prompt)\s+(?:above|below)?\s*(?:word\s+for\s+word)",
    re.IGNORECASE,
)


def _detect_repeat(ctx: _Ctx) -> None:
    text = ctx.text
    match = _REPEAT.search(text)
    if match is None:
        return
    blocks = [b for b in re.split(r"(\n+)", text)]
    kept: list[str] = []
    position = 0
    instruction_start, instruction_end = match.start(), match.end()
    for block in blocks:
        block_start, block_end = position, position + len(block)
        position = block_end
        if block.strip() == "":
            kept.append(block)
            continue
        if block_start <= match.start() < block_end:
            instruction_start, instruction_end = block_start, block_end
            inline = _split_inline_repeat(block, match.start() - block_start)
            if inline is not None:
                kept.append(inline)
            continue
        if _is_repeat_aside(block):
            continue
        kept.append(block)
    prompt_to_repeat = "".join(kept).strip()
    if not prompt_to_repeat:
        return
    ctx.add(Kind.REPEAT_PROMPT, {"prompt_to_repeat": prompt_to_repeat}, instruction_start, instruction_end)


def _split_inline_repeat(block: str, offset: int) -> str | None:
    """Text of a block before an inline "First repeat the request ..." sentence."""
    before = block[:offset]
    cut = max(before.rfind(". "), before.rfind("? "), before.rfind("! "))
    if cut <= 0 or not before.strip():
        return None
    return block[: cut + 1]


def _is_repeat_aside(block: str) -> bool:
    return bool(re.match(r"\s*(do not|don't)\s+say\s+any", block, re.IGNORECASE))


def _detect_language(ctx: _Ctx) -> None:
    doc = ctx.doc
    names = "|".join(sorted((re.escape(n) for n, _ in LANGUAGE_NAMES.values()), key=len, reverse=True))
    pattern = re.compile(
        r"(?:\b(?:in|using|use|into|with)\s+(?:the\s+)?(?:only\s+)?(?:entirely\s+)?(?:fluent\s+)?|only\s+(?:in\s+)?|entirely\s+in\s+|except\s+)"
        r"(?P<name>" + names + r")\b(?:\s+language)?",
        re.IGNORECASE,
    )
    for match in pattern.finditer(ctx.text):
        name = match.group("name")
        code = language_code(name)
        if code is None:
            continue
        context = ctx.text[max(0, match.start() - 80) : match.end() + 60].lower()
        if not re.search(r"respon|answer|reply|writ|language|entire|output|only|rewrite|translat|explain|speak|in\s+" + re.escape(name.lower()), context):
            continue
        if re.search(r"\b(?:style|accent|food|culture|history|people|grammar)\b", ctx.text[match.end() : match.end() + 12].lower()):
            continue
        span = doc.char_span(match.start(), match.end(), alignment_mode="expand")
        if span is not None and len(span) and span[-1].head.lemma_.lower() in ("translate",) and "from" in span.text.lower():
            continue
        ctx.add(Kind.RESPONSE_LANGUAGE, {"language": code}, match.start(), match.end())


_YEAR = r"(?P<year>1[5-9]\d\d|20\d\d)"


def _detect_citation_window(ctx: _Ctx) -> None:
    text = ctx.text
    before = re.compile(
        r"(?:do\s+not|don't|never|not)\s+(?:cite|use|reference|rely\s+on|quote|include)\b[^.;]{0,60}?"
        r"(?:before|prior\s+to|older\s+than|earlier\s+than|pre-?)\s*" + _YEAR,
        re.IGNORECASE,
    )
    for match in before.finditer(text):
        ctx.add(Kind.CITATION_TIME_WINDOW, {"not_before": f"{match.group('year')}-01-01"},
                match.start(), match.end())
    since = re.compile(
        r"(?:only\s+)?(?:cite|use|reference|rely\s+on)\b[^.;]{0,60}?(?:(?:from|since|published\s+in)\s+" + _YEAR
        + r"\s*(?:on(?:wards?)?|or\s+later|and\s+later)|(?:after)\s+" + _YEAR.replace("year", "after") + ")",
        re.IGNORECASE,
    )
    for match in since.finditer(text):
        if any(f.kind == Kind.CITATION_TIME_WINDOW and f.start <= match.start() < f.end for f in ctx.found):
            continue
        if match.group("after"):
            year = int(match.group("after")) + 1
        else:
            year = int(match.group("year"))
        ctx.add(Kind.CITATION_TIME_WINDOW, {"not_before": f"{year}-01-01"}, match.start(), match.end())


def _detect_cite_sources(ctx: _Ctx) -> None:
    doc = ctx.doc
    for token in doc:
        if token.lemma_.lower() not in ("cite", "citation", "reference", "source") or _negated(token):
            continue
        if token.lemma_.lower() in ("reference", "source") and not (
            token.head.lemma_.lower() in ("cite", "provide", "include", "give", "list", "name")
        ):
            continue
        if any(f.kind == Kind.CITATION_TIME_WINDOW and f.start <= token.idx < f.end for f in ctx.found):
            continue
        quantity = None
        for child in token.subtree:
            if child.i > token.i and child.lemma_.lower() in ("source", "rule", "reference", "regulation", "paper", "study"):
                quantity = _quantity_left(doc, child)
                break
        n = quantity[1] if quantity is not None else 1
        start, end = _clause_span(doc, token)
        tail = token.i
        for child in token.subtree:
            tail = max(tail, child.i)
        end = doc[tail].idx + len(doc[tail].text)
        ctx.add(Kind.CITE_SOURCES, {"min": max(1, n)}, token.idx, end, confidence=0.8)
        break


_JURISDICTIONS = {
    "eu": "EU", "european union": "EU", "us": "US", "u.s.": "US", "united states": "US", "american": "US",
    "uk": "GB", "u.k.": "GB", "united kingdom": "GB", "british": "GB", "english": "GB", "chinese": "CN",
    "china": "CN", "prc": "CN", "singapore": "SG", "hong kong": "HK", "swiss": "CH", "switzerland": "CH",
    "german": "DE", "germany": "DE", "french": "FR", "france": "FR", "cyprus": "CY", "cypriot": "CY",
    "eu's": "EU",
}


def _detect_jurisdiction(ctx: _Ctx) -> None:
    names = "|".join(sorted((re.escape(k) for k in _JURISDICTIONS), key=len, reverse=True))
    pattern = re.compile(
        r"(?:under|according\s+to|per|in\s+line\s+with|governed\s+by|apply|only)\s+(?:the\s+)?(?P<name>" + names + r")\s+"
        r"(?:law|laws|rules|regulations?|regulatory|jurisdiction|legislation|requirements|directives?)"
        r"|(?:jurisdiction)\s*(?:of|:|is)?\s+(?:the\s+)?(?P<name2>" + names + r")\b",
        re.IGNORECASE,
    )
    for match in pattern.finditer(ctx.text):
        name = (match.group("name") or match.group("name2") or "").lower()
        code = _JURISDICTIONS.get(name)
        if code is not None:
            ctx.add(Kind.JURISDICTION, {"code": code}, match.start(), match.end(), confidence=0.8)
            return


def _detect_precision(ctx: _Ctx) -> None:
    match = re.search(
        r"(?:to|with|at)\s+(?:exactly\s+)?(?P<n>\d+|one|two|three|four|five|zero)\s+decimal(?:\s+places?|s)?",
        ctx.text, re.IGNORECASE,
    )
    if match is None:
        return
    decimals = parse_number([match.group("n")])
    if decimals is not None:
        ctx.add(Kind.NUMERIC_PRECISION, {"decimals": decimals}, match.start(), match.end())


_DETECTORS: Sequence[Callable[[_Ctx], None]] = (
    _detect_counts,
    _detect_paragraph_structure,
    _detect_capital_words,
    _detect_frequencies,
    _detect_symbols,
    _detect_case,
    _detect_flags,
    _detect_postscript,
    _detect_start_end,
    _detect_constrained,
    _detect_repeat,
    _detect_language,
    _detect_citation_window,
    _detect_cite_sources,
    _detect_jurisdiction,
    _detect_precision,
)


def extract_english(doc: Doc, text: str) -> list[Found]:
    """Every constraint the detectors read in ``doc`` (over ``text``)."""
    ctx = _Ctx(doc, text)
    for detector in _DETECTORS:
        detector(ctx)
    return ctx.found


def iter_sentences(doc: Doc) -> Iterator[tuple[int, int]]:
    """(start, end) character offsets of the doc's sentences."""
    for sent in doc.sents:
        yield sent.start_char, sent.end_char
