"""Script drift is judged against the answer language's own scripts, whatever they are."""

from __future__ import annotations

from typing import Any

import pytest

from inference.decoder.beam import SearchStats
from inference.decoder.degeneracy import (
    LATIN,
    RepeatBound,
    answer_scripts,
    copy_grams,
    degeneracy,
    junk,
    junk_rules,
    repeat_bound,
    said,
)
from inference.decoder.options import DecodeOptions
from inference.decoder.pruning import PruningJudge, StepFacts
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.prompting import instruction_sentences, plan_prompt
from reasoning.constraints.model import Constraint, Kind, Span
from reasoning.constraints.verifiers import verify

RUSSIAN = "Москва является столицей России и крупнейшим городом страны."
ARABIC = "القاهرة هي عاصمة مصر وأكبر مدنها."
HINDI = "दिल्ली भारत की राजधानी है।"
ENGLISH = "Moscow is the capital of Russia and its largest city."


def _drift(text: str, language: str) -> str | None:
    # Distinct token ids: only the text-level checks are under test here.
    return degeneracy(text, list(range(len(text))), (), answer_scripts(language))


@pytest.mark.parametrize(
    ("text", "language"),
    [(RUSSIAN, "ru"), (ARABIC, "ar"), (HINDI, "hi"), (ENGLISH, "en"), ("巴黎是法国的首都。", "zh")],
)
def test_an_answer_in_its_own_script_is_not_drift(text: str, language: str) -> None:
    assert _drift(text, language) is None


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (RUSSIAN, "en"),  # a Latin answer drifting into Cyrillic
        (ARABIC, "fr"),  # ... into Arabic
        ("巴黎是法国的首都。", "en"),  # ... into Han
        ("Москва 首都是北京上海广州深圳", "ru"),  # a Cyrillic answer drifting into Han
        (ENGLISH, "ar"),  # a long Latin step with no Arabic at all
    ],
)
def test_a_step_in_another_script_is_drift(text: str, language: str) -> None:
    reason = _drift(text, language)
    assert reason is not None and reason.startswith("script drift"), reason


def test_latin_names_in_a_non_latin_answer_are_tolerated() -> None:
    assert _drift("Компания Acme Ltd перевела деньги в банк.", "ru") is None
    assert _drift("使用 Python 编写程序。", "zh") is None


@pytest.mark.model
def test_the_judge_expects_the_required_languages_script(loaded_model: LoadedModel) -> None:
    """A response_language constraint, not the prompt's language, sets the expected script."""
    tok = loaded_model.tokenizer
    tokens = list(tok(RUSSIAN, add_special_tokens=False)["input_ids"])

    def judged(constraints: list[Constraint]) -> tuple[str | None, str]:
        judge = PruningJudge(
            tokenizer=tok,
            runner=ModelRunner(loaded_model.model),
            constraints=constraints,
            branches=[],
            options=DecodeOptions(),
            stats=SearchStats(),
            verify=verify,
            language="en",
        )
        check = judge.judge(0, tokens, 0, len(tokens), [0.1] * len(tokens), final=False)
        return check.rule, check.detail

    russian = Constraint(id="c1", kind=Kind.RESPONSE_LANGUAGE, params={"language": "ru"})
    assert judged([russian]) == (None, "")
    rule, detail = judged([])
    assert rule == "entropy" and "script drift" in detail


SYSTEM_ZH = "你是一名严谨的合规助理。请直接回答请求。\n\n必须严格遵守以下全部要求：\n- 恰好写3句话。"
REQUEST_ZH = "用三句话解释什么是洗钱。"


@pytest.mark.parametrize("step", ["你是一名严谨的合规助理。", "请直接回答请求。必须严格遵守", "用三句话解释什么是洗钱。",
                                  "You are a careful assistant for compliance-bound work."])
def test_a_step_that_copies_the_instructions_is_degenerate(step: str) -> None:
    grams = copy_grams([SYSTEM_ZH, REQUEST_ZH, "You are a careful assistant for compliance-bound work. Answer it."])
    reason = degeneracy(step, list(range(len(step))), (), answer_scripts("zh"), grams)
    assert reason is not None and reason.startswith("copy"), reason


