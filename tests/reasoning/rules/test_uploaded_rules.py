"""An uploaded domain the code never mentions (building permits) decides with its own rules."""

from __future__ import annotations

import pytest

from reasoning.rules.decide import DecisionEngine, decision_sentence

BP = "https://example.org/permits#"


@pytest.mark.parametrize(("text", "status", "steps", "rules"), [
    ("Riverside Hall will have 6 storeys. Which steps does the permit need?", "decided",
     {"step-heritage", "step-fire"}, {"BR-12", "BR-30"}),
    ("河畔大厅将建6层。需要哪些审批步骤？", "decided", {"step-heritage", "step-fire"}, {"BR-12", "BR-30"}),
    ("Pier Warehouse will have 3 storeys.", "no_rule_applies", set(), set()),
    ("Pier Warehouse will be extended.", "undetermined", set(), set()),
    ("Quill House, a listed building in the Docklands, will have 2 storeys.", "decided",
     {"step-heritage"}, {"BR-12"}),
])
def test_permit_decisions(permits_engine: DecisionEngine, text: str, status: str, steps: set[str],
                          rules: set[str]) -> None:
    decision = permits_engine.decide(text)
    assert decision.status == status
    assert {a.rsplit("#", 1)[1] for a in decision.actions()} == steps
    assert set(decision.rule_ids()) == rules
    if status == "undetermined":
        assert [m.input for m in decision.missing] == [BP + "storeys"]
        assert "storeys" in decision_sentence(decision)


def test_triple_rule_fires_on_a_class_phrase(permits_engine: DecisionEngine) -> None:
    decision = permits_engine.decide("Quill House, a listed building in the Docklands, has 2 storeys.")
    (conclusion,) = decision.conclusions
    assert conclusion.shacl_rule == BP + "rule-listed"
    assert any(f.object == f"<{BP}ListedBuilding>" for f in conclusion.case_facts)


def test_claim_check_uses_the_uploaded_labels(permits_engine: DecisionEngine) -> None:
    decision = permits_engine.decide("Riverside Hall will have 6 storeys.")
    assert permits_engine.check_claim("No fire safety plan is needed.", decision).kind == "negation"
    assert not permits_engine.check_claim("It needs a heritage review.", decision).contradicts
