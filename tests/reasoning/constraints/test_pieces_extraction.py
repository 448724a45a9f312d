"""Extraction of requirements said of every piece, of a share of the pieces, or of marked-up spans.

Categories of wording (an opening or ending of every piece, a share of the
sentences, bold text, counted quoted spans, headings, a bracketed title, a
one-word verdict, lengths compared between pieces) in wordings of their own;
the paraphrase set holds others.
"""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Position, Unit, check


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _spans(left: str, right: str, relation: str, n: int) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "spans", "relation": relation, "n": n,
                      "filter": {"left": left, "right": right, "nonempty": True}})


def _share(mark: str, relation: str, fraction: float) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "sentences", "relation": relation, "n": 0, "filter": {"ends_with": mark},
                      "of": {"unit": "sentences", "filter": {}}, "fraction": fraction})


@pytest.mark.parametrize(
    ("prompt", "unit", "op", "text"),
    [
        ('Each line must start with the word "Step".', "lines", "starts_with", "Step"),
        ('Make every sentence end with the word "now".', "sentences", "ends_with", "now"),
        ('Begin every bullet with "->".', "bullets", "starts_with", "->"),
        ("Open each list item with ⭐.", "bullets", "starts_with", "⭐"),
        ('Close every paragraph with "Next."', "paragraphs", "ends_with", "Next."),
    ],
)
def test_an_opening_or_ending_of_every_piece_is_a_position_of_each(prompt: str, unit: str, op: str, text: str) -> None:
    assert _read(prompt) == [("position", {"unit": unit, "op": op, "text": text, "k": 0})]


def test_the_reading_of_every_piece_verifies_each_piece() -> None:
    (constraint,) = extract('Every sentence has to begin with "So".').constraints
    form = Position(unit=Unit(constraint.params["unit"]), k=0, op=constraint.params["op"], text=constraint.params["text"])
    assert check(form, "So it rains. So we stay.").satisfied
    assert not check(form, "So it rains. We stay.").satisfied


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("No more than a third of the sentences may be questions.", [_share("?", "at most", 0.3333)]),
        ("Most of your sentences should be exclamations.", [_share("!", "more than", 0.5)]),
        ("At least 40 percent of the sentences must be questions.", [_share("?", "at least", 0.4)]),
    ],
)
def test_a_share_of_the_sentences_is_a_ratio_of_counts(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Do not use bold text.", [_spans("**", "**", "at most", 0)]),
        ("Bold the names of two cities.", [_spans("**", "**", "exactly", 2)]),
        ("Write the verdict in bold.", [_spans("**", "**", "at least", 1)]),
        ("Wrap four key terms in double quotation marks.", [_spans('"', '"', "exactly", 4)]),
        ("Place the title inside 《》 at the top.", [_spans("《", "》", "at least", 1)]),
        ("Include exactly 4 ## headings.", [("count", {"unit": "headings", "relation": "exactly", "n": 4,
                                                         "filter": {"marker": "##"}})]),
        ("Never include hashtags.", [("count", {"unit": "hashtags", "relation": "at most", "n": 0})]),
        ("Respond with just one word: true or false.", [("constrained_response", {"options": ["true", "false"]})]),
        ("Write a hierarchical outline of the plan.", [("structure", {"layout": "nested_list"})]),
        ("Give a nested list of two themes, each with three sub-points.",
         [("structure", {"layout": "nested_list", "n": 2, "sub_items": 3})]),
    ],
)
def test_markup_and_verdicts_read_onto_the_form(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    "prompt",
    ["Write about the bold move of a chess champion.", "Which headings does the report use?",
     "Summarize the hashtags trending today.", "介绍一下粗体字的历史。"],
)
def test_bold_headings_and_hashtags_talked_about_are_no_requirement(prompt: str) -> None:
    assert _read(prompt) == []


def test_the_whole_answer_in_quotes_stays_a_quotation_beside_other_counts() -> None:
    prompt = "Write a story of at least 300 words. Wrap your entire response in double quotation marks."
    assert _read(prompt) == [("word_count", {"relation": "at least", "n": 300}), ("quotation", {})]


def test_bold_next_to_a_single_asterisk_example_stays_an_ifeval_highlight() -> None:
    assert _read("Highlight or bold at least two sections, e.g. *this part*.") == [("highlighted_sections", {"n": 2})]


@pytest.mark.parametrize(
    "prompt",
    [
        "All paragraphs should be roughly the same length, within ten words of each other.",
        "No line may be more than five characters shorter than the longest one, the others alike.",
    ],
)
def test_lengths_compared_between_pieces_are_unrecognised_not_a_count(prompt: str) -> None:
    result = extract(prompt)
    assert result.constraints == ()
    assert [span.text for span in result.unrecognised] == [prompt]
