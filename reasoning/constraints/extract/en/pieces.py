"""English requirements said of every piece, of a share of the pieces, or of marked-up spans.

Runs after the form readers of :mod:`reasoning.constraints.extract.en.form`
(:data:`reasoning.constraints.extract.registry.ENGLISH`), after their counts, wraps, layouts, positions and structure, on the same parse,
and reads what the unit lexicon alone does not:

- an opening or ending said of every sentence / paragraph / line / list
  item ("every sentence must begin with 'Today'", "end each paragraph with
  'Over.'", "start every list item with ✅"): ``position(unit, k=0, op,
  text)``; an ending read as the answer's end phrase is replaced;
- a share of the sentences that are questions or exclamations ("at least
  half of the sentences must be questions", "30% of your sentences"): a
  count of sentences ending with the mark, ``of`` all sentences;
- bold text ("put the key term in bold", "use bold for three terms"): a
  count of ``**`` spans, not IFEval's single-asterisk highlights;
- a count of quoted things ("put three phrases in double quotes"): a count
  of quoted spans, not the whole answer in quotes;
- a title in given brackets ("a title in 【】 on the first line"): a span
  between them, not a count of lines;
- a one-word verdict from given options ("answer with one word: yes, no or
  maybe"): ``constrained_response``;
- lengths compared between pieces ("no sentence may be more than four words
  longer than any other", "keep the paragraphs roughly equal in length"):
  ``spread(unit, per, max_diff | max_ratio)``, the count a word count reader
  took from the sentence dropped;
- sections opened by numbered labels ("mark each advertisement with Audience
  1 and Audience 2", "label the sections Step 1, Step 2 ..."): ``sections``
  of that marker.

Each reading keys on the parse (the governing verb, the quantifier over the
pieces, the noun a number counts) and the lexicon, never on one wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.en.named import _counted
from reasoning.constraints.extract.en.phrases import _QUOTED, _negated, _number_at, _quoted_list
from reasoning.constraints.extract.found import Found, counts_paragraphs, overlaps
from reasoning.constraints.extract.lexicon import (
    EN_ANSWER_NOUNS,
    EN_EVERY,
    EN_LOWER_SAID,
    EN_PIECES,
    EN_UNITS,
    EN_UPPER_SAID,
)
from reasoning.constraints.form import (
    ROUGHLY_EQUAL,
    Count,
    Filter,
    Form,
    Measure,
    Position,
    Predicate,
    Spread,
    Unit,
    WordClass,
    canonical,
)
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import labels_through, parse_number, relation_before

__all__ = ["refine_pieces_english"]

#: Piece nouns (lemmas) a predicate may be said of, each one.
_PIECES: Mapping[str, Unit] = {**EN_PIECES, "entry": Unit.BULLETS}
_OPENING = frozenset({"start", "begin", "open", "lead", "preface", "prefix", "introduce", "precede"})
#: Opening verbs said in the passive, with "by" ("each line introduced by a tilde", "preceded by an arrow").
_BY_OPENING = frozenset({"introduce", "precede", "preface", "prefix", "lead"})
_ENDING = frozenset({"end", "finish", "close", "conclude"})
_PHRASAL_OPENING = frozenset({"kick", "lead", "start", "set"})
_MARK_NAMES: Mapping[str, str] = {"question": "?", "exclamation": "!", "period": ".", "colon": ":",
                                  "semicolon": ";", "ellipsis": "...", "dash": "-", "hyphen": "-", "asterisk": "*"}


def _sentence(ctx: Context, i: int) -> tuple[int, int]:
    sent = ctx.tokens[i].sent
    return sent.start, sent.end


def _add(ctx: Context, form: Form, start: int, end: int, confidence: float = 0.85) -> None:
    kind, params = canonical(form)
    ctx.add(kind, params, start, end, confidence=confidence)


def _every_piece(ctx: Context, start: int, end: int) -> tuple[Unit, int] | None:
    """The piece a quantifier names in the sentence ("every sentence", "each list item", "all bullet points")."""
    for j in range(start, end - 1):
        if ctx.lowers[j] not in EN_EVERY:
            continue
        k = j + 1
        while k < end and ctx.lowers[k] in ("of", "the", "your", "list", "bulleted", "bullet", "single") \
                and ctx.lemmas[k] not in ("sentence", "paragraph", "line", "item", "point", "entry") \
                and not (ctx.lemmas[k] == "bullet" and ctx.lemmas[k + 1 : k + 2] != ["point"]):
            k += 1
        if k < end and ctx.lemmas[k] in _PIECES:
            return _PIECES[ctx.lemmas[k]], k
        anaphor = ctx.lowers[j + 1 : j + 3] in (["one", "of"], ["of", "them"], ["of", "these"], ["of", "those"])
        if ctx.lowers[j] == "each" and (k >= end or ctx.lowers[k] in ("one", "of")
                                        or ctx.tokens[k].pos_ not in ("NOUN", "PROPN", "ADJ")) or anaphor:
            # ("every one of them", "all of them": the pieces named before, as "each one" says)
            # "5 bullet points, each one starting with ...", "three lines, each of them ...": the pieces named before
            back = next((x for x in [*range(j - 1, start - 1, -1), *range(k, end)] if ctx.lemmas[x] in _PIECES), None)
            if back is not None:  # (or named after it: "four chores, each one ..., as bullet points")
                return _PIECES[ctx.lemmas[back]], back
    return None


def _value_after_with(ctx: Context, verb: int, end: int) -> tuple[str, int] | None:
    """The text after the predicate's "with": a quote, a mark's name, or a bare symbol or word; (text, end char)."""
    with_i = next((x for x in range(verb + 1, end) if ctx.lowers[x] == "with"
                   or ctx.lowers[x] == "by" and ctx.lemmas[verb] in _BY_OPENING and x == verb + 1), None)
    if with_i is None:
        return None
    j = with_i + 1
    article = False
    while j < end and ctx.lowers[j] in ("a", "an", "the", "word", "phrase", "exact", "text", "mark", "symbol", ":"):
        article = article or ctx.lowers[j] in ("a", "an")
        j += 1
    if j >= end:
        return None
    named = _named_quote(ctx, j, end)
    if named is not None:
        return named
    token = ctx.tokens[j]
    quoted = _QUOTED.match(ctx.text, token.idx)
    if quoted is not None:
        return next(g for g in quoted.groups() if g is not None), quoted.end()
    if ctx.lowers[j] in _MARK_NAMES:
        return _MARK_NAMES[ctx.lowers[j]], token.idx + len(token.text)
    if ctx.lemmas[j] in ("emoji", "number", "digit", "capital", "verb", "noun", "question", "letter"):
        return None  # a kind of opening, not a text to write
    if token.is_punct and token.text in ".,;":
        return None
    if article and token.pos_ in ("NOUN", "ADJ") and not token.text[:1].isupper():
        # "with an arrow (->)": a common noun names a kind of text; the mark after it in parentheses is the text
        last = j
        while last + 1 < end and ctx.tokens[last + 1].pos_ in ("NOUN", "PROPN") and ctx.tokens[last + 1].text.isalpha():
            last += 1  # "a plus sign (+)": the noun's compound
        shown = _PARENTHESISED_MARK.match(ctx.text, ctx.tokens[last].idx + len(ctx.tokens[last].text))
        return (shown.group(1), shown.end()) if shown is not None else None
    return token.text.strip("\"'“”‘’"), token.idx + len(token.text)


def _named_quote(ctx: Context, j: int, end: int) -> tuple[str, int] | None:
    """The quoted text a noun phrase at token ``j`` names in apposition: "the words 'See you soon.'", "the
    sign-off "Cheers"", "this exact sentence: 'Over.'" (the quote is the text, never the noun naming it);
    (text, end char), or None when no quote follows the nouns directly."""
    last = j
    while last < end and last - j < 3 and ctx.tokens[last].pos_ in ("NOUN", "PROPN", "ADJ") \
            and not _QUOTED.match(ctx.text, ctx.tokens[last].idx):
        last += 1
    if last == j:
        return None
    after = ctx.tokens[last - 1].idx + len(ctx.tokens[last - 1].text)
    quoted = _QUOTED_AFTER.match(ctx.text, after)
    if quoted is None:
        return None
    return next(g for g in quoted.groups() if g is not None), quoted.end()


#: A quote right after a naming noun, a colon or a space between them.
_QUOTED_AFTER = re.compile(r"\s*:?\s*(?:" + _QUOTED.pattern + ")")


#: A mark shown in parentheses right after the noun naming it ("an arrow (->)", "a tilde (~)").
_PARENTHESISED_MARK = re.compile(r"\s*\(\s*([^\w\s()]{1,4})\s*\)")


#: Words naming a class of openings (lemmas; "capital" / "lowercase" before "letter" or alone).
_CLASS_WORDS: Mapping[str, WordClass] = {"emoji": "emoji", "emojis": "emoji", "emoticon": "emoji",
                                         "capital": "capital", "uppercase": "capital", "upper": "capital",
                                         "lowercase": "lowercase", "lower": "lowercase", "small": "lowercase",
                                         "number": "number", "digit": "number", "numeral": "number",
                                         "verb": "verb", "imperative": "verb"}


def _class_after_with(ctx: Context, verb: int, end: int) -> tuple[WordClass, int] | None:
    """The class an opening names after the predicate's "with" ("with an emoji", "with a capital
    letter", "with an action verb"); (class, end char). A mark's name or a quoted text is no class."""
    with_i = next((x for x in range(verb + 1, end) if ctx.lowers[x] == "with"), None)
    if with_i is None:
        return None
    j = with_i + 1
    while j < end and (ctx.lowers[j] in ("a", "an", "the", "one", "single", "its", "their", "action", "strong")
                       or ctx.tokens[j].pos_ == "ADJ" and ctx.lemmas[j] not in _CLASS_WORDS):
        j += 1  # "with a relevant emoji", "with a strong verb"
    if j >= end:
        return None
    word_class = _CLASS_WORDS.get(ctx.lemmas[j]) or _CLASS_WORDS.get(ctx.lowers[j])
    if word_class is None and j + 1 < end and ctx.tokens[j].tag_ in ("VBN", "JJ", "VBG"):
        j += 1  # "with a bolded verb"
        word_class = _CLASS_WORDS.get(ctx.lemmas[j]) or _CLASS_WORDS.get(ctx.lowers[j])
    if word_class is None:
        return None
    last = j
    if word_class in ("capital", "lowercase"):
        if ctx.lowers[j] in ("upper", "lower") and j + 1 < end and ctx.lowers[j + 1] in ("case", "-"):
            last = j + 1 + (ctx.lowers[j + 1] == "-")
        if last + 1 < end and ctx.lemmas[last + 1] in ("letter", "character"):
            last += 1
        elif ctx.lowers[j] in ("small", "upper", "lower"):
            return None  # "with a small gift": no letter named
    return word_class, ctx.tokens[last].idx + len(ctx.tokens[last].text)


