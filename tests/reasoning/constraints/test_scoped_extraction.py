"""Extraction reads a requirement's scope and relation: per piece or whole answer, exact or a bound.

Each case is a category of wording (a quantifier over the pieces, a bound
said of none of them, "and no more", a bare number of pieces to write, items
one per line), in wordings of its own; the paraphrase set holds others.
"""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _count(unit: str, relation: str, n: int, **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": unit, "relation": relation, "n": n, **extra})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        # a bound denied of every piece is its opposite for each piece, never a whole-answer count
        ("No paragraph should hold more than three sentences.", [_count("sentences", "at most", 3, per="paragraphs")]),
        ("No paragraph may have fewer than two sentences.", [_count("sentences", "at least", 2, per="paragraphs")]),
        ("Do not let any sentence go over 18 words.", [_count("words", "at most", 18, per="sentences")]),
        # the number after the piece counts another unit, per piece
        ("No line should be longer than 35 characters.", [_count("characters", "at most", 35, per="lines")]),
        ("Keep every line under 50 characters.", [_count("characters", "less than", 50, per="lines")]),
        # "a number" held by each piece is at least one per piece
        ("Each sentence has to contain a number.", [_count("numbers", "at least", 1, per="sentences")]),
        # a partitive quantifier ("each of your", "none of the") and a bare plural piece are per piece too
        ("Each of the paragraphs should hold at least two sentences.",
         [_count("sentences", "at least", 2, per="paragraphs")]),
        ("None of the sentences may be longer than 25 words.", [_count("words", "at most", 25, per="sentences")]),
        ("Lines should stay under 60 characters.", [_count("characters", "less than", 60, per="lines")]),
        # "each" after the count: each of the pieces counted before it
        ("Write four sentences of at most eight words each.",
         [("sentence_count", {"relation": "exactly", "n": 4}), _count("words", "at most", 8, per="sentences")]),
    ],
)
def test_a_bound_said_of_each_piece_holds_per_piece(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Include two colons and no more.", [_count("punctuation", "exactly", 2, filter={"chars": ":："})]),
        ("Add four emoji — no more, no fewer.", [_count("emoji", "exactly", 4)]),
        ("Reply in three sentences, no more, no fewer.", [("sentence_count", {"relation": "exactly", "n": 3})]),
        ("Please answer in three paragraphs.", [_count("paragraphs", "exactly", 3)]),
        ("Give me two sentences about tea.", [("sentence_count", {"relation": "exactly", "n": 2})]),
        ("Name six birds, one per line.", [_count("lines", "exactly", 6)]),
        ("Suggest five titles, each on a separate line.", [_count("lines", "exactly", 5)]),
        # no count: the sentences are the prompt's, the number approximate, or another bound follows
        ("Rewrite the three sentences below in plain words.", []),
        ("Write five sentences, no more than ten words each.",
         [("sentence_count", {"relation": "exactly", "n": 5}), _count("words", "at most", 10, per="sentences")]),
    ],
)
def test_a_bare_number_of_pieces_to_write_is_exact(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "phrase"),
    [
        ("Sign off with exactly these words: Talk soon.", "Talk soon."),
        ("Close your letter with the following sentence: Best of luck.", "Best of luck."),
        ('Wrap up with the words "Until next time".', "Until next time"),
    ],
)
def test_a_sign_off_is_an_ending(prompt: str, phrase: str) -> None:
    assert _read(prompt) == [("end_phrase", {"phrase": phrase})]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Give 4 lines, each under 8 words.",
         [("count", {"unit": "lines", "relation": "exactly", "n": 4}),
          ("count", {"unit": "words", "relation": "less than", "n": 8, "per": "lines"})]),
        ("Use at most 3 commas in a paragraph.",
         [("count", {"unit": "punctuation", "relation": "at most", "n": 3, "filter": {"chars": ",，"},
                     "per": "paragraphs"})]),
        ("Give me 4 lines and the second one must start with \"And\".",
         [("count", {"unit": "lines", "relation": "exactly", "n": 4}),
          ("position", {"unit": "lines", "op": "starts_with", "text": "And", "k": 2})]),
    ],
)
def test_each_after_the_pieces_a_single_piece_and_an_ordinal_without_its_noun(
        prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert [(c.kind.value, c.params) for c in extract(prompt).constraints] == expected
