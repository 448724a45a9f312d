"""Answer rules read after the other form readers (the answer-rule readers of
:mod:`reasoning.constraints.extract.registry`): a choice among listed options, a separator instead of bullet points, a copy the request
names, every mark of a set, a share of stop words, a nesting depth, a thesis in HTML italics,
sub-bullets, a CSV answer, a template of slots, counts of pronouns, conjunctions and listed names; each in wordings of several grammars, English and Chinese, with near
misses that must not be read."""

from __future__ import annotations

import re
from typing import Any

import pytest

from reasoning.constraints.extract.common.comma_separated import csv_pattern
from reasoning.constraints.extract.common.template import template_pattern
from reasoning.constraints.extract.common.word_classes import COORDINATING_CONJUNCTIONS, PRONOUNS
from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Count, Filter, Unit, check
from reasoning.constraints.model import Relation


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _choice(*options: str) -> tuple[str, dict[str, Any]]:
    return ("constrained_response", {"options": list(options)})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Is the sky blue? Answer with exactly one of the following options: yes, no, or maybe.",
         [_choice("yes", "no", "maybe")]),
        ("Choose one: agree, disagree, neutral. Say nothing else.", [_choice("agree", "disagree", "neutral")]),
        ("Pick one of these labels for the review: positive, negative, neutral.",
         [_choice("positive", "negative", "neutral")]),
        ("Your response must be either 'approve' or 'reject'.", [_choice("approve", "reject")]),
        ("Is water wet?\nYour reply has to be one of: true, false, unknown", [_choice("true", "false", "unknown")]),
        ("Answer in one of the following ways: 'I agree', 'I disagree', 'I am not sure'.",
         [_choice("I agree", "I disagree", "I am not sure")]),
        ("Choose one of the following options: agree, disagree, neutral. Keep it short.",
         [_choice("agree", "disagree", "neutral")]),
        ("Do dogs dream? Your answer must be one of: yes, no, maybe. Then say nothing about it.",
         [_choice("yes", "no", "maybe")]),
        ("请只回答以下选项之一：是、否、也许。", [_choice("是", "否", "也许")]),
        ("你的回答只能是“同意”或“不同意”。", [_choice("同意", "不同意")]),
        ("从“红色”、“蓝色”、“绿色”中选一个回答。", [_choice("红色", "蓝色", "绿色")]),
    ],
)
def test_a_choice_among_listed_options_is_a_constrained_response(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    "prompt",
    [
        "Explain one of the following topics: gravity, magnetism, or light.",
        "Write one of the following: a poem, a story, or a song.",
        "Choose one of the two options and explain why: cats or dogs.",
        "Reply in one of two styles: formal or casual.",
        "Answer with one of the following: a haiku or a limerick.",
        "Say either yes or no, then explain.",
        "Your answer must be either a poem or a story.",
        "请介绍以下主题之一：重力、磁力、光。",
        "Choose one of the following animals: cat, dog or horse. Write a poem about it.",
        "Pick one of these cities: Paris, Rome or Oslo, and describe its history.",
        "Select one of the following labels: spam, ham. Explain your choice in one sentence.",
    ],
)
def test_a_content_request_over_a_list_is_no_choice(prompt: str) -> None:
    assert not any(kind == "constrained_response" for kind, _ in _read(prompt))


def _no_list() -> tuple[str, dict[str, Any]]:
    return ("structure", {"layout": "no_list"})


def _chars(unit: str, chars: str, n: int) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": unit, "relation": "at least", "n": n, "filter": {"chars": chars}})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("List five fruits, using ' | ' as a separator instead of bullet points.",
         [_no_list(), _chars("characters", "|", 4)]),
        ("Don't use bullet points; separate the items with semicolons.", [_no_list(), _chars("punctuation", ";；", 1)]),
        ("Give four tips separated by ' -- ' instead of bullets.",
         [_no_list(), ("keyword_frequency", {"keyword": "--", "relation": "at least", "n": 3})]),
        ("Write 4 tips as a single line; use semicolons as separators, not bullet points.",
         [_no_list(), _chars("punctuation", ";；", 3)]),
        ("列出五种水果，用“|”分隔，不要使用项目符号。", [_no_list(), _chars("characters", "|", 4)]),
        ("不要使用列表，用分号分隔三个要点。", [_no_list(), _chars("punctuation", ";；", 2)]),
    ],
)
def test_a_separator_instead_of_bullets_is_no_list_and_the_separator(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "kind"),
    [
        ("Use bullet points separated by blank lines.", "structure"),
        ("Give 3 bullet points, each on its own line.", "bullet_count"),
        ("Write without fuss; give 3 bullet points separated by blank lines.", "bullet_count"),
    ],
)
def test_bullets_asked_with_a_separator_stay_bullets(prompt: str, kind: str) -> None:
    read = _read(prompt)
    assert any(k == kind for k, _ in read) and ("structure", {"layout": "no_list"}) not in read