_OTHER_CASE: Mapping[str, WordClass] = {"capital": "lowercase", "lowercase": "capital"}


def _any_piece(ctx: Context, start: int, end: int) -> tuple[Unit, int] | None:
    """The piece "any" / "a single" names under a negation ("don't start any sentence with ...")."""
    for j in range(start, end - 1):
        if ctx.lowers[j] in ("any", "a") and ctx.lemmas[j + 1] in _PIECES:
            return _PIECES[ctx.lemmas[j + 1]], j + 1
    return None


def _classed_whole(ctx: Context, verb: int, start: int, end: int) -> tuple[Unit, int] | None:
    """The answer or every word as what opens with a class ("start your answer with a capital
    letter": the answer; "each word should start with a capital letter": every word)."""
    for j in range(start, end):
        if ctx.lowers[j] in EN_EVERY and j + 1 < end and ctx.lemmas[j + 1] == "word":
            return Unit.WORDS, j + 1
    for j in range(start, min(end, verb + 4)):
        if ctx.lemmas[j] in EN_ANSWER_NOUNS and ctx.lowers[j - 1 : j] in (["your"], ["the"], ["my"]):
            return Unit.ANSWER, j
    return None


_EDGE_NOUNS: Mapping[str, Predicate] = {"beginning": "starts_with", "start": "starts_with", "front": "starts_with",
                                        "head": "starts_with", "end": "ends_with", "close": "ends_with"}


