"""Extraction from English, Chinese and mixed prompts through the real pipelines."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasoning.constraints.extraction import MAX_PROMPT_CHARS, extract
from reasoning.constraints.model import Constraint, Hardness, Kind, Origin, Scope
from reasoning.errors import LimitExceeded

AML_PROMPT = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP "
    "list. Should this be escalated? Answer in under 80 words, cite the rules you rely on, and do not "
    "cite rules in force before 2020."
)


def _kinds(prompt: str) -> list[tuple[str, dict[str, object], str]]:
    return [(c.kind.value, c.params, c.hardness.value) for c in extract(prompt).constraints]


def test_chinese_response_language_is_hard() -> None:
    assert _kinds("必须用中文回答") == [("response_language", {"language": "zh"}, "hard")]


def test_chinese_citation_window() -> None:
    assert _kinds("禁止引用2020年前文献") == [
        ("citation_time_window", {"not_before": "2020-01-01"}, "hard")
    ]


def test_mixed_prompt_gives_both_languages_in_source_order() -> None:
    prompt = "Answer in English. 必须用中文回答"
    result = extract(prompt)
    languages = [(c.id, c.params["language"]) for c in result.constraints if c.kind == Kind.RESPONSE_LANGUAGE]
    assert languages == [("c1", "en"), ("c2", "zh")]
    for constraint in result.constraints:
        assert constraint.source is not None
        assert prompt[constraint.source.start : constraint.source.end] == constraint.source.text


def test_word_limit_and_category_mention() -> None:
    result = extract("Answer in under 50 words and do not mention competitors by name.")
    kinds = [(c.kind, c.params) for c in result.constraints]
    assert (Kind.WORD_COUNT, {"relation": "less than", "n": 50}) in kinds
    assert all(c.kind != Kind.FORBIDDEN_WORDS for c in result.constraints)


def test_explicit_forbidden_words_are_extracted() -> None:
    result = extract("Do not use the words 'cheap' or 'free' in the slogan.")
    assert [(c.kind, c.params) for c in result.constraints] == [
        (Kind.FORBIDDEN_WORDS, {"words": ["cheap", "free"]})
    ]


def test_bullets_and_keyword_frequency() -> None:
    result = extract("Use exactly 3 bullet points; the word 'risk' must appear at least twice.")
    assert [(c.kind, c.params) for c in result.constraints] == [
        (Kind.BULLET_COUNT, {"n": 3}),
        (Kind.KEYWORD_FREQUENCY, {"keyword": "risk", "relation": "at least", "n": 2}),
    ]


def test_aml_scenario() -> None:
    result = extract(AML_PROMPT)
    by_kind = {c.kind: c for c in result.constraints}
    assert by_kind[Kind.WORD_COUNT].params == {"relation": "less than", "n": 80}
    assert Kind.CITE_SOURCES in by_kind
    assert by_kind[Kind.CITATION_TIME_WINDOW].params == {"not_before": "2020-01-01"}
    assert by_kind[Kind.CITATION_TIME_WINDOW].scope == Scope.CITATION
    premise = result.premises[0]
    assert (premise.topic, premise.value) == ("tax rate", "20%")


def test_chinese_scenario_with_counts() -> None:
    result = extract("假设税率为20%。请用中文回答，不超过80字，禁止引用2020年前文献。")
    kinds = {(c.kind, tuple(sorted(c.params.items()))) for c in result.constraints}
    assert (Kind.WORD_COUNT, (("n", 80), ("relation", "at most"))) in kinds
    assert (Kind.RESPONSE_LANGUAGE, (("language", "zh"),)) in kinds
    assert result.language == "zh"
    assert result.premises[0].topic == "税率"


@pytest.mark.parametrize(
    ("prompt", "hardness"),
    [
        ("You must answer in fewer than 100 words.", Hardness.HARD),
        ("Preferably answer in fewer than 100 words.", Hardness.SOFT),
        ("Try to avoid using any commas.", Hardness.SOFT),
        ("尽量不要使用逗号。", Hardness.SOFT),
        ("不得使用逗号。", Hardness.HARD),
    ],
)
def test_hardness_follows_modality(prompt: str, hardness: Hardness) -> None:
    constraints = extract(prompt).constraints
    assert len(constraints) == 1
    assert constraints[0].hardness == hardness


@pytest.mark.parametrize(
    ("prompt", "kind", "params"),
    [
        ("Write a 300+ word summary.", Kind.WORD_COUNT, {"relation": "at least", "n": 300}),
        ("Keep your entire response 100 words or less.", Kind.WORD_COUNT, {"relation": "at most", "n": 100}),
        ("Respond with at most one hundred and fifty words.", Kind.WORD_COUNT, {"relation": "at most", "n": 150}),
        ("Highlight at least three sections with markdown, i.e. *highlighted section*.",
         Kind.HIGHLIGHTED_SECTIONS, {"n": 3}),
        ("The letter q should appear at least 4 times.", Kind.LETTER_FREQUENCY,
         {"letter": "q", "relation": "at least", "n": 4}),
        ("Finish your response with this exact phrase: Any other questions?", Kind.END_PHRASE,
         {"phrase": "Any other questions?"}),
        ("Give two different answers separated by 6 asterisk symbols ******.", Kind.TWO_RESPONSES, {}),
        ("Please reply only in the Kannada language.", Kind.RESPONSE_LANGUAGE, {"language": "kn"}),
        ("Round every figure to two decimal places.", Kind.NUMERIC_PRECISION, {"decimals": 2}),
        ("Apply only EU regulations.", Kind.JURISDICTION, {"code": "EU"}),
        ("回答不超过两百字。", Kind.WORD_COUNT, {"relation": "at most", "n": 200}),
        ("保留两位小数。", Kind.NUMERIC_PRECISION, {"decimals": 2}),
        ("不要提到“竞争对手”和“价格”。", Kind.FORBIDDEN_WORDS, {"words": ["竞争对手", "价格"]}),
    ],
)
def test_typed_parameters(prompt: str, kind: Kind, params: dict[str, object]) -> None:
    found = [c.params for c in extract(prompt).constraints if c.kind == kind]
    assert found == [params]


def test_ranges_give_both_bounds() -> None:
    result = extract("Write a song that contains 20 to 25 sentences.")
    assert sorted((c.params["relation"], c.params["n"]) for c in result.constraints) == [
        ("at least", 20),
        ("at most", 25),
    ]


def test_repeat_prompt_takes_the_request_block() -> None:
    prompt = "Write a haiku about rain.\nFirst repeat the request word for word without change, then answer."
    repeat = [c for c in extract(prompt).constraints if c.kind == Kind.REPEAT_PROMPT]
    assert repeat[0].params["prompt_to_repeat"] == "Write a haiku about rain."


def test_defaults_fill_only_missing_kinds() -> None:
    defaults = [
        Constraint(id="d1", kind=Kind.RESPONSE_LANGUAGE, params={"language": "en"}),
        Constraint(id="d2", kind=Kind.CITE_SOURCES, params={"min": 1}),
    ]
    result = extract("必须用中文回答", defaults=defaults)
    assert [(c.id, c.kind, c.origin) for c in result.constraints] == [
        ("c1", Kind.RESPONSE_LANGUAGE, Origin.USER),
        ("c2", Kind.CITE_SOURCES, Origin.PROFILE),
    ]


def test_features_describe_the_prompt() -> None:
    features = extract("If the client is a PEP, do not approve. Answer in under 50 words.").features
    assert features["conditionals"] >= 1
    assert features["negations"] >= 1
    assert features["constraints"] == 1
    assert 0 <= features["entity_density"] <= 1
    assert features["sentences"] == 2


def test_oversized_prompt_is_refused() -> None:
    with pytest.raises(LimitExceeded):
        extract("a" * (MAX_PROMPT_CHARS + 1))


def test_pathological_token_counts_are_refused_quickly() -> None:
    with pytest.raises(LimitExceeded):
        extract("!?" * (MAX_PROMPT_CHARS // 2))


def test_long_punctuation_runs_keep_offsets() -> None:
    prompt = "*" * 40 + " Do not use any commas. Separate the two answers with ******."
    result = extract(prompt)
    assert {c.kind for c in result.constraints} == {Kind.NO_COMMA, Kind.TWO_RESPONSES}
    for constraint in result.constraints:
        assert constraint.source is not None
        assert prompt[constraint.source.start : constraint.source.end] == constraint.source.text



@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_extract_never_raises_on_any_text(prompt: str) -> None:
    result = extract(prompt)
    for constraint in result.constraints:
        assert constraint.source is not None
        assert prompt[constraint.source.start : constraint.source.end] == constraint.source.text
    for sentence in result.sentences:
        assert prompt[sentence.start : sentence.end] == sentence.text


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200), st.sampled_from(["必须用中文回答", "Use at least 3 words.", ""]))
def test_extract_never_raises_around_real_instructions(noise: str, instruction: str) -> None:
    extract(noise + instruction + noise)


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Don't exceed 120 words.", [(Kind.WORD_COUNT, {"relation": "at most", "n": 120})]),
        ("Please keep it to no more than three sentences.",
         [(Kind.SENTENCE_COUNT, {"relation": "at most", "n": 3})]),
        ("The word 'risk' should not appear more than 2 times.",
         [(Kind.KEYWORD_FREQUENCY, {"keyword": "risk", "relation": "at most", "n": 2})]),
        ("Please do not use the word die, but mention the word \"dose\" at least 5 times.",
         [(Kind.FORBIDDEN_WORDS, {"words": ["die"]}),
          (Kind.KEYWORD_FREQUENCY, {"keyword": "dose", "relation": "at least", "n": 5})]),
        ("Avoid the letter e entirely.", [(Kind.LETTER_FREQUENCY, {"letter": "e", "relation": "less than", "n": 1})]),
        ("Never use the words 'guarantee' or 'risk-free'.",
         [(Kind.FORBIDDEN_WORDS, {"words": ["guarantee", "risk-free"]})]),
        ("Mention 'Basel III' and 'FATF' in the answer.",
         [(Kind.KEYWORDS_PRESENT, {"keywords": ["Basel III", "FATF"]})]),
        ("Conclude with the sentence 'Stay safe.'", [(Kind.END_PHRASE, {"phrase": "Stay safe."})]),
        ("Start your answer with \"Dear customer\".", [(Kind.START_PHRASE, {"phrase": "Dear customer"})]),
        ("Only cite regulations published after 2019.",
         [(Kind.CITATION_TIME_WINDOW, {"not_before": "2020-01-01"})]),
        ("Cite at least two sources.", [(Kind.CITE_SOURCES, {"min": 2})]),
        ("Split your answer into 4 paragraphs using the markdown divider ***.", [(Kind.PARAGRAPH_COUNT, {"n": 4})]),
        ("Reply entirely in lowercase.", [(Kind.ALL_LOWERCASE, {})]),
        ("Write your reply in French only.", [(Kind.RESPONSE_LANGUAGE, {"language": "fr"})]),
        ("“风险”一词至少出现两次。", [(Kind.KEYWORD_FREQUENCY, {"keyword": "风险", "relation": "at least", "n": 2})]),
        ("请分3段回答，段落之间用***分隔。", [(Kind.PARAGRAPH_COUNT, {"n": 3})]),
        ("答案请用JSON格式输出。", [(Kind.JSON_FORMAT, {})]),
        ("请给出恰好3个要点。", [(Kind.BULLET_COUNT, {"n": 3})]),
    ],
)
def test_other_wordings(prompt: str, expected: list[tuple[Kind, dict[str, object]]]) -> None:
    assert [(c.kind, c.params) for c in extract(prompt).constraints] == expected


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("写一篇关于反洗钱的短文，至少300字。", [(Kind.WORD_COUNT, {"n": 300, "relation": "at least"})]),
        ("请用不超过五句话回答。", [(Kind.SENTENCE_COUNT, {"n": 5, "relation": "at most"})]),
        ("整个回答必须用双引号括起来。", [(Kind.QUOTATION, {})]),
        ("回答中至少包含3个方括号占位符，例如[姓名]。", [(Kind.PLACEHOLDERS, {"n": 3})]),
        ("在回答结尾加上以P.S.开头的附言。", [(Kind.POSTSCRIPT, {"marker": "P.S."})]),
        ("请以“谢谢阅读”结尾。", [(Kind.END_PHRASE, {"phrase": "谢谢阅读"})]),
        ("请用韩语回答，不得使用其他语言。", [(Kind.RESPONSE_LANGUAGE, {"language": "ko"})]),
        ("给出两个不同的回答，用六个星号******分隔。", [(Kind.TWO_RESPONSES, {})]),
        ("请至少突出显示2处内容，例如*重点*。", [(Kind.HIGHLIGHTED_SECTIONS, {"n": 2})]),
        ("字母q至少出现5次。", [(Kind.LETTER_FREQUENCY, {"letter": "q", "relation": "at least", "n": 5})]),
        ("回答必须包含关键词“合规”和“风险”。", [(Kind.KEYWORDS_PRESENT, {"keywords": ["合规", "风险"]})]),
        ("不要使用“保证”这个词。", [(Kind.FORBIDDEN_WORDS, {"words": ["保证"]})]),
        ("全部使用大写字母回答。", [(Kind.ALL_CAPITALS, {})]),
        ("请分成4个部分，每部分以SECTION X开头。", [(Kind.SECTIONS, {"splitter": "SECTION", "n": 4})]),
        ("必须引用所依据的规则。", [(Kind.CITE_SOURCES, {"min": 1})]),
        ("请用中文系的方式思考", []),
    ],
)
def test_chinese_wordings(prompt: str, expected: list[tuple[Kind, dict[str, object]]]) -> None:
    assert [(c.kind, c.params) for c in extract(prompt).constraints] == expected


def test_contradicting_case_instructions_are_both_kept() -> None:
    """Conflict detection needs both sides: neither case instruction may swallow the other."""
    kinds = [c.kind for c in extract(
        "Write about tea. Your entire response must be in all lowercase letters. "
        "Your entire response must be in all capital letters."
    ).constraints]
    assert Kind.ALL_LOWERCASE in kinds and Kind.ALL_CAPITALS in kinds


def test_lowercase_denied_restates_all_capitals() -> None:
    kinds = [c.kind for c in extract("Write about tea in all capital letters. Lowercase letters are not allowed.").constraints]
    assert kinds == [Kind.ALL_CAPITALS]


def test_the_first_line_named_is_the_text_to_repeat_before_a_quote_on_the_same_line() -> None:
    prompt = ("Summarise this: \"The harbour opened in 1870 and grew fast\".\n"
              "Repeat the first line above, then summarise. Your answer should start with \"Summarise this\".")
    copies = [c for c in extract(prompt).constraints if c.kind is Kind.REPEAT_PROMPT]
    assert [c.params["prompt_to_repeat"] for c in copies] == [prompt.split("\n", 1)[0]]


def test_highlighting_each_of_the_counted_pieces_asks_for_that_many_highlights() -> None:
    prompt = "The plan should have at least 4 parts. Highlight each part title with markdown, i.e. *title*."
    assert [(c.kind, c.params) for c in extract(prompt).constraints if c.kind is Kind.HIGHLIGHTED_SECTIONS] == [
        (Kind.HIGHLIGHTED_SECTIONS, {"n": 4})]


def test_a_closed_divider_template_of_two_pieces_is_two_paragraphs() -> None:
    prompt = "Compare the old and new plans, separated by ***. Like this:\n[old plan]\n***\n[new plan]\n\nKeep it short."
    assert [(c.kind, c.params) for c in extract(prompt).constraints if c.kind is Kind.PARAGRAPH_COUNT] == [
        (Kind.PARAGRAPH_COUNT, {"n": 2})]


def test_an_open_divider_template_has_as_many_pieces_as_the_request_counts() -> None:
    prompt = "Give me the first 4 tips. Separate them with ***, like:\nTip 1: ...\n***\nTip 2: ...\n***\n...\n"
    assert [(c.kind, c.params) for c in extract(prompt).constraints if c.kind is Kind.PARAGRAPH_COUNT] == [
        (Kind.PARAGRAPH_COUNT, {"n": 4})]