def _copy(text: str) -> tuple[str, dict[str, Any]]:
    return ("repeat_prompt", {"prompt_to_repeat": text})


def _at_most_words(n: int) -> tuple[str, dict[str, Any]]:
    return ("word_count", {"relation": "at most", "n": n})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Copy words 3 to 7 of this request and nothing else: The quick brown fox jumps over the lazy dog.",
         [_copy("3 to 7 of this"), _at_most_words(5)]),
        ("Write out words 4 through 9 of the following sentence: 'It was the best of times, it was the worst of times.'",
         [_copy("best of times, it was the")]),
        ("Output only the 2nd to the 5th words of this prompt.", [_copy("only the 2nd to"), _at_most_words(4)]),
        ("Your answer should reproduce words one to four of the prompt, and nothing more.",
         [_copy("Your answer should reproduce"), _at_most_words(4)]),
        ("Copy the span between (and including) index 0 and 3, the indices are character indices!", [_copy("Copy")]),
        ("Repeat this request with its first word replaced by 'Please', and do not answer it: Tell me a joke.",
         [_copy("Please me a joke."), _at_most_words(4)]),
        ("Replace the first word of the question with 'Kindly' and repeat it without answering: Explain how rain forms.",
         [_copy("Kindly how rain forms."), _at_most_words(4)]),
        ("Write a poem about cats. Repeat the request, but change its first word to 'Compose'. Do not answer it.",
         [_copy("Compose a poem about cats."), _at_most_words(5)]),
    ],
)
def test_a_named_copy_is_the_text_it_names(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Write an essay of 300 to 400 words.",
         [("word_count", {"relation": "at least", "n": 300}), _at_most_words(400)]),
        ("Write a list of words 3 to 5 letters long.",
         [("count", {"unit": "letters", "relation": "at least", "n": 3}),
          ("count", {"unit": "letters", "relation": "at most", "n": 5})]),
    ],
)
def test_a_length_range_is_no_copy(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


def _mark(chars: str) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "punctuation", "relation": "at least", "n": 1, "filter": {"chars": chars}})