def _detect_class_at_edge(ctx: Context) -> None:
    """"Put an emoji at the beginning of every line", "use a capital letter at the start of each sentence",
    "every bullet point must be preceded by an emoji": an opening (closing) of every piece by a class; a
    named mark there ("a period at the end of every line") is that mark closing (opening) each piece."""
    if not (_EDGE_NOUNS.keys() | {"precede"}) & set(ctx.lemmas):
        return
    for i, lemma in enumerate(ctx.lemmas):
        word_class = _CLASS_WORDS.get(lemma) or _CLASS_WORDS.get(ctx.lowers[i])
        mark = _MARK_NAMES.get(lemma) if word_class is None else None
        if (word_class is None and mark is None) or ctx.tokens[i].pos_ not in ("NOUN", "PROPN", "ADJ"):
            continue
        start, end = _sentence(ctx, i)
        op: Predicate | None = None
        piece: tuple[Unit, int] | None = None
        for j in range(i + 1, min(end, i + 5)):
            if ctx.lowers[j] == "at" and j + 2 < end and ctx.lemmas[j + 2] in _EDGE_NOUNS \
                    and ctx.lowers[j + 1] == "the" and ctx.lowers[j + 3 : j + 4] == ["of"]:
                op, piece = _EDGE_NOUNS[ctx.lemmas[j + 2]], _every_piece(ctx, j + 4, end)
                break
        if piece is None and i >= 2 and ctx.lowers[i - 1] in ("a", "an", "one") and ctx.lowers[i - 2] == "by" \
                and any(ctx.lemmas[x] == "precede" for x in range(start, i)):
            op, piece = "starts_with", _every_piece(ctx, start, i)
        if piece is None or op is None or _negated(ctx, i) or (word_class == "verb" and op != "starts_with"):
            continue
        if word_class in ("capital", "lowercase") and ctx.lemmas[i + 1 : i + 2] not in (["letter"], ["character"]):
            continue
        first, last = ctx.doc[start:end].start_char, ctx.doc[start:end].end_char
        if mark is not None:  # "put a period at the end of every line": the mark closing (opening) each piece
            if any(f.kind in (Kind.WRAP, Kind.POSITION) and overlaps(f, first, last) for f in ctx.found):
                continue
            if op == "ends_with":
                ctx.add(Kind.WRAP, {"left": "", "right": mark, "unit": piece[0].value}, first, last, confidence=0.85)
            else:
                _add(ctx, Position(unit=piece[0], k=0, op="starts_with", text=mark), first, last)
            continue
        assert word_class is not None
        ctx.found = [f for f in ctx.found if not (overlaps(f, first, last) and (
            f.kind in (Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE, Kind.POSITION, Kind.START_PHRASE, Kind.END_PHRASE)
            or f.kind is Kind.COUNT and f.params.get("per") is not None
            or f.kind is Kind.STRUCTURE and f.params == {"layout": "list"}))]
        _add(ctx, Position(unit=piece[0], k=0, op=op, text="", word_class=word_class), first, last)


def _detect_first_letter_case(ctx: Context) -> None:
    """"The first letter of every sentence must be uppercase", "capitalize the first letter of each line":
    every piece opening with a letter of that case (not the whole answer in capitals)."""
    if not {"first", "initial", "opening"}.intersection(ctx.lowers):
        return
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in ("letter", "character", "word") or i == 0 \
                or ctx.lowers[i - 1] not in ("first", "initial", "opening"):
            continue
        start, end = _sentence(ctx, i)
        piece = _every_piece(ctx, i + 1, end)
        if piece is None or ctx.lowers[i + 1 : i + 2] != ["of"]:
            continue
        cased = {ctx.lowers[j] for j in range(start, end)}
        word_class: WordClass | None = "capital" if cased & EN_UPPER_SAID else "lowercase" if cased & EN_LOWER_SAID else None
        if word_class is None or _negated(ctx, i):
            continue
        first, last = ctx.doc[start:end].start_char, ctx.doc[start:end].end_char
        ctx.found = [f for f in ctx.found if not (overlaps(f, first, last) and f.kind in (
            Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE, Kind.CAPITAL_WORD_FREQUENCY, Kind.POSITION, Kind.LETTER_FREQUENCY))]
        _add(ctx, Position(unit=piece[0], k=0, op="starts_with", text="", word_class=word_class), first, last)


def _detect_every_piece(ctx: Context) -> None:
    """"Every sentence must begin with 'Today'", "end each paragraph with 'Over.'", "start every list item with ✅";
    "begin each bullet with an emoji", "every sentence starts with a capital letter" (a class of openings)."""
    for i, lemma in enumerate(ctx.lemmas):
        if lemma in _PHRASAL_OPENING and ctx.lowers[i + 1 : i + 2] == ["off"]:
            lemma = "start"  # "kick off every bullet with ...", "lead off each line with ..."
        if lemma not in _OPENING | _ENDING:
            continue
        start, end = _sentence(ctx, i)
        if ctx.tokens[i].pos_ not in ("VERB", "AUX") and i != start \
                and not (ctx.tokens[i].pos_ == "ADJ" and ctx.lowers[i + 1 : i + 2] == ["with"]):
            continue  # "the end of each line": a noun; the imperative opening the sentence may be tagged one
            # ("make every line open with a number": the tagger may read "open" as an adjective)
        piece = _every_piece(ctx, start, end)
        op = "starts_with" if lemma in _OPENING else "ends_with"
        classed = _class_after_with(ctx, i, end)
        if piece is None and classed is not None:
            piece = _classed_whole(ctx, i, start, end)  # "start your answer with a capital letter", "each word ..."
        negated = _negated(ctx, i)
        if negated and classed is not None and classed[0] in _OTHER_CASE:
            # "don't start any sentence with a lowercase letter": every sentence opens with the other case
            piece = piece or _any_piece(ctx, start, end)
            classed, negated = (_OTHER_CASE[classed[0]], classed[1]), False
        if piece is None or negated:
            continue
        if classed is not None:
            word_class, last_char = classed
            first = ctx.tokens[start].idx
            ctx.found = [f for f in ctx.found if not (overlaps(f, first, last_char) and (
                f.kind in (Kind.END_PHRASE, Kind.START_PHRASE, Kind.KEYWORDS_PRESENT, Kind.POSITION,
                           Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE, Kind.LETTER_FREQUENCY)
                or f.kind is Kind.COUNT and (f.params.get("per") is not None or f.params.get("unit") == piece[0].value)
                or f.kind is Kind.STRUCTURE and f.params == {"layout": "list"}))]
            k = 1 if piece[0] is Unit.ANSWER else 0
            form = Position(unit=piece[0], k=k, op=op, text="", word_class=word_class)  # type: ignore[arg-type]
            _add(ctx, form, first, last_char)
            continue
        value = _value_after_with(ctx, i, end)
        if value is None or not value[0].strip():
            continue
        unit, _at = piece
        first, last = ctx.tokens[start].idx, max(value[1], ctx.tokens[i].idx + len(ctx.tokens[i].text))
        text = value[0].strip()
        if op == "ends_with" and len(text) <= 3 and not any(ch.isalnum() for ch in text):
            # a mark closing each piece: a wrapper with nothing on its left, as the end-mark reader writes it
            if any(f.kind is Kind.WRAP and overlaps(f, first, last) for f in ctx.found):
                continue
            # an ending of the answer read from the same predicate ("end with a semicolon") is this mark on the
            # last piece: implied by the wrapper, not a text of its own
            ctx.found = [f for f in ctx.found if not (f.kind is Kind.END_PHRASE
                                                      and overlaps(f, ctx.tokens[i].idx, value[1]))]
            ctx.add(Kind.WRAP, {"left": "", "right": text, "unit": unit.value}, first, last, confidence=0.85)
        else:
            ctx.found = [f for f in ctx.found if not (
                f.kind in (Kind.END_PHRASE, Kind.START_PHRASE, Kind.KEYWORDS_PRESENT, Kind.POSITION)
                and overlaps(f, first, last))]
            _add(ctx, Position(unit=unit, k=0, op=op, text=text), first, last)  # type: ignore[arg-type]
        ctx.found = [f for f in ctx.found if not (
            f.kind is Kind.COUNT and f.params.get("per") is not None and f.params.get("relation") == "at least"
            and int(f.params.get("n", 0)) == 1 and overlaps(f, first, last))]


