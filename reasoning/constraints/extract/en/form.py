"""English requirements read onto the constraint form, from the parse and the lexicon.

Runs after the named-kind detectors of :mod:`reasoning.constraints.extract.en.named`, on the same
parse. A requirement is read as its parts: a unit term of
:data:`~reasoning.constraints.extract.lexicon.EN_UNITS` (its longest match of lemmas),
the quantity the typed parsers find around it, its polarity from the
dependency parse (a ``neg`` child of the governing verb, "no", "without",
"avoid"), and the modifiers the parse attaches to it: a relative or
participial clause ("words that start with b"), a per-item phrase ("in each
sentence", "every paragraph should ..."). Letter case, wrappers, layouts,
positions and changed copies are read the same way from their own lexicon
entries. Each reading becomes a form; :func:`~reasoning.constraints.form.canonical`
reports it as a named kind where one means exactly it ("no lowercase at
all" is ``all_capitals``), else as a generic kind.

A named-kind reading the form refines (a word count that holds per
sentence, a count of words with a filter, a symbol count read as a letter
frequency, a repetition asked with a change) is replaced, never doubled.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, TypeVar

from reasoning.constraints.extract.en.context import Context, Quantity
from reasoning.constraints.extract.en.named import _count_after, repeat_text
from reasoning.constraints.extract.en.phrases import (
    _QUOTED,
    _flip_if_negated,
    _negated,
    _number_at,
    _quantity_left,
    _quantity_right,
    relation_after_unit,
)
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import (
    EN_ANSWER_NOUNS,
    EN_CHANGE,
    EN_DELIMITERS,
    EN_EVERY,
    EN_LAYOUTS,
    EN_LOWER,
    EN_PER,
    EN_UNITS,
    EN_UPPER,
)
from reasoning.constraints.form import (
    Copy,
    Count,
    Filter,
    Form,
    Layout,
    Position,
    Structure,
    Unit,
    Wrap,
    canonical,
)
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ordinal, parse_number, relation_before

__all__ = [
    "detect_case",
    "detect_copies",
    "detect_elliptical_ranges",
    "detect_items_per_piece",
    "detect_keywords_per_item",
    "detect_layouts",
    "detect_positions",
    "detect_quoted_symbols",
    "detect_unit_counts",
    "detect_wraps",
]

T = TypeVar("T")

_NAMED_UNITS = frozenset({Unit.WORDS, Unit.SENTENCES, Unit.PARAGRAPHS})
#: Units a bound may hold for per sentence / paragraph / line ("at most 40 characters per line").
_PER_UNITS = frozenset({Unit.WORDS, Unit.SENTENCES, Unit.PUNCTUATION, Unit.EMOJI, Unit.CHARACTERS, Unit.NUMBERS,
                        Unit.DIGITS, Unit.LETTERS})
#: Words that make a bare number approximate ("about 50 words each"): no exact count.
_APPROXIMATE = frozenset({"about", "around", "roughly", "approximately", "circa", "~", "some", "nearly", "almost"})
#: Verbs whose object an item holds ("every sentence must contain / include / have a number").
_HOLDING_VERBS = frozenset({"contain", "include", "have", "feature", "use", "mention", "cite", "give", "carry", "hold"})
#: A bound denied of every item is its opposite for each ("no line longer than 40" is "at most 40").
_OPPOSITE: Mapping[Relation, Relation] = {Relation.MORE_THAN: Relation.AT_MOST, Relation.LESS_THAN: Relation.AT_LEAST,
                                          Relation.AT_LEAST: Relation.LESS_THAN, Relation.AT_MOST: Relation.MORE_THAN}
_BARE_EXACT = frozenset({Unit.LINES, Unit.EMOJI, Unit.PUNCTUATION, Unit.NESTED_BULLETS, Unit.UNIQUE_WORDS,
                         Unit.HEADINGS})
_GLOBAL = frozenset({"entire", "whole", "all", "only", "every", "exclusively", "solely", "throughout", "any",
                     "completely", "entirely", "fully", "everything", "nothing"})
_VERB_SENSES = frozenset({"figure", "number", "line", "period", "dash", "character", "letter", "word", "colon"})
_SKIP_INSIDE = frozenset({Kind.KEYWORDS_PRESENT, Kind.FORBIDDEN_WORDS, Kind.KEYWORD_FREQUENCY, Kind.END_PHRASE,
                          Kind.START_PHRASE, Kind.CAPITAL_WORD_FREQUENCY, Kind.TITLE, Kind.PLACEHOLDERS,
                          Kind.HIGHLIGHTED_SECTIONS, Kind.BULLET_COUNT, Kind.SECTIONS, Kind.PARAGRAPH_COUNT,
                          Kind.NTH_PARAGRAPH_FIRST_WORD, Kind.TWO_RESPONSES, Kind.REPEAT_PROMPT, Kind.POSTSCRIPT,
                          Kind.LETTER_FREQUENCY, Kind.QUOTATION, Kind.CONSTRAINED_RESPONSE, Kind.JSON_FORMAT})
_NEG_AFTER = frozenset({"forbidden", "prohibited", "banned", "disallowed"})


_Index = dict[str, list[tuple[tuple[str, ...], T]]]


def _index(table: Mapping[tuple[str, ...], T]) -> _Index[T]:
    """Terms by their first word, longest first: a token looks up only the terms it can start."""
    index: _Index[T] = {}
    for key, entry in sorted(table.items(), key=lambda item: -len(item[0])):
        index.setdefault(key[0], []).append((key, entry))
    return index


_UNIT_INDEX = _index(EN_UNITS)
_DELIMITER_INDEX = _index(EN_DELIMITERS)
_LAYOUT_INDEX = _index(EN_LAYOUTS)


def _term_at(ctx: Context, i: int, index: _Index[T]) -> tuple[int, T] | None:
    """The longest lexicon term starting at token ``i``: (tokens it spans, its entry)."""
    candidates = index.get(ctx.lemmas[i], []) + index.get(ctx.lowers[i], [])
    for key, entry in sorted(candidates, key=lambda item: -len(item[0])):
        n = len(key)
        if i + n <= len(ctx.tokens) and all(
            ctx.lemmas[i + k] == part or ctx.lowers[i + k] == part for k, part in enumerate(key)
        ):
            return n, entry
    return None


def _sentence(ctx: Context, i: int) -> tuple[int, int]:
    sent = ctx.tokens[i].sent
    return sent.start, sent.end


def _add_form(ctx: Context, form: Form, start: int, end: int, confidence: float = 0.85) -> None:
    kind, params = canonical(form)
    ctx.add(kind, params, start, end, confidence=confidence)


def _partitive(ctx: Context, first: int) -> Quantity | None:
    """"At least five of the words ...": the count written before "of (the / your)" and the unit."""
    j = first - 1
    while j > ctx.tokens[first].sent.start and ctx.lowers[j] in ("the", "your", "these", "those"):
        j -= 1
    if j <= ctx.tokens[first].sent.start or ctx.lowers[j] != "of":
        return None
    if ctx.lowers[j - 1] == "none":
        return Quantity(Relation.AT_MOST, 0, j - 1, j - 1)
    return _quantity_left(ctx, j)


def _written_as(ctx: Context, first: int) -> Quantity | None:
    """"Give at least four quantities as numbers": the count of the things written as the unit.

    Only for numbers, where "as numbers" / "in numerals" says how those
    things are written, so each is one number.
    """
    if first < 2 or ctx.lowers[first - 1] not in ("as", "in") or ctx.tokens[first - 2].pos_ != "NOUN":
        return None
    return _quantity_left(ctx, first - 2)


def _quantity(ctx: Context, first: int, head: int, unit: Unit | None = None) -> Quantity | None:
    quantity = _quantity_left(ctx, first) or _partitive(ctx, first)
    if quantity is None and unit is Unit.NUMBERS:
        quantity = _written_as(ctx, first)
    if quantity is None:
        quantity = _count_after(ctx, head + 1, limit=10)
    if quantity is None:
        quantity = _quantity_right(ctx, head, limit=12)
    return relation_after_unit(ctx, quantity, head) if quantity is not None else None


def _negated_here(ctx: Context, first: int, head: int) -> bool:
    """Polarity of the requirement whose term spans ``first..head``: the parse's, within its conjunct."""
    if _negated_in_conjunct(ctx, first, head):
        return True
    if first > 0 and ctx.lowers[first - 1] in ("no", "zero", "without"):
        return True
    after = ctx.lowers[head + 1 : head + 5]
    return any(w in _NEG_AFTER for w in after) or " ".join(after).startswith(("are not allowed", "is not allowed"))