@pytest.mark.parametrize("step", ["洗钱是把非法所得伪装成合法收入的过程。", "洗钱的目的是掩盖资金来源。", "是。"])
def test_an_answer_of_its_own_is_no_copy(step: str) -> None:
    grams = copy_grams([SYSTEM_ZH, REQUEST_ZH])
    assert degeneracy(step, list(range(len(step))), (), answer_scripts("zh"), grams) is None


@pytest.mark.parametrize(("step", "earlier"), [("确。", ["确实。"]), ("请。", ["洗钱是违法的。"]),
                                               ("确实。", ["这确实很重要。"])])
def test_a_one_character_or_fragment_sentence_of_a_chinese_answer_is_degenerate(step: str, earlier: list[str]) -> None:
    reason = degeneracy(step, list(range(len(step))), earlier, answer_scripts("zh"))
    assert reason is not None and reason.startswith("repetition"), reason


def test_the_judge_prunes_a_step_that_copies_the_system_message_unless_a_copy_is_asked(tokenizer: Any) -> None:
    """The plan's instructions (system message and request) reach the judge; a repeat constraint lifts the rule."""
    request = "用三句话解释什么是洗钱。"
    three = Constraint(id="c1", kind=Kind.SENTENCE_COUNT, params={"relation": "exactly", "n": 3})
    plan = plan_prompt(tokenizer, request, [three], language="zh")
    step = plan.instructions.split("\n")[0]  # the role sentence of the system message
    tokens = list(tokenizer(step, add_special_tokens=False)["input_ids"])

    def judged(constraints: list[Constraint]) -> tuple[bool, str | None, str]:
        judge = PruningJudge(
            tokenizer=tokenizer, runner=None, constraints=constraints, branches=[], options=DecodeOptions(),
            stats=SearchStats(), verify=verify, language="zh", instructions=plan.instructions,
        )
        check = judge.judge(0, tokens, 0, len(tokens), [0.1] * len(tokens), final=False)
        return check.keep, check.rule, check.detail

    keep, rule, detail = judged([three])
    assert not keep and rule == "entropy" and "copy" in detail
    repeat = Constraint(id="c2", kind=Kind.REPEAT_PROMPT, params={"prompt_to_repeat": request})
    assert judged([three, repeat]) == (True, None, "")


def test_the_copy_rule_judges_the_models_own_tokens_beside_forced_ones(tokenizer: Any) -> None:
    """A forced opening ("Note") and then the system message's role sentence, the model's own:
    a copy (a step with forced tokens escaped the rule); the same sentence forced, with one
    token of the model's after it, is none."""
    three = Constraint(id="c1", kind=Kind.SENTENCE_COUNT, params={"relation": "exactly", "n": 3})
    plan = plan_prompt(tokenizer, "Explain money laundering.", [three])
    role = plan.instructions.split("\n")[0]
    opening = list(tokenizer("Note", add_special_tokens=False)["input_ids"])
    copied = list(tokenizer(" " + role, add_special_tokens=False)["input_ids"])
    judge = PruningJudge(
        tokenizer=tokenizer, runner=None, constraints=[three], branches=[], options=DecodeOptions(),
        stats=SearchStats(), verify=verify, instructions=plan.instructions,
    )
    tokens = opening + copied
    check = judge.judge(0, tokens, 0, len(tokens), [0.1] * len(tokens), final=False,
                        forced=[True] * len(opening) + [False] * len(copied))
    assert not check.keep and "copy" in check.detail, check.detail
    tokens = copied + list(tokenizer(" Yes", add_special_tokens=False)["input_ids"])
    check = judge.judge(0, tokens, 0, len(tokens), [0.1] * len(tokens), final=False,
                        forced=[True] * len(copied) + [False])
    assert "copy" not in (check.detail or ""), check.detail