def _noun_after(ctx: Context, j: int, end: int) -> str | None:
    """The lemma of the first noun after the quantifier at ``j`` ("every single word", "all of the words")."""
    return next((ctx.lemmas[k] for k in range(j + 1, end) if ctx.tokens[k].pos_ in ("NOUN", "PROPN")), None)


def _detect_every_word_opening(ctx: Context) -> None:
    """"Every word must start with the letter s", "all words begin with s", "each word starting with T".

    A named letter opening every word of the answer is its position in
    every word (a text-less "starts with" of each word is no such reading:
    the letter must be named, alone or after "letter").
    """
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in _OPENING or ctx.tokens[i].pos_ not in ("VERB", "AUX"):
            continue
        start, end = _sentence(ctx, i)
        quantifier = next((j for j in range(max(start, i - 8), i - 1) if ctx.lowers[j] in EN_EVERY
                           and _noun_after(ctx, j, i) == "word"), None)
        if quantifier is None or _negated(ctx, i) or ctx.lowers[i + 1 : i + 2] != ["with"]:
            continue
        j = i + 2
        while j < end and (ctx.lowers[j] in ("a", "an", "the", "letter", "character") or ctx.tokens[j].is_quote):
            j += 1
        if j >= end:
            continue
        letter = ctx.tokens[j].text.strip("\"'“”‘’").removesuffix(".")  # ("s." is one token at a sentence end)
        if not (len(letter) == 1 and letter.isalpha()):
            continue
        first, last = ctx.tokens[quantifier].idx, ctx.tokens[j].idx + len(ctx.tokens[j].text)
        ctx.found = [f for f in ctx.found if not (
            f.kind in (Kind.START_PHRASE, Kind.KEYWORDS_PRESENT, Kind.POSITION, Kind.LETTER_FREQUENCY)
            and overlaps(f, first, last))]
        _add(ctx, Position(unit=Unit.WORDS, k=0, op="starts_with", text=letter.lower()), first, last)


_FRACTIONS: Mapping[str, float] = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fourth": 0.25, "fifth": 0.2,
                                   "tenth": 0.1, "majority": 0.5, "most": 0.5, "all": 1.0}
_SHARE_MARKS: Mapping[str, str] = {"question": "?", "exclamation": "!"}


def _share_before(ctx: Context, of_i: int, start: int) -> tuple[float, Relation, int] | None:
    """The share written before "of the sentences": "half", "a third", "two thirds", "30%", "30 percent", "most"."""
    j = of_i - 1
    if j < start:
        return None
    word = ctx.lemmas[j]
    fraction: float | None = None
    first = j
    if ctx.tokens[j].text == "%" or word in ("percent", "per cent"):
        number = _number_at(ctx.doc, j - 1)
        if number is not None:
            fraction, first = number[0] / 100, number[1]
    elif word in _FRACTIONS:
        fraction = _FRACTIONS[word]
        number = _number_at(ctx.doc, j - 1) if j - 1 >= start else None
        if number is not None and word in ("third", "quarter", "fourth", "fifth", "tenth"):
            fraction, first = fraction * number[0], number[1]
        elif j - 1 >= start and ctx.lowers[j - 1] in ("a", "one", "the"):
            first = j - 1
    else:
        match = re.fullmatch(r"(\d+)%", ctx.tokens[j].text)
        if match is not None:
            fraction = int(match.group(1)) / 100
    if fraction is None or not 0 < fraction <= 1:
        return None
    before = relation_before(ctx.lowers[max(start, first - 4) : first])
    relation = before[0] if before is not None else Relation.AT_LEAST
    if word in ("majority", "most") and before is None:
        relation = Relation.MORE_THAN
    return fraction, relation, first - (before[1] if before is not None else 0)


def _detect_question_share(ctx: Context) -> None:
    """"At least half of the sentences must be questions", "30% of your sentences should end with a question mark"."""
    for i, lemma in enumerate(ctx.lemmas):
        if lemma != "sentence" or i < 2:
            continue
        start, end = _sentence(ctx, i)
        of_i = next((j for j in range(i - 1, max(start, i - 3) - 1, -1) if ctx.lowers[j] == "of"), None)
        if of_i is None:
            continue
        share = _share_before(ctx, of_i, start)
        if share is None:
            continue
        mark = next((_SHARE_MARKS[ctx.lemmas[j]] for j in range(i + 1, end) if ctx.lemmas[j] in _SHARE_MARKS), None)
        if mark is None:
            continue
        fraction, relation, first = share
        begin, finish = ctx.tokens[first].idx, ctx.doc[start:end].end_char
        ctx.found = [f for f in ctx.found if not overlaps(f, begin, finish)]
        form = Count(unit=Unit.SENTENCES, filter=Filter(ends_with=mark), relation=relation, n=0,
                     of=Measure(unit=Unit.SENTENCES), fraction=round(fraction, 4))
        _add(ctx, form, begin, finish)


