"""The pipeline's branch layout: which branch sees which premise, and when a branch is reused."""

from __future__ import annotations

from typing import Any

import msgspec

from inference.decoder.decode import BranchResult, choose_answer
from inference.pipeline import (
    ASSUMPTIONS_VIEW,
    DIRECT_VIEW,
    BranchSpec,
    ReasonResult,
    assign_premises,
    premise_text,
)
from reasoning.analysis import Status
from reasoning.constraints.model import Premise
from reasoning.evidence.model import EvidenceSubgraph
from reasoning.steps import Step
from tests.inference.evidence_samples import fact


def _view(name: str, *texts: str) -> EvidenceSubgraph:
    return EvidenceSubgraph(
        view=name, relevance=0.5, seeds=(), facts=tuple(fact(f"E{i}", name, t) for i, t in enumerate(texts, 1))
    )


def _premise(pid: str, topic: str, text: str) -> Premise:
    return Premise(id=pid, text=text, topic=topic)


def test_premise_goes_to_the_views_whose_evidence_it_relates_to() -> None:
    views = [_view("compliance", "Jon Doe listed on PEP list."), _view("fund_flow", "Acme Ltd sent funds to Jon Doe.")]
    pep = _premise("p1", "customer PEP", "given that the customer is a PEP")
    tax = _premise("p2", "tax rate", "assume the tax rate is 20%")
    assignment = assign_premises([pep, tax], views)
    assert assignment["compliance"] == ("p1",)
    assert assignment["fund_flow"] == ()
    assert assignment[ASSUMPTIONS_VIEW] == ("p2",)


def test_without_views_every_premise_goes_to_the_direct_branch() -> None:
    premises = [_premise("p1", "tax rate", "assume the tax rate is 20%")]
    assert assign_premises(premises, []) == {DIRECT_VIEW: ("p1",)}


def test_no_assumptions_branch_when_every_premise_relates_to_a_view() -> None:
    views = [_view("compliance", "Jon Doe listed on PEP list.")]
    assignment = assign_premises([_premise("p1", "PEP list", "given the PEP list is current")], views)
    assert ASSUMPTIONS_VIEW not in assignment


def test_branch_key_changes_with_an_amended_premise_text() -> None:
    base = BranchSpec(view="assumptions", relevance=0.3, facts=(), premise_ids=("p1",), premise_texts=("rate is 20%",))
    amended = BranchSpec(view="assumptions", relevance=0.3, facts=(), premise_ids=("p1",), premise_texts=("rate is 25%",))
    same = BranchSpec(view="assumptions", relevance=0.9, facts=(), premise_ids=("p1",), premise_texts=("rate is 20%",))
    assert base.key != amended.key
    assert base.key == same.key


def test_premise_text_is_marked_as_an_assumption_in_the_prompt_language() -> None:
    premise = _premise("p1", "税率", "假设税率为20%")
    assert premise_text(premise, "zh").startswith("假设 [p1]")
    assert premise_text(premise, "en").startswith("Assumption [p1]")


def _branch(view: str, weight: float, text: str, violations: tuple[str, ...] = ()) -> BranchResult:
    steps = (Step(id=f"{view}.S1", branch=view, text=text, token_start=0, token_end=3),)
    return BranchResult(view=view, relevance=1.0, text=text, score=0.0, confidence=0.5, weight=weight,
                        agrees=False, steps=steps, violations=violations)


def _result(branches: tuple[BranchResult, ...], **fields: Any) -> ReasonResult:
    return ReasonResult(status=Status.OK, answer=branches[0].text if branches else "", verdicts=(), decode=None,
                        branches=branches, branch_specs=(), timings={}, **fields)


def test_the_chosen_answer_branch_is_kept_as_given() -> None:
    branches = (_branch("a", 0.9, "first"), _branch("b", 0.4, "second"))
    result = _result(branches, answer_branch=1)
    assert result.answer_branch == 1
    assert [s.id for s in result.answer_steps] == ["b.S1"]
    stored = msgspec.convert(msgspec.to_builtins(result), ReasonResult)
    assert stored.answer_branch == 1 and stored.answer_steps == result.answer_steps


def test_a_result_stored_without_the_field_gets_the_decoders_rule() -> None:
    branches = (_branch("a", 0.2, "low"), _branch("b", 0.7, "high"), _branch("c", 0.7, "tie"))
    old = msgspec.to_builtins(_result(branches))
    del old["answer_branch"]
    stored = msgspec.convert(old, ReasonResult)
    assert stored.answer_branch == choose_answer(branches) == 1  # highest weight, first on a tie
    assert [s.text for s in stored.answer_steps] == ["high"]


def test_a_branch_that_keeps_every_constraint_answers_before_a_heavier_one_that_breaks_one() -> None:
    broke = _branch("a", 0.9, "heavy", violations=("steering: citations",))
    kept = (broke, _branch("b", 0.3, "light"), _branch("c", 0.5, "kept"))
    assert choose_answer(kept) == 2
    all_broke = (broke, _branch("b", 0.95, "heavier", violations=("b.S1: contradiction",)))
    assert choose_answer(all_broke) == 1  # none kept them all: the weight decides


def test_a_run_stopped_before_decoding_has_no_answer_branch() -> None:
    stopped = _result(())
    assert stopped.answer_branch is None and stopped.answer_steps == ()