def test_the_instructions_hold_the_requests_constraint_sentences_not_its_facts() -> None:
    request = "Acme Ltd sent EUR 9,500 to John Doe on 2024-01-02. Answer in exactly 3 sentences. Is this reportable?"
    three = Constraint(id="c1", kind=Kind.SENTENCE_COUNT, params={"relation": "exactly", "n": 3},
                       source=Span(start=52, end=79, text="Answer in exactly 3 sentences"))
    assert instruction_sentences(request, [three]) == ["Answer in exactly 3 sentences."]


def _first_loop(steps: list[str], bound: RepeatBound | None = None, scripts: frozenset[str] = LATIN) -> int | None:
    """The index of the first of ``steps`` (an answer, one step at a time) the loop rule flags."""
    bound = bound or RepeatBound()
    answer = ""
    for index, step in enumerate(steps):
        reason = degeneracy(step, list(range(len(step))), (), scripts, before=said(answer), bound=bound)
        if reason is not None:
            assert reason.startswith("repetition"), reason
            return index
        answer += step
    return None


def test_a_phrase_said_a_third_time_loops_even_one_short_step_at_a_time() -> None:
    # Each "i.e." step is too short to loop on its own; the answer says it over and over.
    assert _first_loop(["can you ask a question?", " i.e."] + [" i.e."] * 8) == 5  # the fifth "i.e." says "i e i e i" a third time
    # A step judged as it grows leaves out its unfinished last word: the verdict holds as it grows.
    assert _first_loop(["Say it", " again, and say it", " again, and say it"]) is None
    question = ' can you ask a question? i.e. "two young boys with toy guns and horns."'
    assert _first_loop([question, question, question]) == 2
    assert _first_loop([question, question]) is None


def test_an_answer_that_varies_its_sentences_does_not_loop() -> None:
    steps = [
        "The hajj is one of the five pillars of Islam.",
        " Every adult Muslim who is able to should make it once.",
        " It takes place in the month of Dhu al-Hijjah.",
        " Pilgrims walk around the Kaaba seven times.",
        " The hajj is one of the largest gatherings in the world.",
        " It ends with the festival of Eid al-Adha.",
    ]
    assert _first_loop(steps) is None


def test_a_longer_answer_may_say_a_phrase_more_often() -> None:
    # Every 5 words of the filler hold one of its item's own words.
    filler = [f" Item {i} names w{i}a and w{i}b then w{i}c." for i in range(40)]
    phrase = " one of the most important parts"
    assert _first_loop([phrase, phrase, phrase]) == 2  # at the start: twice
    assert len(" ".join(filler).split()) >= 300
    assert _first_loop([*filler, phrase, phrase, phrase, phrase]) is None  # 300+ words: four times
    assert _first_loop([*filler, phrase, phrase, phrase, phrase, phrase]) == len(filler) + 4


def test_a_chinese_phrase_said_a_third_time_loops() -> None:
    sentence = "洗钱是把非法所得伪装成合法收入。"
    zh = answer_scripts("zh")
    assert _first_loop([sentence, "它违反法律。", sentence, sentence], scripts=zh) == 3
    assert _first_loop([sentence, "它违反法律。", "银行必须报告可疑交易。", "洗钱是一种犯罪。"], scripts=zh) is None


def test_the_constraints_set_the_bound() -> None:
    twice = repeat_bound([Constraint(id="c1", kind=Kind.TWO_RESPONSES)])
    phrase = " the best brand for running shoes is"
    assert _first_loop([phrase] * 5) == 2
    assert _first_loop([phrase] * 5, twice) == 4  # two responses may each say it twice
    keyword = "the quick brown fox jumps"
    asked = repeat_bound(
        [Constraint(id="c1", kind=Kind.KEYWORD_FREQUENCY, params={"keyword": keyword, "n": 4, "relation": "at least"})]
    )
    keyword = f" {keyword}."
    assert _first_loop([keyword] * 4) == 2
    assert _first_loop([keyword] * 4, asked) is None  # the constraint asks for that phrase
    assert "least" not in asked.literals  # a relation is no text of the answer