_BOLD = frozenset({"bold", "boldface", "embolden", "bolded"})
#: Nouns a number counts that are no marked-up things ("3 times", "5 sections").
_NOT_MARKED = frozenset({"time", "sentence", "paragraph", "section", "part", "line", "bullet", "point", "item",
                         "highlight", "placeholder"})
_SINGLE_ASTERISKS = re.compile(r"(?<!\*)\*[^*\s][^*\n]*\*(?!\*)")


def _stated_number(ctx: Context, start: int, end: int) -> tuple[Relation, int] | None:
    """A count of things in the sentence: a number before a noun that is no piece of the answer."""
    for j in range(start, end):
        number = _number_at(ctx.doc, j)
        if number is None or (j + 1 < end and _number_at(ctx.doc, j + 1) is not None):
            continue
        value, first, last = number
        noun = next((x for x in range(last + 1, min(end, last + 4)) if ctx.tokens[x].pos_ in ("NOUN", "PROPN")), None)
        if noun is None or ctx.lemmas[noun] in EN_ANSWER_NOUNS or ctx.lemmas[noun] in _NOT_MARKED:
            continue  # "5 sections", "3 times": a count of something else
        before = relation_before(ctx.lowers[max(start, first - 4) : first])
        if (ctx.lemmas[noun],) in EN_UNITS and before is not None and before[0] is not Relation.EXACTLY:
            continue  # "at least 800 words": the answer's length, not marked words
        return (before[0] if before is not None else Relation.EXACTLY), value
    return None


_BOLD_NOUNS = frozenset({"text", "font", "type", "face", "formatting", "format", "letter", "print", "style", "markdown"})


def _formatting(ctx: Context, i: int) -> bool:
    """Whether "bold" at ``i`` names the text's weight ("in bold", "bold the names", "bold text"), not boldness."""
    if ctx.lowers[i] != "bold":
        return True  # boldface, embolden, bolded
    prev = ctx.lowers[i - 1] if i > 0 else ""
    nxt = ctx.lemmas[i + 1] if i + 1 < len(ctx.tokens) else ""
    token = ctx.tokens[i]
    return prev in ("in", "use", "using", "with", "as") or nxt in _BOLD_NOUNS or token.pos_ == "VERB" \
        or (token.i == token.sent.start and token.pos_ != "ADJ") or token.dep_ in ("dobj", "pobj")


def _detect_bold(ctx: Context) -> None:
    """"Put the key term in bold", "use bold for exactly three terms", "do not use bold": ``**`` spans."""
    done: set[int] = set()
    for i, lemma in enumerate(ctx.lemmas):
        if (lemma not in _BOLD and ctx.lowers[i] not in _BOLD) or not _formatting(ctx, i):
            continue
        start, end = _sentence(ctx, i)
        sentence = ctx.doc[start:end]
        if start in done or _SINGLE_ASTERISKS.search(ctx.text) or re.search(r"\bitalic", sentence.text, re.IGNORECASE):
            continue  # single asterisks shown or italics asked: IFEval's highlights, which count bold as well
        done.add(start)
        stated = next(((Relation(str(f.params.get("relation", Relation.AT_LEAST))), int(f.params["n"]))
                       for f in ctx.found if f.kind is Kind.HIGHLIGHTED_SECTIONS
                       and overlaps(f, sentence.start_char, sentence.end_char)), None)
        ctx.found = [f for f in ctx.found if not (
            f.kind is Kind.HIGHLIGHTED_SECTIONS and overlaps(f, sentence.start_char, sentence.end_char))]
        if _negated(ctx, i):
            relation, n = Relation.AT_MOST, 0
        else:
            counted = _stated_number(ctx, start, end)
            relation, n = counted if counted is not None else (
                (Relation.AT_LEAST, stated[1]) if stated is not None else (Relation.AT_LEAST, 1))
        form = Count(unit=Unit.SPANS, filter=Filter(left="**", right="**", nonempty=True), relation=relation, n=n)
        _add(ctx, form, sentence.start_char, sentence.end_char)


#: Nouns naming the marks a span is written between.
_MARK_NOUNS = frozenset({"bracket", "parenthesis", "parentheses", "brace", "quote", "quotation"})


def _counted_in_marks(ctx: Context, start: int, end: int) -> tuple[Relation, int] | None:
    """"Add exactly three notes in square brackets": the number of the noun the marks hold ("in" + the
    marks' noun hangs on it), with the relation said before it; None when the marks hold no counted noun."""
    for j in range(start, end):
        token = ctx.tokens[j]
        if ctx.lemmas[j] not in _MARK_NOUNS or token.dep_ != "pobj" or token.head.lower_ not in ("in", "inside",
                                                                                                "within", "between"):
            continue
        held = token.head.head
        if held.pos_ == "VERB":  # "add three notes in brackets": the marks hang on the verb, its object is held
            objects = [c for c in held.children if c.dep_ == "dobj"]
            held = objects[0] if len(objects) == 1 else held
        if held.pos_ not in ("NOUN", "PROPN"):
            continue
        numbers = [c for h in (held, *(c for c in held.children if c.dep_ == "poss")) for c in h.children
                   if c.dep_ == "nummod"]  # ("two editor's notes": the number hangs on the possessive)
        value = parse_number([numbers[0].text]) if len(numbers) == 1 else None
        if value is None or value <= 0:
            continue
        before = relation_before(ctx.lowers[max(start, numbers[0].i - 4) : numbers[0].i])
        return (before[0] if before is not None else Relation.EXACTLY), value
    return None


