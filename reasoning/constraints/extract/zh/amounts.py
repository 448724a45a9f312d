"""Amounts said loosely or in two halves (Chinese), as :mod:`reasoning.constraints.extract.en.amounts` reads them in English.

- 字数不少于50且不超过80: the second bound, its unit left out, is added to the count read from the first;
- 字数在50到80之间, 写50至80个字, 三到五句, 句数控制在3到5: at least the first, at most the second;
- 大约100字, 100字左右, 约三段: the number within the tolerance either side
  (:func:`reasoning.constraints.extract.en.amounts.approximate`; up to three pieces, one either side), in place of an exact count.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from reasoning.constraints.extract.en.amounts import approximate
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.extract.patterns import alternation
from reasoning.constraints.form import Count, Unit, canonical
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ZH_NUMBER, ZH_RELATIONS_BEFORE, parse_zh_number

__all__ = ["refine_amounts_chinese"]

_UNITS: Mapping[str, Unit] = {"字": Unit.WORDS, "词": Unit.WORDS, "单词": Unit.WORDS, "汉字": Unit.WORDS,
                              "句": Unit.SENTENCES, "句话": Unit.SENTENCES, "段": Unit.PARAGRAPHS}
_UNIT = r"(?:个)?(?P<unit>单词|汉字|句话|字|词|句|段)"
_RELATION = alternation(ZH_RELATIONS_BEFORE)
_SECOND = re.compile(rf"(?:且|并且|而且|但|但是|，|,|、)\s*(?P<rel>{_RELATION})\s*(?P<n>{ZH_NUMBER})(?!\s*(?:个)?[\u4e00-\u9fff])")
_RANGE = re.compile(rf"(?:在)?(?P<a>{ZH_NUMBER})\s*(?:到|至|-|~|～|—)\s*(?P<b>{ZH_NUMBER})\s*{_UNIT}")
_NAMED_RANGE = re.compile(rf"(?P<unit>字|词|单词|句|段)数(?:应|要|必须|应该|需要)?(?:在|为|控制在|保持在)?\s*(?P<a>{ZH_NUMBER})\s*"
                          rf"(?:到|至|-|~|～|—)\s*(?P<b>{ZH_NUMBER})(?!\s*(?:个)?[字词句段])")
_UNIT2 = _UNIT.replace("unit", "unit2")
_ABOUT = re.compile(rf"(?:大约|大概|约|差不多)\s*(?P<n>{ZH_NUMBER})\s*{_UNIT}|(?P<m>{ZH_NUMBER})\s*{_UNIT2}左右")
_LOWER = frozenset({Relation.AT_LEAST, Relation.MORE_THAN})
_COUNT_KINDS = frozenset({Kind.WORD_COUNT, Kind.SENTENCE_COUNT, Kind.COUNT})


def _counts(found: list[Found], start: int, end: int, unit: Unit) -> list[Found]:
    """The plain counts of ``unit`` read over the span (an exact 100字 read from 大约100字)."""
    named = {Unit.WORDS: Kind.WORD_COUNT, Unit.SENTENCES: Kind.SENTENCE_COUNT}.get(unit)
    return [f for f in found if overlaps(f, start, end) and f.kind in _COUNT_KINDS
            and (f.kind is named or f.params.get("unit") == unit.value) and not f.params.get("per")]


def _range(found: list[Found], unit: Unit, low: int, high: int, start: int, end: int) -> list[Found]:
    drop = _counts(found, start, end, unit)
    kept = [f for f in found if f not in drop]
    for relation, n in ((Relation.AT_LEAST, low), (Relation.AT_MOST, high)):
        kind, params = canonical(Count(unit=unit, relation=relation, n=n))
        kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.8))
    return kept


def refine_amounts_chinese(text: str, found: list[Found]) -> list[Found]:
    """``found`` with the Chinese amounts of this module added or substituted."""
    for m in (*_RANGE.finditer(text), *_NAMED_RANGE.finditer(text)):
        a, b = parse_zh_number(m.group("a")), parse_zh_number(m.group("b"))
        if a is not None and b is not None and 0 <= a < b:
            found = _range(found, _UNITS[m.group("unit")], a, b, m.start(), m.end())
    for m in _ABOUT.finditer(text):
        n = parse_zh_number(m.group("n") or m.group("m"))
        unit = _UNITS[m.group("unit") or m.group("unit2")]
        if n:
            low, high = (max(1, n - 1), n + 1) if unit is not Unit.WORDS and n <= 3 else approximate(n)
            found = _range(found, unit, low, high, m.start(), m.end())
    added: list[Found] = []
    for f in found:
        relation = f.params.get("relation")
        if f.kind not in _COUNT_KINDS or relation is None or f.params.get("per"):
            continue
        tail = _SECOND.match(text, f.end)
        n = parse_zh_number(tail.group("n")) if tail else None
        if tail is None or n is None:
            continue
        second = ZH_RELATIONS_BEFORE[tail.group("rel")]
        if (second in _LOWER) == (Relation(str(relation)) in _LOWER):
            continue
        added.append(Found(kind=f.kind, params={**f.params, "relation": str(second), "n": n}, start=f.start,
                           end=tail.end(), confidence=f.confidence, hardness=f.hardness))
    return found + added
