"""Per-step confidence: token probability, evidence support and counterfactual contrast.

Two steps are judged by the domain's decision rules before any term: one
that restates a conclusion has full support, one that contradicts a
conclusion is capped at ``CONTRADICTION_CAP`` (see ``step_confidence``); a
step of a domain answer that states what no evidence, rule, decision or the
request holds (``flagged``) is capped at ``UNSUPPORTED_CAP``, its hint naming
what is unsupported.

The combination is a logistic model with coefficients stored in code::

    z = b0 + b_token * logit(p_window) + b_support * (support - 0.5)
           + [contrast scored] * (b_offset + b_contrast * clip(contrast, -2, 2))
    confidence = sigmoid(z) * STALE_FACTOR ** n_stale_facts

``p_window`` is the lowest sliding-window mean token probability of the step
(one unsure stretch lowers a step even if the rest is fluent); ``support`` the
share of the step's domain mentions found in evidence (left out when the step
mentions none); ``contrast`` the claim's mean per-token log-likelihood minus
its most likely counterfactual variant's (left out, with its offset, when not
scored: the counterfactual checks are rationed, so most steps have none).
With only the token term and ``b0 = 0, b_token = 1`` the confidence equals
``p_window``, so every other term is a documented correction of it.

``COEFFICIENTS`` can be refitted with ``fit_coefficients`` on labelled
(features, correct) pairs; ``expected_calibration_error`` measures the result.
The shipped values are ``DEFAULT_COEFFICIENTS`` (see their comment for
provenance). Every lowering comes with a ``calibration_hint`` sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

__all__ = [
    "COEFFICIENT_NAMES",
    "DEFAULT_COEFFICIENTS",
    "FIT_START",
    "Coefficients",
    "Confidence",
    "ConfidenceInputs",
    "combine",
    "expected_calibration_error",
    "features",
    "fit_coefficients",
    "lowest_window_probability",
    "restated_confidence",
    "step_confidence",
]

STALE_FACTOR = 0.85
#: The most a step that contradicts the decision rules' conclusion can be trusted: the
#: rules decided otherwise, however fluent the model was.
CONTRADICTION_CAP = 0.05
#: The most a flagged step (a claim its evidence does not support) can be trusted.
UNSUPPORTED_CAP = 0.3
_NEAR_EQUAL = 0.15
_UNSURE_TOKENS = 0.5


class Coefficients(msgspec.Struct, frozen=True, kw_only=True):
    intercept: float
    token: float
    support: float
    contrast: float
    contrast_offset: float = 0.0  # added only when the step's contrast was scored


COEFFICIENT_NAMES = ("intercept", "token", "support", "contrast", "contrast_offset")

# Where a fit starts: the hand-set model (identity on the token term, support
# +-0.75 and contrast +-2 logits, no offset). Fixed, so a fit does not depend
# on the shipped values and the shipped values can be reproduced.
FIT_START = Coefficients(intercept=0.0, token=1.0, support=1.5, contrast=1.0, contrast_offset=0.0)

# Token and support terms hand-set: identity on the token term, support a
# bounded correction (+-0.75 logits). The two contrast terms are fitted
# (``fit_coefficients(..., only=("contrast", "contrast_offset"))``) on the
# first labelled set of ``bench.calibration`` (the AML and clinical evidence
# facts and their counterfactual variants, 24 statements) and measured on its
# second, disjoint set (see that bench's output): only steps whose contrast
# was scored are affected, and a step without one keeps ``p_window``.
DEFAULT_COEFFICIENTS = Coefficients(
    intercept=0.0, token=1.0, support=1.5, contrast=4.019, contrast_offset=-3.622
)


class ConfidenceInputs(msgspec.Struct, frozen=True, kw_only=True):
    """What a step's confidence is computed from (``None``: not measured for this step)."""

    window_prob: float
    support: float | None = None
    unsupported: tuple[str, ...] = ()
    contrast: float | None = None
    contrast_kind: str | None = None
    stale_hints: tuple[str, ...] = ()
    #: The step restates a conclusion of the domain's decision rules (its words were
    #: forced by the steering, so their token probabilities say nothing of the model).
    restates_conclusion: bool = False
    #: Why the step contradicts a conclusion of the decision rules (the claim check's reason).
    contradiction: str | None = None
    #: The step states an action the decision rules could not decide: what they lack.
    undecided: str | None = None
    #: The support check found something in the step no source holds (``unsupported`` names it).
    flagged: bool = False


class Confidence(msgspec.Struct, frozen=True, kw_only=True):
    value: float
    hint: str | None


def lowest_window_probability(logprobs: Sequence[float], window: int = 4) -> float:
    """The lowest mean probability over any ``window`` consecutive tokens (whole step if shorter).

    >>> round(lowest_window_probability([0.0, 0.0, math.log(0.1), 0.0], window=2), 2)
    0.55
    """
    if not logprobs:
        return 1.0
    probs = [math.exp(lp) for lp in logprobs]
    if len(probs) <= window:
        return sum(probs) / len(probs)
    running = sum(probs[:window])
    lowest = running
    for i in range(window, len(probs)):
        running += probs[i] - probs[i - window]
        lowest = min(lowest, running)
    return lowest / window


def features(inputs: ConfidenceInputs) -> tuple[float, float, float, float]:
    """The regressors of the logistic model: token, support, contrast, contrast scored (0 / 1).

    A term not measured is 0.
    """
    p = min(max(inputs.window_prob, 1e-4), 1 - 1e-4)
    token = math.log(p / (1 - p))
    support = 0.0 if inputs.support is None else inputs.support - 0.5
    contrast = 0.0 if inputs.contrast is None else max(-2.0, min(2.0, inputs.contrast))
    scored = 0.0 if inputs.contrast is None else 1.0
    return token, support, contrast, scored


