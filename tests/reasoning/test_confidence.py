"""Confidence combines token probability, support and contrast, and explains every lowering."""

from __future__ import annotations

import math
import random

import pytest

from reasoning.confidence import (
    CONTRADICTION_CAP,
    DEFAULT_COEFFICIENTS,
    ConfidenceInputs,
    combine,
    expected_calibration_error,
    fit_coefficients,
    lowest_window_probability,
    restated_confidence,
    step_confidence,
)


def test_lowest_window_finds_the_unsure_stretch() -> None:
    confident = [math.log(0.95)] * 10
    dip = confident[:4] + [math.log(0.1), math.log(0.2)] + confident[6:]
    assert lowest_window_probability(confident) == pytest.approx(0.95)
    assert lowest_window_probability(dip) == pytest.approx((0.95 * 2 + 0.1 + 0.2) / 4)
    assert lowest_window_probability([math.log(0.5)], window=4) == pytest.approx(0.5)


def test_token_term_alone_is_the_identity() -> None:
    for p in (0.1, 0.5, 0.9):
        assert combine(ConfidenceInputs(window_prob=p)) == pytest.approx(p, abs=1e-6)


def test_support_and_contrast_move_confidence_in_their_direction() -> None:
    base = ConfidenceInputs(window_prob=0.7)
    assert combine(ConfidenceInputs(window_prob=0.7, support=1.0)) > combine(base)
    assert combine(ConfidenceInputs(window_prob=0.7, support=0.0)) < combine(base)
    assert combine(ConfidenceInputs(window_prob=0.7, contrast=1.0)) > combine(base)
    assert combine(ConfidenceInputs(window_prob=0.7, contrast=-1.0)) < combine(base)


def test_stale_evidence_lowers_confidence_with_its_hint() -> None:
    fresh = step_confidence(ConfidenceInputs(window_prob=0.9, support=1.0))
    stale = step_confidence(
        ConfidenceInputs(
            window_prob=0.9,
            support=1.0,
            stale_hints=("evidence E3: PEP list last updated 2024-05-11",),
        )
    )
    assert stale.value < fresh.value
    assert fresh.hint is None
    assert stale.hint is not None and "E3" in stale.hint and "2024-05-11" in stale.hint


def test_near_equal_negation_is_explained() -> None:
    result = step_confidence(
        ConfidenceInputs(window_prob=0.9, contrast=0.05, contrast_kind="negation")
    )
    assert result.hint == "claim and its negation are near-equally likely"


def test_unsupported_mentions_and_unsure_tokens_are_explained() -> None:
    result = step_confidence(ConfidenceInputs(window_prob=0.3, support=0.0, unsupported=("Malta",)))
    assert result.hint is not None
    assert "'Malta'" in result.hint and "unsure" in result.hint
    assert 0.0 <= result.value < 0.3


def test_ece_of_perfect_and_of_overconfident_predictions() -> None:
    assert expected_calibration_error([(1.0, True), (0.0, False)]) == pytest.approx(0.0)
    assert expected_calibration_error([(0.95, False)] * 10) == pytest.approx(0.95)
    mixed = [(0.75, True)] * 3 + [(0.75, False)]
    assert expected_calibration_error(mixed) == pytest.approx(0.0)


def test_fitting_reduces_calibration_error_on_miscalibrated_data() -> None:
    rng = random.Random(7)
    samples = []
    for _ in range(400):
        p = rng.uniform(0.05, 0.95)
        correct = rng.random() < p**3  # the token probability is overconfident
        samples.append((ConfidenceInputs(window_prob=p), correct))
    before = expected_calibration_error([(combine(x), y) for x, y in samples])
    fitted = fit_coefficients(samples)
    after = expected_calibration_error([(combine(x, fitted), y) for x, y in samples])
    assert fitted != DEFAULT_COEFFICIENTS
    assert after < before / 2


def test_contrast_terms_touch_only_steps_whose_contrast_was_scored() -> None:
    unscored = ConfidenceInputs(window_prob=0.8)
    assert combine(unscored) == pytest.approx(0.8, abs=1e-6)
    near_equal = combine(ConfidenceInputs(window_prob=0.8, contrast=0.0))
    favoured = combine(ConfidenceInputs(window_prob=0.8, contrast=1.5))
    assert near_equal < 0.8 < favoured


def test_fitting_only_named_coefficients_keeps_the_others() -> None:
    rng = random.Random(3)
    samples = []
    for _ in range(200):
        c = rng.uniform(-2, 2)
        samples.append((ConfidenceInputs(window_prob=0.9, contrast=c), rng.random() < 1 / (1 + math.exp(-3 * c))))
    fitted = fit_coefficients(samples, only=("contrast", "contrast_offset"))
    assert (fitted.intercept, fitted.token, fitted.support) == (
        DEFAULT_COEFFICIENTS.intercept,
        DEFAULT_COEFFICIENTS.token,
        DEFAULT_COEFFICIENTS.support,
    )
    with pytest.raises(ValueError):
        fit_coefficients(samples, only=("bogus",))


def test_a_restated_conclusion_has_full_support_whatever_its_forced_tokens() -> None:
    forced = ConfidenceInputs(window_prob=0.05, support=0.0, unsupported=("AML-R-017",),
                              restates_conclusion=True)
    restated = step_confidence(forced)
    assert restated.value == 1.0 and restated.hint is None
    assert restated == restated_confidence()
    plain = step_confidence(ConfidenceInputs(window_prob=0.05, support=0.0, unsupported=("AML-R-017",)))
    assert plain.value < 0.1 and plain.hint is not None and "AML-R-017" in plain.hint
    stale = restated_confidence(["evidence E3: PEP list last updated 2024-05-11"])
    assert stale.value < 1.0 and stale.hint is not None and "PEP list" in stale.hint


def test_a_claim_that_contradicts_a_conclusion_is_capped_and_says_which() -> None:
    reason = "denies escalation to the MLRO, which AML-R-017 requires"
    fluent = ConfidenceInputs(window_prob=0.99, support=1.0)
    contradicting = step_confidence(
        ConfidenceInputs(window_prob=0.99, support=1.0, contradiction=reason)
    )
    assert step_confidence(fluent).value > 0.9
    assert contradicting.value <= CONTRADICTION_CAP
    assert contradicting.hint is not None and contradicting.hint.startswith("contradicts")
    assert reason in contradicting.hint
