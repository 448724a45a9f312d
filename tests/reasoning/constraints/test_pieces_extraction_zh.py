"""Chinese extraction of per-piece, share, markup, scope and verdict requirements, in wordings of their own.

The paraphrase set holds other wordings of the same categories; here each
category is checked with a different one, and the word-length filter is
checked on Chinese words as jieba cuts them.
"""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Count, Filter, Unit, check
from reasoning.constraints.model import Relation


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _spans(left: str, right: str, relation: str, n: int) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": "spans", "relation": relation, "n": n,
                      "filter": {"left": left, "right": right, "nonempty": True}})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("每一行都必须以“——”开头。", [("position", {"unit": "lines", "op": "starts_with", "text": "——", "k": 0})]),
        ("每段都要以“以上。”结尾。", [("position", {"unit": "paragraphs", "op": "ends_with", "text": "以上。", "k": 0})]),
        ("每句话都以问号结尾。", [("wrap", {"left": "", "right": "？", "unit": "sentences"})]),
        ("最后一句话必须是“再见”。", [("end_phrase", {"phrase": "再见"})]),
        ("至少三分之一的句子是疑问句。", [("count", {"unit": "sentences", "relation": "at least", "n": 0,
                                             "filter": {"ends_with": "?"}, "of": {"unit": "sentences", "filter": {}},
                                             "fraction": 0.3333})]),
    ],
)
def test_every_piece_and_share_of_pieces(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("不要使用粗体。", [_spans("**", "**", "at most", 0)]),
        ("请把题目放在「」里。", [_spans("「", "」", "at least", 1)]),
        ("用【】补充三处说明。", [_spans("【", "】", "exactly", 3)]),
        ("回答不超过100个汉字。", [("count", {"unit": "characters", "relation": "at most", "n": 100,
                                       "filter": {"script": "Han"}})]),
        ("用两个##标题分隔内容。", [("count", {"unit": "headings", "relation": "exactly", "n": 2,
                                        "filter": {"marker": "##"}})]),
        ("只用一个词回答：同意或反对。", [("constrained_response", {"options": ["同意", "反对"]})]),
        ("以JSON列表的形式输出。", [("json_format", {"schema": {"type": "array"}})]),
        ("列出五个城市，每行一个。", [("count", {"unit": "lines", "relation": "exactly", "n": 5})]),
        ("任何一句话都不能超过十五个字。", [("count", {"unit": "words", "relation": "at most", "n": 15,
                                              "per": "sentences"})]),
        ("分三段作答。", [("count", {"unit": "paragraphs", "relation": "exactly", "n": 3})]),
    ],
)
def test_markup_scope_and_verdicts(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("每句话的字数相差不超过三个字。", {"unit": "words", "per": "sentences", "max_diff": 3}),
        ("每段的篇幅大体相当。", {"unit": "words", "per": "paragraphs", "max_ratio": 1.5}),
    ],
)
def test_lengths_compared_between_pieces_are_a_spread(prompt: str, expected: dict[str, Any]) -> None:
    result = extract(prompt)
    assert [(c.kind.value, c.params) for c in result.constraints] == [("spread", expected)]
    assert result.unrecognised == ()


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("每一段都要用表情符号开头。", [("position", {"unit": "paragraphs", "op": "starts_with", "text": "", "k": 0,
                                                   "word_class": "emoji"})]),
        ("每行的首字母必须大写。", [("position", {"unit": "lines", "op": "starts_with", "text": "", "k": 0,
                                                "word_class": "capital"})]),
        ("段与段之间留一个空行。", [("count", {"unit": "paragraphs", "relation": "at least", "n": 2})]),
        ("以JSON对象返回，字段包括city、temp。", [("json_format", {"keys": ["city", "temp"]})]),
        # keys named with 用 / 分别是, and Latin keys before the sentence goes on in Chinese
        ("把这本书写成 JSON 对象，键名用 title、author、pages，只输出 JSON。",
         [("json_format", {"keys": ["title", "author", "pages"]})]),
        ("用 JSON 回答，字段分别是 city 和 temp。", [("json_format", {"keys": ["city", "temp"]})]),
        ("把这本书的信息写成 JSON 对象，包含 title、author 两个键。", [("json_format", {"keys": ["title", "author"]})]),
        ("分成两个部分，分别用“阶段1”“阶段2”开头。", [("sections", {"splitter": "阶段", "n": 2})]),
    ],
)
def test_class_openings_separators_keys_and_labels(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


def test_a_chinese_word_length_counts_the_characters_of_each_segmented_word() -> None:
    longest_four = Count(unit=Unit.WORDS, filter=Filter(min_length=5), relation=Relation.AT_MOST, n=0)
    assert check(longest_four, "人工智能正在改变世界。").satisfied
    assert not check(longest_four, "中华人民共和国成立了。").satisfied


def test_a_bound_after_how_a_mark_is_used_is_its_count() -> None:
    assert _read("分号用得越少越好，最多两个。") == [
        ("count", {"unit": "punctuation", "relation": "at most", "n": 2, "filter": {"chars": ";；"}})]


def test_a_numbered_label_opening_each_part_is_its_sections() -> None:
    assert _read("全文分为三个部分，每部分以“第一章”开头。") == [("sections", {"splitter": "第{n}章", "n": 3})]
    form = Count(unit=Unit.SECTIONS, filter=Filter(marker="第{n}章"), relation=Relation.EXACTLY, n=3)
    assert check(form, "第一章 山\n第二章 水\n第三章 云").satisfied
    assert not check(form, "第一章 山\n第二章 水").satisfied


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        # the whole answer (the one sentence asked, referred back) in a shown pair: a wrap, and the sentence count
        ("用一句话介绍你的家乡，并把这句话整个放在直角引号「」里。",
         [("sentence_count", {"n": 1, "relation": "exactly"}),
          ("wrap", {"left": "「", "right": "」", "unit": "answer"})]),
        # the number the pair's own verb counts, not the answer's paragraph before it
        ("写一段关于春天的话，用（）加入两处旁白。",
         [("count", {"unit": "spans", "relation": "exactly", "n": 2,
                     "filter": {"left": "（", "right": "）", "nonempty": True}})]),
        # a title said to open the answer is its first line, opening with the pair's left mark
        ("写一篇关于读书的短文，开头先给一个标题，标题放在书名号《》里。",
         [("count", {"unit": "spans", "relation": "at least", "n": 1,
                     "filter": {"left": "《", "right": "》", "nonempty": True}}),
          ("position", {"unit": "lines", "op": "starts_with", "text": "《", "k": 1})]),
    ],
)
def test_a_shown_pair_holds_the_whole_answer_asides_or_an_opening_title(
    prompt: str, expected: list[tuple[str, dict[str, Any]]]
) -> None:
    assert sorted(_read(prompt), key=lambda c: c[0]) == sorted(expected, key=lambda c: c[0])
