"""Loose and two-sided amounts: an approximate count is the number within the tolerance either side, a
vague quantity of pieces a range, and a range's first bound is kept when its unit is left out."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extract.en.amounts import approximate
from reasoning.constraints.extraction import extract


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _words(low: int, high: int) -> list[tuple[str, dict[str, Any]]]:
    return [("word_count", {"relation": "at least", "n": low}), ("word_count", {"relation": "at most", "n": high})]


def test_the_tolerance() -> None:
    assert approximate(80) == (72, 88)
    assert approximate(100) == (90, 110)
    assert approximate(5) == (4, 6)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Write about 80 words about the ocean.", _words(72, 88)),
        ("Your answer should be roughly 150 words.", _words(135, 165)),
        ("Describe Paris in around 50 words.", _words(45, 55)),
        ("The essay should be approximately two hundred words long.", _words(180, 220)),
        ("Write 100 words about dogs.", _words(90, 110)),
        ("Write about dogs in no fewer than 40 and no more than 60 words.", _words(40, 60)),
        ("Use at least 3 but at most 5 sentences.",
         [("sentence_count", {"relation": "at least", "n": 3}), ("sentence_count", {"relation": "at most", "n": 5})]),
        ("Give a few sentences about cats.",
         [("sentence_count", {"relation": "at least", "n": 2}), ("sentence_count", {"relation": "at most", "n": 5})]),
        ("Write several short paragraphs about the war.",
         [("count", {"unit": "paragraphs", "relation": "at least", "n": 3}),
          ("count", {"unit": "paragraphs", "relation": "at most", "n": 7})]),
    ],
)
def test_amounts(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


def test_an_approximate_amount_of_each_piece_holds_per_piece() -> None:
    read = _read("Write 3 paragraphs of about 50 words each.")
    assert ("count", {"unit": "paragraphs", "relation": "exactly", "n": 3}) in read
    assert ("count", {"unit": "words", "relation": "at least", "n": 45, "per": "paragraphs"}) in read
    assert ("count", {"unit": "words", "relation": "at most", "n": 55, "per": "paragraphs"}) in read


@pytest.mark.parametrize(
    "prompt",
    ["Write 100 words or more.", "Write at least 100 words about some 20 species.", "Write a few words about your day."],
)
def test_a_stated_bound_or_no_count_is_no_approximation(prompt: str) -> None:
    read = _read(prompt)
    assert not any(p.get("relation") == "at most" for _, p in read)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("回答字数不少于50且不超过80。", _words(50, 80)),
        ("字数在50到80之间。", _words(50, 80)),
        ("请写大约100字的介绍。", _words(90, 110)),
        ("写300字左右的短文。", _words(270, 330)),
        ("用三到五句话回答。",
         [("sentence_count", {"relation": "at least", "n": 3}), ("sentence_count", {"relation": "at most", "n": 5})]),
    ],
)
def test_chinese_amounts(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


def test_a_chinese_bound_of_another_count_is_no_second_bound() -> None:
    read = _read("不超过100字，且至少包含三个句子。")
    assert ("word_count", {"n": 100, "relation": "at most"}) in read
    assert not any(kind == "word_count" and p["relation"] == "at least" for kind, p in read)
