"""Word lengths and adjacent-word rules: read from English and Chinese wordings onto one count of
words, checked by the form's verifier, and related to other counts only where every text agrees."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Count, Filter, Unit, check
from reasoning.constraints.model import Relation
from reasoning.graph import build_graph


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _none(**fields: Any) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "words", "relation": "at most", "n": 0, "filter": fields})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("No word in your answer may be longer than 8 letters.", [_none(min_length=9)]),
        ("Use only words of at most six letters.", [_none(min_length=7)]),
        ("Every word must have fewer than 7 letters.", [_none(min_length=7)]),
        ("Words must not exceed 8 letters.", [_none(min_length=9)]),
        ("Avoid words longer than eight letters.", [_none(min_length=9)]),
        ("Write a story in which every word has between 3 and 7 letters.",
         [_none(max_length=2), _none(min_length=8)]),
        ("Include at least 3 words longer than 10 letters.",
         [("count", {"unit": "words", "relation": "at least", "n": 3, "filter": {"min_length": 11}})]),
        ("每个单词不超过8个字母。", [_none(min_length=9)]),
        ("不要使用超过八个字母的单词。", [_none(min_length=9)]),
        ("No two consecutive words start with the same letter.", [_none(same_as_previous="initial")]),
        ("Consecutive words must start with different letters.", [_none(same_as_previous="initial")]),
        ("Never use the same word twice in a row.", [_none(same_as_previous="word")]),
        ("相邻的两个词不能以同一个字母开头。", [_none(same_as_previous="initial")]),
        ("不要连续重复同一个词。", [_none(same_as_previous="word")]),
    ],
)
def test_word_shape_wordings(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


def test_a_length_of_another_clause_is_no_word_length() -> None:
    read = _read("Answer in at most 50 words and use no more than 300 characters.")
    assert ("word_count", {"relation": "at most", "n": 50}) in read
    assert all("min_length" not in str(params) and "max_length" not in str(params) for _kind, params in read)


def test_verifier_counts_long_words_and_repeated_initials() -> None:
    long_words = Count(unit=Unit.WORDS, filter=Filter(min_length=9), relation=Relation.AT_MOST, n=0)
    assert check(long_words, "A short plain answer.").satisfied
    assert not check(long_words, "An extraordinary answer.").satisfied
    initials = Count(unit=Unit.WORDS, filter=Filter(same_as_previous="initial"), relation=Relation.AT_MOST, n=0)
    assert check(initials, "Big red apple; 42 owls.").satisfied
    assert not check(initials, "Big — bold apple.").satisfied  # a dash does not part two words
    assert not check(initials, "Red\nrose.").satisfied


def test_a_word_length_cap_does_not_exclude_a_word_count() -> None:
    prompt = "Write at least 50 words. No word may be longer than 8 letters."
    result = extract(prompt)
    assert len(result.constraints) == 2
    assert not build_graph(result.constraints, prompt=prompt).conflicts
