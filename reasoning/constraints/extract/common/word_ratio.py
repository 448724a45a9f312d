"""How often one named word is used relative to another (English and Chinese).

"Use 'tea' twice as often as 'coffee'", "the word 'rain' should appear exactly
three times as many times as 'sun'", "mention 'north' as often as 'south'",
“猫”字出现的次数必须正好是“狗”字的两倍, “山”和“水”出现的次数一样多: a count of the
first word's uses ``of`` the second's (whole words; a Han text as written),
``fraction`` the multiplier (1 when none is said):
``count(keywords, text=tea, of=count(keywords, text=coffee)) exactly 2``.

Both words must be quoted (a bare noun is too often the topic); the
multiplier stands between them. The presence or frequency of either word
read from the same words is replaced: the ratio needs the second word at
least once (a share of nothing fails), and the first as often as it says.
"At least" / "at most" before the multiplier bound the ratio that way.
"""

from __future__ import annotations

import re

from reasoning.constraints.extract.en.context import Context
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.form import Count, Filter, Measure, Unit, canonical, units
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ZH_NUMBER, parse_number, parse_zh_number

__all__ = ["detect_word_ratio", "refine_word_ratio_chinese", "word_ratio"]

_Q_OPEN = r"[\"“'‘「]"
_Q_CLOSE = r"[\"”'’」]"
_WORD = r"[^\"“”'‘’「」\n]{1,30}"
_EN_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
_MULT = rf"(?P<mult>twice|thrice|double|half|{_EN_NUMBER}\s+times)\s+"
_EN_RELATION = r"(?P<rel>exactly|precisely|at\s+least|at\s+most|no\s+more\s+than|no\s+fewer\s+than)\s+"
#: 'tea' ... [exactly] twice as often / as many times as [the word] 'coffee'.
_EN_RATIO = re.compile(
    rf"(?<!\w){_Q_OPEN}(?P<a>{_WORD}){_Q_CLOSE}(?!\w)[^.;:!?\n]{{0,40}}?\b(?:{_EN_RELATION})?(?:{_MULT})?"
    rf"as\s+(?:many\s+times|often|frequently)\s+as\s+(?:(?:the\s+)?(?:word|term|keyword|name)\s+)?"
    rf"{_Q_OPEN}(?P<b>{_WORD}){_Q_CLOSE}(?!\w)",
    re.IGNORECASE,
)
_ZH_UNIT = r"(?:这个)?(?:字|词|单词|词语)?"
#: “猫”字出现的次数必须正好是“狗”字的两倍 / “猫”出现的次数是“狗”的3倍.
_ZH_RATIO = re.compile(
    rf"{_Q_OPEN}(?P<a>{_WORD}){_Q_CLOSE}{_ZH_UNIT}(?:出现|使用|用)?的?(?:次数|数量|频率)(?:必须|要|应该|应|需要)?"
    rf"(?P<rel>正好|恰好|刚好|至少|最多)?是{_Q_OPEN}(?P<b>{_WORD}){_Q_CLOSE}{_ZH_UNIT}(?:出现|使用|用)?的?(?:次数|数量)?的?"
    rf"(?P<mult>{ZH_NUMBER}|半)倍"
)
#: “山”和“水”出现的次数一样多 / 相同.
_ZH_EQUAL = re.compile(
    rf"{_Q_OPEN}(?P<a>{_WORD}){_Q_CLOSE}{_ZH_UNIT}(?:和|与|跟){_Q_OPEN}(?P<b>{_WORD}){_Q_CLOSE}{_ZH_UNIT}"
    rf"(?:出现|使用|用)?的?(?:次数|数量)(?:必须|要|应该|应|需要)?(?:一样多|一样|相同|相等)"
)
_REPLACED = frozenset({Kind.KEYWORDS_PRESENT, Kind.KEYWORD_FREQUENCY, Kind.FORBIDDEN_WORDS, Kind.COUNT,
                       Kind.WORD_COUNT})


def word_ratio(more: str, less: str, ratio: float, relation: Relation = Relation.EXACTLY) -> Count:
    """``more`` used ``ratio`` times as often as ``less`` (uses of ``more`` over uses of ``less``)."""
    return Count(unit=Unit.KEYWORDS, filter=Filter(text=more, whole_word=not units.has_han(more)), relation=relation,
                 of=Measure(unit=Unit.KEYWORDS, filter=Filter(text=less, whole_word=not units.has_han(less))),
                 fraction=ratio)


def _en_multiplier(said: str | None) -> float | None:
    if not said:
        return 1.0
    low = " ".join(said.lower().split())
    fixed = {"twice": 2.0, "double": 2.0, "thrice": 3.0, "half": 0.5}
    if low in fixed:
        return fixed[low]
    n = parse_number([low.split()[0]])
    return float(n) if n else None


def _relation(said: str | None) -> Relation:
    low = " ".join((said or "").lower().split())
    return {"at least": Relation.AT_LEAST, "no fewer than": Relation.AT_LEAST, "至少": Relation.AT_LEAST,
            "at most": Relation.AT_MOST, "no more than": Relation.AT_MOST, "最多": Relation.AT_MOST}.get(
        low, Relation.EXACTLY)


def _replace(found: list[Found], start: int, end: int, form: Count) -> list[Found]:
    kept = [f for f in found if not (f.kind in _REPLACED and overlaps(f, start, end))]
    kind, params = canonical(form)
    kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))
    return kept


def _usable(a: str, b: str) -> bool:
    return bool(a.strip()) and bool(b.strip()) and a.strip().lower() != b.strip().lower()


def detect_word_ratio(ctx: Context) -> None:
    """Read "'A' twice as often as 'B'" (see the module doc) in English."""
    for m in _EN_RATIO.finditer(ctx.text):
        ratio = _en_multiplier(m.group("mult"))
        if ratio is None or not _usable(m.group("a"), m.group("b")):
            continue
        form = word_ratio(m.group("a").strip(), m.group("b").strip(), ratio, _relation(m.group("rel")))
        ctx.found = _replace(ctx.found, m.start(), m.end(), form)


def refine_word_ratio_chinese(text: str, found: list[Found]) -> list[Found]:
    """Read “猫”字出现的次数是“狗”字的两倍 / “山”和“水”出现的次数一样多 (see the module doc)."""
    for m in _ZH_RATIO.finditer(text):
        ratio = 0.5 if m.group("mult") == "半" else parse_zh_number(m.group("mult"))
        if not ratio or not _usable(m.group("a"), m.group("b")):
            continue
        form = word_ratio(m.group("a").strip(), m.group("b").strip(), float(ratio), _relation(m.group("rel")))
        found = _replace(found, m.start(), m.end(), form)
    for m in _ZH_EQUAL.finditer(text):
        if _usable(m.group("a"), m.group("b")):
            found = _replace(found, m.start(), m.end(), word_ratio(m.group("a").strip(), m.group("b").strip(), 1.0))
    return found
