"""Typed parsing of quantities: numbers, number words and comparison phrases.

Extraction reads "at least 300", "300+", "no more than fifty", "fewer than
6", "at most once", "twice", "不超过80", "少于五十", "三个" with these parsers.
They return typed values (``int``, :class:`Relation`), never strings, so a
new phrasing needs a table entry, not a new regular expression.

Relations keep the user's meaning: "at most 150" is ``AT_MOST 150`` (the
IFEval benchmark rewrites it as its own ``less than 151``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from reasoning.constraints.model import Relation

__all__ = [
    "ZH_NUMBER",
    "ZH_RELATIONS_AFTER",
    "ZH_RELATIONS_BEFORE",
    "labels_through",
    "ordinal",
    "parse_number",
    "parse_zh_number",
    "relation_after",
    "relation_before",
]

_UNITS: Mapping[str, int] = {
    "zero": 0, "no": 0, "none": 0, "a": 1, "an": 1, "one": 1, "single": 1, "two": 2, "three": 3,
    "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "dozen": 12, "couple": 2, "pair": 2,
}
_TENS: Mapping[str, int] = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}
_SCALES: Mapping[str, int] = {"hundred": 100, "thousand": 1000}
_TIMES: Mapping[str, int] = {"once": 1, "twice": 2, "thrice": 3}

_ORDINALS: Mapping[str, int] = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10,
}


def ordinal(word: str) -> int | None:
    """1 for "first" / "1st", 4 for "fourth" / "4th"; None otherwise."""
    lowered = word.lower()
    if lowered in _ORDINALS:
        return _ORDINALS[lowered]
    match = re.fullmatch(r"(\d+)(?:st|nd|rd|th)", lowered)
    return int(match.group(1)) if match else None


def labels_through(numbers: Sequence[int]) -> int | None:
    """n when ``numbers`` are the labels 1..n, each once, in any order, and at least two of them
    ("Step 1, Step 2, Step 3": 3); None otherwise (one label, a gap or a repeat is no sequence)."""
    if len(numbers) < 2:
        return None
    n = max(numbers)
    return n if sorted(numbers) == list(range(1, n + 1)) else None


def parse_number(words: Sequence[str]) -> int | None:
    """The integer written by ``words`` ("300", "300+", "twenty-five", "once"), or None.

    ``words`` are consecutive tokens; hyphenated and spaced compounds both
    work. Articles alone ("a", "an") are not numbers here: callers that
    accept "a placeholder" as 1 handle that themselves.
    """
    parts: list[str] = []
    for word in words:
        parts.extend(p for p in re.split(r"[-\s]+", word.lower().replace(",", "")) if p)
    if not parts:
        return None
    if len(parts) == 1:
        part = parts[0].rstrip("+")
        if part.isdigit() and len(part) < 10:
            return int(part)
        if part in _TIMES:
            return _TIMES[part]
        if part in ("a", "an", "no", "none"):
            return None
    total, current = 0, 0
    for part in parts:
        if part in _UNITS:
            current += _UNITS[part]
        elif part in _TENS:
            current += _TENS[part]
        elif part in _SCALES:
            current = max(current, 1) * _SCALES[part]
            if _SCALES[part] >= 1000:
                total, current = total + current, 0
        elif part == "and":
            continue
        else:
            return None
    return total + current


# English comparison phrases, matched on lowercased token texts.
_BEFORE: tuple[tuple[tuple[str, ...], Relation], ...] = (
    (("no", "more", "than"), Relation.AT_MOST),
    (("not", "more", "than"), Relation.AT_MOST),
    (("no", "fewer", "than"), Relation.AT_LEAST),
    (("no", "less", "than"), Relation.AT_LEAST),
    (("not", "less", "than"), Relation.AT_LEAST),
    (("a", "maximum", "of"), Relation.AT_MOST),
    (("a", "minimum", "of"), Relation.AT_LEAST),
    (("maximum", "of"), Relation.AT_MOST),
    (("minimum", "of"), Relation.AT_LEAST),
    (("at", "least"), Relation.AT_LEAST),
    (("at", "most"), Relation.AT_MOST),
    (("less", "than"), Relation.LESS_THAN),
    (("fewer", "than"), Relation.LESS_THAN),
    (("more", "than"), Relation.MORE_THAN),
    (("greater", "than"), Relation.MORE_THAN),
    (("up", "to"), Relation.AT_MOST),
    (("longer", "than"), Relation.MORE_THAN),
    (("shorter", "than"), Relation.LESS_THAN),
    (("in", "under"), Relation.LESS_THAN),
    (("under",), Relation.LESS_THAN),
    (("below",), Relation.LESS_THAN),
    (("over",), Relation.MORE_THAN),
    (("above",), Relation.MORE_THAN),
    (("exceeding",), Relation.MORE_THAN),
    (("within",), Relation.AT_MOST),
    (("max",), Relation.AT_MOST),
    (("maximum",), Relation.AT_MOST),
    (("min",), Relation.AT_LEAST),
    (("minimum",), Relation.AT_LEAST),
    (("exactly",), Relation.EXACTLY),
    (("precisely",), Relation.EXACTLY),
    (("only",), Relation.EXACTLY),
    (("just",), Relation.EXACTLY),
)
_AFTER: tuple[tuple[tuple[str, ...], Relation], ...] = (
    # "five question marks and no more", "two sentences, no more and no fewer": the number said, and only it
    (("and", "no", "more", "and", "no", "fewer"), Relation.EXACTLY),
    (("and", "no", "more", ",", "no", "fewer"), Relation.EXACTLY),
    ((",", "no", "more", "and", "no", "fewer"), Relation.EXACTLY),
    ((",", "no", "more", ",", "no", "fewer"), Relation.EXACTLY),
    ((",", "no", "more", ",", "no", "less"), Relation.EXACTLY),
    ((",", "no", "fewer", ",", "no", "more"), Relation.EXACTLY),
    ((",", "no", "less", ",", "no", "more"), Relation.EXACTLY),
    (("no", "more", ",", "no", "fewer"), Relation.EXACTLY),
    (("no", "more", "and", "no", "fewer"), Relation.EXACTLY),
    (("no", "more", "no", "less"), Relation.EXACTLY),
    (("and", "no", "more"), Relation.EXACTLY),
    (("and", "not", "more"), Relation.EXACTLY),
    (("and", "not", "one", "more"), Relation.EXACTLY),
    ((",", "no", "more"), Relation.EXACTLY),
    ((",", "not", "more"), Relation.EXACTLY),
    (("but", "no", "more"), Relation.EXACTLY),
    (("no", "more"), Relation.EXACTLY),
    (("or", "more"), Relation.AT_LEAST),
    (("or", "above"), Relation.AT_LEAST),
    (("and", "above"), Relation.AT_LEAST),
    (("or", "greater"), Relation.AT_LEAST),
    (("or", "longer"), Relation.AT_LEAST),
    (("or", "less"), Relation.AT_MOST),
    (("or", "fewer"), Relation.AT_MOST),
    (("or", "below"), Relation.AT_MOST),
    (("or", "shorter"), Relation.AT_MOST),
    (("at", "most"), Relation.AT_MOST),
    (("at", "the", "most"), Relation.AT_MOST),
    (("at", "least"), Relation.AT_LEAST),
    (("at", "the", "least"), Relation.AT_LEAST),
    (("at", "minimum"), Relation.AT_LEAST),
    (("at", "a", "minimum"), Relation.AT_LEAST),
    (("at", "the", "minimum"), Relation.AT_LEAST),
    (("at", "maximum"), Relation.AT_MOST),
    (("at", "a", "maximum"), Relation.AT_MOST),
    (("at", "the", "maximum"), Relation.AT_MOST),
    (("or", "under"), Relation.AT_MOST),
    (("or", "over"), Relation.AT_LEAST),
    (("max",), Relation.AT_MOST),
    (("maximum",), Relation.AT_MOST),
    (("minimum",), Relation.AT_LEAST),
    (("+",), Relation.AT_LEAST),
    (("plus",), Relation.AT_LEAST),
)


def _match_end(words: Sequence[str], phrase: tuple[str, ...]) -> bool:
    return len(words) >= len(phrase) and tuple(words[-len(phrase):]) == phrase


_FILLERS = frozenset({"a", "an", "the", "total", "of", "only"})


def relation_before(words: Sequence[str]) -> tuple[Relation, int] | None:
    """The relation phrase that ends ``words`` and how many words it takes.

    Fillers between the phrase and the number are skipped ("less than a
    total of 10"), and count towards the width.

    >>> relation_before(["use", "at", "least"])
    (<Relation.AT_LEAST: 'at least'>, 2)
    """
    lowered = [w.lower() for w in words]
    for skipped in range(4):
        if skipped and (len(lowered) < skipped or lowered[-skipped] not in _FILLERS):
            break
        head = lowered[: len(lowered) - skipped] if skipped else lowered
        for phrase, relation in _BEFORE:
            if _match_end(head, phrase):
                return relation, len(phrase) + skipped
    return None


def relation_after(words: Sequence[str]) -> tuple[Relation, int] | None:
    """The relation phrase that starts ``words`` ("or more", "+", "at most")."""
    lowered = tuple("," if w in ("—", "–", "-", "--", ";") else w.lower() for w in words)  # "five — no more"
    for phrase, relation in _AFTER:
        if lowered[: len(phrase)] == phrase:
            if lowered[len(phrase) : len(phrase) + 1] == ("than",):
                return None  # "five sentences, no more than ten words each": another bound, of another count
            return relation, len(phrase)
    return None


_ZH_DIGITS: Mapping[str, int] = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
    "八": 8, "九": 9,
}
_ZH_SCALES: Mapping[str, int] = {"十": 10, "百": 100, "千": 1000, "万": 10000}

ZH_NUMBER = r"(?:\d+|[零〇一二两三四五六七八九十百千万]+)"
"""A regular expression for an Arabic or Chinese numeral."""


def parse_zh_number(text: str) -> int | None:
    """An Arabic or Chinese numeral ("80", "八十", "两百", "十五") as an int."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    if not text or any(ch not in _ZH_DIGITS and ch not in _ZH_SCALES for ch in text):
        return None
    total, section, digit = 0, 0, 0
    for ch in text:
        if ch in _ZH_DIGITS:
            digit = _ZH_DIGITS[ch]
        else:
            scale = _ZH_SCALES[ch]
            if scale == 10000:
                total += (section + digit) * scale
                section, digit = 0, 0
            else:
                section += max(digit, 1) * scale
                digit = 0
    return total + section + digit


ZH_RELATIONS_BEFORE: Mapping[str, Relation] = {
    "不超过": Relation.AT_MOST,
    "不多于": Relation.AT_MOST,
    "不得超过": Relation.AT_MOST,
    "不能超过": Relation.AT_MOST,
    "不要超过": Relation.AT_MOST,
    "不可超过": Relation.AT_MOST,
    "不应超过": Relation.AT_MOST,
    "别超过": Relation.AT_MOST,
    "最多": Relation.AT_MOST,
    "至多": Relation.AT_MOST,
    "少于": Relation.LESS_THAN,
    "低于": Relation.LESS_THAN,
    "不到": Relation.LESS_THAN,
    "至少": Relation.AT_LEAST,
    "不少于": Relation.AT_LEAST,
    "不低于": Relation.AT_LEAST,
    "最少": Relation.AT_LEAST,
    "超过": Relation.MORE_THAN,
    "多于": Relation.MORE_THAN,
    "大于": Relation.MORE_THAN,
    "恰好": Relation.EXACTLY,
    "正好": Relation.EXACTLY,
    "刚好": Relation.EXACTLY,
    "只": Relation.EXACTLY,
    "仅": Relation.EXACTLY,
    # A negated comparison is the opposite bound: 不得多于 / 不能大于 at most, 不可少于 / 不要低于 at least.
    **{neg + word: Relation.AT_MOST for neg in ("不", "不得", "不能", "不要", "不可", "不应", "别")
       for word in ("超过", "多于", "大于", "高于")},
    **{neg + word: Relation.AT_LEAST for neg in ("不", "不得", "不能", "不要", "不可", "不应", "别")
       for word in ("少于", "低于")},
}
"""Chinese comparison words written before the number."""

ZH_RELATIONS_AFTER: Mapping[str, Relation] = {
    "以内": Relation.AT_MOST,
    "以下": Relation.AT_MOST,
    "之内": Relation.AT_MOST,
    "以上": Relation.AT_LEAST,
    "或以上": Relation.AT_LEAST,
    "或更多": Relation.AT_LEAST,
    "或更少": Relation.AT_MOST,
}
"""Chinese comparison words written after the unit."""
