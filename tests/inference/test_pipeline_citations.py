"""The pipeline steers each evidence branch's citations with the facts its own prompt shows.

Real model, real AML domain (ingested here, a couple of seconds), short decodes.
"""

from __future__ import annotations

import pytest

from inference.loader import LoadedModel
from inference.pipeline import Reasoner, ReasonOptions
from reasoning.analysis import Status
from reasoning.constraints.citations import evidence_ids
from reasoning.constraints.model import Constraint, Kind, Scope
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology

QUESTION = (
    "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
)
OPTIONS = ReasonOptions(max_new_tokens=32, num_beams=1, evidence_token_budget=96, counterfactual=False)


@pytest.fixture(scope="module")
def aml() -> OntologyIndex:
    path = dict(bundled_domains())["aml"]
    return ingest_ontology(path.read_bytes(), "text/turtle").index.with_version("aml-v1")


def _cite(n: int) -> Constraint:
    return Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": n}, scope=Scope.CITATION)


@pytest.mark.model
def test_each_branch_cites_only_the_facts_its_prompt_shows(loaded_model: LoadedModel, aml: OntologyIndex) -> None:
    reasoner = Reasoner(model=loaded_model)
    plan = reasoner.plan(QUESTION, options=OPTIONS, domain_index=aml, extra_constraints=[_cite(2)])
    shown = [{f.id for f in spec.facts} for spec in plan.branches]
    assert len(shown) >= 2 and all(len(ids) >= 2 for ids in shown), shown
    assert len({frozenset(ids) for ids in shown}) == len(shown), "the branches show different facts"
    result = reasoner.run(plan)
    assert result.status == Status.OK, result.conflict
    for ids, branch in zip(shown, result.branches):
        cited = set(evidence_ids(branch.text))
        assert len(cited) >= 2 and cited <= ids, (branch.view, sorted(ids), branch.text)
        assert "steering: citations" not in branch.violations


@pytest.mark.model
def test_a_minimum_no_single_branch_shows_asks_for_confirmation(
    loaded_model: LoadedModel, aml: OntologyIndex
) -> None:
    """Together the branches show enough facts, but the answer is one branch's
    text: a minimum above every branch's facts is refused before decoding."""
    reasoner = Reasoner(model=loaded_model)
    probe = reasoner.plan(QUESTION, options=OPTIONS, domain_index=aml)
    most = max(len({f.id for f in spec.facts}) for spec in probe.branches)
    union = {f.id for spec in probe.branches for f in spec.facts}
    assert len(union) > most, "the test needs branches that show different facts"
    plan = reasoner.plan(QUESTION, options=OPTIONS, domain_index=aml, extra_constraints=[_cite(most + 1)])
    result = reasoner.run(plan)
    assert result.status == Status.NEEDS_CONFIRMATION and result.decode is None
    assert result.conflict is not None and f"no evidence branch shows more than {most}" in result.conflict
