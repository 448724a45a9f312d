"""Extraction onto the constraint form: paraphrases give one constraint, new units parse, unknowns are reported."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.graph import build_graph


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


@pytest.mark.parametrize(
    "prompt",
    [
        "Your entire response must be in capital letters.",
        "Use capitals only.",
        "No lowercase at all.",
        "全部使用大写字母。",
        "Do not use any lowercase letters in your reply.",
        "Write everything in uppercase.",
    ],
)
def test_every_wording_of_all_capitals_gives_the_same_constraint(prompt: str) -> None:
    assert _read(prompt) == [("all_capitals", {})]


@pytest.mark.parametrize(
    "prompt",
    ["Answer in all lowercase letters.", "Do not use any capital letters in your answer.", "不要使用任何大写字母。"],
)
def test_wordings_of_all_lowercase(prompt: str) -> None:
    assert _read(prompt) == [("all_lowercase", {})]


def test_lowercase_then_capitals_is_a_conflict() -> None:
    prompt = "Answer in all lowercase letters. Your entire response must be in capital letters."
    result = extract(prompt)
    graph = build_graph(result.constraints, prompt=prompt)
    assert [c.kind.value for c in result.constraints] == ["all_lowercase", "all_capitals"]
    assert len(graph.conflicts) == 1


@pytest.mark.parametrize(
    ("prompt", "kind", "params"),
    [
        ("Do not use any exclamation marks.", "count",
         {"unit": "punctuation", "relation": "at most", "n": 0, "filter": {"chars": "!！"}}),
        ("Include at least 3 emojis in your answer.", "count", {"unit": "emoji", "relation": "at least", "n": 3}),
        ("Use no more than 5 punctuation marks.", "count", {"unit": "punctuation", "relation": "at most", "n": 5}),
        ("Each sentence must contain at most 12 words.", "count",
         {"unit": "words", "relation": "at most", "n": 12, "per": "sentences"}),
        ("Write at least 5 words that start with the letter b.", "count",
         {"unit": "words", "relation": "at least", "n": 5, "filter": {"starts_with": "b"}}),
        ("Use at least 40 unique words.", "count", {"unit": "unique_words", "relation": "at least", "n": 40}),
        ("Wrap your entire answer in parentheses.", "wrap", {"left": "(", "right": ")", "unit": "answer"}),
        ("Put each sentence in square brackets.", "wrap", {"left": "[", "right": "]", "unit": "sentences"}),
        ("End every sentence with an exclamation mark.", "wrap", {"left": "", "right": "!", "unit": "sentences"}),
        ("Include at least three hashtags.", "count", {"unit": "hashtags", "relation": "at least", "n": 3}),
        ("Present the comparison as a markdown table.", "structure", {"layout": "table"}),
        ("Do not use bullet points.", "structure", {"layout": "no_list"}),
        ('The third word of your answer must be "river".', "position",
         {"unit": "words", "op": "is", "text": "river", "k": 3}),
        ('Start the last paragraph with "Finally".', "position",
         {"unit": "paragraphs", "op": "starts_with", "text": "Finally", "k": -1}),
        ("回答中不要使用感叹号。", "count", {"unit": "punctuation", "relation": "at most", "n": 0, "filter": {"chars": "!！"}}),
        ("每句话不超过20个字。", "count", {"unit": "words", "relation": "at most", "n": 20, "per": "sentences"}),
        ("用括号把整个回答括起来。", "wrap", {"left": "(", "right": ")", "unit": "answer"}),
        ("第三个词必须是“河流”。", "position", {"unit": "words", "op": "is", "text": "河流", "k": 3}),
        ("请用表格呈现结果。", "structure", {"layout": "table"}),
        # A length in characters counts spaces unless the request leaves them out.
        ("Keep the reply under 90 characters.", "count", {"unit": "characters", "relation": "less than", "n": 90}),
        ("Use at most 60 characters, not counting spaces.", "count",
         {"unit": "characters", "relation": "at most", "n": 60, "filter": {"nonspace": True}}),
        ("回答最多80个字符，不含空格。", "count",
         {"unit": "characters", "relation": "at most", "n": 80, "filter": {"nonspace": True}}),
    ],
)
def test_requirements_beyond_the_named_kinds_read_onto_the_form(prompt: str, kind: str, params: dict[str, Any]) -> None:
    assert _read(prompt) == [(kind, params)]


def test_a_changed_repetition_is_a_copy_with_its_stated_change() -> None:
    prompt = "Describe the water cycle.\n\nFirst repeat the request above, but replace 'water' with 'carbon'."
    (read,) = _read(prompt)
    assert read == ("copy", {"text": "Describe the water cycle.", "change": True, "replace": (("water", "carbon"),)})
    labelled = "Restate my question, but use 'dog' instead of 'cat', then answer it. Question: why do cats purr?"
    assert _read(labelled) == [("copy", {"text": "why do cats purr?", "change": True, "replace": (("cat", "dog"),)})]


def test_a_form_requirement_no_kind_reads_is_reported_with_its_span() -> None:
    prompt = "Tell me about owls. Every line of your answer must rhyme with the previous one."
    result = extract(prompt)
    assert not result.constraints
    (span,) = result.unrecognised
    assert prompt[span.start : span.end] == span.text == "Every line of your answer must rhyme with the previous one."


def test_content_requests_are_not_reported_as_unrecognised() -> None:
    result = extract("Explain what the word entropy means. Why is the sky blue?")
    assert result.unrecognised == ()


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Use no more than one comma in each sentence.",
         [("count", {"unit": "punctuation", "relation": "at most", "n": 1, "filter": {"chars": ",，"},
                     "per": "sentences"})]),
        ("Use at least 3 commas.",
         [("count", {"unit": "punctuation", "relation": "at least", "n": 3, "filter": {"chars": ",，"}})]),
        ("Do not use any commas.", [("no_comma", {})]),
    ],
)
def test_commas_are_a_counted_unit_and_none_at_all_stays_no_comma(
    prompt: str, expected: list[tuple[str, dict[str, Any]]]
) -> None:
    assert _read(prompt) == expected


def test_a_comma_minimum_and_no_comma_need_confirmation() -> None:
    prompt = "Use at least 3 commas. Do not use any commas."
    result = extract(prompt)
    assert len(build_graph(result.constraints, prompt=prompt).conflicts) == 1
