"""Positions on pieces said in further wordings (issue 36): a bare word to mention in the k-th piece, a line
that must say a text (also "the line before last"), the k-th sentence said to be a question, pieces referred
back to ("every one of them"), a verbless count ("Three sentences."), and the Chinese sayings of the same
forms. Each is read onto the existing form, or the clause is left unrecognised; near misses read nothing."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _position(unit: str, k: int, op: str, text: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("position", {"unit": unit, "op": op, "text": text, "k": k, **extra})


_NOTE = "Write a thank-you note. The line before last should say exactly 'Warmly,' and the last line must say 'Omar'."


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Describe a picnic in two paragraphs and mention ants in the final paragraph.",
         _position("paragraphs", -1, "contains", "ants")),
        ("Tell a story about a lighthouse; the penultimate paragraph should talk about the fog.",
         _position("paragraphs", -2, "contains", "fog")),
        ("Write a poem where you use lanterns in the third line.", _position("lines", 3, "contains", "lanterns")),
        (_NOTE, _position("lines", -2, "is", "Warmly,")),
        (_NOTE, _position("lines", -1, "is", "Omar")),
        ("Draft a memo whose last line reads 'End of memo'.", _position("lines", -1, "is", "End of memo")),
        ("Write a fable in which the second sentence from the end is a question.",
         _position("sentences", -2, "ends_with", "?")),
        ("Write a cheer; the opening sentence must be an exclamation.", _position("sentences", 1, "ends_with", "!")),
    ],
)
def test_positions_on_pieces(prompt: str, expected: tuple[str, dict[str, Any]]) -> None:
    assert expected in _read(prompt)


def test_a_count_of_pieces_beside_a_position_stays() -> None:
    read = _read("Write four paragraphs about autumn and mention apples in the second paragraph.")
    assert _position("paragraphs", 2, "contains", "apples") in read
    assert ("count", {"unit": "paragraphs", "relation": "exactly", "n": 4}) in read


@pytest.mark.parametrize(
    "prompt",
    [
        "Mention your childhood in the first paragraph.",  # a topic with a possessive: no word to contain
        "Discuss the local weather of the region in the last paragraph.",
        "Answer the question in the second sentence.",  # "question" is the prompt's, not the sentence's type
    ],
)
def test_topics_and_near_misses_place_no_word(prompt: str) -> None:
    assert not any(kind == "position" and params.get("op") == "contains" for kind, params in _read(prompt))
    assert not any(kind == "position" and params.get("text") == "?" for kind, params in _read(prompt))


@pytest.mark.parametrize(
    ("prompt", "count", "mark", "unit"),
    [
        ("Write a note to my sister. Five sentences, and every one of them must end with a question mark.",
         ("sentence_count", {"relation": "exactly", "n": 5}), "?", "sentences"),
        ("Write four lines about snow; all of them should end with a semicolon.",
         ("count", {"unit": "lines", "relation": "exactly", "n": 4}), ";", "lines"),
        ("A riddle about clocks. Two sentences, each ending with an exclamation mark.",
         ("sentence_count", {"relation": "exactly", "n": 2}), "!", "sentences"),
    ],
)
def test_pieces_referred_back_take_the_mark(prompt: str, count: tuple[str, dict[str, Any]], mark: str,
                                            unit: str) -> None:
    read = _read(prompt)
    assert count in read
    assert ("wrap", {"left": "", "right": mark, "unit": unit}) in read
    assert not any(kind == "end_phrase" for kind, _ in read)  # the answer's end is implied, not a text of its own


def test_a_verbless_count_is_how_many_to_write_but_not_a_pointer_back() -> None:
    assert ("count", {"unit": "paragraphs", "relation": "exactly", "n": 2}) in _read("About tides. Two paragraphs.")
    assert _read("The three sentences below are from my essay.") == []


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("写一封辞职信，倒数第二行写“此致”，最后一行写“敬礼”。", _position("lines", -2, "is", "此致")),
        ("写一封辞职信，倒数第二行写“此致”，最后一行写“敬礼”。", _position("lines", -1, "is", "敬礼")),
        ("写四段话介绍长城，最后一段一定要提到“历史”。", _position("paragraphs", -1, "contains", "历史")),
        ("Write two paragraphs in English about tea. 第一段必须提到 kettle 这个词。",
         _position("paragraphs", 1, "contains", "kettle")),
        ("写三段话，每一段的结尾都必须是“谢谢大家。”", _position("paragraphs", 0, "ends_with", "谢谢大家。")),
        ("第二句的开头是“然后”。", _position("sentences", 2, "starts_with", "然后")),
        ("写三句新年祝福，每句话的结尾都放一个 emoji。", _position("sentences", 0, "ends_with", "", word_class="emoji")),
    ],
)
def test_chinese_positions_on_pieces(prompt: str, expected: tuple[str, dict[str, Any]]) -> None:
    assert expected in _read(prompt)


def test_a_chinese_mark_closing_every_piece_is_a_wrapper() -> None:
    assert ("wrap", {"left": "", "right": "？", "unit": "sentences"}) in _read("写四句话，每句话的结尾都必须是“？”")


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Give a pep talk to a nervous swimmer and start it with 'Deep breath:'.",
         ("start_phrase", {"phrase": "Deep breath:"})),
        ("Summarize the book I read in three sentences.", ("sentence_count", {"relation": "exactly", "n": 3})),
        ("Review the café you visited in four sentences.", ("sentence_count", {"relation": "exactly", "n": 4})),
    ],
)
def test_the_answer_said_as_it_or_through_a_relative_clause(prompt: str,
                                                              expected: tuple[str, dict[str, Any]]) -> None:
    assert expected in _read(prompt)


@pytest.mark.parametrize(
    "prompt",
    ["Read the attached list and start it with 'A'.",  # "it" is the list read, not the answer written
     "Translate the text that has four sentences."],  # the sentences are the text's
)
def test_it_and_counts_of_something_else_are_not_the_answers(prompt: str) -> None:
    assert not any(kind in ("start_phrase", "sentence_count") for kind, _ in _read(prompt))
