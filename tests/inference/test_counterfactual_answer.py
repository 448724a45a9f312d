"""Every fact-stating step of a steered domain answer carries its counterfactual contrast.

Real model, the food-imports test domain (tests/data/imports.ttl, a domain no
code mentions, ingested here), the service's own budget and options: the
checks are on (the 5% FLOPs share caps them), the variants come from the
ontology (the rules' thresholds, the siblings of the case's individuals), and
each step of the answer that states a fact -- the decision and grounds the
steering writes included -- has a contrast, within the share.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inference.decoder.pruning import step_states_fact
from inference.loader import LoadedModel
from inference.pipeline import Reasoner, ReasonOptions
from reasoning.evidence.ingest import ingest_ontology

IMPORTS_TTL = Path(__file__).resolve().parents[1] / "data" / "imports.ttl"
REQUEST = "Nord Foods imports from Ruritania a consignment declared at EUR 150,000. Which checks are needed?"


@pytest.mark.model
def test_each_fact_stating_step_of_the_answer_has_a_contrast(loaded_model: LoadedModel) -> None:
    index = ingest_ontology(IMPORTS_TTL.read_bytes(), "text/turtle").index.with_version("imports-cf")
    reasoner = Reasoner(model=loaded_model)
    plan = reasoner.plan(
        REQUEST,
        options=ReasonOptions(max_new_tokens=48, num_beams=1, evidence_token_budget=96),
        domain_index=index,
    )
    assert plan.budget.counterfactual_checks and plan.basis is not None
    assert ">100000" in {t.op + t.value for t in plan.basis.thresholds}
    assert plan.entities["Ruritania"] == plan.entities["Freedonia"]  # siblings of one class
    result = reasoner.run(plan)
    decoded = result.decode
    assert decoded is not None
    labels = sorted(
        {*plan.entities, *(x for b in plan.branches for f in b.facts for x in (f.subject, f.object))},
        key=len,
        reverse=True,
    )
    labels = [label for label in labels if len(label) >= 3 and not label.startswith(("http", "urn:"))]
    facts = [s for s in result.answer_steps if step_states_fact(s.text, s.violation, labels)]
    assert facts, result.answer
    assert all(s.contrast is not None and s.contrast_variant for s in facts), [
        (s.kind, s.text, s.contrast) for s in result.answer_steps
    ]
    assert decoded.pruning.counterfactual_scored >= len({s.text.strip() for s in facts})
    assert decoded.counterfactual_flops_share <= 0.05