_STANDARD_MARKS = [_mark(".。"), _mark(",，"), _mark("?？"), _mark("!！"), _mark(";；"), _mark(":：")]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        (("Use every one of these punctuation marks at least once: period, comma, question mark, exclamation mark, "
         "semicolon, colon."), _STANDARD_MARKS),
        ("Your answer must include a semicolon, a colon and the interrobang ?!.",
         [_mark(";；"), _mark(":："), ("keywords_present", {"keywords": ["?!"]})]),
        ("Make sure that each of the following appears at least once: a comma, a question mark and an exclamation point.",
         [_mark(",，"), _mark("?？"), _mark("!！")]),
        ("Your answer should feature all of the following at least once:\n- a colon\n- a semicolon\n- an exclamation mark",
         [_mark(":："), _mark(";；"), _mark("!！")]),
        ("Use every standard punctuation mark at least once, including semicolons, colons, and the interrobang (?!).",
         [*_STANDARD_MARKS, ("keywords_present", {"keywords": ["?!"]})]),
        ("请至少使用一次以下每个标点：句号、逗号、问号、感叹号、分号、冒号。", _STANDARD_MARKS),
        ("回答中所有标准标点符号都要至少使用一次。", _STANDARD_MARKS),
    ],
)
def test_every_mark_of_a_named_set_is_one_minimum_per_mark(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Use at least one semicolon.", [_mark(";；")]),
        ("Avoid semicolons.", [("count", {"unit": "punctuation", "relation": "at most", "n": 0,
                                          "filter": {"chars": ";；"}})]),
        ("不要使用分号。", [("count", {"unit": "punctuation", "relation": "at most", "n": 0, "filter": {"chars": ";；"}})]),
    ],
)
def test_one_mark_or_a_refused_mark_is_left_to_the_count_readers(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


def _stop_share(relation: str, fraction: float) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "words", "relation": relation, "n": 0, "filter": {"stop_words": True},
                      "of": {"unit": "words", "filter": {}}, "fraction": fraction})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Write about the ocean. The share of stop words must be at most 40%.", [_stop_share("at most", 0.4)]),
        ("Describe your morning routine; no more than 30 percent of the words may be stop words.",
         [_stop_share("at most", 0.3)]),
        ("Your answer should keep stop words below 35% of all words.", [_stop_share("less than", 0.35)]),
        ("Keep the ratio of stop words to all words below 0.4.", [_stop_share("less than", 0.4)]),
        ("Less than half of the words can be stop words.", [_stop_share("less than", 0.5)]),
        ("Stop words should not exceed a third of your response.", [_stop_share("at most", 0.3333)]),
        ("停用词的比例不得超过40%。", [_stop_share("at most", 0.4)]),
        ("停用词占比低于百分之三十。", [_stop_share("less than", 0.3)]),
    ],
)
def test_a_bound_on_the_share_of_stop_words_is_a_ratio_count(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


def test_a_share_of_stop_words_stated_as_a_fact_is_no_bound() -> None:
    assert _read("Stop words make up about 40% of English text. Explain why.") == []


def _read_all(prompt: str) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    result = extract(prompt)
    return [(c.kind.value, c.params) for c in result.constraints], [u.text for u in result.unrecognised]


@pytest.mark.parametrize(
    "prompt",
    [
        "Write a sentence with parentheses nested at least 3 levels deep.",
        "Your answer should contain brackets nested at least two levels.",
        "Include quotes nested 2 levels deep.",
        "括号至少嵌套三层。",
    ],
)
def test_a_nesting_depth_is_reported_unrecognised_not_a_span_count_or_wrapper(prompt: str) -> None:
    constraints, unrecognised = _read_all(prompt)
    assert constraints == [] and unrecognised == [prompt]


def test_a_quote_embedded_without_a_depth_is_no_nesting() -> None:
    assert _read("Wrap your whole answer in double quotes; a quote embedded in the text is welcome.") == [
        ("quotation", {})]


def test_spans_in_brackets_without_nesting_stay_a_span_count() -> None:
    assert _read("Put two remarks in parentheses.") == [
        ("count", {"unit": "spans", "relation": "exactly", "n": 2, "filter": {"left": "(", "right": ")", "nonempty": True}})]


_ITALIC_THESIS = [
    ("position", {"unit": "paragraphs", "op": "starts_with", "text": "<i>", "k": 0}),
    ("count", {"unit": "spans", "relation": "at least", "n": 1,
               "filter": {"left": "<i>", "right": "</i>", "nonempty": True}, "per": "paragraphs"}),
]


@pytest.mark.parametrize(
    "prompt",
    [
        "Write three sections; each section begins with a thesis in HTML italics (<i>...</i>).",
        "Every section must start with its thesis statement wrapped in <i></i> tags.",
        "Begin each paragraph with a thesis sentence in HTML italic tags.",
        "Start every paragraph with an italicized thesis statement using HTML <i> tags.",
        "每个部分都以用<i></i>标签包裹的论点开头。",
    ],
)
def test_a_thesis_in_html_italics_opening_every_piece_is_the_tag_and_a_closed_span(prompt: str) -> None:
    assert _read(prompt) == _ITALIC_THESIS


def test_a_thesis_in_plain_italics_is_no_opening_word() -> None:
    constraints, unrecognised = _read_all("Begin each paragraph with a thesis in italics.")
    assert constraints == [] and unrecognised == ["Begin each paragraph with a thesis in italics."]


def _nested(n: int | None, sub_items: int) -> list[tuple[str, dict[str, Any]]]:
    params: dict[str, Any] = {"layout": "nested_list", "sub_items": sub_items}
    if n is not None:
        params["n"] = n
    return [("structure", params)]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Give 3 bullet points marked with *, each with a sub-bullet marked with -.", _nested(3, 1)),
        ("Use asterisks for bullets; every bullet should have one sub-bullet that starts with a dash.", _nested(None, 1)),
        ("Write a list where each * item has a - sub-item underneath.", _nested(None, 1)),
        ("Write a bulleted list using * with 3 items; under each item add one sub-bullet using -.", _nested(3, 1)),
        ("List four benefits of exercise as bullets. Each bullet must have two sub-points.", _nested(4, 2)),
        ("用*标记三个要点，每个要点下有一个用-标记的子要点。", _nested(3, 1)),
    ],
)
def test_bullets_each_with_sub_bullets_are_a_nested_list(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "n", "sub_items"),
    [
        ("Give three points, each with at least two sub-points.", 3, 2),
        (("Plan a picnic with four main points marked '*', and under every main point at least one sub-point "
         "marked '-'."), 4, 1),
        ("列出三个要点，每个要点下至少有两个子要点。", 3, 2),
    ],
)
def test_a_minimum_of_sub_bullets_under_every_bullet(prompt: str, n: int, sub_items: int) -> None:
    assert _read(prompt) == [("structure", {"layout": "nested_list", "n": n, "sub_items": sub_items,
                                            "sub_at_least": True})]


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        # "three points, each with at most ..." is more than a total of sub-points: left unrecognised (issue 36)
        ("Give three points, each with at most two sub-points.", []),
        ("Start every bullet with ✅.", [("position", {"unit": "bullets", "op": "starts_with", "text": "✅", "k": 0})]),
    ],
)
def test_a_bound_on_sub_bullets_or_an_item_opening_is_no_nested_list(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "columns", "rows"),
    [
        ("Answer in CSV with the columns name, age, city and 4 rows.", ["name", "age", "city"], 4),
        ("Give the data as a CSV table with columns: product, price. Include 3 rows.", ["product", "price"], 3),
        ("Your answer should be CSV format with headers id,title,year and five data rows.", ["id", "title", "year"], 5),
        # the things the request lists are its data rows
        ("List three planets. Format the output as comma-separated values with the header fields planet and moons.",
         ["planet", "moons"], 3),
        ("用 CSV 格式列出四座城市和它们的人口，表头是 city,population，不要其他文字。", ["city", "population"], 4),
        ("List two rivers and their lengths in CSV with the columns river, length.", ["river", "length"], 2),
        ("请用CSV格式回答，列为姓名、年龄，共3行。", ["姓名", "年龄"], 3),
        ("以CSV格式输出，表头为城市、人口和面积。", ["城市", "人口", "面积"], None),
    ],
)
def test_a_csv_answer_of_named_columns_is_its_whole_pattern(prompt: str, columns: list[str], rows: int | None) -> None:
    assert _read(prompt) == [("regex_format", {"pattern": csv_pattern(columns, rows)})]


