"""The grounding benchmark's truth table, case generator and answer judge (pure logic)."""

from __future__ import annotations

import time
from datetime import date

from bench.grounding import (
    PipelineAnswers,
    _decode_sample,
    decode_cases,
    generate_cases,
    gold_aml,
    gold_clinical,
    gold_exports,
    judge_answer,
    unseen_cases,
)
from bench.grounding_judge import judge_sentences


def test_truth_table_follows_the_rule_texts() -> None:
    assert gold_aml(
        pep=True,
        sanctioned=False,
        cross_border=True,
        high_risk=False,
        amount=2_000_000,
        when=date(2026, 12, 1),
    ) == ("decided", {"act-edd", "act-escalate"}, {"AML-R-017", "AML-R-024"})
    assert gold_aml(
        pep=False,
        sanctioned=False,
        cross_border=True,
        high_risk=False,
        amount=2_000_000,
        when=date(2022, 5, 3),
    ) == ("decided", {"act-sar"}, {"AML-R-003"})
    assert (
        gold_aml(
            pep=False,
            sanctioned=False,
            cross_border=True,
            high_risk=True,
            amount=None,
            when=date(2026, 12, 1),
        )[0]
        == "undetermined"
    )
    assert gold_clinical(finding="pure", size_mm=4, when=date(2026, 12, 1))[0] == "no_rule_applies"


def test_cases_cover_both_languages_and_fresh_names() -> None:
    cases = generate_cases(quick=True)
    assert {c.lang for c in cases} == {"en", "zh"} and any(c.fresh for c in cases)
    assert {c.status for c in cases} == {"decided", "no_rule_applies", "undetermined"}


def test_judge() -> None:
    case = next(
        c
        for c in generate_cases(quick=True)
        if c.actions == {"act-edd", "act-escalate"} and c.lang == "en" and len(c.rules) == 2
    )
    good = "This case requires enhanced due diligence and escalation to the MLRO (AML-R-017, AML-R-024)."
    assert judge_answer(good, case).correct
    denied = judge_answer("The transfer should not be escalated (AML-R-017).", case)
    assert denied.contradiction and not denied.correct
    extra = judge_answer(good + " A suspicious activity report is filed.", case)
    assert extra.contradiction
    uncited = judge_answer("It requires enhanced due diligence and escalation.", case)
    assert not uncited.correct and uncited.cited == 0


def test_a_no_action_case_needs_the_no_action_decision_stated() -> None:
    case = next(c for c in generate_cases(quick=True) if c.status == "no_rule_applies")
    assert not judge_answer(
        "CT shows a nodule. The next question is: what follow-up?", case
    ).correct
    assert judge_answer("No rule of this domain requires an action for this case.", case).correct
    assert judge_answer("本领域的规则未要求对本案采取任何措施。", case).correct
    assert judge_answer("No rule requires an action for this case.", case).correct
    assert judge_answer("规则未要求本案采取任何措施。", case).correct
    stated = judge_answer("No rule applies. The payment is blocked.", case)
    assert stated.contradiction and not stated.correct


def test_the_decoded_sample_is_balanced() -> None:
    cases = generate_cases(quick=True)
    sample = _decode_sample(cases, 48)
    assert len(sample) == 48 == len({c.id for c in sample})
    assert sum(c.lang == "en" for c in sample) == sum(c.lang == "zh" for c in sample) == 24
    for lang in ("en", "zh"):
        own = [c for c in sample if c.lang == lang]
        assert {c.status for c in own} == {"decided", "no_rule_applies", "undetermined"}
        assert {c.domain for c in own} == {"aml", "clinical"}
        assert any(c.fresh for c in own) and any(not c.fresh for c in own)
        texts = [c.text for c in own if c.domain == "aml"]
        above, below = ("200万", "50万") if lang == "zh" else ("2,000,000", "500,000")
        assert any(above in t for t in texts) and any(below in t for t in texts)
        assert any("2022" in t for t in texts) and any("2022" not in t for t in texts)


def test_no_case_is_started_past_the_deadline() -> None:
    # The deadline has passed: nothing is decoded (and the model is never loaded).
    pipeline = PipelineAnswers(indexes={})
    sample = generate_cases(quick=True)[:3]
    assert decode_cases(pipeline, sample, concurrency=2, deadline=time.perf_counter() - 1) == []
    assert pipeline.reasoner is None


