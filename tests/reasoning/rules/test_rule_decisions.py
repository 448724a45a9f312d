"""Decisions of the bundled AML and clinical rules (SCENARIOS.md section 1 and its variants)."""

from __future__ import annotations

from datetime import date

import pytest

from reasoning.premises import extract_premises
from reasoning.rules.decide import DecisionEngine, decision_sentence
from reasoning.rules.model import Decision

AML = "https://tenet.dev/ontologies/aml#"
CLIN = "https://tenet.dev/ontologies/clinical#"
TODAY = date(2026, 12, 1)
SCENARIO = ("Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is "
            "on our PEP list. Should this be escalated? Answer in under 80 words, cite the rules "
            "you rely on, and do not cite rules in force before 2020.")
SCENARIO_ZH = "假设税率为20%。阿克米有限公司（塞浦路斯）向乔恩·多伊转账200万欧元，乔恩·多伊在我们的PEP名单上。是否需要上报？"


def _decide(engine: DecisionEngine, text: str, when: date = TODAY) -> Decision:
    return engine.decide(text, premises=extract_premises(text), evaluation_date=when)


def _actions(decision: Decision) -> set[str]:
    return {a.rsplit("#", 1)[1] for a in decision.actions()}


@pytest.mark.parametrize("text", [SCENARIO, SCENARIO_ZH])
def test_scenario_requires_edd_and_escalation(aml_engine: DecisionEngine, text: str) -> None:
    decision = _decide(aml_engine, text)
    assert decision.status == "decided"
    assert _actions(decision) == {"act-edd", "act-escalate"}
    assert set(decision.rule_ids()) == {"AML-R-017", "AML-R-024"}
    for conclusion in decision.conclusions:
        assert conclusion.rule_iri is not None and conclusion.rule_iri.startswith(AML + "AML-R-")
        spans = [f for f in conclusion.case_facts if f.start is not None]
        assert spans and all(text[f.start:f.end] == f.text for f in spans)
        assert not conclusion.premise_ids  # the tax-rate premise plays no part
    escalation = next(c for c in decision.conclusions if c.rule_id == "AML-R-024")
    assert any(f.predicate == AML + "thresholdAmount" for f in escalation.ontology_facts)
    assert all(f.ontology_version == "aml-v1" for f in escalation.ontology_facts)


def test_decision_sentence_in_both_languages(aml_engine: DecisionEngine) -> None:
    en = decision_sentence(_decide(aml_engine, SCENARIO), "en")
    zh = decision_sentence(_decide(aml_engine, SCENARIO_ZH), "zh")
    assert "enhanced due diligence" in en and "AML-R-017" in en and "AML-R-024" in en
    assert "强化尽职调查" in zh and "上报反洗钱报告官" in zh and "AML-R-017" in zh


def test_fresh_names_and_high_risk_jurisdiction(aml_engine: DecisionEngine) -> None:
    decision = _decide(aml_engine, "Foo Corp, a company registered in Panama, sent EUR 3m to "
                                   "Bar Baz (Germany). Should this be escalated?")
    assert (decision.status, _actions(decision), decision.rule_ids()) == (
        "decided", {"act-escalate"}, ("AML-R-024",))
    assert any(e.is_new and e.label == "Foo Corp" for e in decision.case.entities)


def test_unknown_amount_is_undetermined_and_named(aml_engine: DecisionEngine) -> None:
    decision = _decide(aml_engine, "Foo Corp, a company registered in Panama, sent money to "
                                   "Bar Baz (Germany). Should this be escalated?")
    assert decision.status == "undetermined"
    assert AML + "amount" in {m.input for m in decision.missing}
    assert "amount" in decision_sentence(decision, "en")


def test_complete_case_where_no_rule_applies(aml_engine: DecisionEngine) -> None:
    decision = _decide(aml_engine, "Acme Ltd sent EUR 5,000 to Maria Ioannou. Should this be escalated?")
    assert (decision.status, decision.conclusions, decision.missing) == ("no_rule_applies", (), ())