def _negated_in_conjunct(ctx: Context, first: int, head: int) -> bool:
    """:func:`_negated`, but a negation in another conjunct ("avoid X and use Y") does not reach Y."""
    if not _negated(ctx, head):
        return False
    for j in range(first - 1, max(ctx.tokens[head].sent.start, first - 9) - 1, -1):
        if ctx.lowers[j] in ("and", "but", ";", ","):
            node = ctx.tokens[head]
            for _ in range(6):
                if any(c.dep_ == "neg" for c in node.children) or node.lemma_.lower() in ("avoid", "refrain") \
                        or node.lower_ == "without":
                    return node.i > j
                if node.head is node:
                    break
                node = node.head
            return False
        if ctx.lowers[j] in ("not", "n't", "never", "no", "without", "avoid") or ctx.lemmas[j] in ("avoid", "refrain"):
            return True
    return True


def _quoted_or_word(ctx: Context, j: int, stop: int) -> tuple[str, int] | None:
    """A quoted string or a bare word (or "the letter x") starting at token ``j``: (text, last char)."""
    while j < stop and ctx.lowers[j] in ("the", "a", "an", "letter", "word", "phrase", "character", ":", "exact"):
        j += 1
    if j >= stop:
        return None
    token = ctx.tokens[j]
    match = _QUOTED.match(ctx.text, token.idx)
    if match is not None:
        return next(g for g in match.groups() if g is not None), match.end()
    if token.is_punct and token.text not in ("?", "!", "."):
        return None
    if token.is_punct:
        return token.text, token.idx + len(token.text)
    return token.text.strip("\"'“”‘’.,;:!?"), token.idx + len(token.text)


_MODAL_AUX = frozenset({"must", "should", "will", "shall", "may", "can", "need", "have", "to", "all", "each", "do"})
_FILTER_VERBS: Mapping[str, str] = {"start": "starts_with", "begin": "starts_with", "end": "ends_with",
                                    "contain": "contains", "include": "contains", "have": "contains"}


def _word_filter(ctx: Context, head: int, stop: int) -> tuple[dict[str, Any], int] | None:
    """"words that start with b", "words beginning with 'th'", "words ending in -ing".

    The filter is the relative clause ("that / which ...") or the participle
    right after the unit word, as the parse attaches it; "contain" needs a
    quoted text or a named letter.
    """
    j = head + 1
    clause = next((c for c in ctx.tokens[head].children if c.dep_ == "relcl" and c.i > head), None)
    if j < stop and ctx.lowers[j] not in ("that", "which") and clause is not None and clause.lemma_ not in _FILTER_VERBS:
        # "the words you use must begin with 'w'": past the relative clause, the predicate is the filter
        j = max(t.i for t in clause.subtree) + 1
        while j < stop and ctx.lemmas[j] in ("all", "must", "should", "will", "each", "do", "have", "to", "need",
                                             "may", "can", "shall"):
            j += 1
        if not (j < stop and ctx.lemmas[j] in _FILTER_VERBS):
            return None
    elif j < stop and ctx.lowers[j] in ("that", "which"):
        j += 1
        while j < stop and ctx.lemmas[j] in ("all", "must", "should", "will", "each", "do"):
            j += 1
    elif j < stop and ctx.lemmas[j] in _MODAL_AUX:
        # "six of your words must begin with m": the predicate of the unit is the filter
        while j < stop and ctx.lemmas[j] in _MODAL_AUX:
            j += 1
        if not (j < stop and ctx.lemmas[j] in _FILTER_VERBS):
            return None
    elif not (j < stop and ctx.tokens[j].tag_ == "VBG"):
        return None
    if j >= stop:
        return None
    name = _FILTER_VERBS.get(ctx.lemmas[j])
    if name is None:
        return None
    if j + 1 < stop and ctx.lowers[j + 1] in ("with", "in"):
        found = _quoted_or_word(ctx, j + 2, stop)
    elif name == "contains" and j + 1 < stop and (ctx.tokens[j + 1].is_quote or ctx.lemmas[j + 1] in ("the", "letter")):
        found = _quoted_or_word(ctx, j + 1, stop)
    else:
        found = None
    if found is None:
        return None
    value = found[0].lstrip("-").lower()
    return ({name: value}, found[1]) if value else None


_PER_QUANTIFIERS = frozenset({"per", "each", "every", "no", "any"})


def _per_at(ctx: Context, unit: Unit, first: int, last: int) -> tuple[Unit, int] | None:
    """The item a count holds for and the quantifier's token ("in each sentence", "no paragraph may ...").

    "Each", "every", "per" and a quantifier over the items ("no paragraph
    may contain more than two sentences", "do not let any line run past 40
    characters") all make the bound hold for every item, not for the whole
    answer. "Any" counts only before the unit's quantity, as the subject or
    object the bound is said of ("any sentence", not "in any form").
    """
    start, end = _sentence(ctx, first)
    if last + 1 < end and ctx.lowers[last + 1] in ("each", "apiece"):
        # "five sentences, no more than ten words each": each of the items named before
        for j in range(first - 1, start - 1, -1):
            per = EN_PER.get(ctx.lemmas[j])
            if per is not None and per is not unit and ctx.tokens[j].tag_ == "NNS":
                return per, last + 1
    for j in range(last + 1, min(end - 2, last + 4)):
        # "never more than 12 words in a sentence": any one piece
        if ctx.lowers[j] in ("in", "within", "for") and ctx.lowers[j + 1] in ("a", "any", "one", "a single"):
            per = EN_PER.get(ctx.lemmas[j + 2])
            if per is not None and per is not unit:
                return per, j + 1
    for j in range(start, first):
        # "three bullet points, each no longer than ten words": "each" of the pieces named before the bound
        if ctx.lowers[j] == "each" and j > start and ctx.lowers[j - 1] == "," and EN_PER.get(ctx.lemmas[j + 1]) is None:
            named = next((EN_PER[ctx.lemmas[x]] for x in range(j - 2, start - 1, -1)
                          if ctx.lemmas[x] in EN_PER and ctx.tokens[x].tag_ == "NNS"), None)
            if named is not None and named is not unit:
                return named, j
    for j in range(start, first):
        # "lines must not be longer than 30 characters": a bare plural piece the bound is said of
        token = ctx.tokens[j]
        per = EN_PER.get(ctx.lemmas[j])
        if per is not None and per is not unit and token.tag_ == "NNS" and token.dep_ in ("nsubj", "nsubjpass") \
                and not any(c.dep_ in ("det", "nummod", "poss") and c.lower_ != "all" for c in token.children):
            return per, j
    for j in range(start, end - 1):
        low = ctx.lowers[j]
        if low in _PER_QUANTIFIERS | {"none", "all"} or (low == "a" and j > 0 and ctx.lowers[j - 1] == "per"):
            k = j + 1
            partitive = k + 1 < end and ctx.lowers[k] == "of" and ctx.lowers[k + 1] in ("the", "your", "its")
            if partitive:
                k += 2  # "each of your sentences", "none of the paragraphs"
            elif low in ("none", "all"):
                continue
            per = EN_PER.get(ctx.lemmas[k]) if k < end else None
            if per is None or per is unit or first <= j <= last:
                continue
            if low in ("no", "any") and (j > first or ctx.tokens[k].dep_ not in ("nsubj", "nsubjpass", "dobj", "pobj", "ROOT")):
                continue
            if low == "none" and j > first:
                continue
            return per, j
    return None


