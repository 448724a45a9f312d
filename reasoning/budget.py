"""The compute budget a request's cognitive entropy buys."""

from __future__ import annotations

import msgspec

__all__ = ["Budget"]


class Budget(msgspec.Struct, frozen=True, kw_only=True):
    beam_width: int
    max_new_tokens: int
    evidence_hops: int
    counterfactual_checks: bool
