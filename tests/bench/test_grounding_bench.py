"""The grounding benchmark's truth table, case generator and answer judge (pure logic)."""

from __future__ import annotations

from datetime import date

from bench.grounding import generate_cases, gold_aml, gold_clinical, judge_answer


def test_truth_table_follows_the_rule_texts() -> None:
    assert gold_aml(pep=True, sanctioned=False, cross_border=True, high_risk=False,
                    amount=2_000_000, when=date(2026, 12, 1)) == (
        "decided", {"act-edd", "act-escalate"}, {"AML-R-017", "AML-R-024"})
    assert gold_aml(pep=False, sanctioned=False, cross_border=True, high_risk=False,
                    amount=2_000_000, when=date(2022, 5, 3)) == ("decided", {"act-sar"}, {"AML-R-003"})
    assert gold_aml(pep=False, sanctioned=False, cross_border=True, high_risk=True, amount=None,
                    when=date(2026, 12, 1))[0] == "undetermined"
    assert gold_clinical(finding="pure", size_mm=4, when=date(2026, 12, 1))[0] == "no_rule_applies"


def test_cases_cover_both_languages_and_fresh_names() -> None:
    cases = generate_cases(quick=True)
    assert {c.lang for c in cases} == {"en", "zh"} and any(c.fresh for c in cases)
    assert {c.status for c in cases} == {"decided", "no_rule_applies", "undetermined"}


def test_judge() -> None:
    case = next(c for c in generate_cases(quick=True)
                if c.actions == {"act-edd", "act-escalate"} and c.lang == "en"
                and len(c.rules) == 2)
    good = "This case requires enhanced due diligence and escalation to the MLRO (AML-R-017, AML-R-024)."
    assert judge_answer(good, case).correct
    denied = judge_answer("The transfer should not be escalated (AML-R-017).", case)
    assert denied.contradiction and not denied.correct
    extra = judge_answer(good + " A suspicious activity report is filed.", case)
    assert extra.contradiction
    uncited = judge_answer("It requires enhanced due diligence and escalation.", case)
    assert not uncited.correct and uncited.cited == 0