def _per(ctx: Context, unit: Unit, first: int, last: int) -> Unit | None:
    """The item a count holds for ("in each sentence", "every paragraph should have ...")."""
    found = _per_at(ctx, unit, first, last)
    return found[0] if found is not None else None


def _denied_for_every_item(ctx: Context, unit: Unit, first: int, last: int) -> bool:
    """"No paragraph may contain more than two sentences": the bound said of no item is its opposite for each."""
    found = _per_at(ctx, unit, first, last)
    return found is not None and ctx.lowers[found[1]] in ("no", "none")


def detect_unit_counts(ctx: Context) -> None:
    """Counts of every unit of the lexicon, with their filters and per-item scope."""
    i = 0
    while i < len(ctx.tokens):
        term = _term_at(ctx, i, _UNIT_INDEX)
        if term is None or ctx.tokens[i].is_quote:
            i += 1
            continue
        span, (unit, fields) = term
        first, head = i, i + span - 1
        i = head + 1
        if not _plausible_unit(ctx, first, head, unit):
            continue
        at = ctx.tokens[head].idx
        if any(f.start <= at < f.end and f.kind in _SKIP_INSIDE and not _symbol_count(f) for f in ctx.found):
            continue
        if unit is Unit.HASHTAGS and any(f.kind is Kind.COUNT and f.params.get("unit") == "hashtags"
                                         and f.start <= at < f.end for f in ctx.found):
            continue  # "include at least 4 hashtags": read by the symbol reader already
        _start_sent, stop = _sentence(ctx, head)
        quantity = _quantity(ctx, first, head, unit)
        if quantity is not None and _counts_another_unit(ctx, head, quantity, unit):
            continue  # "keep each line to at most 30 characters": the number counts characters, per line
        if quantity is None and unit in _PER_UNITS and first > 0 and ctx.lowers[first - 1] in ("a", "an") \
                and ctx.tokens[head].head.lemma_.lower() in _HOLDING_VERBS \
                and _per(ctx, unit, first, head) is not None and not _negated_here(ctx, first, head):
            quantity = Quantity(Relation.AT_LEAST, 1, first - 1, first - 1)  # "every sentence must contain a number"
        filter_fields = dict(fields)
        end_char = ctx.chars(head, head)[1]
        if unit is Unit.WORDS:
            word_filter = _word_filter(ctx, head, stop)
            if word_filter is not None:
                filter_fields.update(word_filter[0])
                end_char = max(end_char, word_filter[1])
                ctx.found = [f for f in ctx.found if not (
                    f.kind in (Kind.END_PHRASE, Kind.START_PHRASE, Kind.LETTER_FREQUENCY)
                    and overlaps(f, ctx.tokens[head].idx, end_char))]
        if unit is Unit.CHARACTERS and not fields and _spaces_left_out(ctx, _start_sent, stop):
            filter_fields["nonspace"] = True
        if unit is Unit.HEADINGS:
            level = _heading_level(ctx, first)
            if level is not None:
                filter_fields["marker"] = level[0]  # "three ### headings": headings of that level
                quantity = quantity or _quantity(ctx, level[1], head, unit)
            if quantity is not None and ctx.lowers[quantity.first] == "under" and quantity.high is None:
                # "organize it under two headings": beneath them, not fewer than two
                quantity = Quantity(None, quantity.n, quantity.first + 1, quantity.last)
        per_at = _per_at(ctx, unit, first, head) if unit in _PER_UNITS else None
        per = per_at[0] if per_at is not None else None
        each_named = per_at is not None and ctx.lowers[per_at[1]] == "each" and ctx.lowers[per_at[1] - 1] == ","
        if unit in _NAMED_UNITS and per is None and filter_fields == dict(fields) and not fields:
            continue
        bounds = _bounds(ctx, unit, first, head, quantity, filtered=filter_fields != dict(fields) or bool(fields))
        if not bounds:
            continue
        if per is not None and _denied_for_every_item(ctx, unit, first, head):
            bounds = [(_OPPOSITE.get(relation, relation), n) for relation, n in bounds]
        lo = min([first] + ([quantity.first] if quantity is not None else []))
        hi_char = max(end_char, ctx.chars(quantity.last, quantity.last)[1] if quantity is not None else 0)
        start = ctx.tokens[lo].idx
        _replace_refined(ctx, start, hi_char, unit, per)
        if unit is Unit.LETTERS and "case" in filter_fields and quantity is not None:
            ctx.found = [f for f in ctx.found if not (f.kind in (Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE)
                                                      and overlaps(f, start, hi_char))]  # a count of them, not the case
        if each_named:  # "three bullet points, each no longer than ten words": not the whole answer's length
            ctx.found = [f for f in ctx.found if not (f.kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT)
                                                      and overlaps(f, start, hi_char))]
        for relation, n in bounds:
            form = Count(unit=unit, filter=Filter(**filter_fields), relation=relation, n=n, per=per)
            _add_form(ctx, form, start, hi_char)


_ASKING_VERBS = frozenset({"use", "organize", "organise", "include", "add", "structure", "divide", "format", "write",
                           "split", "break", "group", "put", "give", "arrange", "separate", "start", "begin", "mark"})


def _asks_for(ctx: Context, head: int) -> bool:
    """Whether the sentence of ``head`` asks for it: an imperative or modal of writing, not a question about it."""
    sent = ctx.tokens[head].sent
    if sent.text.rstrip().endswith("?"):
        return False
    return sent.root.lemma_.lower() in _ASKING_VERBS or any(t.lower_ in ("must", "should") for t in sent)


def _heading_level(ctx: Context, first: int) -> tuple[str, int] | None:
    """The '#' run written just before a heading word ("### headings") and its first token, if any."""
    j = first - 1
    while j >= 0 and ctx.lowers[j] in ("(", ")", "markdown", "-", "style"):
        j -= 1
    marks = ""
    while j >= 0 and set(ctx.tokens[j].text) == {"#"}:
        marks = ctx.tokens[j].text + marks
        j -= 1
    return (marks, j + 1) if 1 <= len(marks) <= 6 else None


def _counts_another_unit(ctx: Context, head: int, quantity: Quantity, unit: Unit) -> bool:
    """Whether a quantity found after the unit word is followed by another unit word, whose count it is."""
    after = quantity.last + 1
    if quantity.last <= head or after >= len(ctx.tokens):
        return False
    term = _term_at(ctx, after, _UNIT_INDEX)
    return term is not None and term[1][0] is not unit


_LEAVING_OUT = frozenset({"exclude", "excluding", "without", "except", "ignore", "ignoring", "omit", "omitting",
                          "minus", "not", "non", "nonspace", "non-space", "non-whitespace"})


def _spaces_left_out(ctx: Context, start: int, stop: int) -> bool:
    """"Excluding spaces", "not counting spaces", "non-space characters": a character count without white space."""
    for j in range(start, stop):
        if ctx.lowers[j] in ("nonspace", "non-space", "non-whitespace"):
            return True
        if ctx.lemmas[j] in ("space", "whitespace") and any(
                ctx.lowers[k] in _LEAVING_OUT or ctx.lemmas[k] in _LEAVING_OUT for k in range(max(start, j - 3), j)):
            return True
    return False


