"""The claim check against the decision in the pruning judge, steered and plain.

The real model is driven (``Push``, a test double of the steering protocol
only) to write the opposite of what the bundled AML domain's rules conclude
for a PEP case ("... should not be escalated"); the claim check is the real
one (``inference.decisions.claim_guard`` over a real ``DecisionEngine``), the
judge, the search and the repair are the real ones.

- Pruning on: the contradicting step is pruned and repaired, never answered.
- Pruning off (the ``steering: false`` mode): nothing is pruned, but the step
  carries its violation, its confidence is capped with a hint naming the
  denied conclusion, and its branch ranks below a branch that kept the rules.
- Pruning off, within one branch: its best hypothesis that keeps the
  decision answers for it, ahead of a higher-scored one that contradicts it.
- A name neither the evidence nor the request holds is pruned (pruning on),
  or kept flagged with its confidence capped and a hint naming it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
import torch

from inference.decisions import claim_guard, support_basis
from inference.decoder.decode import DecodeResult, decode
from inference.decoder.options import DecodeOptions
from inference.decoder.pruning import ClaimGuard, SupportBasis
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.confidence import CONTRADICTION_CAP, UNSUPPORTED_CAP
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.model import Decision
from tests.inference.decoder.steering_doubles import Push

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
DENIAL = "This transfer should not be escalated."
AFFIRMATION = "This transfer must be escalated to the MLRO."
_DENIED = re.compile(r"\bnot\s+be\s+escalat", re.IGNORECASE)


@pytest.fixture(scope="module")
def domain() -> tuple[OntologyIndex, Decision]:
    data = dict(bundled_domains())["aml"].read_bytes()
    index = ingest_ontology(data, "text/turtle").index.with_version("aml-claims-test")
    decision = DecisionEngine(index).decide(CASE)
    assert decision.status == "decided"
    assert any("escalat" in c.action_label_en for c in decision.conclusions)
    return index, decision


@pytest.fixture(scope="module")
def guard(domain: tuple[OntologyIndex, Decision]) -> ClaimGuard:
    return claim_guard(domain[1], domain[0])


@pytest.fixture(scope="module")
def basis(domain: tuple[OntologyIndex, Decision]) -> SupportBasis:
    """What a decided answer may rest on beside its evidence, as the pipeline passes it."""
    return support_basis(domain[1], domain[0], "en")


def _view(view: str, relevance: float) -> EvidenceSubgraph:
    fact = EvidenceFact(
        id="E1" if view == "fund_flow" else "E2",
        subject="Acme Ltd",
        predicate="sent",
        object="Jon Doe",
        text="Acme Ltd sent EUR 2,000,000 to Jon Doe.",
        view=view,
        score=1.0,
        hops=1,
        ontology_version="v1",
    )
    return EvidenceSubgraph(view=view, relevance=relevance, seeds=(), facts=(fact,))


def _decode(lm: LoadedModel, targets: list[str], guard: ClaimGuard, *, prune: bool,
            basis: SupportBasis | None = None) -> DecodeResult:
    tok = lm.tokenizer
    views = [_view("fund_flow", 1.0), _view("parties", 0.5)][: len(targets)]
    ids = [list(tok(t, add_special_tokens=False)["input_ids"]) for t in targets]
    return decode(
        lm.model,
        tok,
        plan_prompt(tok, CASE, [], views),
        steering=[Push(t) for t in ids],  # type: ignore[misc]
        options=DecodeOptions(width=1, max_new_tokens=max(len(t) for t in ids) + 6, prune=prune),
        request_text=CASE,
        claims=guard,
        basis=basis,
    )


def test_a_step_that_denies_the_conclusion_is_pruned_and_repaired(
    loaded_model: LoadedModel, guard: ClaimGuard
) -> None:
    result = _decode(loaded_model, [DENIAL], guard, prune=True)
    assert result.pruning.claims_contradicted >= 1
    assert result.pruning.claims_checked >= result.pruning.claims_contradicted
    assert result.pruning.pruned.get("semantic", 0) >= 1
    assert result.pruning.repairs >= 1
    assert not _DENIED.search(result.answer), result.answer
    assert not any("contradicts the decision" in v for v in result.violations)


def test_unpruned_a_denial_is_flagged_lowered_and_ranked_below(
    loaded_model: LoadedModel, guard: ClaimGuard, basis: SupportBasis
) -> None:
    # The denying branch has the higher relevance; only the claim check can rank it below.
    result = _decode(loaded_model, [DENIAL, AFFIRMATION], guard, prune=False, basis=basis)
    assert result.pruning.pruned == {} and result.pruning.repairs == 0
    assert result.pruning.claims_contradicted >= 1
    denying, affirming = result.branches
    assert _DENIED.search(denying.text), denying.text
    flagged = [
        s for s in denying.steps if s.violation and "contradicts the decision" in s.violation
    ]
    assert flagged, denying.steps
    assert "escalation" in (flagged[0].violation or "")
    assert flagged[0].confidence <= CONTRADICTION_CAP
    assert "contradicts the domain's rules" in (flagged[0].calibration_hint or "")
    assert any("contradicts the decision" in v for v in denying.violations)
    assert affirming.text.startswith(AFFIRMATION), affirming.text
    restating = affirming.steps[0]
    assert restating.confidence > CONTRADICTION_CAP
    assert "contradicts" not in (restating.calibration_hint or "")
    assert "no evidence supports" not in (restating.calibration_hint or "")
    assert not any("contradicts the decision" in v for v in affirming.violations)
    assert result.answer == affirming.text
    assert result.branches[result.answer_branch].view == "parties"


def test_a_name_no_evidence_holds_is_pruned_or_flagged_and_named(
    loaded_model: LoadedModel, guard: ClaimGuard
) -> None:
    invented = "The International Chamber of Commerce agrees with this."
    pruned = _decode(loaded_model, [invented], guard, prune=True)
    assert "International Chamber" not in pruned.answer, pruned.answer
    assert pruned.pruning.pruned.get("evidence", 0) >= 1
    kept = _decode(loaded_model, [invented], guard, prune=False)
    assert kept.answer.startswith(invented), kept.answer
    step = kept.steps[0]
    assert step.kind == "flagged" and step.confidence <= UNSUPPORTED_CAP, step
    assert "International Chamber of Commerce" in (step.calibration_hint or ""), step
    # The same words with a name the evidence holds are not lowered for it.
    shown = _decode(loaded_model, ["Acme Ltd sent EUR 2,000,000 to Jon Doe."], guard, prune=True)
    assert "no evidence supports" not in (shown.steps[0].calibration_hint or "")
    assert shown.steps[0].kind == "supported" and "E1" in shown.steps[0].support, shown.steps[0]


@dataclass(frozen=True)
class _On:
    """Which of the fork's texts a beam follows (-1: none yet, -2: it left them) and how far."""

    path: int
    index: int

    @property
    def finished(self) -> bool:
        return False