def test_the_csv_pattern_matches_a_csv_of_those_columns_and_rows_only() -> None:
    pattern = re.compile(csv_pattern(["name", "age"], 2))
    assert pattern.fullmatch("name,age\nAnn,31\nBo,7")
    assert not pattern.fullmatch("name,age\nAnn,31")
    assert not pattern.fullmatch("| name | age |\n| --- | --- |\n| Ann | 31 |\n| Bo | 7 |")


@pytest.mark.parametrize("prompt", ["Make a table with the columns name and age.", "Write a CSV."])
def test_a_table_or_a_csv_without_columns_is_no_csv_pattern(prompt: str) -> None:
    assert not any(kind == "regex_format" for kind, _ in _read(prompt))


@pytest.mark.parametrize(
    ("prompt", "template"),
    [
        ("Fill in this template: Summary: [summary] Risks: [risks] Next steps: [next steps]",
         "Summary: [summary] Risks: [risks] Next steps: [next steps]"),
        ("Use the following format exactly:\nName: [name]\nAge: [age]\nHobby: [hobby]",
         "Name: [name]\nAge: [age]\nHobby: [hobby]"),
        ("Your answer should follow the template 'Title: [title] Body: [body]'.", "Title: [title] Body: [body]"),
        ("Answer in the form: Pros: [pros] Cons: [cons]", "Pros: [pros] Cons: [cons]"),
        ("按以下模板回答：摘要：[摘要] 风险：[风险]", "摘要：[摘要] 风险：[风险]"),
        # blanks of underscores are slots too
        ("Fill in this three-line form for a library card:\nName: ___\nAddress: ___\nPhone: ___",
         "Name: ___\nAddress: ___\nPhone: ___"),
        ("请按以下模板填写：姓名：____ 电话：____", "姓名：____ 电话：____"),
    ],
)
def test_a_template_of_slots_is_its_filled_pattern(prompt: str, template: str) -> None:
    assert _read(prompt) == [("regex_format", {"pattern": template_pattern(template)})]