def _plausible_unit(ctx: Context, first: int, head: int, unit: Unit) -> bool:
    nxt = ctx.lowers[head + 1] if head + 1 < len(ctx.tokens) else ""
    prev = ctx.lowers[first - 1] if first > 0 else ""
    if ctx.tokens[head].pos_ in ("VERB", "AUX", "ADP") and ctx.lemmas[head] in _VERB_SENSES:
        return False
    if unit is Unit.NUMBERS and (nxt == "of" or prev in ("phone", "page", "serial")):
        return False
    if unit is Unit.HEADINGS and any(ctx.lemmas[j] in ("table", "column", "row", "spreadsheet", "csv")
                                     for j in range(*_sentence(ctx, first))):
        return False  # a table's headings are its header cells
    after_of = ctx.lowers[head + 2] if head + 2 < len(ctx.tokens) else ""
    if unit is Unit.LINES and nxt == "of" and after_of in ("text", "prose", "poetry", "verse", "code", "dialogue"):
        return True
    if unit is Unit.LINES and (nxt in ("break", "breaks", "of", "spacing") or prev in ("first", "new", "blank", "empty", "last", "bottom", "subject", "opening", "punch", "tag")):
        return False
    if unit is Unit.PUNCTUATION and ctx.chars(first, head)[0] > 0 and nxt in ("of",) and ctx.lemmas[head] == "period":
        return False
    if unit is Unit.LETTERS and head > first and (ctx.lowers[first] in EN_UPPER or ctx.lowers[first] in EN_LOWER) \
            and any(_number_at(ctx.doc, j) is not None for j in range(max(0, first - 4), first)):
        return True  # "at least 5 capital letters": letters of a case, counted (a case alone is the case reader's)
    if unit is Unit.LETTERS:
        if prev in ("same", "different", "initial", "next", "first", "last") or any(
                w in ("longer", "shorter", "long") for w in ctx.lowers[max(0, first - 4) : first]):
            return False  # a property of words ("start with the same letter", "longer than 7 letters")
        window = ctx.lowers[max(0, first - 2) : head + 3]
        if any(w in EN_UPPER or w in EN_LOWER or w in ("case", "cover", "recommendation") for w in window):
            return False
        if head + 1 < len(ctx.tokens) and len(ctx.tokens[head + 1].text.strip("\"'“”‘’.,;:!?")) == 1:
            return False
    if unit is Unit.CHARACTERS and prev in ("chinese", "han", "main", "fictional", "three", "two") and nxt != "long":
        return prev in ("three", "two")
    return True


def _bounds(
    ctx: Context, unit: Unit, first: int, head: int, quantity: Quantity | None, *, filtered: bool = False
) -> list[tuple[Relation, int]]:
    if quantity is not None:
        pairs = quantity.bounds()
        approximate = quantity.first > 0 and ctx.lowers[quantity.first - 1] in _APPROXIMATE
        if not pairs and unit in _BARE_EXACT | _NAMED_UNITS and quantity.high is None and not approximate:
            pairs = [(Relation.EXACTLY, quantity.n)]
        return [(_flip_if_negated(ctx, first, rel), n) for rel, n in pairs]
    if unit is Unit.HEADINGS and not _negated_here(ctx, first, head) and _asks_for(ctx, head):
        return [(Relation.AT_LEAST, 1)]  # "organize the answer under ## headings"
    if _negated_here(ctx, first, head) and (unit not in _NAMED_UNITS or filtered):
        stop = ctx.tokens[head].sent.end
        if any(ctx.lowers[j] in ("before", "after", "until", "between") for j in range(head + 1, min(stop, head + 4))):
            return []
        return [(Relation.AT_MOST, 0)]
    return []


def _refinable(f: Found) -> bool:
    """A named reading the form may refine: a word or sentence count.

    A symbol counted as a "letter" ("6 or more exclamation marks '!'") keeps
    its letter_frequency reading, which verifies the same count.
    """
    return f.kind in (Kind.WORD_COUNT, Kind.SENTENCE_COUNT)


def _symbol_count(f: Found) -> bool:
    return f.kind is Kind.LETTER_FREQUENCY and not str(f.params.get("letter", "a")).isalpha()


def _replace_refined(ctx: Context, start: int, end: int, unit: Unit, per: Unit | None) -> None:
    """Drop the named readings the form reading refines (same requirement, coarser kind).

    Word and sentence counts give way only to a count of the same unit with a
    filter or a per-item scope (or to a count per sentence / paragraph);
    per line keeps both readings. A named mark's "letter frequency" ("at
    least three question marks") gives way to the count of that mark (the
    punctuation unit, in either width), which is what the words say.
    """
    def refined(f: Found) -> bool:
        if _symbol_count(f) and overlaps(f, start, end):
            return unit in (Unit.PUNCTUATION, Unit.CHARACTERS) or per is not None
        if not overlaps(f, start, end) or not _refinable(f):
            return False
        if per is Unit.LINES:
            return False
        counted = Unit.WORDS if f.kind is Kind.WORD_COUNT else Unit.SENTENCES
        return counted is unit or per is not None or (counted is Unit.WORDS and unit is Unit.UNIQUE_WORDS)

    ctx.found = [f for f in ctx.found if not refined(f)]


def _case_term(ctx: Context, i: int) -> str | None:
    """"upper" / "lower" when token ``i`` names a letter case; None otherwise."""
    low, lemma = ctx.lowers[i], ctx.lemmas[i]
    nxt = ctx.lowers[i + 1] if i + 1 < len(ctx.tokens) else ""
    if low in ("upper", "lower") and nxt in ("case", "-"):
        return low
    if low in ("capital", "block") and nxt not in ("letter", "letters", "case"):
        return None
    if low == "small":
        return "lower" if nxt in ("letter", "letters") else None
    if low in EN_UPPER or lemma in EN_UPPER:
        return "upper"
    if low in EN_LOWER or lemma in EN_LOWER:
        return "lower"
    if lemma in ("capitalize", "capitalise") and nxt in ("everything", "all", "every", "anything", "any"):
        return "upper"
    return None


def _about_some_words(ctx: Context, start: int, i: int) -> bool:
    """"Include some words in all capital letters": the case of some words, a capital-word count."""
    for j in range(max(start, i - 6), i):
        if ctx.lemmas[j] in ("word", "phrase") and not any(
                ctx.lowers[x] in ("every", "each", "all", "any", "single", "one") for x in range(max(start, j - 2), j)):
            return True
    return False


def detect_case(ctx: Context) -> None:
    """The whole answer in one letter case, read from case words, polarity and scope."""
    for i in range(len(ctx.tokens)):
        case = _case_term(ctx, i)
        if case is None:
            continue
        start, end = _sentence(ctx, i)
        sentence = ctx.doc[start:end]
        lowers = ctx.lowers[start:end]
        sent_chars = (sentence.start_char, sentence.end_char)
        if any(f.kind is Kind.CAPITAL_WORD_FREQUENCY and overlaps(f, *sent_chars) for f in ctx.found):
            continue
        window = ctx.lowers[max(start, i - 4) : min(end, i + 5)]
        if any(w in ("first", "initial", "start", "begin", "beginning", "title", "names", "name", "acronyms", "heading")
               for w in window):
            continue
        if not (any(w in _GLOBAL for w in lowers) or any(ctx.lemmas[j] in EN_ANSWER_NOUNS for j in range(start, end))
                or ctx.tokens[start].lemma_.lower() in ("write", "respond", "answer", "reply", "use", "type")):
            continue
        before = " ".join(ctx.lowers[start:i])
        if _about_some_words(ctx, start, i):
            continue
        if any(_number_at(ctx.doc, j) is not None for j in range(max(start, i - 3), i)) \
                and ctx.lemmas[i + 1 : i + 2] in (["letter"], ["character"]):
            continue  # "use at least 5 capital letters": a count of them, not the whole answer's case
        negated = _negated_here(ctx, i, i + (1 if ctx.lowers[i] in ("upper", "lower") else 0)) or any(
            phrase in before for phrase in ("not a single", "not one", "no single", "not even one"))
        upper = (case == "upper") != negated
        kind = Kind.ALL_CAPITALS if upper else Kind.ALL_LOWERCASE
        other = Kind.ALL_LOWERCASE if upper else Kind.ALL_CAPITALS
        ctx.found = [f for f in ctx.found if not (f.kind is other and overlaps(f, *sent_chars))]
        if any(f.kind is kind and overlaps(f, *sent_chars) for f in ctx.found):
            continue
        ctx.add(kind, {}, *ctx.chars(max(start, i - 3), min(end - 1, i + 2)), confidence=0.85)


