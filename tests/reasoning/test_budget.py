"""The entropy -> budget mapping: bounds, monotonicity, length floors, limits."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoning.budget import DEFAULT_LIMITS, BudgetLimits, budget_for

unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@given(unit, unit)
def test_every_field_is_monotone_in_the_score(a: float, b: float) -> None:
    lo, hi = budget_for(min(a, b)), budget_for(max(a, b))
    assert lo.beam_width <= hi.beam_width
    assert lo.max_new_tokens <= hi.max_new_tokens
    assert lo.evidence_hops <= hi.evidence_hops
    assert lo.counterfactual_checks <= hi.counterfactual_checks


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_fields_stay_within_limits_for_any_score(score: float) -> None:
    b = budget_for(score)
    assert 1 <= b.beam_width <= DEFAULT_LIMITS.max_beam_width
    assert DEFAULT_LIMITS.min_new_tokens <= b.max_new_tokens <= DEFAULT_LIMITS.max_new_tokens
    assert 1 <= b.evidence_hops <= 3


def test_ends_of_the_range() -> None:
    low, high = budget_for(0.0), budget_for(1.0)
    assert (low.beam_width, low.evidence_hops, low.counterfactual_checks) == (1, 1, True)
    assert (high.beam_width, high.evidence_hops, high.counterfactual_checks) == (4, 3, True)
    assert (low.max_new_tokens, high.max_new_tokens) == (128, 1024)


def test_counterfactual_checks_are_on_by_default_the_share_caps_them() -> None:
    assert DEFAULT_LIMITS.counterfactual_threshold == 0.0
    assert all(budget_for(s).counterfactual_checks for s in (0.0, 0.3, 1.0))


def test_counterfactual_threshold_is_inclusive() -> None:
    limits = BudgetLimits(counterfactual_threshold=0.6)
    assert not budget_for(0.5999, limits).counterfactual_checks
    assert budget_for(0.6, limits).counterfactual_checks


def test_length_requirements_raise_the_token_floor_up_to_the_cap() -> None:
    assert budget_for(0.0, required_tokens=500).max_new_tokens == 500
    assert budget_for(0.0, required_tokens=5000).max_new_tokens == DEFAULT_LIMITS.max_new_tokens
    assert budget_for(1.0, required_tokens=10).max_new_tokens == DEFAULT_LIMITS.max_new_tokens


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_beam_width": 0},
        {"min_new_tokens": 0},
        {"min_new_tokens": 256, "max_new_tokens": 128},
        {"max_hops": 4},
        {"counterfactual_threshold": 1.5},
    ],
)
def test_invalid_limits_are_refused(kwargs: dict[str, float]) -> None:
    from reasoning.errors import InvalidInput

    with pytest.raises(InvalidInput):
        BudgetLimits(**kwargs)  # type: ignore[arg-type]
