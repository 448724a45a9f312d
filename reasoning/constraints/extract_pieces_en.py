"""English requirements said of every piece, of a share of the pieces, or of marked-up spans.

Runs last inside :func:`~reasoning.constraints.extract_form_en.refine_english`,
after its counts, wraps, layouts, positions and structure, on the same parse,
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
  longer than any other"): the form has no spread, so the count a word
  count reader took from it is dropped and the sentence is reported as
  unrecognised.

Each reading keys on the parse (the governing verb, the quantifier over the
pieces, the noun a number counts) and the lexicon, never on one wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from reasoning.constraints.extract_en import _QUOTED, _Ctx, _negated, _number_at, _quoted_list
from reasoning.constraints.form import Count, Filter, Form, Measure, Position, Unit, canonical
from reasoning.constraints.found import Found
from reasoning.constraints.lexicon import EN_ANSWER_NOUNS, EN_UNITS
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import relation_before

__all__ = ["refine_pieces_english"]

#: Piece nouns (lemmas) a predicate may be said of, each one.
_PIECES: Mapping[str, Unit] = {"sentence": Unit.SENTENCES, "paragraph": Unit.PARAGRAPHS, "line": Unit.LINES,
                               "bullet": Unit.BULLETS, "item": Unit.BULLETS, "point": Unit.BULLETS,
                               "entry": Unit.BULLETS}
_EVERY = frozenset({"each", "every", "all"})
_OPENING = frozenset({"start", "begin", "open", "lead", "preface", "prefix"})
_ENDING = frozenset({"end", "finish", "close", "conclude"})
_MARK_NAMES: Mapping[str, str] = {"question": "?", "exclamation": "!", "period": ".", "colon": ":",
                                  "semicolon": ";", "ellipsis": "...", "dash": "-", "hyphen": "-", "asterisk": "*"}


def _sentence(ctx: _Ctx, i: int) -> tuple[int, int]:
    sent = ctx.tokens[i].sent
    return sent.start, sent.end


def _add(ctx: _Ctx, form: Form, start: int, end: int, confidence: float = 0.85) -> None:
    kind, params = canonical(form)
    ctx.add(kind, params, start, end, confidence=confidence)


def _overlaps(f: Found, start: int, end: int) -> bool:
    return f.start < end and start < f.end


def _every_piece(ctx: _Ctx, start: int, end: int) -> tuple[Unit, int] | None:
    """The piece a quantifier names in the sentence ("every sentence", "each list item", "all bullet points")."""
    for j in range(start, end - 1):
        if ctx.lowers[j] not in _EVERY:
            continue
        k = j + 1
        while k < end and ctx.lowers[k] in ("of", "the", "your", "list", "bulleted", "bullet", "single") \
                and ctx.lemmas[k] not in ("sentence", "paragraph", "line", "item", "point", "entry") \
                and not (ctx.lemmas[k] == "bullet" and ctx.lemmas[k + 1 : k + 2] != ["point"]):
            k += 1
        if k < end and ctx.lemmas[k] in _PIECES:
            return _PIECES[ctx.lemmas[k]], k
    return None


def _value_after_with(ctx: _Ctx, verb: int, end: int) -> tuple[str, int] | None:
    """The text after the predicate's "with": a quote, a mark's name, or a bare symbol or word; (text, end char)."""
    with_i = next((x for x in range(verb + 1, end) if ctx.lowers[x] == "with"), None)
    if with_i is None:
        return None
    j = with_i + 1
    while j < end and ctx.lowers[j] in ("a", "an", "the", "word", "phrase", "exact", "text", "mark", "symbol", ":"):
        j += 1
    if j >= end:
        return None
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
    return token.text.strip("\"'“”‘’"), token.idx + len(token.text)


def _detect_every_piece(ctx: _Ctx) -> None:
    """"Every sentence must begin with 'Today'", "end each paragraph with 'Over.'", "start every list item with ✅"."""
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in _OPENING | _ENDING:
            continue
        start, end = _sentence(ctx, i)
        if ctx.tokens[i].pos_ not in ("VERB", "AUX") and i != start:
            continue  # "the end of each line": a noun; the imperative opening the sentence may be tagged one
        piece = _every_piece(ctx, start, end)
        if piece is None or _negated(ctx, i):
            continue
        value = _value_after_with(ctx, i, end)
        if value is None or not value[0].strip():
            continue
        op = "starts_with" if lemma in _OPENING else "ends_with"
        unit, _at = piece
        first, last = ctx.tokens[start].idx, max(value[1], ctx.tokens[i].idx + len(ctx.tokens[i].text))
        text = value[0].strip()
        if op == "ends_with" and len(text) <= 3 and not any(ch.isalnum() for ch in text):
            # a mark closing each piece: a wrapper with nothing on its left, as the end-mark reader writes it
            if any(f.kind is Kind.WRAP and _overlaps(f, first, last) for f in ctx.found):
                continue
            ctx.add(Kind.WRAP, {"left": "", "right": text, "unit": unit.value}, first, last, confidence=0.85)
        else:
            ctx.found = [f for f in ctx.found if not (
                f.kind in (Kind.END_PHRASE, Kind.START_PHRASE, Kind.KEYWORDS_PRESENT, Kind.POSITION)
                and _overlaps(f, first, last))]
            _add(ctx, Position(unit=unit, k=0, op=op, text=text), first, last)  # type: ignore[arg-type]
        ctx.found = [f for f in ctx.found if not (
            f.kind is Kind.COUNT and f.params.get("per") is not None and f.params.get("relation") == "at least"
            and int(f.params.get("n", 0)) == 1 and _overlaps(f, first, last))]


_FRACTIONS: Mapping[str, float] = {"half": 0.5, "third": 1 / 3, "quarter": 0.25, "fourth": 0.25, "fifth": 0.2,
                                   "tenth": 0.1, "majority": 0.5, "most": 0.5, "all": 1.0}
_SHARE_MARKS: Mapping[str, str] = {"question": "?", "exclamation": "!"}


def _share_before(ctx: _Ctx, of_i: int, start: int) -> tuple[float, Relation, int] | None:
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


def _detect_question_share(ctx: _Ctx) -> None:
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
        ctx.found = [f for f in ctx.found if not _overlaps(f, begin, finish)]
        form = Count(unit=Unit.SENTENCES, filter=Filter(ends_with=mark), relation=relation, n=0,
                     of=Measure(unit=Unit.SENTENCES), fraction=round(fraction, 4))
        _add(ctx, form, begin, finish)


_BOLD = frozenset({"bold", "boldface", "embolden", "bolded"})
#: Nouns a number counts that are no marked-up things ("3 times", "5 sections").
_NOT_MARKED = frozenset({"time", "sentence", "paragraph", "section", "part", "line", "bullet", "point", "item",
                         "highlight", "placeholder"})
_SINGLE_ASTERISKS = re.compile(r"(?<!\*)\*[^*\s][^*\n]*\*(?!\*)")


def _stated_number(ctx: _Ctx, start: int, end: int) -> tuple[Relation, int] | None:
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


def _formatting(ctx: _Ctx, i: int) -> bool:
    """Whether "bold" at ``i`` names the text's weight ("in bold", "bold the names", "bold text"), not boldness."""
    if ctx.lowers[i] != "bold":
        return True  # boldface, embolden, bolded
    prev = ctx.lowers[i - 1] if i > 0 else ""
    nxt = ctx.lemmas[i + 1] if i + 1 < len(ctx.tokens) else ""
    token = ctx.tokens[i]
    return prev in ("in", "use", "using", "with", "as") or nxt in _BOLD_NOUNS or token.pos_ == "VERB" \
        or (token.i == token.sent.start and token.pos_ != "ADJ") or token.dep_ in ("dobj", "pobj")