def _wrap_target(ctx: Context, start: int, end: int) -> Unit | None:
    for j in range(start, end):
        if ctx.lowers[j] in EN_EVERY and j + 1 < end:
            per = {"sentence": Unit.SENTENCES, "line": Unit.LINES, "paragraph": Unit.PARAGRAPHS}.get(ctx.lemmas[j + 1])
            if per is not None:
                return per
    if any(ctx.lemmas[j] in EN_ANSWER_NOUNS and ctx.lowers[j] != "letter" for j in range(start, end)):
        return Unit.ANSWER
    return None


_WRAP_VERBS = frozenset({"wrap", "enclose", "put", "place", "surround", "write", "format", "contain", "box",
                         "bracket", "present", "give", "deliver", "return"})


def detect_wraps(ctx: Context) -> None:
    """"Wrap your entire answer in parentheses", "put each sentence in square brackets"."""
    i = 0
    while i < len(ctx.tokens):
        term = _term_at(ctx, i, _DELIMITER_INDEX)
        if term is None:
            i += 1
            continue
        span, (left, right) = term
        first, head = i, i + span - 1
        i = head + 1
        if span == 1 and ctx.lemmas[head] == "quote" and ctx.tokens[head].tag_ == "NN":
            continue  # "write a motivational quote": a quotation to write, not quotation marks
        start, end = _sentence(ctx, first)
        lemmas = ctx.lemmas[start:end]
        if any(w in ("placeholder", "title", "keyword", "word", "phrase", "name", "term", "letter") for w in lemmas) \
                and not any(w in ("entire", "whole") for w in lemmas):
            continue
        around = head + 1 < end and ctx.lowers[head + 1] in ("around", "round")
        if not around and not any(lemma in _WRAP_VERBS for lemma in lemmas) and not any(
                ctx.lowers[j] in ("in", "inside", "within", "between") for j in range(max(start, first - 3), first)):
            continue
        if _negated(ctx, head):
            continue
        target = _wrap_target(ctx, start, end)
        if target is None:
            _spans_count(ctx, left, right, start, end)
            continue
        if left == '"' and target is Unit.ANSWER and any(f.kind is Kind.QUOTATION for f in ctx.found):
            continue
        sentence = ctx.doc[start:end]
        _add_form(ctx, Wrap(left=left, right=right, unit=target), sentence.start_char, sentence.end_char)


def _spans_count(ctx: Context, left: str, right: str, start: int, end: int) -> None:
    """"Put at least two side comments in parentheses": a count of delimited spans, not the answer wrapped.

    Read only with a stated quantity in the sentence (a number with a
    comparison, or a bare number, which is exact).
    """
    for j in range(start, end):
        number = _number_at(ctx.doc, j)
        if number is None or (j + 1 < end and _number_at(ctx.doc, j + 1) is not None):
            continue
        value, first, _last = number
        before = relation_before(ctx.lowers[max(start, first - 4) : first])
        relation = before[0] if before is not None else Relation.EXACTLY
        lo = first - before[1] if before is not None else first
        sentence = ctx.doc[start:end]
        form = Count(unit=Unit.SPANS, filter=Filter(left=left, right=right, nonempty=True),
                     relation=_flip_if_negated(ctx, lo, relation), n=value)
        if any(f.kind is Kind.COUNT and f.params.get("unit") == "spans" and overlaps(f, sentence.start_char,
                                                                                         sentence.end_char)
               for f in ctx.found):
            return
        _add_form(ctx, form, sentence.start_char, sentence.end_char)
        return


_LAYOUT_VERBS = frozenset({"use", "format", "present", "organize", "organise", "structure", "write", "give",
                           "provide", "arrange", "show", "display", "put", "make", "create", "include", "lay",
                           "answer", "respond", "reply", "summarize", "summarise", "list", "break", "convert",
                           "turn", "transform", "reformat", "rewrite", "copy", "tabulate", "compile", "render"})


def detect_layouts(ctx: Context) -> None:
    """Tables, lists, nested and numbered lists, and "no bullet points"."""
    i = 0
    done: set[int] = set()
    while i < len(ctx.tokens):
        term = _term_at(ctx, i, _LAYOUT_INDEX)
        if term is None:
            i += 1
            continue
        span, layout = term
        first, head = i, i + span - 1
        i = head + 1
        start, end = _sentence(ctx, first)
        sentence = ctx.doc[start:end]
        chars = (sentence.start_char, sentence.end_char)
        negated = _negated_here(ctx, first, head)
        if negated and layout in (Layout.LIST, Layout.NUMBERED_LIST):
            if start not in done:
                done.add(start)
                _add_form(ctx, Structure(layout=Layout.NO_LIST), *chars)
            continue
        if negated or start in done:
            continue
        if layout is Layout.LIST and (ctx.lowers[first].startswith("sub") or ctx.lowers[max(0, first - 2) : first][:1] == ["sub"]):
            continue
        if layout is Layout.TABLE and (ctx.lowers[head + 1 : head + 3] == ["of", "contents"] or ctx.tokens[head].pos_ != "NOUN"):
            continue
        if layout is Layout.LIST and (
            any(f.kind in (Kind.BULLET_COUNT, Kind.CONSTRAINED_RESPONSE) and overlaps(f, *chars) for f in ctx.found)
            or ctx.lowers[head + 1 : head + 2] == ["of"] or _quantity_left(ctx, head) is not None
        ):
            continue
        if not any(ctx.lemmas[j] in _LAYOUT_VERBS or ctx.lowers[j] in ("as", "in", "into") for j in range(start, first)):
            continue
        done.add(start)
        n, columns = _layout_size(ctx, layout, head, end)
        if n is None and layout in (Layout.LIST, Layout.NUMBERED_LIST):
            listed = _listed_number(ctx, start, first, end)
            if listed is not None and layout is Layout.LIST:
                ctx.add(Kind.BULLET_COUNT, {"n": listed}, *chars)  # as "N bullet points" reads
                continue
            n = listed
        sub_items = _sub_items(ctx, chars) if layout is Layout.NESTED_LIST else None
        if layout is Layout.NESTED_LIST and n is not None and sub_items is None:
            _scale_per_item(ctx, n, chars)
        _add_form(ctx, Structure(layout=layout, n=n, columns=columns, sub_items=sub_items), *chars)


_ROW_WORDS = frozenset({"row"})
_COLUMN_WORDS = frozenset({"column"})
_NOT_ITEMS = frozenset({"word", "sentence", "paragraph", "character", "letter", "line", "time"})


def _exact_number(ctx: Context, j: int, floor: int) -> int | None:
    """The number ending at token ``j`` when it is exact (bare, "exactly", "only"), else None."""
    number = _number_at(ctx.doc, j)
    if number is None:
        return None
    value, first, _last = number
    before = relation_before(ctx.lowers[max(floor, first - 4) : first])
    return value if before is None or before[0] is Relation.EXACTLY else None


def _sub_items(ctx: Context, chars: tuple[int, int]) -> int | None:
    """"Three points, each with two sub-points": the exact count of sub-items under every item, its count dropped.

    Only an exact per-item count ("each with (exactly) two") is the nested
    list's ``sub_items``; a bound ("each with at least two") stays a count,
    scaled by the items (:func:`_scale_per_item`).
    """
    for f in ctx.found:
        if f.kind is Kind.COUNT and f.params.get("unit") == "nested_bullets" and overlaps(f, *chars) \
                and f.params.get("relation") == str(Relation.EXACTLY) \
                and re.search(r"\beach\b[^,.;]{0,12}$", ctx.text[chars[0] : f.start], re.IGNORECASE):
            ctx.found = [g for g in ctx.found if g is not f]
            return int(f.params["n"])
    return None


def _scale_per_item(ctx: Context, items: int, chars: tuple[int, int]) -> None:
    """"Three categories, each with at least two sub-items": the nested count holds per top item, so in all ``items`` times it."""
    scaled: list[Found] = []
    for f in ctx.found:
        if f.kind is Kind.COUNT and f.params.get("unit") == "nested_bullets" and overlaps(f, *chars) \
                and re.search(r"\beach\b[^,.;]{0,12}$", ctx.text[chars[0] : f.start], re.IGNORECASE):
            f = Found(kind=f.kind, params={**f.params, "n": int(f.params["n"]) * items}, start=f.start, end=f.end,
                      confidence=f.confidence, hardness=f.hardness)
        scaled.append(f)
    ctx.found = scaled


