"""The grounds of a decision and the nearest rule, said from the ontology's labels (English and Chinese).

The food-imports and harbour domains (tests/data/imports.ttl, harbour.ttl) are
ones no code mentions: their grounds come from their own labels, rule texts
and SHACL rules only.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import EvidenceFact
from reasoning.evidence.subgraph import facts_about
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.model import Decision

IMPORTS_TTL = Path(__file__).resolve().parents[2] / "data" / "imports.ttl"
HARBOUR_TTL = IMPORTS_TTL.with_name("harbour.ttl")
DAY = date(2026, 12, 1)


@pytest.fixture(scope="module")
def imports_engine() -> DecisionEngine:
    return DecisionEngine(ingest_ontology(IMPORTS_TTL.read_bytes(), "text/turtle").index.with_version("imports-v1"))


@pytest.fixture(scope="module")
def harbour_engine() -> DecisionEngine:
    return DecisionEngine(ingest_ontology(HARBOUR_TTL.read_bytes(), "text/turtle").index.with_version("harbour-v1"))


def _rule_evidence(engine: DecisionEngine, decision: Decision) -> list[EvidenceFact]:
    """The rules' own facts as the pipeline shows them (ids from E20)."""
    rules = [c.rule_iri for c in decision.conclusions]
    rules += [decision.nearest.rule_iri] if decision.nearest else []
    rules += [o.rule_iri for m in decision.missing for o in m.outcomes]
    shown: list[EvidenceFact] = []
    for rule in dict.fromkeys(r for r in rules if r):
        shown += facts_about(engine.index, rule, first_id=20 + len(shown), view="rules", today=DAY)
    return shown


@pytest.mark.parametrize(("prompt", "lang", "facts", "texts"), [
    ("Nord Foods imports from Ruritania a consignment declared at EUR 250,000.", "en",
     ["Ruritania is a country under outbreak alert", "Nord Foods imports from Ruritania",
      "The declared value is EUR 250,000"],
     ["FI-7: Consignments from a country under outbreak alert need laboratory testing",
      "FI-9: Imported consignments declared above EUR 100,000 need document review"]),
    ("诺德食品从鲁里塔尼亚进口一批货物，申报价值25万欧元。", "zh",
     ["鲁里塔尼亚是疫情警报国家", "诺德食品从鲁里塔尼亚进口", "申报价值为EUR 250,000"],
     ["FI-7：来自疫情警报国家的货物需要实验室检测", "FI-9：申报价值超过10万欧元的进口货物需要单证审核"]),
])
def test_grounds_of_an_unseen_domain(imports_engine: DecisionEngine, prompt: str, lang: str,
                                     facts: list[str], texts: list[str]) -> None:
    decision = imports_engine.decide(prompt, evaluation_date=DAY)
    assert decision.status == "decided"
    evidence = _rule_evidence(imports_engine, decision)
    grounds = imports_engine.grounds(decision, evidence)
    said = [g.text(lang) for g in grounds]
    fact_sentences = [g for g in grounds if g.kind == "facts"]
    for fact in facts:
        assert any(fact in s for s in said), (fact, said)
    # The relation fired both rules: said once, first, citing both, with its span in the request;
    # the class fired FI-7 only, the declared value FI-9 only.
    relation = next(g for g in fact_sentences if facts[1] in g.text(lang))
    assert relation is fact_sentences[0] and relation.rule_ids == ("FI-7", "FI-9")
    (span,) = relation.spans
    assert facts[1].split()[-1] in prompt[span[0]:span[1]] or "鲁里塔尼亚" in prompt[span[0]:span[1]]
    alert = next(g for g in fact_sentences if facts[0] in g.text(lang))
    assert alert.rule_ids == ("FI-7",) and not alert.spans  # the ontology's fact, not the request's
    value = next(g for g in fact_sentences if facts[2] in g.text(lang))
    assert value.rule_ids == ("FI-9",) and value.spans
    # The rule texts are quoted in the request's language, each cited with its evidence id.
    by_id = {f.id: f for f in evidence}
    for text in texts:
        ground = next(g for g in grounds if text in g.text(lang))
        assert ground.kind == "rule_text" and ground.evidence_ids
        assert all(by_id[i].subject.endswith(ground.rule_ids[0]) for i in ground.evidence_ids)
        assert f"[{ground.evidence_ids[0]}]" in ground.text(lang)
    # A fact of every rule before the rule texts; every sentence complete.
    first_text = [g.kind for g in grounds].index("rule_text")
    assert {r for g in grounds[:first_text] for r in g.rule_ids} == {"FI-7", "FI-9"}
    assert all(s.endswith("." if lang == "en" else "。") for s in said)
    # The leads come first: the relation (FI-7's only fact from the request), the value FI-9 reads.
    assert [g.lead for g in grounds[:3]] == [True, True, False]
    assert grounds[:2] == (relation, value)


