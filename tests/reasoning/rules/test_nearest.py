"""Why nothing applies: the nearest rule, found symbolically, and what kept it from firing.

The food-imports domain (tests/data/imports.ttl) is one no code mentions; its
rules miss the test cases in several ways (a threshold, a floor, a superseded
rule, the kind of the case, a class of a party, a relation), so the ranking
of ``reasoning.rules.nearest`` is tested on each kind of condition.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import EvidenceFact
from reasoning.evidence.subgraph import facts_about
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.model import Decision

IMPORTS_TTL = Path(__file__).resolve().parents[2] / "data" / "imports.ttl"
DAY = date(2026, 12, 1)


@pytest.fixture(scope="module")
def imports_engine() -> DecisionEngine:
    return DecisionEngine(ingest_ontology(IMPORTS_TTL.read_bytes(), "text/turtle").index.with_version("imports-v2"))


def _engine(domain: str) -> DecisionEngine:
    data = dict(bundled_domains())[domain].read_bytes()
    return DecisionEngine(ingest_ontology(data, "text/turtle").index.with_version(f"{domain}-nearest"))


def _nearest_evidence(engine: DecisionEngine, decision: Decision) -> tuple[EvidenceFact, ...]:
    assert decision.nearest is not None and decision.nearest.rule_iri is not None
    return facts_about(engine.index, decision.nearest.rule_iri, first_id=20, view="rules", today=DAY)


@pytest.mark.parametrize(("prompt", "rule", "kinds", "en", "zh"), [
    # A threshold: one comparison on a stated input fails; the superseded FI-2 (its exception
    # holds), FI-7 (a class of a party) and FI-5 (the kind of the case) each fail one condition too.
    ("Nord Foods imports from Freedonia a consignment declared at EUR 50,000.", "FI-9", ["comparison"],
     "FI-9 applies only when the declared value is above EUR 100,000; here the declared value is EUR 50,000.",
     "FI-9仅在申报价值高于EUR 100,000时适用；本案申报价值为EUR 50,000。"),
    # Two near misses: the floor FI-4 is nearer to EUR 5,000 (0.8 of the value) than FI-9's limit (0.95).
    ("Nord Foods imports from Freedonia a consignment declared at EUR 5,000.", "FI-4", ["comparison"],
     "FI-4 applies only when the declared value is below EUR 1,000; here the declared value is EUR 5,000.",
     "FI-4仅在申报价值低于EUR 1,000时适用；本案申报价值为EUR 5,000。"),
    # A relation: the case names both parties but not that one imports from the other; FI-7 meets
    # more of its conditions than FI-8 (a class of a party), FI-5 is about another kind of case.
    ("Nord Foods and Ruritania: a consignment declared at EUR 50,000.", "FI-7", ["pattern"],
     ("FI-7 applies only when someone named in the case imports from another one named in the case, "
      "which the case does not state."),
     "FI-7仅在案中一方从案中另一方进口时适用，本案未述及。"),
    # A class of a party, before FI-5's class of the case itself.
    ("Nord Foods: a consignment.", "FI-8", ["pattern"],
     "FI-8 applies only when someone named in the case is a watched importer, which the case does not state.",
     "FI-8仅在案中一方是重点监管进口商时适用，本案未述及。"),
])
def test_the_nearest_rule_of_an_unseen_domain(imports_engine: DecisionEngine, prompt: str, rule: str,
                                              kinds: list[str], en: str, zh: str) -> None:
    decision = imports_engine.decide(prompt, evaluation_date=DAY)
    assert decision.status == "no_rule_applies" and decision.nearest is not None
    nearest = decision.nearest
    assert nearest.rule_id == rule
    assert [f.kind for f in nearest.failing] == kinds
    assert (nearest.statement_en, nearest.statement_zh) == (en, zh)
    assert (nearest.brief_en, nearest.brief_zh) == (f"The nearest rule is {rule}.", f"最接近的规则是{rule}。")
    assert nearest.actions  # what the rule would have concluded
    # Stated as a ground in both languages, cited with a fact the evidence shows about the rule.
    grounds = [g for g in imports_engine.grounds(decision, _nearest_evidence(imports_engine, decision))
               if g.kind == "nearest"]
    assert grounds and grounds[0].evidence_ids and grounds[0].rule_ids == (rule,)
    assert grounds[0].text_en.startswith(en[:-1]) and grounds[0].text_zh.startswith(zh[:-1])


def test_a_decided_case_has_no_nearest_rule(imports_engine: DecisionEngine) -> None:
    decision = imports_engine.decide("Nord Foods imports from Ruritania a consignment declared at EUR 50,000.",
                                     evaluation_date=DAY)
    assert decision.status == "decided" and decision.nearest is None


def test_the_nearest_rule_on_a_class_condition() -> None:
    decision = _engine("aml").decide("Acme Ltd sent funds to Maria Ioannou.", evaluation_date=DAY)
    assert decision.status == "no_rule_applies" and decision.nearest is not None
    assert decision.nearest.rule_id == "AML-R-017"
    (failing,) = decision.nearest.failing
    assert failing.kind == "pattern"
    assert "is a politically exposed person" in failing.required_en
    assert "是政治公众人物" in failing.required_zh


def test_a_rule_excluded_by_its_own_exception_is_not_the_nearest() -> None:
    """A 2,000,000 cross-border transfer after AML-R-024 superseded AML-R-003: AML-R-003 fails only
    on its exception (it is superseded), AML-R-024 on a fact the case does not state."""
    decision = _engine("aml").decide("Orion Freight Ltd (United Kingdom) sent EUR 2,000,000 to Maria Ioannou.",
                                     evaluation_date=DAY)
    assert decision.status == "no_rule_applies" and decision.nearest is not None
    assert decision.nearest.rule_id == "AML-R-024"
    (failing,) = decision.nearest.failing
    # An alternative of a union is said by its class: "registered in a high-risk jurisdiction".
    assert "high-risk jurisdiction" in failing.required_en and "高风险司法管辖区" in failing.required_zh


def test_an_alternative_said_whole_stands_for_a_join() -> None:
    """AML-R-003 (in force in 2022) needs a cross-border transfer: parties in two jurisdictions, or
    a transfer of that class; the first alternative's first pattern alone (the parties sent funds,
    which the case states) would say nothing of what fails."""
    decision = _engine("aml").decide("On 2022-05-03, Acme Ltd (Cyprus) paid EUR 2,000,000 to Maria Ioannou.",
                                     evaluation_date=DAY)
    assert decision.nearest is not None and decision.nearest.rule_id == "AML-R-003"
    assert decision.nearest.statement_en == (
        "AML-R-003 applies only when this case is a cross-border transfer, which the case does not state.")


def test_a_missing_input_is_said_by_its_comparison() -> None:
    """No size and an examination before the 2017 guideline: the input's triple and its comparison
    are one condition (dropping the triple alone leaves the comparison unable to hold), said as the
    rule's requirement the case does not state."""
    decision = _engine("clinical").decide(
        "CT on 2010-06-01 shows a part-solid nodule in the right lower lobe.", evaluation_date=DAY)
    assert decision.status == "no_rule_applies" and decision.nearest is not None
    nearest = decision.nearest
    assert [f.kind for f in nearest.failing] == ["comparison", "comparison"]
    said = {f.required_en: f.actual_en for f in nearest.failing}
    assert said == {"the examination date is on or after 2017-02-23": "the examination date is 2010-06-01",
                    "the nodule size is at least 6 mm": ""}
    assert nearest.statement_en.endswith("; here the examination date is 2010-06-01; "
                                         "the case does not state the rest.")
    assert nearest.statement_zh.endswith("；本案检查日期为2010-06-01，其余本案未述及。")