def _counted_noun(ctx: Context, j: int, stop: int) -> tuple[int, str] | None:
    """(value, noun lemma) of an exact number at ``j`` counting the noun after it ("exactly 10 possible names")."""
    if _number_at(ctx.doc, j) is None or (j + 1 < stop and _number_at(ctx.doc, j + 1) is not None):
        return None
    value = _exact_number(ctx, j, ctx.tokens[j].sent.start)
    noun = next((x for x in range(j + 1, min(stop, j + 4)) if ctx.tokens[x].pos_ == "NOUN"), None)
    if value is None or noun is None:
        return None
    while noun + 1 < stop and ctx.tokens[noun + 1].pos_ == "NOUN":
        noun += 1
    lemma = ctx.lemmas[noun]
    if lemma in _NOT_ITEMS or (lemma,) in EN_UNITS or lemma in _LIST_TERMS:
        return None
    return value, lemma


_LIST_TERMS = frozenset({"bullet", "point", "list", "item", "step", "section", "part", "row", "column", "table"})


def _listed_number(ctx: Context, start: int, first: int, end: int) -> int | None:
    """The number of things a list holds when the request counts them rather than the list's items.

    "Name exactly 3 names ... using markdown bullet points" (the number in the
    list's own sentence, before its term), and "List exactly 10 names. Put the
    names into bullet points" (an earlier sentence counts the noun that the
    list's sentence names with "the"). Only exact numbers of things that are
    no unit of text count.
    """
    for j in range(start, first):
        counted = _counted_noun(ctx, j, first)
        if counted is not None:
            return counted[0]
    named = {ctx.lemmas[x] for x in range(start + 1, end)
             if ctx.tokens[x].pos_ == "NOUN" and ctx.lowers[x - 1] in ("the", "these", "those", "all")}
    if not named:
        return None
    for j in range(start):
        counted = _counted_noun(ctx, j, ctx.tokens[j].sent.end)
        if counted is not None and counted[1] in named:
            return counted[0]
    return None


def _layout_size(ctx: Context, layout: Layout, head: int, end: int) -> tuple[int | None, int | None]:
    """(items or body rows, columns) a layout's sentence states exactly after its term.

    A table's "N (data / body) rows" and "N columns"; a list's "of / with N
    <items>" (any noun but a unit of text: "a numbered list of five tips",
    "with exactly eight entries"). A bound that is not exact gives none.
    """
    n: int | None = None
    columns: int | None = None
    for j in range(head + 1, end):
        if _number_at(ctx.doc, j) is None or (j + 1 < end and _number_at(ctx.doc, j + 1) is not None):
            continue
        if layout is Layout.TABLE:
            # "three data rows" (a compound; the tagger may read "rows" as a verb there)
            following = ctx.lemmas[j + 1 : min(end, j + 4)]
            if n is None and any(w in _ROW_WORDS for w in following[:2]):
                n = _exact_number(ctx, j, head + 1)
            elif columns is None and any(w in _COLUMN_WORDS for w in following[:2]):
                columns = _exact_number(ctx, j, head + 1)
            continue
        nxt = next((x for x in range(j + 1, min(end, j + 4)) if ctx.tokens[x].pos_ == "NOUN"), None)
        if nxt is None:
            continue
        while nxt + 1 < end and ctx.tokens[nxt + 1].pos_ == "NOUN":
            nxt += 1  # the head of a compound
        noun = ctx.lemmas[nxt]
        if layout is not Layout.NO_LIST and n is None and noun not in _NOT_ITEMS and any(
                ctx.lowers[x] in ("of", "with", "containing", "having", ":") for x in range(max(head + 1, j - 3), j)):
            n = _exact_number(ctx, j, head + 1)
    return n, columns


_POSITION_UNITS: Mapping[str, Unit] = {"word": Unit.WORDS, "sentence": Unit.SENTENCES,
                                       "paragraph": Unit.PARAGRAPHS, "line": Unit.LINES}
_PREDICATES: Mapping[str, str] = {"start": "starts_with", "begin": "starts_with", "open": "starts_with",
                                  "end": "ends_with", "finish": "ends_with", "close": "ends_with",
                                  "conclude": "ends_with"}
_PUNCT_NAMES: Mapping[str, str] = {"question": "?", "exclamation": "!", "period": ".", "colon": ":",
                                   "ellipsis": "...", "semicolon": ";"}


def _ordinal_at(ctx: Context, j: int) -> int | None:
    low = ctx.lowers[j]
    if low in ("last", "final", "closing"):
        before = [w for w in ctx.lowers[max(0, j - 5): j] if w != "-"]
        if before[-1:] == ["to"] and len(before) >= 2:  # "the next-to-last", "the third to last": from the end
            back = 2 if before[-2] == "next" else ordinal(before[-2])
            return -back if back is not None else None
        return -1
    if low == "opening":
        return 1
    value = ordinal(low)
    if value is not None and ctx.lowers[j + 2: j + 5] in (["from", "the", "end"], ["from", "the", "bottom"]):
        return -value  # "the third line from the end"
    return value


def _predicate_value(ctx: Context, j: int, stop: int) -> tuple[str, int] | None:
    """The text a position predicate names at token ``j``: a quote, a punctuation name, a word."""
    while j < stop and ctx.lowers[j] in ("a", "an", "the", "word", "phrase", "exact", "with", ":"):
        j += 1
    if j < stop and ctx.lowers[j] in _PUNCT_NAMES:
        return _PUNCT_NAMES[ctx.lowers[j]], ctx.chars(min(stop - 1, j + 1), min(stop - 1, j + 1))[1]
    return _quoted_or_word(ctx, j, stop)


def _value_after_unit(ctx: Context, unit_i: int, stop: int) -> tuple[str, int] | None:
    """The quoted text after "the fourth word [of your summary]" ("make the fourth word of it 'glass'")."""
    x = unit_i + 1
    if x < stop and ctx.lowers[x] == "of":
        noun = next((y for y in range(x + 1, min(stop, x + 5)) if ctx.lemmas[y] in EN_ANSWER_NOUNS
                     or ctx.lowers[y] == "it"), None)
        if noun is None:
            return None
        x = noun + 1
    if x >= stop or _QUOTED.match(ctx.text, ctx.tokens[x].idx) is None:
        return None
    return _quoted_or_word(ctx, x, stop)


def _subject_of_copula(ctx: Context, start: int, j: int) -> tuple[str, int] | None:
    """"The word 'because' must be the tenth word": the quoted subject of "be the <ordinal>"."""
    if j - 2 < start or ctx.lowers[j - 1] != "the" or ctx.lemmas[j - 2] != "be":
        return None
    before = ctx.text[ctx.tokens[start].idx : ctx.tokens[j - 2].idx]
    quoted = list(_QUOTED.finditer(before))
    if not quoted:
        return None
    text = next(g for g in quoted[-1].groups() if g is not None)
    return text, ctx.tokens[j - 2].idx


def _elliptical_piece(ctx: Context, j: int) -> tuple[Unit, int] | None:
    """The pieces an ordinal without its noun stands for ("write two paragraphs; the first must begin with
    'Yesterday'", "the last one ends with ..."): the plural piece named last before it in the sentence,
    and the token the ordinal's phrase ends at."""
    if j == 0 or ctx.lowers[j - 1] != "the":
        return None
    nxt = ctx.tokens[j + 1]
    if not (nxt.lower_ == "one" or nxt.pos_ in ("AUX", "VERB")):
        return None
    start, _stop = _sentence(ctx, j)
    for x in range(j - 2, start - 1, -1):
        unit = _POSITION_UNITS.get(ctx.lemmas[x])
        if unit is not None and ctx.tokens[x].tag_ == "NNS":
            return unit, j + 1 if nxt.lower_ == "one" else j
    return None


