"""Typed number and relation parsing in English and Chinese."""

from __future__ import annotations

import pytest

from reasoning.constraints.model import Relation
from reasoning.constraints.quantities import (
    labels_through,
    ordinal,
    parse_number,
    parse_zh_number,
    relation_after,
    relation_before,
)


@pytest.mark.parametrize(
    ("words", "value"),
    [(["300"], 300), (["300+"], 300), (["twenty-five"], 25), (["one", "hundred", "and", "fifty"], 150),
     (["twice"], 2), (["dozen"], 12), (["a"], None), (["many"], None)],
)
def test_parse_number(words: list[str], value: int | None) -> None:
    assert parse_number(words) == value


@pytest.mark.parametrize(("text", "value"), [("80", 80), ("八十", 80), ("两百", 200), ("十五", 15), ("三", 3), ("x", None)])
def test_parse_zh_number(text: str, value: int | None) -> None:
    assert parse_zh_number(text) == value


@pytest.mark.parametrize(
    ("words", "relation"),
    [("use at least", Relation.AT_LEAST), ("no more than", Relation.AT_MOST), ("in under", Relation.LESS_THAN),
     ("fewer than", Relation.LESS_THAN), ("less than a total of", Relation.LESS_THAN), ("exactly", Relation.EXACTLY)],
)
def test_relation_before(words: str, relation: Relation) -> None:
    found = relation_before(words.split())
    assert found is not None and found[0] == relation


def test_relation_after_and_ordinals() -> None:
    assert relation_after(["or", "more", "words"]) == (Relation.AT_LEAST, 2)
    assert relation_after(["+"]) == (Relation.AT_LEAST, 1)
    assert relation_after(["words"]) is None
    assert (ordinal("third"), ordinal("4th"), ordinal("many")) == (3, 4, None)


@pytest.mark.parametrize(
    ("numbers", "n"),
    [([1, 2, 3], 3), ([2, 1], 2), ([1, 3, 2, 4], 4), ([1], None), ([], None), ([1, 3], None), ([1, 1], None),
     ([2, 3], None)],
)
def test_labels_through(numbers: list[int], n: int | None) -> None:
    """Labels 1..n shown (in any order) say n pieces; one label, a gap or a repeat says none."""
    assert labels_through(numbers) == n
