"""Amounts said loosely or in two halves (English): approximate counts, vague quantities, a range's first bound.

- An approximate count ("about 80 words", "roughly 150 words long", "in
  around 50 words", "approximately 3 paragraphs") and a bare length to write
  ("Write 100 words about dogs", "give me 200 words on ...") are read as the
  number within :data:`TOLERANCE` of it either side: two counts, at least
  ``ceil(n * 0.9)`` and at most ``floor(n * 1.1)`` (at least one item each
  way), so an answer a reader would call "about n" passes and one twice as
  long fails. A bound said before it ("no more than about 100 words") keeps
  its own reading. Said of each piece ("3 paragraphs of about 50 words
  each", "each sentence should be around 10 words") the range holds per
  piece.
- A vague quantity that counts pieces ("a few sentences", "several
  paragraphs") is a range: :data:`VAGUE` ("a few" 2 to 5, "several" 3 to 7).
- A range whose first bound has its unit left out ("no fewer than 40 and no
  more than 60 words") gets that bound too: the count read from the unit's
  side keeps only its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.lexicon import EN_PIECES
from reasoning.constraints.form import Count, Unit, canonical
from reasoning.constraints.model import Relation
from reasoning.constraints.quantities import parse_number, relation_before

__all__ = ["TOLERANCE", "VAGUE", "approximate", "refine_amounts_english"]

#: How far from an approximate count an answer may be, as a share of it.
TOLERANCE = 0.1
#: Vague quantities of pieces: the range each is read as.
VAGUE: Mapping[str, tuple[int, int]] = {"a few": (2, 5), "several": (3, 7)}

_UNITS: Mapping[str, Unit] = {"word": Unit.WORDS, "sentence": Unit.SENTENCES, "paragraph": Unit.PARAGRAPHS,
                              "character": Unit.CHARACTERS, "letter": Unit.LETTERS, "line": Unit.LINES}
_PIECES = frozenset({Unit.SENTENCES, Unit.PARAGRAPHS, Unit.LINES})
_NUMBER = (r"(?P<n>\d[\d,]*|(?:(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty"
           r"|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|a)[\s-]*)+)")
_UNIT = r"(?P<unit>word|sentence|paragraph|character|letter|line)s?\b"
_APPROX = re.compile(rf"\b(?:about|around|approximately|roughly|circa|approx\.?|some|close\s+to|in\s+the\s+region\s+of"
                     rf"|more\s+or\s+less|~)\s*{_NUMBER}\s+{_UNIT}", re.IGNORECASE)
_TARGET = re.compile(rf"\b(?:write|give|produce|compose|draft|provide|generate|type|pen)\s+(?:me\s+|us\s+)?"
                     rf"{_NUMBER}\s+(?P<unit>word)s\b(?!\s+(?:or|and|to|-)\b)", re.IGNORECASE)
_VAGUE = re.compile(r"\b(?P<q>a\s+few|several)\s+(?:\w+\s+)?(?P<unit>sentence|paragraph|line)s\b", re.IGNORECASE)
_LOWER = frozenset({Relation.AT_LEAST, Relation.MORE_THAN})
_UPPER = frozenset({Relation.AT_MOST, Relation.LESS_THAN})
_JOINS = frozenset({"and", "but", ",", "yet", "while"})


def approximate(n: int) -> tuple[int, int]:
    """The counts "about n" admits: within :data:`TOLERANCE` of n, at least one either side."""
    spread = max(1, math.floor(n * TOLERANCE))
    return max(1, n - spread), n + spread


def _number(text: str) -> int | None:
    return parse_number(re.split(r"[\s-]+", text.replace(",", "").strip()))


def _counted(ctx: Context, unit: Unit, start: int, end: int) -> bool:
    """Whether a reading already bounds this unit's count over the span (a bound said before the amount)."""
    for f in ctx.found:
        if overlaps(f, start, end) and f.params.get("relation") is not None:
            return True
    before = ctx.text[max(0, start - 40) : start].lower().split()
    return relation_before(before) is not None or bool(before[-1:] and before[-1] in ("than", "under", "over"))