def detect_positions(ctx: Context) -> None:
    """"The third word must be 'river'", "start the last paragraph with 'Finally'"."""
    for j in range(len(ctx.tokens) - 1):
        k = _ordinal_at(ctx, j)
        if k is None:
            continue
        unit_i = j + 1
        unit = _POSITION_UNITS.get(ctx.lemmas[unit_i])
        elliptical = None
        if unit is None:
            elliptical = _elliptical_piece(ctx, j)  # "two paragraphs; the first must begin with ..."
            if elliptical is None:
                continue
            unit, unit_i = elliptical
        start, stop = _sentence(ctx, j)
        if any(ctx.lowers[x] in ("each", "every") for x in range(max(start, j - 3), j)) or \
                any(ctx.lowers[x] in ("each", "every") for x in range(unit_i + 1, min(stop, unit_i + 4))):
            continue
        op: str | None = None
        value: tuple[str, int] | None = None
        verb = next((x for x in range(start, j) if ctx.lemmas[x] in _PREDICATES), None)
        if verb is not None:
            with_i = next((x for x in range(unit_i + 1, stop) if ctx.lowers[x] == "with"), None)
            if with_i is not None:
                op, value = _PREDICATES[ctx.lemmas[verb]], _predicate_value(ctx, with_i + 1, stop)
        for x in range(unit_i + 1, min(stop, unit_i + 10)):
            if op is not None:
                break
            if ctx.lemmas[x] in _PREDICATES and x + 1 < stop and ctx.lowers[x + 1] in ("with", "in"):
                op, value = _PREDICATES[ctx.lemmas[x]], _predicate_value(ctx, x + 2, stop)
            elif elliptical is None and ctx.lemmas[x] in ("be", "read") and x + 1 < stop \
                    and ctx.lowers[x + 1] not in ("in", "at", "a", "an", "written", "about", "no", "shorter", "longer", "under", "over"):
                op, value = "is", _predicate_value(ctx, x + 1, stop)
        if op is None and elliptical is not None:
            continue  # an ordinal without its noun: only an opening or ending said of it
        if op is None:
            make = next((x for x in range(start, j) if ctx.lemmas[x] in ("make", "use", "put", "place")), None)
            if make is not None:
                value = _predicate_value(ctx, make + 1, j) or _value_after_unit(ctx, unit_i, stop)
                op = "is" if value is not None else None
        if op is None:
            value = _subject_of_copula(ctx, start, j)
            op = "is" if value is not None else None
            if value is not None:  # the word at its position is present: no separate keyword reading
                subject = value[0].lower()
                ctx.found = [f for f in ctx.found if not (
                    f.kind is Kind.KEYWORDS_PRESENT and [str(w).lower() for w in f.params.get("keywords", [])] == [subject]
                    and ctx.tokens[start].idx <= f.start < value[1])]
        if op is None or value is None or not value[0].strip():
            continue
        if op == "is" and unit is not Unit.WORDS:
            op = "is" if len(value[0].split()) > 1 else "starts_with"
        first_char = ctx.tokens[min(j, verb) if verb is not None else j].idx
        end_char = max(value[1], ctx.chars(unit_i, unit_i)[1])
        phrases = (Kind.END_PHRASE, Kind.START_PHRASE)
        if any(f.kind is Kind.NTH_PARAGRAPH_FIRST_WORD and overlaps(f, first_char, end_char) for f in ctx.found):
            continue
        if op == "is" or unit is Unit.WORDS:
            if any(f.kind in phrases and overlaps(f, first_char, end_char) for f in ctx.found):
                continue
        else:
            ctx.found = [f for f in ctx.found if not (f.kind in phrases and overlaps(f, first_char, end_char))]
        _add_form(ctx, Position(unit=unit, k=k, op=op, text=value[0]), first_char, end_char)  # type: ignore[arg-type]


def _changed(ctx: Context, start: int, end: int) -> bool:
    span = ctx.doc.char_span(start, end, alignment_mode="expand")
    if span is None:
        return False
    sentence_tokens = range(span[0].sent.start, span[-1].sent.end) if len(span) else range(0)
    lowers = [ctx.lowers[t] for t in sentence_tokens]
    text = " ".join(lowers)
    if any(p in text for p in ("without change", "without changing", "without any change", "word for word",
                               "verbatim", "unchanged", "exactly as", "no change", "not change", "n't change")):
        return False
    return any(ctx.lemmas[t] in EN_CHANGE or ctx.lowers[t] in EN_CHANGE for t in sentence_tokens)


_Q = r"[\"“'‘](?P<{0}>[^\"”'’\n]{{1,60}})[\"”'’]"
_SWAPS = (
    (re.compile(r"\b(?:replace|replacing|swap|swapping|change|changing|switch|switching)\s+(?:the\s+(?:word|phrase|term)\s+)?"
                + _Q.format("old") + r"\s+(?:with|by|for|to|into)\s+(?:the\s+(?:word|phrase|term)\s+)?" + _Q.format("new"),
                re.IGNORECASE)),
    (re.compile(r"\b(?:substitute|substituting|use|using|write|writing|put|putting)\s+(?:the\s+(?:word|phrase|term)\s+)?"
                + _Q.format("new") + r"\s+(?:for|instead\s+of|in\s+place\s+of)\s+(?:the\s+(?:word|phrase|term)\s+)?"
                + _Q.format("old"), re.IGNORECASE)),
)
_LABEL = re.compile(r"^(?:question|request|prompt|task|query|instruction)\s*[:：]\s*", re.IGNORECASE)


def _stated_swaps(ctx: Context) -> tuple[tuple[tuple[str, str], ...], list[tuple[int, int]]]:
    """The (old, new) word swaps the prompt states for a changed copy, and where it states them."""
    pairs: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    for pattern in _SWAPS:
        for match in pattern.finditer(ctx.text):
            pairs.append((match.group("old").strip(), match.group("new").strip()))
            spans.append((match.start(), match.end()))
    return tuple(pairs), spans


def _copy_form(ctx: Context, text: str, change: bool) -> Copy:
    """The copy of ``text`` (its "Question:" label left out), with the swaps the prompt states."""
    text = _LABEL.sub("", text.strip().lstrip(" .!?;:"))
    if not change:
        return Copy(text=text)
    pairs, spans = _stated_swaps(ctx)
    if pairs:
        # The quoted words of a swap name the change, not keywords the answer must hold or avoid.
        ctx.found = [f for f in ctx.found if not (
            f.kind in (Kind.KEYWORDS_PRESENT, Kind.FORBIDDEN_WORDS) and any(overlaps(f, a, b) for a, b in spans))]
    return Copy(text=text, change=True, replace=pairs)


def detect_copies(ctx: Context) -> None:
    """A repetition asked with a change ("repeat the question but replace X", "paraphrase the request")."""
    kept: list[Found] = []
    for f in list(ctx.found):
        if f.kind is Kind.REPEAT_PROMPT and _changed(ctx, f.start, f.end):
            kind, params = canonical(_copy_form(ctx, str(f.params["prompt_to_repeat"]), True))
            kept.append(Found(kind=kind, params=params, start=f.start, end=f.end, confidence=f.confidence))
        else:
            kept.append(f)
    if any(f.kind is Kind.COPY for f in kept):
        dropped = {id(f) for f in kept} - {id(f) for f in ctx.found}
        kept = [f for f in kept if id(f) not in dropped or f.kind is Kind.COPY]
    ctx.found = kept
    if any(f.kind in (Kind.REPEAT_PROMPT, Kind.COPY) for f in ctx.found):
        return
    for i, lemma in enumerate(ctx.lemmas):
        if lemma not in ("paraphrase", "rephrase", "reword", "restate"):
            continue
        _start, stop = _sentence(ctx, i)
        target = next((x for x in range(i + 1, min(stop, i + 5))
                       if ctx.lemmas[x] in ("question", "request", "prompt", "instruction", "query", "task")), None)
        if target is None:
            continue
        begin, end = ctx.chars(i, target)
        text = repeat_text(ctx.text, begin, end)
        if text is None:
            continue
        _add_form(ctx, _copy_form(ctx, text, True), begin, end)
        return


