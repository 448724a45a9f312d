"""Cognitive entropy: bounds, breakdown, monotonicity, the shipped fit, and real prompts."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.entropy_fit import fit_normaliser, nnls_with_intercept
from reasoning.constraints.extraction import extract
from reasoning.entropy import (
    FEATURES,
    EntropyModel,
    Normaliser,
    Signals,
    cognitive_entropy,
    load_model,
    score_signals,
)
from reasoning.errors import InvalidInput
from reasoning.graph import build_graph

counts = st.integers(min_value=0, max_value=5000)
signals = st.builds(
    Signals,
    tokens=counts,
    entities=counts,
    conditionals=counts,
    negations=counts,
    constraints=st.integers(0, 60),
    soft_constraints=st.integers(0, 60),
    conflicts=st.integers(0, 20),
    unlinked_terms=st.integers(0, 200),
)
FIELDS = [
    "tokens",
    "conditionals",
    "negations",
    "constraints",
    "soft_constraints",
    "conflicts",
    "unlinked_terms",
]


@settings(max_examples=300, deadline=None)
@given(signals)
def test_score_is_in_unit_interval_and_breakdown_sums_to_it(s: Signals) -> None:
    entropy = score_signals(s)
    assert 0.0 <= entropy.score <= 1.0
    assert set(entropy.breakdown) == set(FEATURES)
    assert sum(entropy.breakdown.values()) == pytest.approx(entropy.score, abs=1e-12)
    assert all(v >= 0 for v in entropy.breakdown.values())


@settings(max_examples=300, deadline=None)
@given(signals, st.sampled_from(FIELDS), st.integers(1, 500))
def test_score_never_decreases_when_a_signal_grows(s: Signals, field: str, extra: int) -> None:
    if field == "tokens":
        # More tokens with the same entities lowers entity density; scale both to hold it.
        k = 2 + extra % 4
        grown = msgspec.structs.replace(s, tokens=s.tokens * k, entities=s.entities * k)
    else:
        grown = msgspec.structs.replace(s, **{field: getattr(s, field) + extra})
    assert score_signals(grown).score >= score_signals(s).score - 1e-12


def test_shipped_model_weights_are_a_distribution_and_carry_their_fit() -> None:
    model = load_model()
    assert set(model.weights) == set(FEATURES)
    assert sum(model.weights.values()) == pytest.approx(1.0)
    assert model.fit["n_prompts"] == 541
    assert (
        model.fit["cross_validated_5fold"]["spearman"]
        > model.fit["uniform_weights_baseline"]["spearman"]
    )


def test_extremes() -> None:
    assert score_signals(Signals(tokens=0)).score == pytest.approx(0.0)
    huge = Signals(
        tokens=10**6,
        entities=10**6,
        conditionals=10**4,
        negations=10**4,
        constraints=10**3,
        soft_constraints=10**3,
        conflicts=10**3,
        unlinked_terms=10**4,
    )
    assert score_signals(huge).score > 0.99


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({f: 1.0 for f in FEATURES}, "sum to 1"),
        ({**{f: 0.0 for f in FEATURES}, "length": 1.5, "constraints": -0.5}, "non-negative"),
        ({"length": 1.0}, "weights and normalisers"),
    ],
)
def test_invalid_models_are_refused(weights: dict[str, float], message: str) -> None:
    normalisers = {f: Normaliser(half=1.0) for f in FEATURES}
    with pytest.raises(InvalidInput, match=message):
        EntropyModel(weights=weights, normalisers=normalisers)


def test_ecdf_normaliser_is_monotone_and_spans_unit_interval() -> None:
    values = np.asarray([3, 3, 5, 8, 8, 8, 13, 21, 34, 55], dtype=float)
    norm, varies = fit_normaliser(values)
    assert varies and norm.points
    xs = np.linspace(-5, 120, 250)
    ys = [norm(float(x)) for x in xs]
    assert ys == sorted(ys)
    assert ys[0] == 0.0 and ys[-1] == 1.0
    assert norm(3.0) == 0.0  # the least demanding value seen
    assert norm(8.0) == pytest.approx(0.3)  # share of values below 8
    assert norm(110.0) == 1.0  # twice the largest value saturates


def test_barely_varying_feature_gets_a_saturating_normaliser() -> None:
    norm, varies = fit_normaliser(np.asarray([0.0] * 99 + [1.0]))
    assert not varies and norm.points is None
    assert norm(1.0) == pytest.approx(0.5) and norm(3.0) == pytest.approx(0.75)


def test_nnls_recovers_non_negative_coefficients_and_zeroes_negative_ones() -> None:
    rng = np.random.default_rng(7)
    z = rng.random((400, 3))
    y = 0.5 + 2.0 * z[:, 0] + 0.7 * z[:, 1] - 1.0 * z[:, 2] + rng.normal(0, 0.01, 400)
    w = nnls_with_intercept(z, y)
    assert w[0] == pytest.approx(2.0, abs=0.1) and w[1] > 0 and w[2] == 0.0


def _entropy(prompt: str) -> float:
    result = extract(prompt)
    return cognitive_entropy(result, build_graph(result.constraints, prompt=prompt)).score


def test_real_prompts_order_by_demand() -> None:
    easy = _entropy("Write a poem about the sea.")
    hard = _entropy(
        "Write a poem about the sea in exactly 3 bullet points, all in lowercase letters, without any "
        "commas. If you mention a ship, do not name it. Use at least 120 words and end your response "
        "with 'Is there anything else I can help with?'"
    )
    assert 0.0 <= easy < hard <= 1.0


def test_unlinked_terms_and_conflicts_raise_entropy() -> None:
    prompt = "Answer in English. 必须用中文回答"
    result = extract(prompt)
    graph = build_graph(result.constraints, prompt=prompt)
    assert graph.conflicts
    base = cognitive_entropy(result, graph)
    assert base.breakdown["conflicts"] > 0
    linked = cognitive_entropy(result, graph, unlinked_terms=3)
    assert linked.score > base.score and linked.features["unlinked_terms"] == 3
