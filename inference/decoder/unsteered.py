"""The identity ``Steering``: plain decoding of the same model, for comparison and for soft-only requests."""

from __future__ import annotations

import torch

from inference.decoder.steering_protocol import SteeringState

__all__ = ["Unsteered", "UnsteeredState"]


class UnsteeredState:
    """Stateless: a plain beam only stops on EOS or the token limit."""

    __slots__ = ()

    @property
    def finished(self) -> bool:
        return False


_STATE = UnsteeredState()


class Unsteered:
    """Leaves the log-probabilities untouched (``steering: false``)."""

    def initial_state(self) -> SteeringState:
        return _STATE

    def apply(self, states: list[SteeringState], logprobs: torch.Tensor) -> torch.Tensor:
        return logprobs

    def advance(self, state: SteeringState, token_id: int) -> SteeringState:
        return _STATE
