"""Compact evidence in the plan: every fact the decision and its grounds cite stays in every
evidence branch, whatever the budget, and the statement and grounds are unchanged.

Real AML domain (ingested here), no decode.
"""

from __future__ import annotations

import pytest

from inference.loader import LoadedModel
from inference.pipeline import Plan, Reasoner, ReasonOptions
from reasoning.constraints.citations import evidence_ids
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.compact import fact_tokens
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology

pytestmark = pytest.mark.model  # the Reasoner holds the bundled model

QUESTION = (
    "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated? "
    "Cite the rules you rely on."
)


@pytest.fixture(scope="module")
def aml() -> OntologyIndex:
    path = dict(bundled_domains())["aml"]
    return ingest_ontology(path.read_bytes(), "text/turtle").index.with_version("aml-v1")


def _plan(model: LoadedModel, aml: OntologyIndex, budget: int | None) -> Plan:
    reasoner = Reasoner(model=model, evidence_compact_tokens=budget)
    return reasoner.plan(QUESTION, options=ReasonOptions(steering=True), domain_index=aml)


def test_the_cited_facts_stay_in_every_branch(loaded_model: LoadedModel, aml: OntologyIndex) -> None:
    full, tight = _plan(loaded_model, aml, None), _plan(loaded_model, aml, 0)
    assert full.statement is not None and tight.statement is not None and tight.decision is not None
    assert tight.statement.text == full.statement.text
    assert tight.statement.ground_texts == full.statement.ground_texts
    cited = set(evidence_ids(" ".join([tight.statement.text, *tight.statement.ground_texts])))
    cited |= {i for c in tight.decision.conclusions for i in c.evidence_ids}
    assert cited
    shown = [spec for spec in tight.branches if spec.facts]
    assert len(shown) >= 2
    for spec in shown:
        assert cited <= {f.id for f in spec.facts}, spec.view
    before = sum(fact_tokens(spec.facts) for spec in full.branches)
    after = sum(fact_tokens(spec.facts) for spec in tight.branches)
    assert after < before
    for small, big in zip(tight.branches, full.branches):  # only facts left out, in their order
        assert [f.id for f in small.facts] == [f.id for f in big.facts if f in small.facts]