def _detect_quoted_counts(ctx: Context) -> None:
    """"Put three phrases in double quotes", "add exactly two asides in square brackets": a count of the
    spans between the marks, not the whole answer wrapped in them."""
    kept: list[Found] = []
    added: list[tuple[Form, int, int]] = []
    for f in ctx.found:
        pair = ('"', '"') if f.kind is Kind.QUOTATION else (str(f.params.get("left")), str(f.params.get("right"))) \
            if f.kind is Kind.WRAP and f.params.get("unit", "answer") == "answer" and f.params.get("left") else None
        if pair is None:
            kept.append(f)
            continue
        span = ctx.doc.char_span(f.start, f.end, alignment_mode="expand")
        if span is None or not len(span):
            kept.append(f)
            continue
        start, end = span[0].sent.start, span[0].sent.end
        if f.kind is Kind.WRAP:
            counted = _counted_in_marks(ctx, start, end)
        else:
            whole = any(ctx.lemmas[j] in EN_ANSWER_NOUNS or ctx.lowers[j] in ("entire", "whole")
                        for j in range(start, end))
            counted = None if whole else _stated_number(ctx, start, end)
        if counted is None:
            kept.append(f)
            continue
        form = Count(unit=Unit.SPANS, filter=Filter(left=pair[0], right=pair[1], nonempty=True), relation=counted[0],
                     n=counted[1])
        added.append((form, f.start, f.end))
    ctx.found = kept
    for quoted, start, end in added:
        _add(ctx, quoted, start, end)


_BRACKETS = re.compile(r"【】|《》|〈〉|「」|『』|〔〕|\[\]|<<>>|\(\)|（）|\{\}")


def _detect_bracketed_title(ctx: Context) -> None:
    """"Put a title in 【】 on the first line": a span between the brackets shown, not a count of lines."""
    for match in _BRACKETS.finditer(ctx.text):
        pair = match.group(0)
        if pair == "<<>>":
            continue  # IFEval's title, read by its own detector
        half = len(pair) // 2
        left, right = pair[:half], pair[half:]
        at = next((t.i for t in ctx.tokens if t.idx <= match.start() < t.idx + len(t.text)), None)
        if at is None:
            continue
        start, end = _sentence(ctx, at)
        if not any(ctx.lemmas[j] in ("title", "heading", "headline", "name") for j in range(start, end)):
            continue
        sentence = ctx.doc[start:end]
        ctx.found = [f for f in ctx.found if not overlaps(f, sentence.start_char, sentence.end_char)]
        form = Count(unit=Unit.SPANS, filter=Filter(left=left, right=right, nonempty=True), relation=Relation.AT_LEAST,
                     n=1)
        _add(ctx, form, sentence.start_char, sentence.end_char)


_ANSWER_VERBS = frozenset({"answer", "reply", "respond", "choose", "pick", "select", "give", "return", "say"})


def _detect_verdict(ctx: Context) -> None:
    """"Answer with one word: yes, no or maybe", "reply with a single word, either 'approve' or 'reject'"."""
    for i, lemma in enumerate(ctx.lemmas):
        if lemma != "word" or i < 1 or ctx.lowers[i - 1] not in ("one", "single") or ctx.lowers[i] != "word":
            continue
        start, end = _sentence(ctx, i)
        if not any(ctx.lemmas[j] in _ANSWER_VERBS for j in range(start, i)):
            continue
        if any(f.kind is Kind.CONSTRAINED_RESPONSE for f in ctx.found):
            return
        j = i + 1
        while j < end and ctx.lowers[j] in (":", ",", "-", "—", "either", "from", "of", "(", "only", "choosing",
                                            "chosen", "among"):
            j += 1
        if j >= end:
            continue
        sentence_end = ctx.doc[start:end].end_char
        options, last_char = _quoted_list(ctx, ctx.tokens[j].idx, sentence_end)
        if len(options) < 2:
            options, last_char = _bare_options(ctx, j, end)
        if len(options) < 2:
            continue
        ctx.found = [f for f in ctx.found if not (
            f.kind in (Kind.KEYWORDS_PRESENT, Kind.WORD_COUNT) and overlaps(f, ctx.tokens[start].idx, sentence_end))]
        ctx.add(Kind.CONSTRAINED_RESPONSE, {"options": options}, ctx.tokens[start].idx, last_char, confidence=0.85)
        return


def _bare_options(ctx: Context, j: int, end: int) -> tuple[list[str], int]:
    """Unquoted options "yes, no or maybe" from token ``j``: single words joined by commas and one "or"."""
    options: list[str] = []
    last_char = ctx.tokens[j].idx
    while j < end:
        token = ctx.tokens[j]
        if token.text in (",", "/") or ctx.lowers[j] == "or":
            j += 1
            continue
        if token.is_punct or not token.is_alpha:
            break
        options.append(token.text)
        last_char = token.idx + len(token.text)
        j += 1
        if j < end and ctx.tokens[j].text not in (",", "/") and ctx.lowers[j] != "or":
            break
    return options, last_char


_BETWEEN_PIECES = ("any other", "each other", "one another", "the others", "the other ones", "the shortest",
                   "the longest", "every other", "another", "give or take", "the rest", "as long as")
_ALIKE = frozenset({"same", "equal", "similar", "comparable", "uniform", "consistent", "balanced", "even", "equally",
                    "similarly", "evenly"})
_LENGTH_WORDS = frozenset({"longer", "shorter", "length", "long", "differ", "difference", "size", "lengthy"})
_SPREAD_UNITS: Mapping[str, Unit] = {"word": Unit.WORDS, "character": Unit.CHARACTERS, "letter": Unit.LETTERS,
                                     "char": Unit.CHARACTERS}
"""``max_ratio`` of "roughly equal in length" with no number: the longest at most half as long again as the shortest."""


def _spread_number(ctx: Context, start: int, end: int) -> tuple[int, Unit | None] | None:
    """The most difference a sentence allows, and the unit it counts: "more than four words longer" (4),
    "differ by less than 5 words" (4), "give or take three words" (3), "within 20 words of each other" (20)."""
    for j in range(start, end):
        number = _number_at(ctx.doc, j)
        if number is None or (j + 1 < end and _number_at(ctx.doc, j + 1) is not None):
            continue
        value, first, last = number
        unit = next((_SPREAD_UNITS[ctx.lemmas[x]] for x in range(last + 1, min(end, last + 3))
                     if ctx.lemmas[x] in _SPREAD_UNITS), None)
        before = relation_before(ctx.lowers[max(start, first - 4) : first])
        lead = first - (before[1] if before is not None else 0) - 1
        if unit is None and not (lead >= start and ctx.lowers[lead] in ("take", "by", "within", "exceed")):
            continue  # "write 3 paragraphs of equal length": the number counts the pieces
        if before is not None and before[0] is Relation.LESS_THAN and not _negated(ctx, first):
            value -= 1
        return value, unit
    return None


