"""analyse(): stages 1-3 on real extraction, with the cache, a domain hook and length floors."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from reasoning.analysis import (
    ExtractionCache,
    Status,
    analyse,
    count_unlinked_terms,
    required_tokens,
)
from reasoning.constraints.model import Constraint, Kind, Origin
from reasoning.errors import InvalidInput, LimitExceeded
from reasoning.evidence.model import LinkedEntity
from reasoning.graph import Edge, ontology_edge


def test_conflicting_languages_need_confirmation() -> None:
    result = analyse("Answer in English. 必须用中文回答", cache=None)
    assert result.status is Status.NEEDS_CONFIRMATION
    assert len(result.graph.conflicts) == 1
    assert result.cached is False
    assert result.timings["graph"] >= 0 and result.timings["extract"] > 0


def test_clean_prompt_is_ok_and_budget_follows_entropy() -> None:
    easy = analyse("Write a short poem about spring.", cache=None)
    hard = analyse(
        "Write a story about a dragon in exactly 4 bullet points, in all lowercase letters, without "
        "commas, and include the keywords 'gold' and 'cave'. If the dragon sleeps, do not wake it.",
        cache=None,
    )
    assert easy.status is Status.OK and hard.status is Status.OK
    assert easy.entropy.score < hard.entropy.score
    assert easy.budget.beam_width <= hard.budget.beam_width
    assert easy.budget.max_new_tokens <= hard.budget.max_new_tokens


def test_word_minimum_raises_the_token_budget() -> None:
    result = analyse("Write an essay of at least 400 words about tides.", cache=None)
    assert any(c.kind is Kind.WORD_COUNT for c in result.constraints)
    assert result.budget.max_new_tokens >= 400 * 1.5


def test_required_tokens_from_length_constraints() -> None:
    words = Constraint(id="c1", kind=Kind.WORD_COUNT, params={"relation": "at least", "n": 100})
    sentences = Constraint(
        id="c2", kind=Kind.SENTENCE_COUNT, params={"relation": "more than", "n": 9}
    )
    assert required_tokens([]) == 0
    assert required_tokens([words]) == 150 + 32
    assert required_tokens([words, sentences]) == 200 + 32
    at_most = Constraint(id="c3", kind=Kind.WORD_COUNT, params={"relation": "at most", "n": 100})
    assert required_tokens([at_most]) == 0


def test_cache_returns_the_same_extraction_and_says_so() -> None:
    cache = ExtractionCache(capacity=2)
    prompt = "Use exactly 3 bullet points; the word 'risk' must appear at least twice."
    first = analyse(prompt, cache=cache)
    second = analyse(prompt, cache=cache)
    assert (first.cached, second.cached) == (False, True)
    assert second.constraints == first.constraints
    assert second.timings["parse"] == 0.0
    default = Constraint(id="d1", kind=Kind.NO_COMMA, origin=Origin.PROFILE)
    with_default = analyse(prompt, defaults=[default], cache=cache)
    assert with_default.cached is False
    assert any(c.origin is Origin.PROFILE for c in with_default.constraints)


def test_domain_hook_edges_reach_the_graph() -> None:
    def hook(constraints: Sequence[Constraint]) -> list[Edge]:
        ids = [c.id for c in constraints]
        return [ontology_edge(ids[0], ids[1], "excludes", "disjoint regimes")]

    result = analyse(
        "Answer in under 50 words. Cite at least 2 sources.", domain_hook=hook, cache=None
    )
    assert result.status is Status.NEEDS_CONFIRMATION
    assert result.graph.conflicts[0].reason == "disjoint regimes"


def test_domain_hook_naming_unknown_constraint_is_invalid() -> None:
    with pytest.raises(InvalidInput):
        analyse(
            "Answer in under 50 words.",
            domain_hook=lambda cs: [ontology_edge("c1", "c99", "excludes", "x")],
            cache=None,
        )


def test_oversized_prompt_is_refused_by_extraction() -> None:
    with pytest.raises(LimitExceeded):
        analyse("word " * 10_000, cache=None)


def _link(start: int, end: int) -> LinkedEntity:
    return LinkedEntity(iri="urn:x", label="x", mention="x", start=start, end=end, score=1.0)


def test_unlinked_terms_skip_values_and_anything_a_link_touches() -> None:
    entities = [
        (0, 8, "ORG"),  # linked exactly
        (10, 20, "PERSON"),  # partly covered by a link
        (25, 30, "GPE"),  # nothing links it
        (32, 40, "MONEY"),  # a value, never a term
        (41, 45, "DATE"),
    ]
    assert count_unlinked_terms(entities, [_link(0, 8), _link(15, 22)]) == 1
    assert count_unlinked_terms(entities, []) == 3
    assert count_unlinked_terms([], [_link(0, 3)]) == 0
