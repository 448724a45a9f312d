"""Counterfactual contrast: a claim and its variants scored together, in one forward pass.

Each text is scored as a continuation of its branch's prompt (the request and
that view's evidence), reusing the prompt's prefilled KV: the K texts are
right-padded into one ``[K, S]`` batch on K copies of the prompt KV, so the
model runs once for all of them. The score of a text is its mean per-token
log-likelihood (texts of different length stay comparable); the contrast is
``score(claim) - max(score(variant))``: positive when the evidence favours the
claim, negative when it favours a counterfactual.

FLOPs are booked under ``counterfactual`` in the runner's counters.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from inference.decoder.kv import PrefixKV
from inference.decoder.runner import ModelRunner
from reasoning.errors import InvalidInput

__all__ = ["contrast", "score_continuations", "token_logprobs"]


def score_continuations(
    runner: ModelRunner,
    prompt_kv: PrefixKV,
    prompt_len: int,
    first_logprobs: torch.Tensor,
    continuations: Sequence[Sequence[int]],
    pad_id: int = 0,
) -> list[float]:
    """Mean log-likelihood per token of each continuation after the prompt (one forward).

    ``first_logprobs: [V]`` are the log-probabilities after the prompt's last
    token (kept from the prefill), which score each continuation's first token.
    """
    per_token = token_logprobs(runner, prompt_kv, prompt_len, first_logprobs, continuations, pad_id)
    return [sum(lps) / len(lps) for lps in per_token]


def token_logprobs(
    runner: ModelRunner,
    prompt_kv: PrefixKV,
    prompt_len: int,
    first_logprobs: torch.Tensor,
    continuations: Sequence[Sequence[int]],
    pad_id: int = 0,
) -> list[list[float]]:
    """The log-probability of every token of each continuation after the prompt (one forward)."""
    texts = [list(c) for c in continuations if c]
    if len(texts) != len(continuations):
        raise InvalidInput("continuations must be non-empty")
    k, s_max = len(texts), max(len(t) for t in texts)
    dev = runner.device
    cache = runner.new_cache(k, prompt_len + s_max)
    for layer, (keys, values) in zip(cache.slab_layers, prompt_kv):
        for row in range(k):
            layer.load_row(row, keys, values)
    cache.set_length(prompt_len)
    ids = torch.full((k, s_max), pad_id, dtype=torch.long, device=dev)  # [K, S]
    mask = torch.zeros((k, prompt_len + s_max), dtype=torch.bool, device=dev)  # [K, L + S]
    mask[:, :prompt_len] = True
    for row, text in enumerate(texts):
        ids[row, : len(text)] = torch.tensor(text, dtype=torch.long)
        mask[row, prompt_len : prompt_len + len(text)] = True
    pos = (prompt_len + torch.arange(s_max, device=dev)).unsqueeze(0).expand(k, -1)  # [K, S]
    logits = runner.forward(
        ids, pos, mask, cache, purpose="counterfactual", last_only=False
    )  # [K, S, V]
    logprobs = torch.log_softmax(logits[:, :-1], dim=-1)  # [K, S-1, V]: predicts tokens 1..S-1
    nxt = logprobs.gather(2, ids[:, 1:].unsqueeze(-1)).squeeze(-1)  # [K, S-1]
    first = first_logprobs[ids[:, 0]]  # [K]
    per_token = torch.cat([first.unsqueeze(1), nxt], dim=1)  # [K, S]
    rows: list[list[float]] = per_token.tolist()
    return [row[: len(text)] for row, text in zip(rows, texts)]


def contrast(scores: Sequence[float]) -> tuple[float, int]:
    """``scores[0]`` (the claim) minus the best variant score, and that variant's index (1-based)."""
    best = max(range(1, len(scores)), key=lambda i: scores[i])
    return scores[0] - scores[best], best
