"""The decision's claim check as the pruning judge reads it (``inference.decisions.claim_guard``).

Real rules of the bundled AML and clinical domains, real case graphs; and the
confidence each reading gives a step (``reasoning.confidence``).
"""

from __future__ import annotations

import pytest

from inference.decisions import claim_guard
from inference.decoder.pruning import ClaimGuard, ClaimReading
from reasoning.confidence import CONTRADICTION_CAP, ConfidenceInputs, step_confidence
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology
from reasoning.rules.decide import DecisionEngine

PEP_CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
NO_SIZE = "A pure ground-glass nodule in the right lower lobe. What follow-up is needed?"


def _guard(domain: str, text: str, status: str) -> ClaimGuard:
    data = dict(bundled_domains())[domain].read_bytes()
    index = ingest_ontology(data, "text/turtle").index.with_version(f"{domain}-guard-test")
    decision = DecisionEngine(index).decide(text)
    assert decision.status == status
    return claim_guard(decision, index)


@pytest.fixture(scope="module")
def aml() -> ClaimGuard:
    return _guard("aml", PEP_CASE, "decided")


@pytest.fixture(scope="module")
def clinical() -> ClaimGuard:
    return _guard("clinical", NO_SIZE, "undetermined")


@pytest.mark.parametrize(
    "sentence",
    ["This transfer must be escalated to the MLRO.", "Enhanced due diligence is required."],
)
def test_a_claim_that_states_a_conclusion_restates_it(aml: ClaimGuard, sentence: str) -> None:
    reading = aml(sentence)
    assert reading.restates and reading.contradiction is None and reading.undecided is None


@pytest.mark.parametrize(
    ("sentence", "named"),
    [
        ("This transfer should not be escalated.", "escalation"),
        ("The payment goes ahead.", "release"),
        ("这笔转账不需要上报。", "escalation"),
    ],
)
def test_a_contradicting_claim_says_why(aml: ClaimGuard, sentence: str, named: str) -> None:
    reading = aml(sentence)
    assert reading.contradiction is not None and named in reading.contradiction
    assert not reading.restates


def test_a_claim_without_an_action_is_neither(aml: ClaimGuard) -> None:
    assert aml("The bank should review the file.") == ClaimReading()


def test_an_action_the_rules_could_not_decide_names_what_is_missing(clinical: ClaimGuard) -> None:
    reading = clinical("A CT follow-up at 6 to 12 months is needed.")
    assert reading.contradiction is None and not reading.restates
    assert reading.undecided is not None and "nodule size" in reading.undecided
    assert clinical("The radiologist reviewed the scan.").undecided is None


def test_each_reading_moves_the_step_confidence_and_explains_it() -> None:
    plain = step_confidence(ConfidenceInputs(window_prob=0.7, support=0.5, unsupported=("MLRO",)))
    restated = step_confidence(ConfidenceInputs(window_prob=0.7, support=1.0))
    undecided = step_confidence(
        ConfidenceInputs(
            window_prob=0.7, undecided="the rules cannot decide X without the nodule size"
        )
    )
    denied = step_confidence(ConfidenceInputs(window_prob=0.7, contradiction="denies escalation"))
    assert restated.value > plain.value > undecided.value > denied.value
    assert denied.value <= CONTRADICTION_CAP
    assert plain.hint is not None and "'MLRO'" in plain.hint
    assert undecided.hint is not None and "nodule size" in undecided.hint
    assert restated.hint is None
