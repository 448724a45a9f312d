"""Test doubles of the ``Steering`` protocol that push the model along a fixed token path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class At:
    """How far along the target a beam is (-1: it left the path)."""

    index: int

    @property
    def finished(self) -> bool:
        return False


class Push:
    """Pushes the model along ``target`` (token ids) while the beam follows it."""

    def __init__(self, target: list[int], bonus: float = 40.0, force: bool = False) -> None:
        self.target = target
        self.bonus = bonus
        self.force = force  # mask every other token, like a grammar with one allowed path

    def initial_state(self) -> At:
        return At(0)

    def apply(self, states: list[At], logprobs: torch.Tensor) -> torch.Tensor:
        out = logprobs.clone()
        for row, state in enumerate(states):
            if 0 <= state.index < len(self.target):
                keep = out[row, self.target[state.index]] + self.bonus
                if self.force:
                    out[row] = float("-inf")
                out[row, self.target[state.index]] = keep
        return out

    def advance(self, state: At, token_id: int) -> At:
        if 0 <= state.index < len(self.target) and token_id == self.target[state.index]:
            return At(state.index + 1)
        return At(-1)


def drive_towards(steering: Any, wanted: str, tokenizer: Any, steps: int) -> str:
    """The text greedy decoding writes under ``steering`` (a real one) from logits that want
    ``wanted``: the next token of its rest while the text follows it, and its words always a little."""
    vocab = len(steering.tables.token_bytes)
    words = tokenizer.encode(wanted, add_special_tokens=False)
    state = steering.initial_state()
    for _ in range(steps):
        logits = torch.full((1, vocab), -10.0)
        logits[0, words] = -2.0
        if wanted.startswith(state.text) and len(state.text) < len(wanted):
            logits[0, tokenizer.encode(wanted[len(state.text):], add_special_tokens=False)[0]] = 0.0
        out = steering.apply([state], torch.log_softmax(logits, dim=-1))
        state = steering.advance(state, int(out[0].argmax()))
        if state.finished:
            break
    return str(state.text)
