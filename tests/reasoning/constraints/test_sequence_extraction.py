"""Pieces related to one another, and words inside a piece: read from English and Chinese wordings onto the
form (a spread's step, an echoing position, a containment, a word inside the k-th piece), replacing the
unrelated readings these sentences used to get, and never read from near misses."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extract.en.sequence import ordinal_phrase
from reasoning.constraints.extraction import extract


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _step(n: int, per: str = "sentences", unit: str = "words") -> tuple[str, dict[str, Any]]:
    return ("spread", {"unit": unit, "per": per, "step": n})


def _echo(unit: str, same_as: str) -> tuple[str, dict[str, Any]]:
    op = "ends_with" if same_as == "first_word" else "starts_with"
    return ("position", {"unit": unit, "op": op, "text": "", "k": 0, "same_as": same_as})


def _contains(unit: str, k: int, text: str) -> tuple[str, dict[str, Any]]:
    return ("position", {"unit": unit, "op": "contains", "text": text, "k": k})


@pytest.mark.parametrize(
    ("phrase", "k"),
    [("third", 3), ("4th", 4), ("last", -1), ("final", -1), ("penultimate", -2), ("second-to-last", -2),
     ("next to last", -2), ("second last", -2), ("last but one", -2), ("third from the end", -3), ("blue", None)],
)
def test_ordinal_phrases(phrase: str, k: int | None) -> None:
    assert ordinal_phrase(phrase) == k


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Each sentence must be exactly two words longer than the previous one.", [_step(2)]),
        ("Make every sentence 3 words longer than the one before it.", [_step(3)]),
        ("Every paragraph should have 5 fewer words than the preceding paragraph.", [_step(-5, "paragraphs")]),
        ("Your lines should grow by four characters each: every line longer than the line before it.",
         [_step(4, "lines", "characters")]),
        ("每句话比前一句多两个字。", [_step(2)]),
    ],
)
def test_steps_between_pieces(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


def test_a_step_keeps_the_count_of_pieces() -> None:
    read = _read("Write five sentences, each exactly two words longer than the previous one.")
    assert _step(2) in read
    assert ("sentence_count", {"relation": "exactly", "n": 5}) in read
    assert not any(kind == "count" for kind, _ in read)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Each paragraph should end with the word it began with.", [_echo("paragraphs", "first_word")]),
        ("Start and end every line with the same word.", [_echo("lines", "first_word")]),
        ("The first and last words of each sentence must be identical.", [_echo("sentences", "first_word")]),
        ("The last word of each sentence must be the first word of the next sentence.",
         [_echo("sentences", "previous_last_word")]),
        ("Begin every paragraph with the final word of the paragraph before it.",
         [_echo("paragraphs", "previous_last_word")]),
        ("每段的最后一个词要和第一个词相同。", [_echo("paragraphs", "first_word")]),
        ("每句都以上一句的最后一个词开头。", [_echo("sentences", "previous_last_word")]),
    ],
)
def test_echoes(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ('The word "ocean" must appear in the third sentence.', [_contains("sentences", 3, "ocean")]),
        ("Mention 'tide' in paragraph 2.", [_contains("paragraphs", 2, "tide")]),
        ("Your last sentence has to include the keyword 'budget'.", [_contains("sentences", -1, "budget")]),
        ("第二句话必须包含“风险”这个词。", [_contains("sentences", 2, "风险")]),
        ("“创新”一词要出现在第三段。", [_contains("paragraphs", 3, "创新")]),
        ("Put the word \"river\" as the second word of the fourth sentence.",
         [("position", {"unit": "sentences", "op": "is", "text": "river", "k": 4, "word": 2})]),
        ("The third sentence's first word must be 'Meanwhile'.",
         [("position", {"unit": "sentences", "op": "starts_with", "text": "Meanwhile", "k": 3})]),
        ("第二句的第一个词必须是“但是”。",
         [("position", {"unit": "sentences", "op": "is", "text": "但是", "k": 2, "word": 1})]),
        ("The second word and the second-to-last word of your answer must both be \"blue\".",
         [("position", {"unit": "words", "op": "is", "text": "blue", "k": 2}),
          ("position", {"unit": "words", "op": "is", "text": "blue", "k": -2})]),
        ("Make the penultimate word of your reply 'home'.",
         [("position", {"unit": "words", "op": "is", "text": "home", "k": -2})]),
    ],
)
def test_words_inside_pieces(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


def test_prose_then_a_list_is_no_sentence_count() -> None:
    read = _read("Write two sentences first, then at least two bullet points marked with *.")
    assert read == [("structure", {"layout": "list", "n": 2, "before": "paragraph"})]  # one list, not a rival count
    after = _read("Give a bulleted list of 3 items, then one sentence summarizing them.")
    assert after == [("structure", {"layout": "list", "n": 3, "after": "sentence"})]


@pytest.mark.parametrize(
    "prompt",
    [
        "Each sentence must begin with \"Note\" and end with a period.",
        "Each paragraph should have no more than 50 words, and the last paragraph must end with \"Done\".",
        "The first word of each sentence must be capitalized.",
        "Write five sentences. Then list three facts.",
    ],
)
def test_near_misses_keep_their_readings(prompt: str) -> None:
    read = _read(prompt)
    assert not any(kind == "spread" or params.get("same_as") or params.get("op") == "contains"
                   or "word" in params for kind, params in read)