@pytest.mark.parametrize(("prompt", "lang", "leads", "join"), [
    ("The Aurora docks at Port Belmar with cargo worth EUR 80,000. The Aurora is listed in the watch register.",
     "en", ["The cargo value is EUR 80,000 (HB-2).", "Aurora is listed in the watch register (HB-1)."],
     "Aurora docks at Port Belmar (HB-2, HB-1)."),
    ("曙光号停靠贝尔马港，所载货物价值8万欧元。曙光号列入监视名册。",
     "zh", ["货物价值为EUR 80,000（HB-2）。", "曙光号列入监视名册（HB-1）。"], "曙光号停靠贝尔马港（HB-2、HB-1）。"),
])
def test_each_rule_leads_with_the_fact_that_fired_it(harbour_engine: DecisionEngine, prompt: str, lang: str,
                                                     leads: list[str], join: str) -> None:
    decision = harbour_engine.decide(prompt, evaluation_date=DAY)
    assert decision.status == "decided" and decision.rule_ids() == ("HB-2", "HB-1")
    grounds = harbour_engine.grounds(decision)
    # One lead per rule, first: the value HB-2 compares, and the register HB-1's condition names -
    # not the vessel docking at the port (a join both rules share, said first in the request).
    assert [g.text(lang) for g in grounds if g.lead] == leads
    assert [g.lead for g in grounds[:3]] == [True, True, False]
    for rule, lead in zip(decision.rule_ids(), grounds, strict=False):
        fired = {f.triple: f for c in decision.conclusions if c.rule_id == rule
                 for f in c.case_facts if f.origin != "mention"}
        (fact,) = lead.facts
        assert fact in fired and lead.spans == ((fired[fact].start, fired[fact].end),)
        assert prompt[fired[fact].start:fired[fact].end] == fired[fact].text
        # Its brief says the same without the citations (what a tight budget states).
        assert lead.brief(lang) == lead.text(lang).replace(f" ({rule})", "").replace(f"（{rule}）", "")
    # The join fired both rules: said once, after the leads, citing both.
    assert [g.text(lang) for g in grounds if g.kind == "facts" and not g.lead] == [join]


def test_one_rule_is_not_cited_again_after_the_decision(harbour_engine: DecisionEngine) -> None:
    decision = harbour_engine.decide("The Aurora docks at Port Belmar. The Aurora is listed in the watch register.",
                                     evaluation_date=DAY)
    assert decision.rule_ids() == ("HB-1",) and decision.status == "undetermined"
    (lead, *rest) = harbour_engine.grounds(decision)
    assert lead.text_en == lead.brief_en == "Aurora is listed in the watch register."
    assert lead.text_zh == "曙光号列入监视名册。"  # an English name only in English
    assert [g.kind for g in rest] == ["missing", "facts"] and not any(g.lead for g in rest)


def test_facts_that_fired_two_rules_are_said_once(aml_engine: DecisionEngine) -> None:
    decision = aml_engine.decide(
        "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list.", evaluation_date=DAY)
    assert set(decision.rule_ids()) == {"AML-R-017", "AML-R-024"}
    grounds = [g for g in aml_engine.grounds(decision) if g.kind == "facts"]
    shared = [g for g in grounds if set(g.rule_ids) == {"AML-R-017", "AML-R-024"}]
    assert shared and "Jon Doe" in shared[0].text_en
    stated = [t for g in grounds for t in g.facts]
    assert len(stated) == len(set(stated))
    assert any("EUR 2,000,000" in g.text_en and g.rule_ids == ("AML-R-024",) for g in grounds)
    # The leads: the amount AML-R-024 compares, and the PEP list both rules name (not the transfer).
    assert [g.brief_en for g in grounds if g.lead] == ["The amount is EUR 2,000,000.", "Jon Doe is listed on the PEP list."]


def test_what_a_missing_input_would_decide(imports_engine: DecisionEngine) -> None:
    decision = imports_engine.decide("Nord Foods imports from Freedonia a consignment.", evaluation_date=DAY)
    assert decision.status == "undetermined"
    (missing,) = decision.missing
    (outcome,) = missing.outcomes
    assert outcome.rule_id == "FI-9" and outcome.condition_en == "the declared value is above 100,000"
    assert outcome.statement_en == "If the declared value is above 100,000, FI-9 applies."
    assert outcome.statement_zh == "若申报价值高于100,000，则适用FI-9。"
    assert outcome.actions == ("https://example.org/food-imports#chk-docs",)
    grounds = imports_engine.grounds(decision, _rule_evidence(imports_engine, decision))
    assert [g.kind for g in grounds][:1] == ["missing"]


@pytest.mark.parametrize(("prompt", "kinds"), [
    ("Nord Foods imports from Ruritania a consignment declared at EUR 250,000.", {"facts", "rule_text"}),
    ("Nord Foods imports from Freedonia a consignment.", {"missing"}),
])
def test_grounds_drafted_once_are_cited_as_drafted_anew(imports_engine: DecisionEngine, prompt: str,
                                                        kinds: set[str]) -> None:
    # The pipeline drafts a decision's grounds once and cites them twice (no evidence, then the
    # evidence the answer shows): every citation is the grounds realised from scratch with it.
    decision = imports_engine.decide(prompt, evaluation_date=DAY)
    evidence = _rule_evidence(imports_engine, decision)
    draft = imports_engine.draft_grounds(decision)
    for shown in ((), evidence, evidence[:1]):
        cited = imports_engine.grounds(decision, shown, draft=draft)
        assert cited == imports_engine.grounds(decision, shown)
    assert kinds <= {g.kind for g in imports_engine.grounds(decision, evidence, draft=draft)}
    assert any(g.evidence_ids for g in imports_engine.grounds(decision, evidence, draft=draft))
