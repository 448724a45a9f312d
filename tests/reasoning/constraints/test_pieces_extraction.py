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
    ("prompt", "expected"),
    [
        ("All paragraphs should be roughly the same length, within ten words of each other.",
         {"unit": "words", "per": "paragraphs", "max_diff": 10}),
        ("No line may be more than five characters shorter than the longest one, the others alike.",
         {"unit": "characters", "per": "lines", "max_diff": 5}),
        ("Sentences should all be of a similar length.", {"unit": "words", "per": "sentences", "max_ratio": 1.5}),
    ],
)
def test_lengths_compared_between_pieces_are_a_spread_not_a_count(prompt: str, expected: dict[str, Any]) -> None:
    result = extract(prompt)
    assert [(c.kind.value, c.params) for c in result.constraints] == [("spread", expected)]
    assert result.unrecognised == ()


def test_a_count_of_the_pieces_beside_equal_lengths_stays_a_count() -> None:
    assert _read("Write 3 paragraphs of roughly equal length.") == [
        ("spread", {"unit": "words", "per": "paragraphs", "max_ratio": 1.5}),
        ("count", {"unit": "paragraphs", "relation": "exactly", "n": 3}),
    ]


@pytest.mark.parametrize(
    ("prompt", "unit", "word_class"),
    [
        ("Open every bullet point with an emoji.", "bullets", "emoji"),
        ("Each sentence has to begin with a capital letter.", "sentences", "capital"),
        ("Start each line with a lowercase letter.", "lines", "lowercase"),
        ("Every list item should lead with an action verb.", "bullets", "verb"),
        ("Begin each paragraph with a number.", "paragraphs", "number"),
    ],
)
def test_an_opening_of_every_piece_by_a_class(prompt: str, unit: str, word_class: str) -> None:
    assert _read(prompt) == [("position", {"unit": unit, "op": "starts_with", "text": "", "k": 0,
                                           "word_class": word_class})]


@pytest.mark.parametrize(
    ("prompt", "unit", "word_class"),
    [
        ("The first letter of each line should be in capitals.", "lines", "capital"),
        ("The first letter of every paragraph should be a majuscule.", "paragraphs", "capital"),
        ("The first word of every bullet must be capitalised.", "bullets", "capital"),
        ("The first letter of each line must be upper case.", "lines", "capital"),
        ("The first letter of every sentence must be lowercased.", "sentences", "lowercase"),
        ("The first letter of every line in the code block must be lowercase.", "lines", "lowercase"),
    ],
)
def test_the_case_of_every_pieces_first_letter_in_the_lexicons_case_words(prompt: str, unit: str,
                                                                           word_class: str) -> None:
    """The lexicon's case words (and their verbs) say the first letter's case; "block" alone says none."""
    assert _read(prompt) == [("position", {"unit": unit, "op": "starts_with", "text": "", "k": 0,
                                           "word_class": word_class})]


@pytest.mark.parametrize("prompt", ["Give four bullet points, each one starting with a verb.",
                                    "List four chores, each one starting with a verb, as bullet points."])
def test_a_class_opening_of_each_counted_item(prompt: str) -> None:
    read = _read(prompt)
    assert len(read) == 2
    assert ("position", {"unit": "bullets", "op": "starts_with", "text": "", "k": 0, "word_class": "verb"}) in read
    assert ("bullet_count", {"n": 4}) in read


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Mark the start of each review with Critic 1 and Critic 2.", {"splitter": "Critic", "n": 2}),
        ("Divide it into parts labelled Stage 1, Stage 2 and Stage 3.", {"splitter": "Stage", "n": 3}),
        ("Give me 4 quick recipes, marking each recipe as Recipe X.", {"splitter": "Recipe", "n": 4}),
    ],
)
def test_numbered_labels_of_the_pieces_are_sections(prompt: str, expected: dict[str, Any]) -> None:
    assert ("sections", expected) in _read(prompt)


def test_numbered_things_named_are_no_section_labels() -> None:
    assert _read("Compare Model 1 and Model 2, then start with a short verdict.") == []


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Please leave a blank line between paragraphs.", [("count", {"unit": "paragraphs", "relation": "at least", "n": 2})]),
        ("Write two paragraphs separated by an empty line.",
         [("count", {"unit": "paragraphs", "relation": "exactly", "n": 2})]),
        ("Give the answer as a JSON object with the keys city, country and population.",
         [("json_format", {"keys": ["city", "country", "population"]})]),
        ("Use no more than three question marks.",
         [("count", {"unit": "punctuation", "relation": "at most", "n": 3, "filter": {"chars": "?？"}})]),
    ],
)
def test_separators_json_keys_and_named_marks(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Place an emoji at the start of every paragraph.",
         ("position", {"unit": "paragraphs", "op": "starts_with", "text": "", "k": 0, "word_class": "emoji"})),
        ("Each line must be preceded by a number.",
         ("position", {"unit": "lines", "op": "starts_with", "text": "", "k": 0, "word_class": "number"})),
        ("Put an exclamation mark at the end of every sentence.",
         ("wrap", {"left": "", "right": "!", "unit": "sentences"})),
    ],
)
def test_a_class_or_mark_at_the_edge_of_every_piece(prompt: str, expected: tuple[str, dict[str, Any]]) -> None:
    assert _read(prompt) == [expected]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Use at least 5 capital letters.", ("count", {"unit": "letters", "relation": "at least", "n": 5,
                                                      "filter": {"case": "upper"}})),
        ("Keep it to no more than ten lowercase letters.", ("count", {"unit": "letters", "relation": "at most", "n": 10,
                                                                     "filter": {"case": "lower"}})),
        ("Write it all in capital letters.", ("all_capitals", {})),
    ],
)
def test_a_number_of_letters_of_a_case_is_a_count_not_the_whole_answers_case(
        prompt: str, expected: tuple[str, dict[str, Any]]) -> None:
    assert _read(prompt) == [expected]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Write a 120-word pitch for a bakery.", ("word_count", {"relation": "exactly", "n": 120})),
        ("Give me a two-sentence bio.", ("sentence_count", {"relation": "exactly", "n": 2})),
        ("Tighten the 80-word abstract below.", None),
    ],
)
def test_a_length_hyphenated_before_a_noun_is_the_count_of_that_unit(
        prompt: str, expected: tuple[str, dict[str, Any]] | None) -> None:
    assert _read(prompt) == ([expected] if expected else [])


def test_a_named_letter_opening_every_word_is_the_position_of_every_word() -> None:
    expected = ("position", {"unit": "words", "k": 0, "op": "starts_with", "text": "r"})
    assert _read("Every word of the poem has to begin with the letter R.") == [expected]
    form = Position(unit=Unit.WORDS, k=0, op="starts_with", text="r")
    assert check(form, "Red rivers run").satisfied and not check(form, "Red rivers flow").satisfied


@pytest.mark.parametrize(
    ("prompt", "unit", "fields"),
    [
        ("Sprinkle in a couple of question marks.", "punctuation", {"filter": {"chars": "?？"}}),
        ("Write a couple of sentences on tea.", None, {}),
    ],
)
def test_a_couple_is_at_least_two_never_exactly(prompt: str, unit: str | None, fields: dict[str, Any]) -> None:
    if unit is None:
        assert _read(prompt) == [("sentence_count", {"relation": "at least", "n": 2})]
    else:
        assert _read(prompt) == [("count", {"unit": unit, "relation": "at least", "n": 2, **fields})]
