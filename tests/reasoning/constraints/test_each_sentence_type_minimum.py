""""各至少两句" after sentence types is at least two of each type, never a minimum of all the sentences
together (issue 36), through the real extraction (spaCy zh with jieba)."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _texts(prompt: str) -> list[str]:
    return [str(c.params.get("text")) for c in extract(prompt).constraints if c.params.get("text") is not None]


def _at_least_each(mark: str, n: int) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "sentences", "relation": "at least", "n": n, "filter": {"ends_with": mark}})


@pytest.mark.parametrize(
    ("prompt", "marks", "n"),
    [
        ("用中文写一段话，包含陈述句和疑问句，各至少两句。", (".", "?"), 2),
        ("回答里要有问句和感叹句，各不少于三句。", ("?", "!"), 3),
        ("请使用疑问句与陈述句，各自至少写两句话。", ("?", "."), 2),
    ],
)
def test_each_type_at_least_is_a_minimum_of_each_type(prompt: str, marks: tuple[str, ...], n: int) -> None:
    read = _read(prompt)
    for mark in marks:
        assert _at_least_each(mark, n) in read, read
    assert not any(k == "sentence_count" or k == "count" and p.get("unit") == "sentences" and not p.get("filter")
                   for k, p in read), read


def test_each_type_without_a_relation_stays_exact() -> None:
    read = _read("请写问句和陈述句各两句。")
    assert ("count", {"unit": "sentences", "relation": "exactly", "n": 2, "filter": {"ends_with": "?"}}) in read


@pytest.mark.parametrize(
    ("prompt", "mark", "relation", "n"),
    [
        ("为读书会写一段开场白，里面要正好包含两个问句。", "?", "exactly", 2),
        ("写一则通知，至少用三个感叹句。", "!", "at least", 3),
    ],
)
def test_a_number_of_one_type_is_that_type(prompt: str, mark: str, relation: str, n: int) -> None:
    read = _read(prompt)
    assert ("count", {"unit": "sentences", "relation": relation, "n": n, "filter": {"ends_with": mark}}) in read, read
    assert not any(k == "sentence_count" or p.get("unit") == "paragraphs" for k, p in read), read