def test_the_template_pattern_wants_every_slot_filled_and_the_labels_kept() -> None:
    pattern = re.compile(template_pattern("Summary: [summary] Risks: [risks]"))
    assert pattern.fullmatch("Summary: A new bakery.\nRisks: Rent is high.")
    assert not pattern.fullmatch("Summary: [summary] Risks: [risks]")
    assert not pattern.fullmatch("Summary: A new bakery.")


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Include at least 2 placeholders such as [name] and [address].", [("placeholders", {"n": 2})]),
        ("Write a letter to [recipient] from [sender].", []),
    ],
)
def test_slots_without_a_template_are_no_template(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("每一行的缩进都要比上一行多。", []),
        ("每行的缩进都要比前一行多。", []),
        ("写五行诗，每一行都比上一行缩进更多。", [("count", {"unit": "lines", "relation": "exactly", "n": 5})]),
        ("写一行字。", [("count", {"unit": "lines", "relation": "exactly", "n": 1})]),
    ],
)
def test_a_piece_named_by_its_neighbour_is_no_count(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    "prompt",
    [
        "At least three different person names must be mentioned.",
        "Put every quoted phrase in your answer followed by an unquoted explanation.",
    ],
)
def test_unlisted_names_and_quoted_explanations_are_reported_unrecognised(prompt: str) -> None:
    constraints, unrecognised = _read_all(prompt)
    assert constraints == [] and unrecognised == [prompt]


def _one_of(unit: str, relation: str, n: int, words: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": unit, "relation": relation, "n": n, "filter": {"one_of": words}})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Write a story using at least 3 different coordinating conjunctions.",
         [_one_of("unique_words", "at least", 3, COORDINATING_CONJUNCTIONS)]),
        ("Your answer should contain at least four distinct coordinating conjunctions.",
         [_one_of("unique_words", "at least", 4, COORDINATING_CONJUNCTIONS)]),
        ("Use at least 5 pronouns in your answer.", [_one_of("words", "at least", 5, PRONOUNS)]),
        ("Do not use more than 2 pronouns.", [_one_of("words", "at most", 2, PRONOUNS)]),
        ("Mention at least 2 of these people: Alice, Bob, Carol.",
         [_one_of("unique_words", "at least", 2, ("Alice", "Bob", "Carol"))]),
        ("Include the names of at least 2 of the following characters: Harry, Ron, Hermione.",
         [_one_of("unique_words", "at least", 2, ("Harry", "Ron", "Hermione"))]),
    ],
)
def test_a_count_of_class_or_listed_words_is_a_count_of_words_one_of_a_set(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(("prompt", "cls"), [("至少使用三个不同的并列连词。", "和"), ("至少使用5个代词。", "我")])
def test_a_chinese_count_of_a_class_counts_the_class_in_both_languages(prompt: str, cls: str) -> None:
    [(kind, params)] = _read(prompt)
    assert kind == "count" and cls in params["filter"]["one_of"] and params["relation"] == "at least"


@pytest.mark.parametrize("prompt", ["Explain what a pronoun is.", "Write 3 sentences about the people of Paris."])
def test_a_class_named_without_a_count_is_no_count_of_it(prompt: str) -> None:
    assert not any(params.get("filter", {}).get("one_of") for _, params in _read(prompt))


def test_words_one_of_a_set_are_counted_without_case_and_once_each_as_unique_words() -> None:
    conjunctions = Count(unit=Unit.UNIQUE_WORDS, relation=Relation.AT_LEAST, n=3,
                         filter=Filter(one_of=COORDINATING_CONJUNCTIONS))
    assert check(conjunctions, "I came and saw, but left, so it goes. And again.").satisfied
    assert not check(conjunctions, "I came and saw and left. And then AND.").satisfied
    names = Count(unit=Unit.WORDS, relation=Relation.AT_MOST, n=1, filter=Filter(one_of=("Alice", "Bob")))
    assert check(names, "alice met Carol.").satisfied and not check(names, "Alice met bob.").satisfied


@pytest.mark.parametrize(
    ("prompt", "per"),
    [
        ("Write 5 sentences. Each sentence must contain a comma, a semicolon and a colon.", "sentences"),
        ("Use a colon and a semicolon in every paragraph.", "paragraphs"),
        ("每段都要至少包含一个逗号和一个分号。", "paragraphs"),
    ],
)
def test_marks_said_of_each_piece_are_minima_per_piece(prompt: str, per: str) -> None:
    marks = [params for kind, params in _read(prompt) if kind == "count" and params["unit"] == "punctuation"]
    assert len(marks) >= 2 and all(m["per"] == per and m["relation"] == "at least" for m in marks)


@pytest.mark.parametrize(
    "prompt",
    [
        "Write a blog post about the format of the Olympic games: list [sport] and [country] for each.",
        "Explain the CSV file format and its columns, rows and delimiters.",
    ],
)
def test_slots_without_labels_or_a_question_about_csv_is_no_pattern(prompt: str) -> None:
    assert not any(kind == "regex_format" for kind, _ in _read(prompt))


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Answer yes or no.", [_choice("yes", "no")]),
        ("Should I learn Python? Reply with yes or no only.", [_choice("yes", "no")]),
        ("Respond: true or false.", [_choice("true", "false")]),
        ("Answer with true/false.", [_choice("true", "false")]),
    ],
)
def test_bare_options_right_after_an_answering_verb_are_a_choice(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    "prompt",
    ["Answer yes or no, and explain why.", "Answer the question or skip it.", "Answer quickly or slowly.",
     "Reply to John or Mary."],
)
def test_an_answering_verb_before_a_manner_or_a_task_is_no_choice(prompt: str) -> None:
    assert not any(kind == "constrained_response" for kind, _ in _read(prompt))