def _detect_spread(ctx: Context) -> None:
    """Lengths compared between pieces: ``spread(unit, per, max_diff | max_ratio)``.

    "No sentence more than four words longer than any other" (``max_diff`` 4
    words), "lines should not differ in length by more than ten characters",
    "keep the paragraphs roughly equal in length" (no number: ``max_ratio``
    1.5). The counts the number readers took from such a sentence ("at most 4
    words per sentence") bound each piece instead, and are dropped.
    """
    text = " ".join(ctx.lowers)
    if not any(w in text for w in _BETWEEN_PIECES) and not any(w in _ALIKE for w in ctx.lowers) \
            and "differ" not in text and "var" not in text:
        return
    for sent in ctx.doc.sents:
        lowers = [t.lower_ for t in sent]
        lowered = " ".join(lowers)
        between = any(w in lowered for w in _BETWEEN_PIECES) or any(t.lemma_.lower() in ("differ", "vary") for t in sent)
        alike = any(w in _ALIKE for w in lowers) or "as long as the" in lowered  # "about as long as the others"
        if not (between or alike):
            continue
        piece = next((_PIECES[t.lemma_.lower()] for t in sent if t.lemma_.lower() in _PIECES), None)
        if piece is None:
            continue
        number = _spread_number(ctx, sent.start, sent.end)
        lengths = any(t.lower_ in _LENGTH_WORDS or t.lemma_.lower() in _LENGTH_WORDS for t in sent)
        if not lengths and not (between and number is not None and number[1] is not None):
            continue  # "within 20 words of the others" compares lengths without the word "length"
        if number is None and not alike and not (between and {"longer", "shorter"} & set(lowers)):
            continue  # ("no bullet point much longer than the rest": balanced, with no number)
        ctx.found = [f for f in ctx.found if not (f.kind is Kind.STRUCTURE and f.params == {"layout": "no_list"}
                                                  and overlaps(f, sent.start_char, sent.end_char))]  # "no bullet point is longer"
        named = next((_SPREAD_UNITS[t.lemma_.lower()] for t in sent if t.lemma_.lower() in _SPREAD_UNITS), None)
        unit = (number[1] if number is not None else None) or named or Unit.WORDS
        if number is not None:
            value = number[0]
            ctx.found = [f for f in ctx.found if not (
                overlaps(f, sent.start_char, sent.end_char) and int(f.params.get("n", -1)) in (value, value + 1)
                and (f.kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT)
                     or (f.kind is Kind.COUNT and f.params.get("unit") in ("words", "characters", "letters"))))]
            form = Spread(unit=unit, per=piece, max_diff=value)
        else:
            form = Spread(unit=unit, per=piece, max_ratio=ROUGHLY_EQUAL)
        _add(ctx, form, sent.start_char, sent.end_char)


_LABEL = re.compile(r"(?<![\w*#])([A-Z][A-Za-z]{2,})\s?(X|N|#|\{N\}|\d{1,2})(?![\w.]*\d)")
_LABEL_LEADS = frozenset({"with", "as", "labelled", "labeled", "titled", "named", "called", "like", "e.g.", "by",
                          "using", "headed", "marked", "numbered", "tagged", "sections", "parts"})
_LABELLING = frozenset({"mark", "label", "title", "head", "number", "start", "begin", "open", "name", "call",
                        "prefix", "introduce", "precede", "lead", "tag"})


def _detect_labelled_sections(ctx: Context) -> None:
    """Pieces opened by a numbered label ("mark each advertisement with Audience 1 and Audience 2",
    "sections labelled Step 1, Step 2 and Step 3", "each starting with Part N:"): sections of that marker.

    The number of sections is the highest label shown, else the exact number
    of the pieces the sentence labels ("two advertisements ... each
    advertisement"); a prompt whose count of sections gave them already is
    left as it is.
    """
    if ctx.has(Kind.SECTIONS) or _LABEL.search(ctx.text) is None:
        return
    sents = list(ctx.doc.sents)
    for index, sent in enumerate(sents):
        labels = list(_LABEL.finditer(ctx.text, sent.start_char, sent.end_char))
        if not labels:
            continue
        words = {m.group(1) for m in labels}
        if len(words) != 1:
            continue
        word = words.pop()
        if word.lower() in EN_EVERY or any(ctx.lemmas[t.i] == word.lower() and t.pos_ == "VERB" for t in sent):
            continue
        wrapped = sents[index - 1] if index and not re.search(r"[.!?:;]\s*$", sents[index - 1].text) else None
        if not any(t.lemma_.lower() in _LABELLING for t in sent) and not (
                wrapped is not None and any(t.lemma_.lower() in _LABELLING for t in wrapped)):
            continue  # (a sentence broken by a line break reads on from the line before)
        lead = ctx.text[sent.start_char : labels[0].start()].rstrip(" \"'“‘(").split()
        if not lead or lead[-1].lower().strip(",:") not in _LABEL_LEADS:
            continue  # "compare Model 1 and Model 2": things named, not labels given to the pieces
        shown = [int(m.group(2)) for m in labels if m.group(2).isdigit()]
        n = labels_through(shown)
        if n is None and shown:
            continue  # "Mark it with Version 3": one label, no sequence
        if n is None:
            n = _labelled_pieces(ctx, sent.start, sent.end)
        if n is None:
            continue
        ctx.add(Kind.SECTIONS, {"splitter": word, "n": n}, sent.start_char, sent.end_char, confidence=0.8)
        return


def _labelled_pieces(ctx: Context, start: int, end: int) -> int | None:
    """The number of the pieces "each <noun>" names in the sentence, counted anywhere in the prompt."""
    noun = next((ctx.lemmas[j + 1] for j in range(start, end - 1) if ctx.lowers[j] in EN_EVERY
                 and ctx.tokens[j + 1].pos_ == "NOUN"), None)
    return None if noun is None else _counted(ctx, noun)


_JSON_ARRAY = re.compile(r"\bJSON\s+(?:array|list)\b|\barray\s+(?:in|of)\s+JSON\b", re.IGNORECASE)


