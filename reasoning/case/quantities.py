"""Typed literals of a request: money, dates, percentages, lengths and counts.

:func:`find_quantities` reads, in English and Chinese, "EUR 2,000,000",
"€2m", "2 million euros", "200万欧元", "人民币500万元", "2022-03-15",
"15 March 2022", "2022年3月15日", "20%", "百分之20", "7 mm", "7毫米",
"3 transactions", "3笔". Values are normalised (amounts in units,
currencies as ISO 4217 codes, dates ISO, lengths with their unit), so a rule
compares typed literals and never parses text. Spans do not overlap: the
first kind in the order above wins.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

import msgspec

__all__ = ["Quantity", "find_quantities", "length_in"]

_CURRENCIES: Final = {
    "eur": "EUR", "euro": "EUR", "euros": "EUR", "€": "EUR", "欧元": "EUR",
    "usd": "USD", "dollar": "USD", "dollars": "USD", "$": "USD", "us$": "USD", "美元": "USD",
    "gbp": "GBP", "pound": "GBP", "pounds": "GBP", "£": "GBP", "英镑": "GBP",
    "chf": "CHF", "francs": "CHF", "瑞士法郎": "CHF",
    "jpy": "JPY", "yen": "JPY", "日元": "JPY",
    "cny": "CNY", "rmb": "CNY", "yuan": "CNY", "人民币": "CNY", "元": "CNY", "¥": "CNY",
}
_SCALES: Final = {
    "k": 10**3, "thousand": 10**3, "m": 10**6, "mn": 10**6, "million": 10**6, "millions": 10**6,
    "bn": 10**9, "billion": 10**9, "千": 10**3, "万": 10**4, "百万": 10**6, "亿": 10**8,
}
_MONTHS: Final = {name: i for i, name in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"],
    start=1)}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_NUM: Final = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_EN_CUR: Final = r"EUR|USD|GBP|CHF|JPY|CNY|RMB|US\$|€|\$|£|¥"
_EN_SCALE: Final = r"thousand|millions?|billion|mn|bn|[kKmM]"
_ZH_CUR: Final = r"欧元|美元|英镑|瑞士法郎|日元|人民币|元"
_ZH_SCALE: Final = r"百万|千|万|亿"
_MONTH_RE: Final = "|".join(sorted(_MONTHS, key=len, reverse=True))

_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("money", re.compile(rf"(?P<cur>{_EN_CUR})\s?(?P<num>{_NUM})(?:\s?(?P<scale>{_EN_SCALE})\b)?")),
    ("money", re.compile(rf"(?P<num>{_NUM})\s?(?:(?P<scale>{_EN_SCALE})\s?)?"
                         r"(?P<cur>EUR|USD|GBP|CHF|JPY|CNY|RMB|euros?|dollars?|pounds|yen|yuan)\b",
                         re.IGNORECASE)),
    ("money", re.compile(rf"(?P<cur>人民币)\s?(?P<num>{_NUM})\s?(?P<scale>{_ZH_SCALE})?元?")),
    ("money", re.compile(rf"(?P<num>{_NUM})\s?(?P<scale>{_ZH_SCALE})?\s?(?P<cur>{_ZH_CUR})")),
    ("date", re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b")),
    ("date", re.compile(rf"\b(?P<d>\d{{1,2}})\s+(?P<mon>{_MONTH_RE})\.?,?\s+(?P<y>\d{{4}})\b",
                        re.IGNORECASE)),
    ("date", re.compile(rf"\b(?P<mon>{_MONTH_RE})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}})\b",
                        re.IGNORECASE)),
    ("date", re.compile(r"(?P<y>\d{4})\s?年\s?(?P<m>\d{1,2})\s?月\s?(?P<d>\d{1,2})\s?[日号]")),
    ("percentage", re.compile(rf"(?P<num>{_NUM})\s?(?:%|％|percent\b|per\s+cent\b)", re.IGNORECASE)),
    ("percentage", re.compile(rf"百分之\s?(?P<num>{_NUM})")),
    ("length", re.compile(rf"(?P<num>{_NUM})\s?(?P<unit>mm|cm|millimet(?:er|re)s?|centimet(?:er|re)s?"
                          r"|毫米|厘米)(?![A-Za-z])", re.IGNORECASE)),
    ("count", re.compile(r"\b(?P<num>\d+)\s+(?=[A-Za-z]+s\b)")),
    ("count", re.compile(r"(?P<num>\d+)\s?(?=[笔次个名家宗层件项台栋])")),
)
_UNITS_MM: Final = {"mm": Decimal(1), "cm": Decimal(10), "m": Decimal(1000)}


class Quantity(msgspec.Struct, frozen=True, kw_only=True):
    """One typed literal of the request.

    ``kind`` is ``money``, ``date``, ``percentage``, ``length`` or ``count``;
    ``value`` is the normalised lexical form (a decimal, an integer or an ISO
    date); ``currency`` is set for money, ``unit`` (``mm``/``cm``) for lengths.
    """

    kind: str
    value: str
    start: int
    end: int
    text: str
    currency: str | None = None
    unit: str | None = None


def find_quantities(text: str) -> tuple[Quantity, ...]:
    """The quantities of ``text`` in order of position, without overlaps."""
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.start(), match.end()
            while end > start and text[end - 1].isspace():
                end -= 1
            if any(start < e and s < end for s, e in taken):
                continue
            quantity = _read(kind, match, text[start:end], start, end)
            if quantity is not None:
                found.append(quantity)
                taken.append((start, end))
    found.sort(key=lambda q: q.start)
    return tuple(found)


def length_in(quantity: Quantity, unit: str) -> str | None:
    """A length quantity's value in ``unit`` (``mm``, ``cm`` or ``m``), or None."""
    if quantity.kind != "length" or quantity.unit not in _UNITS_MM or unit not in _UNITS_MM:
        return None
    value = Decimal(quantity.value) * _UNITS_MM[quantity.unit] / _UNITS_MM[unit]
    return _plain(value)