def test_nesting_said_of_something_else_keeps_the_bracket_count() -> None:
    assert _read("Write about nested loops in Python, with at least 2 code examples in brackets.") == [
        ("count", {"unit": "spans", "relation": "at least", "n": 2, "filter": {"left": "(", "right": ")", "nonempty": True}})]


def test_stop_words_named_without_a_share_give_no_keyword() -> None:
    assert _read("Use stop words sparingly.") == []


@pytest.mark.parametrize(
    ("prompt", "relation", "fraction"),
    [
        ("Stop words must not make up more than 35% of the text.", "at most", 0.35),
        ("Do not write more than 20% stop words.", "at most", 0.2),
    ],
)
def test_a_denied_bound_on_the_stop_word_share_is_reversed(prompt: str, relation: str, fraction: float) -> None:
    assert _read(prompt) == [_stop_share(relation, fraction)]


def test_a_choice_inside_a_list_of_rules_is_read() -> None:
    read = _read("Tell me a fact. Constraints: (a) answer with one of the following options: true, false; (b) no commas.")
    assert _choice("true", "false") in read and ("no_comma", {}) in read


def _none_of(chars: str) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "punctuation", "relation": "at most", "n": 0, "filter": {"chars": chars}})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Do not use semicolons, colons or dashes.", [_none_of(";；"), _none_of(":："), _none_of("-–—")]),
        ("Don't use exclamation marks or question marks in your answer.", [_none_of("!！"), _none_of("?？")]),
        ("Do not use bullet points; separate items with commas.", [_no_list(), _chars("punctuation", ",，", 1)]),
        ("Do not use bullet points or commas; separate items with semicolons.",
         [("no_comma", {}), _no_list(), _chars("punctuation", ";；", 1)]),
    ],
)
def test_refused_marks_are_none_of_each_and_the_separator_is_not_refused(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Fill out the form below.\nName: [name]\nEmail: [email]",
         [("regex_format", {"pattern": template_pattern("Name: [name]\nEmail: [email]")})]),
        ("Write 3 bullets; every bullet gets one nested bullet point under it.", _nested(3, 1)),
        ("Repeat the request, changing the first word to 'Draw'. Do not answer. Request: Paint a house.",
         [_copy("Draw a house."), _at_most_words(3)]),
    ],
)
def test_more_wordings_of_templates_sub_bullets_and_changed_copies(prompt: str, expected: list[Any]) -> None:
    assert _read(prompt) == expected