def _detect_json_array(ctx: Context) -> None:
    """"Answer as a JSON array": JSON whose top level is an array (the schema the JSON grammar is built from)."""
    match = _JSON_ARRAY.search(ctx.text)
    if match is None or not any(f.kind is Kind.JSON_FORMAT and not f.params for f in ctx.found):
        return
    at = next(t.i for t in ctx.tokens if t.idx + len(t.text) > match.start())
    sentence = ctx.tokens[at].sent
    ctx.found = [f for f in ctx.found if not (f.kind is Kind.JSON_FORMAT and not f.params) and not (
        f.kind is Kind.STRUCTURE and overlaps(f, sentence.start_char, sentence.end_char))]  # the array is the list
    ctx.add(Kind.JSON_FORMAT, {"schema": {"type": "array"}}, match.start(), match.end(), confidence=0.85)


_BARE_KEYS = re.compile(r"[\w-]+(?:(?:\s*,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|\s*&\s*)[\w-]+)*")
_KEY_NOUNS = frozenset({"key", "field", "property", "attribute", "member"})
_KEY_LEADS = frozenset({":", "named", "called", "for", "of", "like", "such", "as", "-", "the", "following", "are", "is",
                        "include", "including", "containing", "be", "should", "must"})


def _quoted_before(ctx: Context, noun: int, floor: int) -> tuple[list[str], int] | None:
    """Quoted names chained right before the key noun ("'a' and 'b' fields"): (names, start char)."""
    chain: list[re.Match[str]] = []
    for match in _QUOTED.finditer(ctx.text, floor, ctx.tokens[noun].idx):
        if chain and not re.fullmatch(r"[\s,]*(?:and|or|&)?[\s,]*", ctx.text[chain[-1].end() : match.start()]):
            chain = []
        chain.append(match)
    if not chain or ctx.text[chain[-1].end() : ctx.tokens[noun].idx].strip():
        return None
    return [next(g for g in m.groups() if g is not None).strip() for m in chain], chain[0].start()


def _detect_json_keys(ctx: Context) -> None:
    """"A JSON object with keys name and role", "the fields 'title', 'year' and 'author'": ``json_format``
    with those ``keys`` (the object must hold each), read in the JSON sentence or the one after it."""
    plain = [f for f in ctx.found if f.kind is Kind.JSON_FORMAT and not f.params]
    if not plain:
        return
    json_at = next((t.i for t in ctx.tokens if t.idx >= plain[0].start), 0)
    sents = list(ctx.doc.sents)
    first = next((i for i, sent in enumerate(sents) if sent.start <= json_at < sent.end), 0)
    for sent in sents[first : first + 2]:
        for i in range(sent.start, sent.end):
            named = ctx.lemmas[i] in _KEY_NOUNS or ctx.lowers[i].removesuffix("s") in _KEY_NOUNS \
                or ctx.lowers[i] == "properties"  # the tagger may take "keys" for a proper noun
            if not named or ctx.tokens[i].pos_ not in ("NOUN", "PROPN"):
                continue
            before = _quoted_before(ctx, i, sent.start_char)
            if before is not None:  # "JSON containing 'a' and 'b' fields"
                keys, begin = before
                ctx.found = [f for f in ctx.found if not (f.kind is Kind.KEYWORDS_PRESENT
                                                          and overlaps(f, begin, ctx.tokens[i].idx))]
                ctx.found = [f for f in ctx.found if f not in plain]
                ctx.add(Kind.JSON_FORMAT, {"keys": keys}, min(plain[0].start, begin), max(plain[0].end, ctx.tokens[i].idx
                        + len(ctx.tokens[i].text)), confidence=0.85)
                return
            j = i + 1
            while j < sent.end and ctx.lowers[j] in _KEY_LEADS:
                j += 1
            colon = next((x for x in range(j, sent.end) if ctx.lowers[x] == ":"), None)
            if j < sent.end and ctx.lowers[j] in ("in", "to", "inside", "within", "into") and colon is not None:
                j = colon + 1  # "include the following keys in the JSON: name, age"
            if j >= sent.end:
                continue
            keys, last = _quoted_list(ctx, ctx.tokens[j].idx, sent.end_char)
            if not keys:
                # the written names, not the tokens ("id" is split as "i" "d")
                named_list = _BARE_KEYS.match(ctx.text, ctx.tokens[j].idx, sent.end_char)
                if named_list is not None:
                    keys = [k for k in re.split(r"\s*(?:,|\band\b|\bor\b|&)\s*", named_list.group(0)) if k]
                    last = named_list.end()
            if len(keys) < 1 or _negated(ctx, i):
                continue
            ctx.found = [f for f in ctx.found if f not in plain]
            ctx.add(Kind.JSON_FORMAT, {"keys": keys}, min(plain[0].start, ctx.tokens[i].idx),
                    max(plain[0].end, last), confidence=0.85)
            return


_BLANK = frozenset({"blank", "empty"})


def _detect_paragraph_separator(ctx: Context) -> None:
    """"A blank line between paragraphs", "separate the paragraphs with an empty line": how paragraphs are
    divided, not a count of lines; said alone, the answer has paragraphs (at least two) to divide."""
    if not _BLANK.intersection(ctx.lowers):
        return
    for sent in ctx.doc.sents:
        lemmas = [t.lemma_.lower() for t in sent]
        blank = any(t.lower_ in _BLANK and t.i + 1 < sent.end and ctx.lemmas[t.i + 1] == "line" for t in sent)
        if not blank or "paragraph" not in lemmas or not any(
                w in lemmas for w in ("between", "separate", "divide", "after", "split")):
            continue
        ctx.found = [f for f in ctx.found if not (
            overlaps(f, sent.start_char, sent.end_char) and f.kind is Kind.COUNT and f.params.get("unit") == "lines")]
        if not counts_paragraphs(ctx.found) and not _negated(ctx, sent.start):
            _add(ctx, Count(unit=Unit.PARAGRAPHS, relation=Relation.AT_LEAST, n=2), sent.start_char, sent.end_char)


_DETECTORS: Sequence[Callable[[Context], None]] = (
    _detect_json_keys,
    _detect_paragraph_separator,
    _detect_json_array,
    _detect_labelled_sections,
    _detect_every_piece,
    _detect_every_word_opening,
    _detect_class_at_edge,
    _detect_first_letter_case,
    _detect_question_share,
    _detect_bold,
    _detect_quoted_counts,
    _detect_bracketed_title,
    _detect_verdict,
    _detect_spread,
)


def refine_pieces_english(ctx: Context) -> None:
    """``ctx.found`` (the named and form readings so far) with the per-piece, share and markup readings."""
    for detector in _DETECTORS:
        detector(ctx)
