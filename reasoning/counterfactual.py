"""Minimal counterfactual variants of a claim, for the semantic-consistency check.

A variant changes exactly one thing in the text and says what it changed:

- ``negation``: the first finite verb or modal flipped ("is" <-> "is not",
  "must" <-> "must not", "cannot" -> "can"; Chinese 是 <-> 不是, 有 <-> 没有,
  需要 <-> 不需要, 应该 <-> 不应该, 可以 <-> 不可以);
- ``entity``: the first mention of a known ontology label replaced by a
  sibling (another label of the same class), e.g. one jurisdiction for another;
- ``number``: the first number with its leading digit raised by one
  (20% -> 30%, 2,000,000 -> 3,000,000; 9 -> 10);
- ``date``: the first ISO date or year moved one year later;
- ``threshold``: the first number (or date) a decision rule compares with one
  of its constants (``Threshold``, from ``reasoning.rules.thresholds``)
  moved to the other side of that line: 2,000,000 against ``> 1000000``
  becomes 900,000, 750,000 becomes 1,100,000 (a tenth of the threshold below
  or above it), a date one year before or after the threshold's.

The functions are pure and deterministic: the same text and lexicon give the
same variants in the same order, so contrasts are reproducible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

import msgspec

__all__ = [
    "Threshold",
    "Variant",
    "cross_threshold",
    "negate",
    "shift_date",
    "shift_number",
    "swap_entity",
    "variants",
]


class Variant(msgspec.Struct, frozen=True, kw_only=True):
    """One minimal edit of a claim: ``text`` is the claim with ``original`` -> ``replacement``."""

    kind: str
    text: str
    original: str
    replacement: str


class Threshold(msgspec.Struct, frozen=True, kw_only=True):
    """A line a decision rule reads: a case value ``op`` ``value`` is on its firing side
    (``op`` one of ``>``, ``>=``, ``<``, ``<=``; ``value`` a number, or an ISO date when
    ``dated``)."""

    op: str
    value: str
    dated: bool = False


_EN_NEGATIONS: tuple[tuple[str, str], ...] = (
    (r"\bcannot\b", "can"),
    (r"\bcan't\b", "can"),
    (
        r"\b(is|are|was|were|does|do|did|has|have|had|should|must|will|would|may|could)\s+not\b",
        r"\1",
    ),
    (r"\b(is|are|was|were|does|do|did|has|have|had|should|must|will|would|could)n't\b", r"\1"),
    (r"\bnever\b", "always"),
    (r"\bcan\b", "cannot"),
    (r"\b(is|are|was|were|should|must|will|would|may|could|does|do|did|has|have)\b", r"\1 not"),
)
_ZH_NEGATIONS: tuple[tuple[str, str], ...] = (
    ("不是", "是"),
    ("没有", "有"),
    ("不需要", "需要"),
    ("不应该", "应该"),
    ("不可以", "可以"),
    ("不能", "能"),
    ("需要", "不需要"),
    ("应该", "不应该"),
    ("可以", "不可以"),
    ("是", "不是"),
    ("有", "没有"),
)
# A number, not the digits of an id ('AML-R-024', 'E2'): none follows a letter or 'X-'.
_NUMBER = re.compile(r"(?<![\w.])(?<!\w-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_YEAR = re.compile(r"\b(1[89]\d{2}|20\d{2})\b")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s")
_Line = TypeVar("_Line", float, str)  # a number, or an ISO date compared as text


def negate(text: str) -> Variant | None:
    """Flip the first negation site; None when the text has none."""
    best: tuple[int, int, str] | None = None
    for pattern, repl in _EN_NEGATIONS:
        m = re.search(pattern, text, flags=re.IGNORECASE)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), m.end(), m.expand(repl))
    for source, target in _ZH_NEGATIONS:
        idx = text.find(source)
        if idx >= 0 and (best is None or idx < best[0]):
            best = (idx, idx + len(source), target)
    if best is None:
        return None
    start, end, replacement = best
    original = text[start:end]
    return Variant(
        kind="negation",
        text=text[:start] + replacement + text[end:],
        original=original,
        replacement=replacement,
    )


def swap_entity(text: str, lexicon: Mapping[str, str]) -> Variant | None:
    """Replace the first known label (``lexicon``: label -> class) with a sibling of its class."""
    by_class: dict[str, list[str]] = {}
    for label, cls in sorted(lexicon.items()):
        by_class.setdefault(cls, []).append(label)
    first: tuple[int, str] | None = None
    lowered = text.lower()
    for label in sorted(lexicon, key=len, reverse=True):
        m = re.search(rf"(?<!\w){re.escape(label.lower())}(?!\w)", lowered)
        if m and len(by_class[lexicon[label]]) > 1 and (first is None or m.start() < first[0]):
            first = (m.start(), label)
    if first is None:
        return None
    start, label = first
    siblings = [s for s in by_class[lexicon[label]] if s.lower() != label.lower()]
    replacement = siblings[0]
    end = start + len(label)
    return Variant(
        kind="entity",
        text=text[:start] + replacement + text[end:],
        original=text[start:end],
        replacement=replacement,
    )


def shift_number(text: str) -> Variant | None:
    """Raise the leading digit of the first number that is not a year, date or list marker."""
    marker = _LIST_MARKER.match(text)
    skip_until = marker.end() if marker else 0
    dates = [(m.start(), m.end()) for m in _ISO_DATE.finditer(text)]
    for m in _NUMBER.finditer(text):
        if (
            m.start() < skip_until
            or _YEAR.fullmatch(m.group(0))
            or any(a <= m.start() < b for a, b in dates)
        ):
            continue
        whole = m.group(1)
        digits = whole.replace(",", "")
        bumped = str(int(digits) + 10 ** (len(digits) - 1))
        if "," in whole:
            bumped = f"{int(bumped):,}"
        replacement = bumped + (m.group(2) or "")
        return Variant(
            kind="number",
            text=text[: m.start()] + replacement + text[m.end() :],
            original=m.group(0),
            replacement=replacement,
        )
    return None


def shift_date(text: str) -> Variant | None:
    """Move the first ISO date or four-digit year one year later."""
    m = _ISO_DATE.search(text) or _YEAR.search(text)
    if m is None:
        return None
    original = m.group(0)
    replacement = str(int(m.group(1)) + 1) + original[4:]
    return Variant(
        kind="date",
        text=text[: m.start()] + replacement + text[m.end() :],
        original=original,
        replacement=replacement,
    )


def _fires(value: _Line, op: str, line: _Line) -> bool:
    """Whether ``value`` is on the firing side of ``line`` (numbers, or ISO dates as text)."""
    return {
        ">": value > line,
        ">=": value >= line,
        "<": value < line,
        "<=": value <= line,
    }.get(op, False)


def _written(value: float, like: str) -> str:
    """``value`` written as ``like`` is: thousands separators and decimals kept."""
    places = len(like.split(".")[1]) if "." in like else 0
    rounded = round(value, places) if places else round(value, 2)
    if float(rounded).is_integer():
        return f"{int(rounded):,}" if "," in like else str(int(rounded))
    return f"{rounded:,}" if "," in like else str(rounded)


def _crossed_number(text: str, thresholds: Sequence[Threshold]) -> Variant | None:
    lines = [(t, float(t.value)) for t in thresholds if not t.dated]
    if not lines:
        return None
    marker = _LIST_MARKER.match(text)
    dates = [(m.start(), m.end()) for m in _ISO_DATE.finditer(text)]
    for m in _NUMBER.finditer(text):
        if (
            (marker and m.start() < marker.end())
            or _YEAR.fullmatch(m.group(0))
            or any(a <= m.start() < b for a, b in dates)
        ):
            continue
        value = float(m.group(0).replace(",", ""))
        # The line the number is read against: the threshold nearest it, within a factor 100.
        near = [
            (abs(math.log10(value / line)), t, line)
            for t, line in lines
            if value > 0 and line > 0 and abs(math.log10(value / line)) <= 2
        ]
        if not near:
            continue
        _, threshold, line = min(near, key=lambda x: x[0])
        other = line * 0.9 if value >= line else line * 1.1
        if _fires(other, threshold.op, line) == _fires(value, threshold.op, line):
            continue
        replacement = _written(other, m.group(0))
        return Variant(
            kind="threshold",
            text=text[: m.start()] + replacement + text[m.end() :],
            original=m.group(0),
            replacement=replacement,
        )
    return None


def _crossed_date(text: str, thresholds: Sequence[Threshold]) -> Variant | None:
    m = _ISO_DATE.search(text)
    if m is None:
        return None
    stated = m.group(0)
    for threshold in thresholds:
        line = threshold.value
        if not (threshold.dated and _ISO_DATE.fullmatch(line)):
            continue
        year = int(line[:4]) + (-1 if stated >= line else 1)
        moved = f"{year:04d}{line[4:]}"
        if _fires(moved, threshold.op, line) == _fires(stated, threshold.op, line):
            continue
        return Variant(
            kind="threshold",
            text=text[: m.start()] + moved + text[m.end() :],
            original=stated,
            replacement=moved,
        )
    return None


def cross_threshold(text: str, thresholds: Sequence[Threshold]) -> Variant | None:
    """The first number a rule's threshold reads (the nearest threshold within a factor 100)
    moved a tenth of the threshold past it to its other side, else the first ISO date
    moved to one year on the other side of a dated threshold; None when no line applies."""
    return _crossed_number(text, thresholds) or _crossed_date(text, thresholds)


def variants(
    text: str,
    lexicon: Mapping[str, str] | None = None,
    limit: int = 3,
    thresholds: Sequence[Threshold] = (),
) -> tuple[Variant, ...]:
    """Up to ``limit`` variants, in the order negation, entity, threshold, number, date
    (distinct texts only)."""
    found: list[Variant] = []
    for variant in (
        negate(text),
        swap_entity(text, lexicon or {}),
        cross_threshold(text, thresholds),
        shift_number(text),
        shift_date(text),
    ):
        if (
            variant is not None
            and variant.text != text
            and all(v.text != variant.text for v in found)
        ):
            found.append(variant)
    return tuple(found[:limit])
