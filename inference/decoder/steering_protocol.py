"""The contract between the beam search and the token controllers.

The beam search owns tensors, the KV cache and beam bookkeeping; a ``Steering``
owns everything the active constraints say about which token may come next.
Per step the search hands the steering the log-probabilities of all live beams
and their states; the steering masks (``-inf``) what would violate a hard
constraint and may move a masked token's probability to an allowed variant
(the case-folded token, the same word without the comma). When the search
keeps a candidate it asks the steering for the successor state; states are
immutable from the search's point of view, so a fork is free to share them.

Guarantees a Steering gives:
- a token it leaves allowed never makes a hard, controllable constraint
  certainly violated;
- ``apply`` leaves at least one finite entry per row whenever the state is
  not finished (it allows EOS rather than a dead end);
- its per-step cost is independent of the vocabulary size except for vector
  operations on the logits row (no per-token Python loops on the hot path).

A steering whose tables live on one device names it in an optional
``device`` attribute; the beam search then selects tokens there
(``beam.select_device``). One without it works on any device.

A steering may offer ``forced(state) -> int | None``: the token ``apply``
will leave ``state``'s row as its only choice whatever the model's scores
(a literal, a text being written), else None. The beam search drafts runs of
such tokens and feeds them in one forward (``forced_runs``); it still
selects every position through ``apply``, so a wrong answer costs time,
never a different token.
"""

from __future__ import annotations

from typing import Protocol

import torch

__all__ = ["Steering", "SteeringState"]


class SteeringState(Protocol):
    """Per-beam controller state (text so far, counters, grammar matcher)."""

    @property
    def finished(self) -> bool:
        """True when the beam must stop (EOS chosen or forced)."""
        ...


class Steering(Protocol):
    """Token-level controllers compiled from a request's hard constraints."""

    def initial_state(self) -> SteeringState:
        """The state of a beam before any generated token."""
        ...

    def apply(self, states: list[SteeringState], logprobs: torch.Tensor) -> torch.Tensor:
        """Return adjusted log-probabilities. ``logprobs: [B, V]``, one row per state."""
        ...

    def advance(self, state: SteeringState, token_id: int) -> SteeringState:
        """The successor state after ``token_id`` is appended to the beam."""
        ...