def test_sanctioned_party_blocks_and_freezes(aml_engine: DecisionEngine) -> None:
    decision = _decide(aml_engine, "Acme Ltd sent EUR 50,000 to Northwind GmbH. Can the payment go ahead?")
    assert _actions(decision) == {"act-block", "act-freeze"}
    assert decision.rule_ids() == ("AML-R-021",)


@pytest.mark.parametrize(("value_date", "action", "rule"), [
    ("2022-05-03", "act-sar", "AML-R-003"),     # before AML-R-024 supersedes AML-R-003
    ("2024-05-03", "act-escalate", "AML-R-024"),
])
def test_effective_dates_and_supersession(aml_engine: DecisionEngine, value_date: str, action: str,
                                          rule: str) -> None:
    decision = _decide(aml_engine, f"Acme Ltd (Cyprus) sent EUR 2,000,000 to Harbour Trading Ltd "
                                   f"on {value_date}.")
    assert (_actions(decision), decision.rule_ids()) == ({action}, (rule,))


@pytest.mark.parametrize(("amount", "expected"), [("EUR 12,000", {"act-identify"}), ("EUR 9,000", set())])
def test_cash_threshold(aml_engine: DecisionEngine, amount: str, expected: set[str]) -> None:
    assert _actions(_decide(aml_engine, f"A customer made a cash deposit of {amount}.")) == expected


def test_retracting_a_premise_removes_exactly_its_conclusions(aml_engine: DecisionEngine) -> None:
    text = ("Assume the tax rate is 20% and the customer is a politically exposed person. "
            "Acme Ltd paid EUR 10,000 to the customer. Should the payment be escalated?")
    premises = extract_premises(text)
    decision = aml_engine.decide(text, premises=premises, evaluation_date=TODAY)
    pep = next(p for p in premises if "politically" in p.text)
    assert _actions(decision) == {"act-edd", "act-escalate"}
    assert all(c.premise_ids == (pep.id,) for c in decision.conclusions)
    tax = next(p for p in premises if "tax" in p.text)
    assert _actions(aml_engine.evaluate(decision.case.without_premises([tax.id]))) == \
        {"act-edd", "act-escalate"}
    assert aml_engine.evaluate(decision.case.without_premises([pep.id])).status == "no_rule_applies"


@pytest.mark.parametrize(("text", "status", "actions"), [
    ("A 7 mm pure ground-glass nodule in the right lower lobe. What follow-up is needed?",
     "decided", {"fu-ct-6-12m"}),
    ("右肺下叶见8毫米部分实性结节，需要如何随访？", "decided", {"fu-ct-3-6m"}),
    ("A 4 mm pure ground-glass nodule in the right lower lobe.", "no_rule_applies", set()),
    ("A pure ground-glass nodule in the right lower lobe.", "undetermined", set()),
])
def test_clinical_follow_up(clinical_engine: DecisionEngine, text: str, status: str,
                            actions: set[str]) -> None:
    decision = _decide(clinical_engine, text)
    assert (decision.status, _actions(decision)) == (status, actions)
    if status == "undetermined":
        assert [m.input for m in decision.missing] == [CLIN + "noduleSizeMm"]


@pytest.mark.parametrize(("exam", "actions"), [("2010-06-01", {"fu-ct-by-size"}), ("2020-06-01", set())])
def test_superseded_guideline_by_exam_date(clinical_engine: DecisionEngine, exam: str,
                                           actions: set[str]) -> None:
    decision = _decide(clinical_engine, f"A solid nodule in the left upper lobe, CT on {exam}.")
    assert _actions(decision) == actions


def test_evidence_ids_of_the_deciding_rule(aml_engine: DecisionEngine) -> None:
    from reasoning.evidence.model import EvidenceFact

    fact = EvidenceFact(id="E7", subject=AML + "AML-R-017", predicate=AML + "ruleText",
                        object="...", text="AML-R-017 states ...", view="compliance", score=1.0,
                        hops=1, ontology_version="aml-v1")
    decision = aml_engine.decide(SCENARIO, evidence=[fact], evaluation_date=TODAY)
    assert {c.rule_id: c.evidence_ids for c in decision.conclusions}["AML-R-017"] == ("E7",)