def test_the_unseen_arm_follows_its_rule_texts() -> None:
    assert gold_exports(embargoed=True, denied=False, value=80_000) == (
        "decided", {"act-halt", "act-licence"}, {"EXP-R-101", "EXP-R-102"}
    )
    assert gold_exports(embargoed=False, denied=False, value=20_000)[0] == "no_rule_applies"
    assert gold_exports(embargoed=False, denied=True, value=None)[0] == "undetermined"
    cases = unseen_cases(quick=True)
    assert {c.lang for c in cases} == {"en", "zh"}
    assert {c.status for c in cases} == {"decided", "no_rule_applies", "undetermined"}
    assert all(c.domain == "exports" for c in cases)


def test_the_sentence_judge() -> None:
    request = "Acme Ltd sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
    evidence = [
        "AML-R-017: Transfers to or from a politically exposed person require enhanced "
        + "due diligence and escalation to the MLRO."
    ]
    stated = ["This case requires escalation to the MLRO (AML-R-017)."]
    answer = (
        "This case requires escalation to the MLRO (AML-R-017). Evidence:\n"
        "The rules require a 24-hour escalation. Enhanced due diligence is required for a "
        "politically exposed person. The court will review the application of the law. "
        "It cites AEM-R-009 for this transfer to Jon Doe."
    )
    verdicts = judge_sentences(
        answer, lang="en", request=request, evidence=evidence, stated=stated, decision=None, index=None
    )
    assert verdicts.rules == [stated[0]]
    assert [s for s, _ in verdicts.junk] == ["Evidence:"]
    unsupported = dict(verdicts.unsupported)
    assert set(unsupported) == {
        "The rules require a 24-hour escalation.",
        "The court will review the application of the law.",
        "It cites AEM-R-009 for this transfer to Jon Doe.",
    }
    assert verdicts.supported == ["Enhanced due diligence is required for a politically exposed person."]
    zh = judge_sentences(
        "证据。本案禁止福制上报。", lang="zh", request="是否需要上报？", evidence=[], stated=[],
        decision=None, index=None,
    )
    assert len(zh.junk) == 2, zh


def test_grounds_stated_asks_for_a_fact_that_fired_each_rule() -> None:
    from reasoning.evidence.bundled import bundled_domains
    from reasoning.evidence.ingest import ingest_ontology
    from reasoning.rules.decide import DecisionEngine

    def stated(engine: DecisionEngine, request: str, answer: str, lang: str) -> bool | None:
        decision = engine.decide(request, evaluation_date=date(2026, 12, 1))
        assert decision.status == "decided"
        return judge_sentences(answer, lang=lang, request=request, evidence=[], stated=[], decision=decision,
                               index=engine.index).grounds_stated

    aml = DecisionEngine(ingest_ontology(dict(bundled_domains())["aml"].read_bytes(), "text/turtle").index)
    pep = "Acme Ltd sent funds to Jon Doe, who is on our PEP list."
    decided = "This case requires enhanced due diligence and escalation to the MLRO (AML-R-017)."
    assert stated(aml, pep, decided, "en") is False
    # The PEP list by the request's words or by the ontology's label.
    assert stated(aml, pep, decided + " Jon Doe is on the PEP list.", "en") is True
    assert stated(aml, pep, decided + " Jon Doe is on the politically exposed persons list.", "en") is False
    # The request fired the sanctions rule only by naming the party (and the service dated it):
    # the ontology's fact that fired it is the ground.
    sanctions = "Northwind GmbH received funds from Orion Freight Ltd in United Kingdom."
    blocked = "This case requires blocking of the payment and asset freeze (AML-R-021)."
    assert stated(aml, sanctions, blocked, "en") is False
    assert stated(aml, sanctions, blocked + " The value date is 2026-12-01.", "en") is False
    assert stated(aml, sanctions, blocked + " Northwind GmbH is a sanctioned party.", "en") is True
    # A number right after a Chinese character is read.
    clinical = DecisionEngine(ingest_ontology(dict(bundled_domains())["clinical"].read_bytes(), "text/turtle").index)
    request = "CT示右肺下叶见7毫米纯磨玻璃结节，需要如何随访？"
    decided_zh = "本案需要6至12个月复查CT。"
    assert stated(clinical, request, decided_zh, "zh") is False
    assert stated(clinical, request, decided_zh + "结节大小为7 mm。", "zh") is True