def _read(kind: str, match: re.Match[str], text: str, start: int, end: int) -> Quantity | None:
    groups = match.groupdict()
    if kind == "date":
        return _date(groups, text, start, end)
    number = _decimal(groups.get("num") or "")
    if number is None:
        return None
    if kind == "money":
        currency = _CURRENCIES.get((groups.get("cur") or "").lower())
        if currency is None:
            return None
        scale = groups.get("scale")
        if scale:
            number *= _SCALES.get(scale.lower(), 1)
        return Quantity(kind=kind, value=_plain(number), start=start, end=end, text=text,
                        currency=currency)
    if kind == "length":
        raw = (groups.get("unit") or "").lower()
        unit = "cm" if raw.startswith(("cm", "centi", "厘")) else "mm"
        return Quantity(kind=kind, value=_plain(number), start=start, end=end, text=text, unit=unit)
    if kind == "count" and number != number.to_integral_value():
        return None
    return Quantity(kind=kind, value=_plain(number), start=start, end=end, text=text)


def _date(groups: dict[str, str | None], text: str, start: int, end: int) -> Quantity | None:
    month_name = groups.get("mon")
    month = _MONTHS.get(month_name.lower()) if month_name else int(groups.get("m") or 0)
    year, day = int(groups.get("y") or 0), int(groups.get("d") or 0)
    if not month or not (1 <= month <= 12 and 1 <= day <= 31 and 1000 <= year <= 9999):
        return None
    return Quantity(kind="date", value=f"{year:04d}-{month:02d}-{day:02d}", start=start, end=end,
                    text=text)


def _decimal(raw: str) -> Decimal | None:
    try:
        return Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return None


def _plain(value: Decimal) -> str:
    """A decimal without exponent or trailing zeros ("2000000", "7.5")."""
    text = format(value.normalize(), "f")
    return text