def _token_at(ctx: Context, char: int) -> int | None:
    """Index of the token that covers character offset ``char`` (None: whitespace there)."""
    for token in ctx.tokens:
        if token.idx <= char < token.idx + len(token.text):
            return token.i
    return None


def detect_quoted_symbols(ctx: Context) -> None:
    """Counts of a quoted symbol with no unit word: "at least 3 '!'", "do not use '#' at all".

    The symbol (one character, neither a letter nor a digit nor a space) is
    itself the unit: its count is ``count(characters, chars=symbol)`` (or
    punctuation marks, when it is one), with the quantity around the quotes
    or, negated and without a quantity, none at all. A symbol that another
    reading already covers (a letter frequency, a keyword, an end phrase) is
    left to it.
    """
    for match in _QUOTED.finditer(ctx.text):
        content = next(g for g in match.groups() if g is not None).strip()
        if len(content) != 1 or content.isalnum() or content.isspace():
            continue
        if any(overlaps(f, match.start(), match.end()) for f in ctx.found):
            continue
        first, last = _token_at(ctx, match.start()), _token_at(ctx, match.end() - 1)
        inner = _token_at(ctx, match.start() + match.group(0).index(content))
        if first is None or last is None or inner is None:
            continue
        quantity = _quantity_left(ctx, first) or _count_after(ctx, last + 1, limit=10)
        if quantity is not None:
            bounds = [(_flip_if_negated(ctx, first, rel), n) for rel, n in quantity.bounds()]
            if not bounds and quantity.high is None:
                bounds = [(Relation.EXACTLY, quantity.n)]
        elif _negated_here(ctx, inner, inner) or _negated_here(ctx, first, last):
            bounds = [(Relation.AT_MOST, 0)]
        else:
            continue
        unit = Unit.PUNCTUATION if unicodedata.category(content).startswith("P") else Unit.CHARACTERS
        start, end = match.start(), match.end()
        if quantity is not None:
            start = min(start, ctx.tokens[quantity.first].idx)
            end = max(end, ctx.chars(quantity.last, quantity.last)[1])
        for relation, n in bounds:
            _add_form(ctx, Count(unit=unit, filter=Filter(chars=content), relation=relation, n=n), start, end)


_LOWER = frozenset({Relation.AT_LEAST, Relation.MORE_THAN})
_UPPER = frozenset({Relation.AT_MOST, Relation.LESS_THAN})
_CONJUNCTIONS = frozenset({"but", "and", "yet", ",", "while"})


def _elliptical_bound(ctx: Context, f: Found) -> tuple[Relation, int, int] | None:
    """The other end of a range whose unit is left out: "at least 400 characters but no more than 700".

    After the count's span: a conjunction, a comparison phrase, a number and
    then nothing that names another unit (the sentence ends, or the same unit
    word comes again). Only a bound of the other direction is taken.
    """
    last = _token_at(ctx, f.end - 1)
    if last is None:
        return None
    stop = ctx.tokens[last].sent.end
    j = last + 1
    if j >= stop or ctx.lowers[j] not in _CONJUNCTIONS:
        return None
    j += 1
    while j < stop and ctx.lowers[j] in _CONJUNCTIONS:
        j += 1
    for k in range(j + 1, min(stop, j + 5)):
        relation = relation_before(ctx.lowers[j:k])
        if relation is None or relation[1] != k - j:
            continue
        number = parse_number([ctx.tokens[k].text]) if ctx.tokens[k].like_num else None
        if number is None:
            return None
        after = ctx.tokens[k + 1] if k + 1 < stop else None
        if after is not None and not after.is_punct and ctx.lemmas[k + 1] != ctx.lemmas[last]:
            return None
        return relation[0], number, ctx.chars(k, k)[1]
    return None


def detect_elliptical_ranges(ctx: Context) -> None:
    """A second bound, its unit left out, on a count already read (any kind with ``relation`` and ``n``)."""
    added: list[Found] = []
    for f in ctx.found:
        relation = f.params.get("relation")
        if relation is None or "n" not in f.params:
            continue
        other = _elliptical_bound(ctx, f)
        if other is None:
            continue
        first = Relation(str(relation))
        if not ((first in _LOWER and other[0] in _UPPER) or (first in _UPPER and other[0] in _LOWER)):
            continue
        if any(g is not f and overlaps(g, f.end, other[2]) for g in ctx.found):
            continue
        params = {**f.params, "relation": str(other[0]), "n": other[1]}
        added.append(Found(kind=f.kind, params=params, start=f.start, end=other[2], confidence=f.confidence))
    ctx.found.extend(added)


def detect_keywords_per_item(ctx: Context) -> None:
    """"Each sentence should contain the keyword 'river'": a keyword count that holds per sentence / paragraph / line.

    The named readings (``keywords_present``, ``keyword_frequency``) count in
    the whole answer; with a per-item phrase in the same sentence the bound
    holds for each item, which is the form's count of keywords ``per`` item.
    """
    kept: list[Found] = []
    for f in ctx.found:
        words = f.params.get("keywords", [])
        keyword = f.params.get("keyword") if f.kind is Kind.KEYWORD_FREQUENCY else (
            words[0] if f.kind is Kind.KEYWORDS_PRESENT and len(words) == 1 else None)
        first, last = _token_at(ctx, f.start), _token_at(ctx, f.end - 1)
        per = _per(ctx, Unit.KEYWORDS, first, last) if keyword and first is not None and last is not None else None
        if per is None:
            kept.append(f)
            continue
        relation = Relation(str(f.params.get("relation", Relation.AT_LEAST)))
        n = int(f.params.get("n", 1))
        kind, params = canonical(Count(unit=Unit.KEYWORDS, filter=Filter(text=str(keyword)), relation=relation, n=n,
                                       per=per))
        kept.append(Found(kind=kind, params=params, start=f.start, end=f.end, confidence=f.confidence,
                          hardness=f.hardness))
    ctx.found = kept


_ONE_PER = (("one", "per"), ("one", "on", "each"), ("one", "to", "a"), ("each", "on", "its", "own"),
            ("each", "on", "a", "separate"), ("each", "on", "a", "new"), ("each", "on", "a"), ("on", "separate"))
_ONE_PER_FIRST = frozenset(p[0] for p in _ONE_PER)


def detect_items_per_piece(ctx: Context) -> None:
    """"Four slogans, one per line", "three tips, each on its own line": as many lines (or paragraphs) as items.

    The items are a noun with an exact number that is no unit of the form
    (slogans, tips, names); "one per line" / "each on its own line" / "on
    separate lines" puts each on a piece of its own, so the answer has that
    many pieces.
    """
    if not any(lemma in ("line", "paragraph") for lemma in ctx.lemmas):
        return
    for j, low in enumerate(ctx.lowers):
        if low not in _ONE_PER_FIRST:
            continue
        phrase = next((p for p in _ONE_PER if tuple(ctx.lowers[j : j + len(p)]) == p), None)
        if phrase is None:
            continue
        after = j + len(phrase)
        piece = EN_PER.get(ctx.lemmas[after]) if after < len(ctx.tokens) else None
        if piece not in (Unit.LINES, Unit.PARAGRAPHS) or ctx.lemmas[after] not in ("line", "paragraph"):
            continue
        start, _stop = _sentence(ctx, j)
        items = None
        for x in range(j - 1, start - 1, -1):
            if ctx.tokens[x].pos_ != "NOUN" or _term_at(ctx, x, _UNIT_INDEX) is not None:
                continue
            number = _number_at(ctx.doc, x - 1)
            if number is not None:
                items = (number[0], number[1], x)
                break
        if items is None or items[0] < 1:
            continue
        begin, end = ctx.tokens[items[1]].idx, ctx.chars(after, after)[1]
        if any(f.kind is Kind.COUNT and f.params.get("unit") == piece.value and overlaps(f, begin, end)
               for f in ctx.found):
            continue
        _add_form(ctx, Count(unit=piece, relation=Relation.EXACTLY, n=items[0]), begin, end)