def _detect_bold(ctx: _Ctx) -> None:
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
                       and _overlaps(f, sentence.start_char, sentence.end_char)), None)
        ctx.found = [f for f in ctx.found if not (
            f.kind is Kind.HIGHLIGHTED_SECTIONS and _overlaps(f, sentence.start_char, sentence.end_char))]
        if _negated(ctx, i):
            relation, n = Relation.AT_MOST, 0
        else:
            counted = _stated_number(ctx, start, end)
            relation, n = counted if counted is not None else (
                (Relation.AT_LEAST, stated[1]) if stated is not None else (Relation.AT_LEAST, 1))
        form = Count(unit=Unit.SPANS, filter=Filter(left="**", right="**", nonempty=True), relation=relation, n=n)
        _add(ctx, form, sentence.start_char, sentence.end_char)


def _detect_quoted_counts(ctx: _Ctx) -> None:
    """"Put three phrases in double quotes": a count of quoted spans, not the whole answer quoted."""
    kept: list[Found] = []
    added: list[tuple[Form, int, int]] = []
    for f in ctx.found:
        if f.kind is not Kind.QUOTATION:
            kept.append(f)
            continue
        span = ctx.doc.char_span(f.start, f.end, alignment_mode="expand")
        if span is None or not len(span):
            kept.append(f)
            continue
        start, end = span[0].sent.start, span[0].sent.end
        whole = any(ctx.lemmas[j] in EN_ANSWER_NOUNS or ctx.lowers[j] in ("entire", "whole") for j in range(start, end))
        counted = None if whole else _stated_number(ctx, start, end)
        if counted is None:
            kept.append(f)
            continue
        form = Count(unit=Unit.SPANS, filter=Filter(left='"', right='"', nonempty=True), relation=counted[0],
                     n=counted[1])
        added.append((form, f.start, f.end))
    ctx.found = kept
    for quoted, start, end in added:
        _add(ctx, quoted, start, end)