def combine(inputs: ConfidenceInputs, coefficients: Coefficients = DEFAULT_COEFFICIENTS) -> float:
    """Confidence in [0, 1] (before the staleness factor)."""
    token, support, contrast, scored = features(inputs)
    z = coefficients.intercept + coefficients.token * token
    z += coefficients.support * support + coefficients.contrast * contrast
    z += coefficients.contrast_offset * scored
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def step_confidence(
    inputs: ConfidenceInputs, coefficients: Coefficients = DEFAULT_COEFFICIENTS
) -> Confidence:
    """Confidence with the hint that explains every term that lowered it.

    A step that restates a conclusion of the decision rules has full
    evidence support and no token term: the rules decided it, the model did
    not choose its words (only stale evidence lowers it, with its hint).
    A step that contradicts a conclusion is capped at ``CONTRADICTION_CAP``,
    its hint naming the conclusion it denies. A step that states an action
    the rules could not decide has no evidence support (support 0) and a
    hint naming the inputs the rules lack.
    """
    if inputs.undecided is not None and not inputs.restates_conclusion:
        inputs = msgspec.structs.replace(inputs, support=0.0)
    if inputs.restates_conclusion:
        stale = STALE_FACTOR ** len(inputs.stale_hints)
        return Confidence(value=round(stale, 4), hint="; ".join(inputs.stale_hints) or None)
    value = combine(inputs, coefficients) * STALE_FACTOR ** len(inputs.stale_hints)
    hints: list[str] = list(inputs.stale_hints)
    if inputs.contradiction is not None:
        value = min(value, CONTRADICTION_CAP)
        hints.insert(0, f"contradicts the domain's rules: {inputs.contradiction}")
    if inputs.contrast is not None and abs(inputs.contrast) < _NEAR_EQUAL:
        what = (
            "its negation"
            if inputs.contrast_kind == "negation"
            else f"a {inputs.contrast_kind or 'counterfactual'} variant"
        )
        hints.append(f"claim and {what} are near-equally likely")
    elif inputs.contrast is not None and inputs.contrast < 0:
        hints.append(
            f"the evidence makes a {inputs.contrast_kind or 'counterfactual'} variant more likely than the claim"
        )
    if inputs.undecided is not None:
        hints.append(inputs.undecided)
    if inputs.flagged:
        value = min(value, UNSUPPORTED_CAP)
    if inputs.support is not None and inputs.support < 1.0 and inputs.unsupported:
        hints.append("no evidence supports " + ", ".join(repr(u) for u in inputs.unsupported[:3]))
    if inputs.window_prob < _UNSURE_TOKENS:
        hints.append(
            f"the model was unsure of some words (lowest window p={inputs.window_prob:.2f})"
        )
    return Confidence(value=round(min(1.0, max(0.0, value)), 4), hint="; ".join(hints) or None)


def restated_confidence(stale_hints: Sequence[str] = ()) -> Confidence:
    """The confidence of a step that restates a decision rule's conclusion (see ``step_confidence``)."""
    return step_confidence(ConfidenceInputs(window_prob=1.0, support=1.0, restates_conclusion=True,
                                            stale_hints=tuple(stale_hints)))


def expected_calibration_error(pairs: Sequence[tuple[float, bool]], bins: int = 10) -> float:
    """ECE: the bin-size-weighted mean |accuracy - mean confidence| over equal-width bins."""
    if not pairs:
        return 0.0
    buckets: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for conf, correct in pairs:
        buckets[min(bins - 1, int(conf * bins))].append((conf, correct))
    total = len(pairs)
    ece = 0.0
    for bucket in buckets:
        if bucket:
            mean_conf = sum(c for c, _ in bucket) / len(bucket)
            accuracy = sum(1 for _, ok in bucket if ok) / len(bucket)
            ece += len(bucket) / total * abs(accuracy - mean_conf)
    return ece


def fit_coefficients(
    samples: Sequence[tuple[ConfidenceInputs, bool]],
    *,
    steps: int = 2000,
    rate: float = 0.1,
    l2: float = 1e-3,
    only: Sequence[str] = COEFFICIENT_NAMES,
) -> Coefficients:
    """Fit the logistic model on labelled steps by gradient descent (deterministic, no extra deps).

    ``only`` names the coefficients to fit (``COEFFICIENT_NAMES``), each
    starting from ``FIT_START``; the others keep their ``DEFAULT_COEFFICIENTS``
    values.
    """
    unknown = set(only) - set(COEFFICIENT_NAMES)
    if unknown:
        raise ValueError(f"unknown coefficients: {sorted(unknown)}")
    if not samples:
        return DEFAULT_COEFFICIENTS
    xs = [(1.0, *features(inp)) for inp, _ in samples]
    ys = [1.0 if ok else 0.0 for _, ok in samples]
    free = [name in only for name in COEFFICIENT_NAMES]
    w = [
        float(getattr(FIT_START if f else DEFAULT_COEFFICIENTS, name))
        for name, f in zip(COEFFICIENT_NAMES, free)
    ]
    n, k = len(xs), len(COEFFICIENT_NAMES)
    for _ in range(steps):
        grad = [0.0] * k
        for x, y in zip(xs, ys):
            z = sum(wi * xi for wi, xi in zip(w, x))
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            for j in range(k):
                grad[j] += (p - y) * x[j] / n
        w = [wi - rate * (g + l2 * wi) if f else wi for wi, g, f in zip(w, grad, free)]
    return Coefficients(**dict(zip(COEFFICIENT_NAMES, w)))
