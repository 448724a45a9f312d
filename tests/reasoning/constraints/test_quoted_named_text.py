"""A quote that nouns name in apposition is the text of a reading ("close each paragraph with the words
'See you soon.'" ends each with See you soon., never with "words"; issue 36), through the real extraction."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _texts(prompt: str) -> list[str]:
    return [str(c.params.get("text")) for c in extract(prompt).constraints if c.params.get("text") is not None]


@pytest.mark.parametrize(
    ("prompt", "unit", "op", "text"),
    [
        ("Write a story in three paragraphs. Close each paragraph with the words 'See you soon.'",
         "paragraphs", "ends_with", "See you soon."),
        ('Finish every paragraph with the greeting "Take care".', "paragraphs", "ends_with", "Take care"),
        ("Begin each sentence with the words 'Dear friend'.", "sentences", "starts_with", "Dear friend"),
        ('End every line with the exact sentence: "That is all."', "lines", "ends_with", "That is all."),
    ],
)
def test_a_quote_a_noun_names_is_the_text_not_the_noun(prompt: str, unit: str, op: str, text: str) -> None:
    read = [p for k, p in _read(prompt) if k == "position"]
    assert {"unit": unit, "op": op, "text": text, "k": 0} in read, _read(prompt)
    assert not {"words", "greeting", "sentence", "exact"} & set(_texts(prompt))
