"""Ratios between counts said in further wordings (issue 36): one quoted word used so many times as often as
another (English and Chinese), sentence types compared with a quality word ("plain statements"), and a number
of spans between named marks ("two notes in square brackets") rather than the answer wrapped in them. The
readings are verified through the form's own verifier on texts that do and do not hold them."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import check, form_of
from reasoning.constraints.model import Kind


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _ratio(more: str, less: str, ratio: float, relation: str = "exactly", whole: bool = True) -> tuple[str, dict[str, Any]]:
    a: dict[str, Any] = {"text": more, "whole_word": True} if whole else {"text": more}
    b: dict[str, Any] = {"text": less, "whole_word": True} if whole else {"text": less}
    return ("count", {"unit": "keywords", "relation": relation, "n": 0, "filter": a,
                      "of": {"unit": "keywords", "filter": b}, "fraction": ratio})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Write a diary entry. Use the word 'rain' exactly three times as many times as the word 'sun'.",
         _ratio("rain", "sun", 3.0)),
        ("In your review, say 'good' twice as often as 'bad'.", _ratio("good", "bad", 2.0)),
        ("Mention 'east' as often as 'west'.", _ratio("east", "west", 1.0)),
        ("Use 'yes' at least twice as often as 'no'.", _ratio("yes", "no", 2.0, "at least")),
        ("写一段话，“山”字出现的次数必须是“水”字的三倍。", _ratio("山", "水", 3.0, whole=False)),
        ("写一首诗，“风”和“雨”出现的次数一样多。", _ratio("风", "雨", 1.0, whole=False)),
    ],
)
def test_one_word_as_often_as_another(prompt: str, expected: tuple[str, dict[str, Any]]) -> None:
    read = _read(prompt)
    assert expected in read
    assert not any(kind in ("keywords_present", "keyword_frequency") for kind, _ in read)


def test_a_word_ratio_is_verified_on_whole_words() -> None:
    (constraint,) = [c for c in extract("Say 'good' twice as often as 'bad'.").constraints if c.kind is Kind.COUNT]
    forms = form_of(constraint.kind, constraint.params)
    assert forms is not None
    (form,) = forms
    assert check(form, "Good food, good friends, a bad day.").satisfied
    assert check(form, "Good food, good friends, a bad day and a badge.").satisfied  # 'badge' is no use of 'bad'
    assert not check(form, "Good food, good friends, good news, a bad day.").satisfied
    assert not check(form, "Good food, good friends.").satisfied  # a share of no 'bad' fails


def test_two_quoted_words_without_a_comparison_read_no_ratio() -> None:
    assert not any(params.get("of") for _, params in _read("Use the words 'tea' and 'coffee' at least twice."))


def test_types_compared_with_a_quality_word() -> None:
    read = _read("Open a debate with as many questions as plain statements, at least three of each, "
                 "and no exclamations.")
    assert ("count", {"unit": "sentences", "relation": "exactly", "n": 0, "filter": {"ends_with": "?"},
                      "of": {"unit": "sentences", "filter": {"ends_with": "."}}, "fraction": 1.0}) in read
    assert ("count", {"unit": "sentences", "relation": "at least", "n": 3, "filter": {"ends_with": "?"}}) in read
    assert ("count", {"unit": "sentences", "relation": "at most", "n": 0, "filter": {"ends_with": "!"}}) in read


@pytest.mark.parametrize(
    ("prompt", "left", "right", "n"),
    [
        ("Write a short bio of a chemist and add exactly two editor's notes in square brackets.", "[", "]", 2),
        ("Tell a story with three asides in parentheses.", "(", ")", 3),
    ],
)
def test_a_number_of_spans_between_marks(prompt: str, left: str, right: str, n: int) -> None:
    read = _read(prompt)
    assert ("count", {"unit": "spans", "relation": "exactly", "n": n,
                      "filter": {"left": left, "right": right, "nonempty": True}}) in read
    assert not any(kind == "wrap" for kind, _ in read)


def test_the_answer_wrapped_in_marks_stays_a_wrapper() -> None:
    assert ("wrap", {"left": "[", "right": "]", "unit": "answer"}) in _read("Wrap your entire answer in square brackets.")
