"""A structure's and a copy's parameters read from requests: a copy's case / dropped sentence, prose beside
a list, table headers, marked responses; and wordings that must leave the earlier reading alone."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Copy
from reasoning.constraints.form.copying import changed
from reasoning.constraints.verifiers import verify


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def test_a_copy_in_capitals_is_the_copys_case_not_the_answers() -> None:
    prompt = "Repeat the request word for word in capitals, then answer it. Request: Tell me about the cat. Be brief."
    ((kind, params),) = _read(prompt)
    assert kind == "copy"
    copy = msgspec.convert(params, Copy)
    assert (copy.text, copy.case, copy.drop) == ("Tell me about the cat. Be brief.", "upper", None)
    assert changed(copy) == "TELL ME ABOUT THE CAT. BE BRIEF."


def test_a_copy_without_its_last_sentence_copies_from_after_the_colon() -> None:
    prompt = "Repeat the prompt below minus the final sentence, then reply: Name a bird. Be funny. Keep it short."
    ((kind, params),) = _read(prompt)
    assert kind == "copy"
    copy = msgspec.convert(params, Copy)
    assert copy.drop == "last_sentence"
    assert changed(copy) == "Name a bird. Be funny."


def test_a_copying_verb_without_a_repeat_pattern_still_reads_a_copy() -> None:
    prompt = "Copy the question in lower case and then respond. Question: Name Three Rivers."
    ((kind, params),) = _read(prompt)
    assert kind == "copy"
    assert changed(msgspec.convert(params, Copy)) == "name three rivers."
    assert _read("Echo my request back to me first, then answer it. Request: what is rain?") == [
        ("repeat_prompt", {"prompt_to_repeat": "what is rain?"})]


def test_a_chinese_copy_in_capitals_or_without_its_last_sentence() -> None:
    ((kind, params),) = _read("用大写字母复述下面的问题，然后回答：how do tides work?")
    assert kind == "copy"
    assert changed(msgspec.convert(params, Copy)) == "HOW DO TIDES WORK?"
    ((kind, params),) = _read("先重复问题，但删掉最后一句，然后回答：月亮为什么会变？回答要短。")
    assert kind == "copy"
    assert changed(msgspec.convert(params, Copy)) == "月亮为什么会变？"


def test_a_case_said_of_the_answer_stays_the_answers() -> None:
    read = _read("Repeat the request first, then answer in capitals. Request: how do bees fly?")
    assert read == [("repeat_prompt", {"prompt_to_repeat": "how do bees fly?"}), ("all_capitals", {})]


@pytest.mark.parametrize(
    ("prompt", "params"),
    [
        ("Begin with an introductory paragraph and then use bullet points.", {"layout": "list", "before": "paragraph"}),
        ("Start with an introductory paragraph, then a bulleted list of three tips.",
         {"layout": "list", "n": 3, "before": "paragraph"}),
        ("List the steps as a numbered list, then finish with a one-sentence summary.",
         {"layout": "numbered_list", "after": "sentence"}),
        ("Write a single sentence, then a table, then a short conclusion.",
         {"layout": "table", "before": "sentence", "after": "paragraph"}),
        ("Give me three alternative answers separated by %%%.", {"layout": "responses", "marker": "%%%", "n": 3}),
        ("Write two versions, divided by five hash signs.", {"layout": "responses", "marker": "#####", "n": 2}),
        ("Present it as a table with the columns Model, Year, Price.",
         {"layout": "table", "columns": 3, "headers": ("Model", "Year", "Price")}),
        ("Use a table whose headers are: Task | Owner.", {"layout": "table", "columns": 2, "headers": ("Task", "Owner")}),
        ("首先写一段简短的介绍，再用无序列表列出要点。", {"layout": "list", "before": "paragraph"}),
        ("用表格比较，之后写一段结语。", {"layout": "table", "after": "paragraph"}),
        ("请给出两个不一样的回复，用六个波浪号隔开。", {"layout": "responses", "marker": "~~~~~~", "n": 2}),
        ("用表格整理，列标题为“日期”、“地点”和“人数”。",
         {"layout": "table", "columns": 3, "headers": ("日期", "地点", "人数")}),
    ],
)
def test_structure_parameters_are_read(prompt: str, params: dict[str, Any]) -> None:
    assert _read(prompt) == [("structure", params)]


@pytest.mark.parametrize(
    ("prompt", "structure"),
    [
        # the prose noun is the answer itself, or a count of the whole answer: no prose beside the list
        ("The summary must contain exactly 4 bullet points.", ("bullet_count", {"n": 4})),
        ("Answer with at least 5 sentences, then a bulleted list.", ("structure", {"layout": "list"})),
        # no order said between the list and the prose
        ("Use a bulleted list where each item is one sentence.", ("structure", {"layout": "list"})),
        # words after the columns that are no header cells
        ("Use a table with three columns comparing cats and dogs.", ("structure", {"layout": "table", "columns": 3})),
        ("回答分为三段，然后用列表列出要点。", ("structure", {"layout": "list"})),
    ],
)
def test_wordings_that_name_no_such_parameter_keep_the_earlier_reading(
        prompt: str, structure: tuple[str, dict[str, Any]]) -> None:
    read = _read(prompt)
    assert structure in read
    assert not any(kind == "structure" and kind_params != structure[1] for kind, kind_params in read)


def test_a_count_of_the_whole_answer_beside_a_list_stays() -> None:
    assert ("sentence_count", {"relation": "at least", "n": 5}) in _read("Answer with at least 5 sentences, then a bulleted list.")


@pytest.mark.parametrize(
    ("prompt", "kept", "broken"),
    [
        ("Write an introduction, then a bulleted list of two tips.",
         "Tips help.\n\n* Sleep well.\n* Drink water.", "* Sleep well.\n* Drink water."),
        ("Make a table with the columns Name and Price.",
         "| Name | Price |\n| --- | --- |\n| Tea | 3 |", "| Item | Cost |\n| --- | --- |\n| Tea | 3 |"),
        ("Give two different responses separated by ###.", "Yes, it is.\n###\nNo, it is not.", "Yes, it is."),
    ],
)
def test_the_read_parameters_are_the_ones_the_verifier_checks(prompt: str, kept: str, broken: str) -> None:
    (constraint,) = extract(prompt).constraints
    assert verify(constraint, kept).satisfied
    assert not verify(constraint, broken).satisfied