def test_the_judge_prunes_the_step_that_says_a_phrase_again(tokenizer: Any) -> None:
    """The judge counts a step against the answer before it (its own tokens), and prunes the loop."""
    answer = "can you ask a question? i.e. i.e. i.e. i.e. i.e."
    tokens = list(tokenizer(answer, add_special_tokens=False)["input_ids"])
    judge = PruningJudge(
        tokenizer=tokenizer, runner=None, constraints=[], branches=[], options=DecodeOptions(),
        stats=SearchStats(), verify=verify, language="en",
    )
    ends = [k for k in range(1, len(tokens) + 1) if tokenizer.decode(tokens[:k]).endswith(".")]
    last = ends[-1]
    start = ends[-2]  # the last "e." alone is the step: "e i e i e" a third time
    check = judge.judge(0, tokens, start, last, [0.1] * len(tokens), final=False)
    assert not check.keep and check.rule == "entropy" and "says a phrase again" in check.detail
    first = judge.judge(0, tokens, ends[1], ends[2], [0.1] * len(tokens), final=False)
    assert first.keep, first.detail


JUNK_RULES = junk_rules(
    "诺德科技公司向流明仪器公司出口一批传感器。需要采取哪些管制措施？",
    ("Evidence (compliance):", "证据 (compliance):"),
    "货值超过5万欧元的出口需要出口许可证。",
)


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("证据。", "fragment"),
        ("请求说明：", "fragment: a bare label"),
        ("1.", "fragment"),
        # A number, a date and a code are one item each: dates and half a name state nothing.
        ("(2017-06-26) 2022年5月3日，港湾。", "fragment: too short"),
        ("EUR 750,000.", "fragment: too short"),
        # A budget's landing closed the sentence where it stood.
        ("同时，若货值高于。", "fragment: the sentence breaks off after '高于'"),
        ("The rules apply to transfers to.", "fragment: the sentence breaks off after 'to'"),
        ("The licence is required because.", "fragment: the sentence breaks off after 'because'"),
        # A condition with no main clause; a code and a two-word label.
        ("If the nodule size is less than 6 mm.", "fragment: a condition ('if') with no main clause"),
        ("同时，若结节大小。", "fragment: a condition ('若') with no main clause"),
        ("EXP-R-102许可货值。", "fragment: too short"),
    ],
)
def test_junk_sentences_of_a_domain_answer(sentence: str, reason: str) -> None:
    why = junk(sentence, JUNK_RULES)
    assert why is not None and why.startswith(reason), why


@pytest.mark.parametrize(
    "sentence",
    [
        "金额为200万欧元。",
        "检查日期为2010-06-01。",
        "The amount is EUR 2,000,000.",
        "本案需要出口许可证，依据[E5]。",  # it ends on what it cites
        "这笔货物是从诺德科技公司发运的。",
        "Escalation to the MLRO is required [E2].",
        "AML-R-017 requires escalation.",
        "This case requires a multi-step escalation to the MLRO.",
        "If the nodule size is at least 6 mm, Fleischner 2017 applies [E12].",
        "若结节大小不低于6 mm，则适用Fleischner 2017[E13]。",
    ],
)
def test_a_short_complete_sentence_is_no_junk(sentence: str) -> None:
    assert junk(sentence, JUNK_RULES) is None


def test_a_sentence_that_restates_the_answer_before_it_is_junk() -> None:
    before = "缺少货值，规则无法判定本案。货值超过5万欧元的出口需要出口许可证。"
    for sentence in ("缺少货值。", "货值超过5万欧元的出口需要许可证。", "货值超过5万欧元的出口需要。"):
        why = junk(sentence, JUNK_RULES, before)
        assert why is not None and why.startswith(("echo", "fragment")), (sentence, why)
    # A sentence of its own after it is kept; so is the same sentence where nothing came before.
    assert junk("流明仪器公司是这批传感器的收货人。", JUNK_RULES, before) is None
    assert junk("货值超过5万欧元的出口需要许可证。", JUNK_RULES) is None


