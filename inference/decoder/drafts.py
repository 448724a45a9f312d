"""Speculative drafts without a draft model: prompt lookup, checked by the steering.

An answer often copies what its prompt shows: a rule id, a fact's wording,
a name from the request. Prompt lookup drafts such text for free: the
longest n-gram (``MAX_NGRAM`` down to ``MIN_NGRAM`` tokens) that ends the
answer so far and occurs in the branch's prompt (the request and its
evidence) proposes the tokens that follow it there. A forced token (the
steering leaves no alternative: ``Steering.forced``) is a draft that is
certain, so a row's draft is written position by position: the forced token
where there is one, else the lookup's next proposal (at most
``draft_tokens`` of those), and every proposed token is then checked by the
steering's masks at its own position (``Steering.apply``): the draft is cut
before the first token the steering would not allow there, since the search
could never select it.

The draft is only ever *fed* ahead (``forced_runs.feed_run``): the beam
search still selects every position from the logits of that forward, so a
wrong guess costs the columns given back, never a different token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from inference.decoder.steering_protocol import Steering, SteeringState

__all__ = ["MAX_NGRAM", "MIN_NGRAM", "PromptLookup", "RowDraft", "row_draft"]

#: Longest n-gram of the answer's tail looked up in the prompt.
MAX_NGRAM = 4
#: Shortest: a one-token match proposes too often and too badly to pay for the positions.
MIN_NGRAM = 2


class PromptLookup:
    """Per branch, where each n-gram of its prompt last occurs (``MIN_NGRAM`` .. ``MAX_NGRAM``).

    Built once per decode; ``propose`` is a few dictionary reads, never a scan.
    The last occurrence wins: the evidence and the request come after the
    system text, and they are what an answer copies.
    """

    def __init__(self, prompts: Sequence[Sequence[int]]) -> None:
        self._prompts = [tuple(int(t) for t in p) for p in prompts]
        self._index: list[dict[tuple[int, ...], int]] = []
        for prompt in self._prompts:
            index: dict[tuple[int, ...], int] = {}
            for n in range(MIN_NGRAM, MAX_NGRAM + 1):
                for end in range(n, len(prompt)):  # an n-gram that ends the prompt proposes nothing
                    index[prompt[end - n : end]] = end
            self._index.append(index)

    def propose(self, branch: int, tail: Sequence[int], k: int) -> list[int]:
        """Up to ``k`` tokens that follow the longest n-gram ending ``tail`` in branch ``branch``'s
        prompt; empty when no n-gram of at least ``MIN_NGRAM`` tokens occurs there."""
        if k <= 0:
            return []
        index, prompt = self._index[branch], self._prompts[branch]
        for n in range(min(MAX_NGRAM, len(tail)), MIN_NGRAM - 1, -1):
            end = index.get(tuple(tail[len(tail) - n :]))
            if end is not None:
                return list(prompt[end : end + k])
        return []


@dataclass(frozen=True)
class RowDraft:
    """One row's draft: its tokens, and per token whether the steering forced it (certain)."""

    tokens: tuple[int, ...]
    certain: tuple[bool, ...]


def row_draft(
    steering: Steering,
    state: SteeringState,
    answer: Sequence[int],
    *,
    limit: int,
    eos_ids: frozenset[int],
    lookup: PromptLookup | None,
    branch: int,
    guesses: int,
    vocab: int,
    device: torch.device,
) -> RowDraft:
    """The draft of a row at steering ``state`` after ``answer``: at most ``limit`` tokens.

    Each position takes the steering's forced token, else the lookup's next
    proposal while fewer than ``guesses`` were taken; it stops at EOS (ending
    is the search's decision), at a position with neither, and before the
    first proposal the steering's masks refuse at its position (rows of
    ``vocab`` scores on ``device``: where the search selects).
    """
    forced: Callable[[SteeringState], int | None] | None = getattr(steering, "forced", None)
    tokens: list[int] = []
    certain: list[bool] = []
    checks: list[tuple[int, SteeringState]] = []  # (index, state before) of every proposal
    proposals: list[int] = []
    while len(tokens) < limit:
        token = forced(state) if forced is not None else None
        guessed = token is None
        if not guessed:
            if proposals and proposals[0] == token:
                proposals.pop(0)
            else:
                proposals = []
        elif lookup is not None and len(checks) < guesses:
            if not proposals:
                proposals = lookup.propose(branch, [*answer, *tokens], guesses - len(checks))
            if not proposals:
                break
            token = proposals.pop(0)
            checks.append((len(tokens), state))
        else:
            break
        assert token is not None
        if token in eos_ids:
            if guessed:
                checks.pop()
            break
        tokens.append(token)
        certain.append(not guessed)
        state = steering.advance(state, token)
    cut = _first_refused(steering, checks, tokens, vocab, device)
    return RowDraft(tuple(tokens[:cut]), tuple(certain[:cut]))


def _first_refused(
    steering: Steering,
    checks: Sequence[tuple[int, SteeringState]],
    tokens: Sequence[int],
    vocab: int,
    device: torch.device,
) -> int:
    """The index of the first proposed token the steering masks at its position, else
    ``len(tokens)``: all of them in one ``apply``, each row scoring its proposal above every
    other token (a steering may check only its best candidates one by one: a proposal the
    model does not rank among them is never selected anyway, which the search's verify finds)."""
    if not checks:
        return len(tokens)
    picked = torch.tensor([tokens[i] for i, _ in checks], dtype=torch.long, device=device)
    scores = torch.full((len(checks), vocab), -1.0, device=device)  # [R, V]
    scores.scatter_(1, picked[:, None], 0.0)
    rows = steering.apply([s for _, s in checks], scores)
    allowed = torch.isfinite(rows.gather(1, picked[:, None].to(rows.device))[:, 0]).tolist()
    for (index, _), ok in zip(checks, allowed):
        if not ok:
            return index
    return len(tokens)
