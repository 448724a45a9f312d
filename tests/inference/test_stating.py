"""The stating controller: the decision sentence is written by the steering and a
contradicting claim cannot be written (real tokenizer, real rules of the bundled AML domain)."""

from __future__ import annotations

from typing import Any

import pytest

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.citing import Citing
from inference.decoder.token_controllers.stating import Statement, Stating
from reasoning.constraints.model import Constraint, Hardness, Kind
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.model import Decision
from tests.inference.decoder.steering_doubles import drive_towards

PEP_CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"


@pytest.fixture(scope="module")
def engine() -> DecisionEngine:
    data = dict(bundled_domains())["aml"].read_bytes()
    return DecisionEngine(ingest_ontology(data, "text/turtle").index.with_version("aml-test"))


@pytest.fixture(scope="module")
def decision(engine: DecisionEngine) -> Decision:
    decided = engine.decide(PEP_CASE)
    assert decided.status == "decided"
    return decided


def _statement(engine: DecisionEngine, decision: Decision, text: str) -> Statement:
    return Statement(text=text, contradicts=lambda s: engine.check_claim(s, decision).contradicts)


def test_the_statement_is_written_first_and_its_citation_counts(
    tokenizer: Any, engine: DecisionEngine, decision: Decision
) -> None:
    text = "This case requires escalation to the MLRO (AML-R-017) [E2]."
    cite = Constraint(id="c1", kind=Kind.CITE_SOURCES, params={"n": 1}, hardness=Hardness.HARD)
    steering = compile_steering(
        [cite], tokenizer, prompt=PEP_CASE, max_new_tokens=60, evidence_ids=["E1", "E2"],
        statement=_statement(engine, decision, text),
    )
    assert any(isinstance(c, Stating) for c in steering.controllers)
    written = drive_towards(steering, " The payment is fine.", tokenizer, 60)
    assert written.startswith(text)
    state = steering.initial_state()
    for token in steering.controllers[0].tokens:  # type: ignore[attr-defined]
        state = steering.advance(state, token)
    citing = next(c for c in steering.controllers if isinstance(c, Citing))
    assert state.parts[citing.slot].cited == frozenset({"E2"})


def test_a_contradicting_claim_cannot_be_written(tokenizer: Any, engine: DecisionEngine, decision: Decision) -> None:
    text = "This case requires escalation to the MLRO (AML-R-017)."
    steering = compile_steering(
        [], tokenizer, prompt=PEP_CASE, max_new_tokens=40, statement=_statement(engine, decision, text),
    )
    wanted = text + " This transfer should not be escalated to anyone."
    written = drive_towards(steering, wanted, tokenizer, 40)
    assert written.startswith(text)
    rest = written[len(text):]
    assert not engine.check_claim(rest, decision).contradicts, written
    # Without the statement the same logits write the denial.
    plain = compile_steering([], tokenizer, prompt=PEP_CASE, max_new_tokens=40)
    denial = drive_towards(plain, wanted, tokenizer, 40)
    assert engine.check_claim(denial, decision).contradicts, denial


def test_no_statement_means_no_controller(tokenizer: Any) -> None:
    steering = compile_steering([], tokenizer, prompt="Describe Paris.", max_new_tokens=20)
    assert not any(isinstance(c, Stating) for c in steering.controllers)


def test_a_chinese_statement_is_written_whole(tokenizer: Any, engine: DecisionEngine, decision: Decision) -> None:
    # Han characters span several byte tokens: the insertion holds through unfinished characters.
    text = "本案需要上报MLRO（AML-R-017）[E2]。"
    steering = compile_steering(
        [], tokenizer, prompt=PEP_CASE, max_new_tokens=60, evidence_ids=["E2"],
        statement=_statement(engine, decision, text),
    )
    assert drive_towards(steering, "好的。", tokenizer, 60).startswith(text)


def test_a_budget_too_small_for_the_statement_inserts_none_of_it(
    tokenizer: Any, engine: DecisionEngine, decision: Decision
) -> None:
    text = "This case requires escalation to the MLRO and enhanced due diligence (AML-R-017)."
    steering = compile_steering(
        [], tokenizer, prompt=PEP_CASE, max_new_tokens=8, statement=_statement(engine, decision, text),
    )
    written = drive_towards(steering, " Escalate it now.", tokenizer, 8)
    assert not written.startswith("This case")
    state = steering.initial_state()
    assert "decision" in steering.unmet(state)
