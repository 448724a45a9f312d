"""Sentence types relative to one another: ratios and numbers of questions, statements and exclamations,
read in English and Chinese, checked by the form's ratio verifier; the sentence count said with them goes."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import check
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.model import Kind


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _ratio(a: str, b: str, r: float) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "sentences", "relation": "exactly", "n": 0, "filter": {"ends_with": a},
                      "of": {"unit": "sentences", "filter": {"ends_with": b}}, "fraction": r})


def _each(mark: str, n: int) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "sentences", "relation": "exactly", "n": n, "filter": {"ends_with": mark}})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Use twice as many statements as questions.", [_ratio(".", "?", 2.0)]),
        ("Include three times as many declarative sentences as interrogative ones.", [_ratio(".", "?", 3.0)]),
        ("Your response should contain as many questions as exclamations.", [_ratio("?", "!", 1.0)]),
        ("Write equal numbers of statements, questions and exclamations.",
         [_ratio("?", ".", 1.0), _ratio("!", ".", 1.0)]),
        ("Questions and statements should appear in equal numbers.", [_ratio(".", "?", 1.0)]),
        ("请写问句和陈述句各两句。", [_each("?", 2), _each(".", 2)]),
        ("陈述句的数量是问句的两倍。", [_ratio(".", "?", 2.0)]),
        ("问句和感叹句的数量要相同。", [_ratio("!", "?", 1.0)]),
        # a number of each of several types, under the relation said before the list
        ("Write a short ad for a bakery: exactly three questions, one exclamation and two plain statements.",
         [_each("?", 3), _each("!", 1), _each(".", 2)]),
        ("写一段广告词，包含两个问句、一个感叹句和三个陈述句。",
         [_each("?", 2), _each("!", 1), _each(".", 3)]),  # 一段广告词: a piece of text, no paragraph count
    ],
)
def test_sentence_types(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


def test_the_ratio_is_verified() -> None:
    (kind, params), = _read("Use twice as many statements as questions.")
    (form,) = form_of(Kind(kind), params) or ()
    assert check(form, "Dogs bark. Cats purr. Why? Birds sing. Fish swim. How?").satisfied
    assert not check(form, "Dogs bark. Why? Cats purr? Birds sing.").satisfied


def test_asking_questions_is_no_ratio() -> None:
    assert not any(p.get("of") for _, p in _read("Ask me many questions and answer in statements."))


def test_a_bound_of_each_type_and_a_refused_type_beside_a_ratio() -> None:
    read = _read("Write a toast with as many questions as statements, at least two of each, and no exclamations.")
    at_least = [p for _, p in read if p.get("relation") == "at least"]
    assert sorted(p["filter"]["ends_with"] for p in at_least) == [".", "?"] and {p["n"] for p in at_least} == {2}
    assert ("count", {"unit": "sentences", "relation": "at most", "n": 0, "filter": {"ends_with": "!"}}) in read
    assert not any(p.get("unit") == "punctuation" for _, p in read)


def test_a_refused_mark_without_sentence_types_stays_a_mark() -> None:
    assert _read("Write a story with no exclamation marks.") == [
        ("count", {"unit": "punctuation", "relation": "at most", "n": 0, "filter": {"chars": "!！"}})]
