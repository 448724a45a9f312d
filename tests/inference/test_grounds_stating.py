"""The decision's grounds are forced after the decision sentence, as many as the request's bounds
leave room for (real tokenizer, the grounds of a real decision of the bundled AML domain)."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from inference.decisions import statement_of, with_rule_evidence
from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.stating import Statement, Stating
from reasoning.constraints.model import Constraint, Hardness, Kind
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import EvidenceSubgraph
from reasoning.rules.decide import DecisionEngine, decision_sentence

PEP_CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"


@pytest.fixture(scope="module")
def statement() -> Statement:
    data = dict(bundled_domains())["aml"].read_bytes()
    engine = DecisionEngine(ingest_ontology(data, "text/turtle").index.with_version("aml-grounds"))
    decision = engine.decide(PEP_CASE)
    grounds = tuple(g.text_en for g in engine.grounds(decision) if g.text_en)
    assert len(grounds) >= 3
    return Statement(text=decision_sentence(decision, "en"),
                     contradicts=lambda s: engine.check_claim(s, decision).contradicts, grounds=grounds)


def _forced(tokenizer: Any, statement: Statement, max_new_tokens: int,
            constraints: tuple[Constraint, ...] = ()) -> str:
    steering = compile_steering(list(constraints), tokenizer, prompt=PEP_CASE, max_new_tokens=max_new_tokens,
                                statement=statement)
    stating = next(c for c in steering.controllers if isinstance(c, Stating))
    state = steering.initial_state()
    for token in stating.tokens:
        state = steering.advance(state, token)
    assert not state.parts[stating.slot]  # the whole forced run was taken
    return str(state.text)


def test_every_ground_follows_the_decision_when_the_budget_allows(tokenizer: Any, statement: Statement) -> None:
    text = _forced(tokenizer, statement, 400)
    assert text.strip() == " ".join((statement.text, *statement.grounds))


def test_a_small_budget_keeps_the_decision_and_the_grounds_that_fit(tokenizer: Any, statement: Statement) -> None:
    decision_only = len(tokenizer.encode(statement.text, add_special_tokens=False))
    first = len(tokenizer.encode(" " + statement.grounds[0], add_special_tokens=False))
    text = _forced(tokenizer, statement, decision_only + first + 12)
    assert text.strip().startswith(statement.text + " " + statement.grounds[0])
    assert len(text) < len(" ".join((statement.text, *statement.grounds)))


def test_a_word_maximum_keeps_as_many_grounds_as_fit(tokenizer: Any, statement: Statement) -> None:
    words = Constraint(id="c1", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 40},
                       hardness=Hardness.HARD)
    text = _forced(tokenizer, statement, 400, (words,))
    assert text.strip().startswith(statement.text)
    assert any(g in text for g in statement.grounds)
    assert len(text.split()) < 40 - 2
    assert not all(g in text for g in statement.grounds)


@pytest.fixture(scope="module")
def two_rules() -> Statement:
    """The statement of a decision by two rules (AML-R-017, AML-R-024) as the pipeline builds it:
    its grounds lead with one firing fact of each rule, each with a brief form."""
    data = dict(bundled_domains())["aml"].read_bytes()
    index = ingest_ontology(data, "text/turtle").index.with_version("aml-briefs")
    decision = DecisionEngine(index).decide(PEP_CASE)
    assert set(decision.rule_ids()) == {"AML-R-017", "AML-R-024"}
    statement = statement_of(decision, index, "en", shown=())
    assert len(statement.briefs) == 2 and statement.grounds[2:]
    return statement


def _tokens(tokenizer: Any, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))


def test_a_budget_too_small_for_the_cited_leads_states_them_briefly(tokenizer: Any, two_rules: Statement) -> None:
    # Room for the decision and both briefs (and the planner's 2-token end margin), not for the cited leads.
    briefs = sum(_tokens(tokenizer, " " + b) for b in two_rules.briefs)
    budget = _tokens(tokenizer, two_rules.text) + briefs + 2
    assert _tokens(tokenizer, two_rules.text) + sum(_tokens(tokenizer, " " + g) for g in two_rules.grounds[:2]) + 2 > budget
    text = _forced(tokenizer, two_rules, budget)
    assert text.strip() == " ".join((two_rules.text, *two_rules.briefs))
    assert "EUR 2,000,000" in text and "PEP list" in text  # a firing fact of each rule


def test_a_budget_for_the_cited_leads_states_them_with_their_rules(tokenizer: Any, two_rules: Statement) -> None:
    leads = sum(_tokens(tokenizer, " " + g) for g in two_rules.grounds[:2])
    text = _forced(tokenizer, two_rules, _tokens(tokenizer, two_rules.text) + leads + 2)
    assert text.strip() == " ".join((two_rules.text, *two_rules.grounds[:2]))
    assert "(AML-R-024)" in text and not any(b in text for b in two_rules.briefs)


def test_a_leads_ontology_record_is_shown_by_every_view_and_cited() -> None:
    data = dict(bundled_domains())["aml"].read_bytes()
    index = ingest_ontology(data, "text/turtle").index.with_version("aml-lead-evidence")
    decision = DecisionEngine(index).decide(PEP_CASE)
    views = tuple(EvidenceSubgraph(view=v, relevance=1.0, seeds=(), facts=()) for v in ("rules-a", "path-b"))
    views, decision = with_rule_evidence(decision, views, index, today=date(2026, 12, 1), lang="en")
    (listed,) = [f for f in views[0].facts if f.subject.endswith("#JonDoe") and f.predicate.endswith("#listedOn")]
    assert all(listed.id in {f.id for f in g.facts} for g in views)
    shown = sorted({f.id for f in views[0].facts} & {f.id for f in views[1].facts})
    statement = statement_of(decision, index, "en", shown, [f for g in views for f in g.facts])
    assert f"Jon Doe is listed on the PEP list (AML-R-024, AML-R-017) [{listed.id}]." in statement.grounds[:2]
    assert "Jon Doe is listed on the PEP list." in statement.briefs