_EACH_AFTER = re.compile(r"\s*(?:each|apiece|per\s+(?P<per>[a-z]+)|in\s+each\s+(?P<each>[a-z]+))\b", re.IGNORECASE)
_EACH_BEFORE = re.compile(r"\b(?:each|every|per)\s+(?:single\s+)?(?P<piece>sentence|paragraph|line|bullet|item|point)\b"
                          r"[^.!?;]*$", re.IGNORECASE)
_PIECE_BEFORE = re.compile(r"\b(?P<piece>sentence|paragraph|line|bullet|item|point)s\b[^.!?;]*$", re.IGNORECASE)


def _per(ctx: Context, unit: Unit, start: int, end: int) -> Unit | None:
    """The piece an amount holds for ("3 paragraphs of about 50 words each", "each sentence should be around
    10 words"), None for the whole answer."""
    before = ctx.text[max(0, start - 80) : start]
    after = _EACH_AFTER.match(ctx.text, end)
    if after is not None:
        named = (after.group("per") or after.group("each") or "").lower().rstrip("s")
        if named in EN_PIECES:
            return EN_PIECES[named]
        plural = _PIECE_BEFORE.search(before)
        return EN_PIECES[plural.group("piece").lower()] if plural is not None else None
    each = _EACH_BEFORE.search(before)
    piece = EN_PIECES[each.group("piece").lower()] if each is not None else None
    return piece if piece is not unit else None


def _add_range(ctx: Context, unit: Unit, low: int, high: int, start: int, end: int) -> None:
    per = _per(ctx, unit, start, end)
    for relation, n in ((Relation.AT_LEAST, low), (Relation.AT_MOST, high)):
        kind, params = canonical(Count(unit=unit, relation=relation, n=n, per=per))
        ctx.add(kind, params, start, end, confidence=0.8)


def _approximate(ctx: Context) -> None:
    """"About 80 words", "Write 100 words about dogs": within the tolerance of the number."""
    for pattern in (_APPROX, _TARGET):
        for m in pattern.finditer(ctx.text):
            n = _number(m.group("n"))
            unit = _UNITS[m.group("unit").lower()]
            if n is None or n <= 0 or _counted(ctx, unit, m.start(), m.end()):
                continue
            if unit in _PIECES and n <= 3 and pattern is _APPROX:
                low, high = max(1, n - 1), n + 1
            else:
                low, high = approximate(n)
            _add_range(ctx, unit, low, high, m.start(), m.end())


def _vague(ctx: Context) -> None:
    """"A few sentences", "several paragraphs": a range of the pieces."""
    for m in _VAGUE.finditer(ctx.text):
        unit = _UNITS[m.group("unit").lower()]
        if _counted(ctx, unit, m.start(), m.end()):
            continue
        low, high = VAGUE[" ".join(m.group("q").lower().split())]
        _add_range(ctx, unit, low, high, m.start(), m.end())


def _first_bounds(ctx: Context) -> None:
    """"No fewer than 40 and no more than 60 words": the bound before the count read from the unit's side."""
    added: list[Found] = []
    for f in ctx.found:
        relation = f.params.get("relation")
        if relation is None or "n" not in f.params:
            continue
        before = ctx.text[max(0, f.start - 60) : f.start]
        words = re.findall(r"[\w']+|,", before.lower())
        if len(words) < 3 or words[-1] not in _JOINS:
            continue
        number = parse_number([words[-2]])
        phrase = relation_before(words[:-2])
        if number is None or phrase is None:
            continue
        first, own = phrase[0], Relation(str(relation))
        if not (first in _LOWER and own in _UPPER or first in _UPPER and own in _LOWER):
            continue
        width = len(" ".join(words[-2 - phrase[1] :]))
        start = max(0, f.start - width - 8)
        start += ctx.text[start : f.start].lower().find(words[-2 - phrase[1]])
        if any(g.kind == f.kind and g.params.get("relation") == str(first) and overlaps(g, start, f.end)
               for g in ctx.found):
            continue
        added.append(Found(kind=f.kind, params={**f.params, "relation": str(first), "n": number}, start=start,
                           end=f.end, confidence=f.confidence, hardness=f.hardness))
    ctx.found.extend(added)


def refine_amounts_english(ctx: Context) -> None:
    """Add the amounts of ``ctx`` said loosely or in two halves (see the module docstring)."""
    _first_bounds(ctx)
    _approximate(ctx)
    _vague(ctx)
