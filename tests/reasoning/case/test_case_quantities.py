"""Typed literals of a request, English and Chinese."""

from __future__ import annotations

import pytest

from reasoning.case.quantities import find_quantities, length_in


@pytest.mark.parametrize(("text", "expected"), [
    ("sent EUR 2,000,000 to", [("money", "2000000", "EUR")]),
    ("paid €2m and 3 million euros", [("money", "2000000", "EUR"), ("money", "3000000", "EUR")]),
    ("USD 3,000,000.50 wired", [("money", "3000000.5", "USD")]),
    ("转账200万欧元", [("money", "2000000", "EUR")]),
    ("人民币500万元", [("money", "5000000", "CNY")]),
    ("on 15 March 2022 and 2023-07-01", [("date", "2022-03-15", None), ("date", "2023-07-01", None)]),
    ("March 5, 2021", [("date", "2021-03-05", None)]),
    ("2022年3月15日", [("date", "2022-03-15", None)]),
    ("a tax rate of 20% or 7.5 percent", [("percentage", "20", None), ("percentage", "7.5", None)]),
    ("百分之20", [("percentage", "20", None)]),
    ("3 transactions", [("count", "3", None)]),
    ("将建6层", [("count", "6", None)]),
    ("no numbers here", []),
])
def test_quantities(text: str, expected: list[tuple[str, str, str | None]]) -> None:
    found = find_quantities(text)
    assert [(q.kind, q.value, q.currency) for q in found] == expected
    assert all(text[q.start:q.end] == q.text for q in found)


@pytest.mark.parametrize(("text", "mm"), [("a 7 mm nodule", "7"), ("1.2 cm", "12"), ("8毫米", "8")])
def test_lengths_convert_to_the_input_unit(text: str, mm: str) -> None:
    (quantity,) = find_quantities(text)
    assert length_in(quantity, "mm") == mm