_BRACKETS = re.compile(r"【】|《》|〈〉|「」|『』|〔〕|\[\]|<<>>|\(\)|（）|\{\}")


def _detect_bracketed_title(ctx: _Ctx) -> None:
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
        ctx.found = [f for f in ctx.found if not _overlaps(f, sentence.start_char, sentence.end_char)]
        form = Count(unit=Unit.SPANS, filter=Filter(left=left, right=right, nonempty=True), relation=Relation.AT_LEAST,
                     n=1)
        _add(ctx, form, sentence.start_char, sentence.end_char)


_ANSWER_VERBS = frozenset({"answer", "reply", "respond", "choose", "pick", "select", "give", "return", "say"})


def _detect_verdict(ctx: _Ctx) -> None:
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
            f.kind in (Kind.KEYWORDS_PRESENT, Kind.WORD_COUNT) and _overlaps(f, ctx.tokens[start].idx, sentence_end))]
        ctx.add(Kind.CONSTRAINED_RESPONSE, {"options": options}, ctx.tokens[start].idx, last_char, confidence=0.85)
        return


def _bare_options(ctx: _Ctx, j: int, end: int) -> tuple[list[str], int]:
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
                   "the longest", "every other")


def _detect_spread(ctx: _Ctx) -> None:
    """Lengths compared between pieces ("no sentence more than four words longer than any other").

    The form has no spread of lengths: a count read from such a sentence
    would bound the whole answer instead, so counts there are dropped and the
    sentence is left to be reported as unrecognised.
    """
    text = " ".join(ctx.lowers)
    if not any(w in text for w in _BETWEEN_PIECES):
        return
    for sent in ctx.doc.sents:
        lowered = " ".join(t.lower_ for t in sent)
        if not any(w in lowered for w in _BETWEEN_PIECES):
            continue
        if not any(t.lemma_.lower() in _PIECES for t in sent) or not any(
                t.lower_ in ("longer", "shorter", "length", "long", "differ", "difference") for t in sent):
            continue
        ctx.found = [f for f in ctx.found if not (
            _overlaps(f, sent.start_char, sent.end_char)
            and (f.kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT)
                 or (f.kind is Kind.COUNT and f.params.get("unit") in ("words", "characters", "letters"))))]


_JSON_ARRAY = re.compile(r"\bJSON\s+(?:array|list)\b|\barray\s+(?:in|of)\s+JSON\b", re.IGNORECASE)


def _detect_json_array(ctx: _Ctx) -> None:
    """"Answer as a JSON array": JSON whose top level is an array (the schema the JSON grammar is built from)."""
    match = _JSON_ARRAY.search(ctx.text)
    if match is None or not any(f.kind is Kind.JSON_FORMAT and not f.params for f in ctx.found):
        return
    at = next(t.i for t in ctx.tokens if t.idx + len(t.text) > match.start())
    sentence = ctx.tokens[at].sent
    ctx.found = [f for f in ctx.found if not (f.kind is Kind.JSON_FORMAT and not f.params) and not (
        f.kind is Kind.STRUCTURE and _overlaps(f, sentence.start_char, sentence.end_char))]  # the array is the list
    ctx.add(Kind.JSON_FORMAT, {"schema": {"type": "array"}}, match.start(), match.end(), confidence=0.85)


_DETECTORS: Sequence[Callable[[_Ctx], None]] = (
    _detect_json_array,
    _detect_every_piece,
    _detect_question_share,
    _detect_bold,
    _detect_quoted_counts,
    _detect_bracketed_title,
    _detect_verdict,
    _detect_spread,
)


def refine_pieces_english(ctx: _Ctx) -> None:
    """``ctx.found`` (the named and form readings so far) with the per-piece, share and markup readings."""
    for detector in _DETECTORS:
        detector(ctx)