def test_a_chinese_sentence_closed_inside_a_word_is_broken_off() -> None:
    # The budget's landing closed the sentence where it stood: 反洗 of 反洗钱, 情 of 情报.
    rules = junk_rules("林娜是政治公众人物。是否需要上报？", (), "上报反洗钱报告官。须向金融情报机构报告。")
    for sentence, cut in (("请求上报反洗。", "反洗"), ("跨境转账须向金融情。", "情")):
        assert junk(sentence, rules) == f"fragment: the sentence breaks off after {cut!r}"
    assert junk("跨境转账须向金融情报机构报告。", rules) is None
    # A term the references always go on with a content word (反洗钱报告官, 金融情报机构报告).
    for sentence, cut in (("请求上报反洗钱。", "反洗钱"), ("跨境转账须向金融情报机构。", "情报机构")):
        assert junk(sentence, rules) == f"fragment: the sentence breaks off after {cut!r}"
    # Where they also end it (a mark, a function word), it ends there.
    ends = junk_rules("林娜需要上报吗？", (), "AML-R-017比对政治公众人物名单。林娜是政治公众人物。")
    assert junk("林娜是政治公众人物。", ends) is None


def test_pieces_of_the_answer_put_back_together_restate_it() -> None:
    rules = junk_rules("诺德科技公司向流明仪器公司出口一批传感器。", (), "EXP-R-102许可门槛50000。")
    before = "缺少货值，规则无法判定本案。若货值高于50,000，则适用EXP-R-102，本案需要出口许可证[E4]。"
    assert junk("缺少货值，则适用。", rules, before) == "echo: the sentence restates the answer before it"
    # A relation the evidence always gives a value, written without one.
    assert junk("出口货物的许可门槛。", rules) == "fragment: the sentence breaks off after '门槛'"
    assert junk("流明仪器公司是这批传感器的收货人。", rules, before) is None


def test_an_english_sentence_closed_inside_a_term_is_broken_off() -> None:
    reference = ("Lena Park is a politically exposed person. Transfers to or from a politically exposed "
                 "person require enhanced due diligence and escalation to the MLRO. AML-R-003 requires "
                 "a report to the Financial Intelligence Unit.")
    rules = junk_rules("Acme Ltd sent EUR 500,000 to Lena Park. Should this be escalated?", (), reference)
    assert junk("AML-R-017 applies to politically exposed.", rules) == (
        "fragment: the sentence breaks off after 'exposed'"
    )
    assert junk("The action is reported to the Financial.", rules) == (
        "fragment: the sentence breaks off after 'Financial'"
    )
    # A term that ends where the references go on with a function word ("due diligence and").
    assert junk("The transfer requires enhanced due diligence.", rules) is None
    assert junk("Lena Park is a politically exposed person.", rules) is None


@pytest.mark.parametrize(
    "sentence",
    ["AML-R-017规则编号AML-R-017。", "这将在EXP-R-102许。", "In 2021, Lena Park."],
)
def test_codes_after_han_characters_and_clauses_of_pieces_are_fragments(sentence: str) -> None:
    why = junk(sentence, JUNK_RULES)
    assert why is not None and why.startswith("fragment"), why


def test_a_restated_action_excuses_a_sentences_words_only_when_enough_are_held(tokenizer: Any) -> None:
    judge = PruningJudge(
        tokenizer=tokenizer, runner=None, constraints=[], branches=[], options=DecodeOptions(),  # type: ignore[arg-type]
        stats=SearchStats(), verify=verify, language="zh",
    )
    # It names a concluded action (上报) amid words no source holds: still unsupported.
    vague = StepFacts(text="以上是阿克米的上报。", supported=False, restates=True, content_share=0.375,
                      unsupported=("以上",))
    assert judge._rule(0, vague)[0] == "evidence"
    kept = StepFacts(text="本案须上报反洗钱报告官。", supported=False, restates=True, content_share=0.5)
    assert judge._rule(0, kept)[0] is None
