"""The compute budget a request's cognitive entropy buys.

:func:`budget_for` maps an entropy score ``s`` in [0, 1] to a
:class:`Budget`, monotone non-decreasing in ``s`` on every field:

- ``beam_width = min(max_beam_width, 1 + floor(s * max_beam_width))``:
  one beam below ``1 / max_beam_width``, the full width at the top;
- ``max_new_tokens``: linear from ``min_new_tokens`` (s = 0) to
  ``max_new_tokens`` (s = 1), rounded up to a multiple of 32, and never less
  than what the request's own length constraints need (``required_tokens``,
  capped at ``max_new_tokens``);
- ``evidence_hops = min(max_hops, 1 + floor(s * max_hops))``: 1..3 hops with
  the default limits, since expanding further pulls in facts two relations
  removed from anything the user named;
- ``counterfactual_checks``: on when ``s >= counterfactual_threshold`` (0 by
  default: always). The checks are rationed to a fixed share of the decode's
  own FLOPs (``DecodeOptions.counterfactual_flops_share``, 5%), so their cost
  already scales with the rest of the budget; turning them off for easy
  requests saved at most that share and left every fact-stating step of
  those answers without its contrast. A deployment may set a threshold to
  keep them for hard requests only.

A request's explicit options (e.g. ``max_new_tokens``) override the budget
later, in the decoder; the budget is the default, not a cap on the client.
"""

from __future__ import annotations

import math

import msgspec

from reasoning.errors import InvalidInput

__all__ = ["DEFAULT_LIMITS", "Budget", "BudgetLimits", "budget_for"]


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    beam_width: int
    max_new_tokens: int
    evidence_hops: int
    counterfactual_checks: bool


class BudgetLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The range a budget moves in; validated on construction.

    Raises:
        InvalidInput: a bound out of range (the message names the field).
    """

    max_beam_width: int = 4
    min_new_tokens: int = 128
    max_new_tokens: int = 1024
    max_hops: int = 3
    counterfactual_threshold: float = 0.0

    def __post_init__(self) -> None:
        if self.max_beam_width < 1:
            raise InvalidInput("max_beam_width must be at least 1", field="max_beam_width")
        if self.min_new_tokens < 1:
            raise InvalidInput("min_new_tokens must be at least 1", field="min_new_tokens")
        if self.max_new_tokens < self.min_new_tokens:
            raise InvalidInput(
                "max_new_tokens must be at least min_new_tokens", field="max_new_tokens"
            )
        if not 1 <= self.max_hops <= 3:
            raise InvalidInput("max_hops must be 1, 2 or 3", field="max_hops")
        if not 0.0 <= self.counterfactual_threshold <= 1.0:
            raise InvalidInput(
                "counterfactual_threshold must lie in [0, 1]", field="counterfactual_threshold"
            )


DEFAULT_LIMITS = BudgetLimits()


def budget_for(
    score: float, limits: BudgetLimits = DEFAULT_LIMITS, *, required_tokens: int = 0
) -> Budget:
    """The budget for an entropy ``score`` (clamped to [0, 1]); see the module docstring.

    >>> budget_for(0.0)
    Budget(beam_width=1, max_new_tokens=128, evidence_hops=1, counterfactual_checks=True)
    >>> budget_for(1.0)
    Budget(beam_width=4, max_new_tokens=1024, evidence_hops=3, counterfactual_checks=True)
    """
    s = 0.0 if math.isnan(score) else min(1.0, max(0.0, score))
    beam = min(limits.max_beam_width, 1 + math.floor(s * limits.max_beam_width))
    span = limits.max_new_tokens - limits.min_new_tokens
    tokens = min(limits.max_new_tokens, 32 * math.ceil((limits.min_new_tokens + s * span) / 32))
    tokens = max(tokens, min(max(required_tokens, 0), limits.max_new_tokens))
    hops = min(limits.max_hops, 1 + math.floor(s * limits.max_hops))
    return Budget(
        beam_width=beam,
        max_new_tokens=tokens,
        evidence_hops=hops,
        counterfactual_checks=s >= limits.counterfactual_threshold,
    )
