"""Pruning rules firing on constructed steps, repair of the last beam, confidence hints.

A step is constructed by a small ``Steering`` (a test double of the protocol
only): it adds a large bonus to the next token of a target text, so the real
model writes that text, and stops pushing once the beam leaves the text. The
judge, the search, the repair and the verifiers are the real ones.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from inference.decoder.beam import SearchStats
from inference.decoder.decode import DecodeResult, decode
from inference.decoder.options import DecodeOptions
from inference.decoder.pruning import PruningJudge, domain_mentions
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.verifiers import verify
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph
from tests.inference.decoder.steering_doubles import At, Push

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]


class _ForceFirst(Push):
    """Forces the first token of ``target`` (a layout literal), then pushes like ``Push``."""

    def apply(self, states: list[At], logprobs: torch.Tensor) -> torch.Tensor:
        out = super().apply(states, logprobs)
        for row, state in enumerate(states):
            if state.index == 0:
                out[row] = float("-inf")
                out[row, self.target[0]] = 0.0
        return out


def _fact(fid: str, text: str, stale: str | None = None) -> EvidenceFact:
    return EvidenceFact(
        id=fid,
        subject="Acme Ltd",
        predicate="sent",
        object="Jon Doe",
        text=text,
        view="fund_flow",
        score=1.0,
        hops=1,
        ontology_version="v1",
        modified="2024-05-11",
        stale_hint=stale,
    )


EVIDENCE = [
    EvidenceSubgraph(
        view="fund_flow",
        relevance=1.0,
        seeds=(),
        facts=(
            _fact(
                "E1",
                "Acme Ltd sent EUR 2,000,000 to Jon Doe.",
                stale="PEP list last updated 2024-05-11",
            ),
        ),
    )
]
LEXICON = {"Malta": "Country", "Cyprus": "Country", "Acme Ltd": "Company"}
REQUEST = "Where did Acme Ltd send the money?"


def _run(
    lm: LoadedModel,
    forced: str,
    *,
    evidence: list[EvidenceSubgraph] | None = None,
    constraints: list[Constraint] | None = None,
    force: bool = False,
    **options: object,
) -> DecodeResult:
    tok = lm.tokenizer
    target = list(tok(forced, add_special_tokens=False)["input_ids"])
    plan = plan_prompt(tok, REQUEST, [], EVIDENCE if evidence is None else evidence)
    opts = DecodeOptions(**{"width": 1, "max_new_tokens": len(target) + 6, **options})  # type: ignore[arg-type]
    return decode(
        lm.model,
        tok,
        plan,
        steering=Push(target, force=force),
        options=opts,
        constraints=constraints or [],
        lexicon=LEXICON,
        request_text=REQUEST,
    )


def test_evidence_chain_prunes_an_unsupported_entity_and_repairs_the_last_beam(
    loaded_model: LoadedModel,
) -> None:
    result = _run(loaded_model, "Acme Ltd sent the money to Malta.")
    assert result.pruning.pruned.get("evidence", 0) >= 1
    assert result.pruning.repairs >= 1
    assert result.answer.strip()  # the only beam was repaired, not dropped
    assert not result.answer.startswith("Acme Ltd sent the money to Malta.")
    assert not result.violations


def test_failed_repair_is_reported_not_silent(loaded_model: LoadedModel) -> None:
    result = _run(loaded_model, "Acme Ltd sent the money to Malta.", max_repairs=0)
    assert result.answer.startswith("Acme Ltd sent the money to Malta.")
    assert result.pruning.unrepaired == 1
    assert (
        result.violations and "evidence" in result.violations[0] and "Malta" in result.violations[0]
    )
    assert result.steps[0].violation is not None
    # The violation names its step by the id ``steps`` and ``reasoning_path`` use.
    named = result.violations[0].split(": ", 1)[0]
    assert named == result.steps[0].id == "fund_flow.S1"
    assert named in result.reasoning_path
    assert result.violations[0] == f"{named}: {result.steps[0].violation}"


def test_semantic_rule_prunes_a_step_violating_two_constraints(loaded_model: LoadedModel) -> None:
    constraints = [
        Constraint(id="lower", kind=Kind.ALL_LOWERCASE),
        Constraint(id="nocomma", kind=Kind.NO_COMMA),
    ]
    result = _run(loaded_model, "Yes, It Went Far Away.", evidence=[], constraints=constraints)
    assert result.pruning.pruned.get("semantic", 0) >= 1
    assert result.pruning.repairs >= 1
    assert not result.answer.startswith("Yes, It Went Far Away.")


def test_one_violation_alone_does_not_prune(loaded_model: LoadedModel) -> None:
    constraints = [Constraint(id="nocomma", kind=Kind.NO_COMMA)]
    result = _run(loaded_model, "yes, it went far away.", evidence=[], constraints=constraints)
    assert result.pruning.pruned.get("semantic", 0) == 0
    assert result.answer.startswith("yes, it went far away.")


def test_entropy_rule_prunes_a_degenerate_step(loaded_model: LoadedModel) -> None:
    result = _run(loaded_model, "11111111111111111111111111.", evidence=[])
    assert result.pruning.pruned.get("entropy", 0) >= 1
    assert "1111111111111111" not in result.answer


def test_a_degenerate_run_without_boundary_is_caught_by_the_periodic_probe(
    loaded_model: LoadedModel,
) -> None:
    result = _run(loaded_model, "1234567890" * 4, evidence=[], max_new_tokens=40)
    assert result.pruning.pruned.get("entropy", 0) >= 1
    assert result.pruning.repairs >= 1
    assert "1234567890123456" not in result.answer


def test_text_the_steering_forces_is_never_pruned_or_cut(loaded_model: LoadedModel) -> None:
    """Every token forced (one allowed path, as a literal or a one-way grammar): the model chose
    none of it, so the entropy rule has nothing to judge and no repair could change it."""
    forced = "1234567890" * 4
    result = _run(loaded_model, forced, evidence=[], force=True, max_new_tokens=40)
    assert result.answer.startswith(forced[: len(result.answer)])
    assert len(result.answer) >= 30
    assert result.pruning.pruned.get("entropy", 0) == 0 and result.pruning.repairs == 0
    assert not any("entropy" in v for v in result.violations)


def test_a_repair_ban_never_empties_the_row(loaded_model: LoadedModel) -> None:
    """The step's first token is forced, the rest free: the repair bans the first free token,
    never the forced one, so the beam is re-decoded, not ended mid-text."""
    tok = loaded_model.tokenizer
    target = list(tok("11111111111111111111111111.", add_special_tokens=False)["input_ids"])
    plan = plan_prompt(tok, REQUEST, [], [])
    result = decode(
        loaded_model.model,
        tok,
        plan,
        steering=_ForceFirst(target),
        options=DecodeOptions(width=1, max_new_tokens=len(target) + 6),
        request_text=REQUEST,
    )
    assert result.pruning.pruned.get("entropy", 0) >= 1
    assert result.pruning.repairs >= 1
    assert result.answer.startswith(tok.decode(target[:1]))
    assert "1111111111111111" not in result.answer


def test_entropy_bound_on_the_measured_token_entropy(loaded_model: LoadedModel) -> None:
    tok = loaded_model.tokenizer
    judge = PruningJudge(
        tokenizer=tok,
        runner=ModelRunner(loaded_model.model),
        constraints=[],
        branches=[],
        options=DecodeOptions(),
        stats=SearchStats(),
        verify=verify,
    )
    tokens = list(tok("The rule applies here.", add_special_tokens=False)["input_ids"])
    flat = judge.judge(0, tokens, 0, len(tokens), [0.9] * len(tokens), final=False)
    sharp = judge.judge(0, tokens, 0, len(tokens), [0.2] * len(tokens), final=False)
    assert (flat.keep, flat.rule) == (False, "entropy") and sharp.keep
    assert judge.judge(0, tokens, 0, len(tokens), [0.9] * len(tokens), final=True).keep
    measured = dataclasses.replace(judge, options=DecodeOptions(prune=False))
    reported = measured.judge(0, tokens, 0, len(tokens), [0.9] * len(tokens), final=False)
    assert (reported.keep, reported.rule) == (True, "entropy")  # reported, never pruned
    strict = dataclasses.replace(judge, options=DecodeOptions(entropy_bound=0.1))
    assert strict.judge(0, tokens, 0, len(tokens), [0.2] * len(tokens), final=False).rule == "entropy"


def test_stale_evidence_lowers_confidence_with_its_hint(loaded_model: LoadedModel) -> None:
    result = _run(loaded_model, "Acme Ltd sent EUR 2,000,000 to Jon Doe [E1].")
    step = result.steps[0]
    assert "E1" in step.evidence_cited
    assert (
        step.calibration_hint is not None
        and "evidence E1: PEP list last updated 2024-05-11" in step.calibration_hint
    )
    fresh = [
        EvidenceSubgraph(
            view="fund_flow",
            relevance=1.0,
            seeds=(),
            facts=(_fact("E1", "Acme Ltd sent EUR 2,000,000 to Jon Doe."),),
        )
    ]
    unstale = _run(loaded_model, "Acme Ltd sent EUR 2,000,000 to Jon Doe [E1].", evidence=fresh)
    assert unstale.steps[0].text == step.text
    assert step.confidence < unstale.steps[0].confidence


def test_counterfactual_contrast_is_scored_and_its_flops_counted(loaded_model: LoadedModel) -> None:
    result = _run(
        loaded_model,
        "Acme Ltd sent EUR 2,000,000 to Jon Doe.",
        counterfactual_checks=True,
        counterfactual_flops_share=10.0,
    )
    assert result.pruning.counterfactual_scored >= 1
    step = result.steps[0]
    assert step.contrast is not None and step.contrast_variant is not None
    assert result.flops["counterfactual"] > 0
    assert result.counterfactual_flops_share == pytest.approx(
        result.flops["counterfactual"] / (result.flops["prefill"] + result.flops["decode"])
    )


def test_counterfactual_rationing_keeps_the_share_bounded(loaded_model: LoadedModel) -> None:
    result = _run(
        loaded_model,
        "Acme Ltd sent EUR 2,000,000 to Jon Doe.",
        counterfactual_checks=True,
        counterfactual_flops_share=0.05,
    )
    assert result.counterfactual_flops_share <= 0.05
    assert result.pruning.counterfactual_scored + result.pruning.counterfactual_skipped >= 1


def test_domain_mentions_skip_list_markers_and_normalise_numbers() -> None:
    assert domain_mentions("1. Acme Ltd sent EUR 2,000,000 on 2024-05-11.", ["Acme Ltd"]) == (
        "Acme Ltd",
        "2,000,000",
        "2024-05-11",
    )


def test_dates_shown_with_the_evidence_count_as_support(loaded_model: LoadedModel) -> None:
    result = _run(loaded_model, "Acme Ltd sent EUR 2,000,000 to Jon Doe (2024-05-11).")
    assert result.pruning.pruned.get("evidence", 0) == 0
    assert result.answer.startswith("Acme Ltd sent EUR 2,000,000 to Jon Doe (2024-05-11).")
    wrong = _run(loaded_model, "Acme Ltd sent EUR 2,000,000 to Jon Doe (2024-05-12).")
    assert wrong.pruning.pruned.get("evidence", 0) >= 1


def test_a_sentence_restating_a_piece_of_an_identifier_is_not_earned(
    loaded_model: LoadedModel,
) -> None:
    # "TRF" is only a piece of the code "TRF-2026-0042": no word the evidence holds. The
    # sentence's other content word the evidence holds ("transfer") is no claim to audit.
    transfer = [
        EvidenceSubgraph(
            view="fund_flow",
            relevance=1.0,
            seeds=(),
            facts=(
                _fact("E1", "transfer TRF-2026-0042 originator Acme Ltd."),
                _fact("E2", "transfer TRF-2026-0042 is a cross-border transfer."),
            ),
        )
    ]
    echo = _run(
        loaded_model, "The evidence is a transfer of TRF.", evidence=transfer, max_repairs=0
    )
    assert echo.pruning.pruned.get("evidence", 0) >= 1
    assert echo.violations and "'trf'" in echo.violations[0]
    # The whole code, in a sentence the evidence holds, is earned.
    whole = _run(
        loaded_model,
        "The transfer TRF-2026-0042 is a cross-border transfer.",
        evidence=transfer,
        max_repairs=0,
    )
    assert whole.pruning.pruned.get("evidence", 0) == 0
    assert whole.answer.startswith("The transfer TRF-2026-0042 is a cross-border transfer.")