class _Fork:
    """A steering double: the first token of each target gets its own bonus (the model
    chooses it), then a beam is held to the target it started, and to the end after it
    (so the beams of one branch write exactly these texts, ranked by their first bonus)."""

    def __init__(self, targets: list[list[int]], first: list[float], eos: int) -> None:
        self.targets, self.first, self.eos = targets, first, eos

    def initial_state(self) -> _On:
        return _On(-1, 0)

    def apply(self, states: list[_On], logprobs: torch.Tensor) -> torch.Tensor:
        out = logprobs.clone()
        for row, state in enumerate(states):
            if state.path == -1:
                for target, bonus in zip(self.targets, self.first):
                    out[row, target[0]] = logprobs[row, target[0]] + bonus
            elif state.path >= 0:  # only the target's next token, then the end
                target = self.targets[state.path]
                token = target[state.index] if state.index < len(target) else self.eos
                out[row] = float("-inf")
                out[row, token] = logprobs[row, token]
        return out

    def advance(self, state: _On, token_id: int) -> _On:
        if state.path == -1:
            return next(
                (_On(k, 1) for k, t in enumerate(self.targets) if t[0] == token_id), _On(-2, 0)
            )
        target = self.targets[state.path] if state.path >= 0 else []
        if state.index < len(target) and target[state.index] == token_id:
            return _On(state.path, state.index + 1)
        return _On(-2, 0)


def test_unpruned_a_branch_answers_with_its_best_hypothesis_that_keeps_the_decision(
    loaded_model: LoadedModel, guard: ClaimGuard
) -> None:
    tok = loaded_model.tokenizer
    # The denial's first token has the larger bonus: it is the search's first choice.
    denial = "This transfer should not be escalated to the MLRO, whatever the rules say."
    affirmation = "That transfer must be escalated."
    targets = [list(tok(t, add_special_tokens=False)["input_ids"]) for t in (denial, affirmation)]
    assert targets[0][0] != targets[1][0]
    options = DecodeOptions(width=2, max_new_tokens=max(len(t) for t in targets) + 4, prune=False)
    plan = plan_prompt(tok, CASE, [], [_view("fund_flow", 1.0)])

    def run(claims: ClaimGuard | None) -> DecodeResult:
        return decode(
            loaded_model.model,
            tok,
            plan,
            steering=_Fork(targets, [200.0, 10.0], int(tok.eos_token_id)),  # type: ignore[arg-type]
            options=options,
            request_text=CASE,
            claims=claims,
        )

    # Without the claim check the search's own order answers: the denial, pushed harder.
    unchecked = run(None)
    assert _DENIED.search(unchecked.answer), unchecked.answer
    checked = run(guard)
    assert checked.pruning.claims_contradicted >= 1 and checked.pruning.pruned == {}
    assert checked.answer.startswith(affirmation), checked.answer
    assert not checked.violations
