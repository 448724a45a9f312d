"""Counterfactual contrast: a claim and its variants scored together, in one batched forward.

Each text is scored as a continuation of its branch's prompt (the request and
that view's evidence), reusing the prompt's prefilled KV.

``window_contrast`` is what the decoder's judge uses. A minimal variant
(negation flipped, an entity swapped, a number or date shifted) differs from
its claim in one short span, so only that span matters: the claim is run
once (one row extending the prompt KV), then every variant's changed span
plus ``lookahead`` tokens is run as one ragged ``[K, W]`` batch whose rows
each see the prompt and the claim's tokens before their change (the same
physical-columns-and-masks mechanism as the beam search). The contrast of a
variant is the claim's mean log-probability over its window minus the
variant's over its own; the step's contrast is the smallest (the claim
against its most likely variant): positive when the evidence favours the
claim, negative when it favours a counterfactual. Cost: ``len(claim) + K * W``
token positions (the claim only up to its last window) instead of
``K * len(claim)``.

``row_contrast`` is what the judge uses when the beam search hands it the
beam's row of the decode's KV slab (``RowContext``). The claim was chosen by
the decode, so its tokens' log-probabilities are already known (the beam
keeps them): nothing of the claim is re-run. Each variant's row gets the
row's keys and values before its change (the prompt and the answer so far,
gathered from the visible columns; keys are stored rotary-embedded at their
logical positions, so a gather keeps them exact), then runs the token just
before the change and its window. The claim and its variants are thus
scored in the answer's own context (the text before the claim included), at
the sum of the variants' window widths in token positions. ``rows_contrast``
does it for every claim of one answer at once: all their variant rows are
one ragged batch over the row, a forward per window width (rows of equal
width together, so no padded position is run or counted).

``token_logprobs`` scores whole continuations (their shared leading tokens run
once); ``score_continuations`` averages them.

FLOPs are booked under ``counterfactual`` in the runner's counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from inference.decoder.kv_slab import PrefixKV, SlabCache
from inference.decoder.runner import ModelRunner
from reasoning.errors import InvalidInput

__all__ = [
    "Contrast",
    "RowClaim",
    "RowContext",
    "contrast",
    "row_contrast",
    "row_cost",
    "rows_contrast",
    "rows_cost",
    "score_continuations",
    "scored_tokens",
    "shared_prefix",
    "token_logprobs",
    "window_contrast",
    "window_cost",
]


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
    """The log-probability of every token of each continuation after the prompt.

    The continuations' shared leading tokens (a claim and its variants agree
    up to the first changed word) are run once, on one row; only the
    differing tails are run as the ``[K, T]`` batch, one forward for all
    variants. The numbers are those of running every continuation whole.
    """
    texts = [list(c) for c in continuations if c]
    if len(texts) != len(continuations):
        raise InvalidInput("continuations must be non-empty")
    shared = shared_prefix(texts)
    if not shared:
        return _batched(runner, prompt_kv, prompt_len, first_logprobs, texts, pad_id)
    head = texts[0][:shared]
    kv, head_lp = _extend(runner, prompt_kv, prompt_len, head)  # head_lp: [C, V]
    prefix = [float(first_logprobs[head[0]])]
    if shared > 1:
        idx = torch.tensor(head[1:], dtype=torch.long, device=head_lp.device)
        prefix += head_lp[:-1].gather(1, idx.unsqueeze(1)).squeeze(1).tolist()
    tails = _batched(
        runner, kv, prompt_len + shared, head_lp[-1], [t[shared:] for t in texts], pad_id
    )
    return [prefix + tail for tail in tails]


def shared_prefix(texts: Sequence[Sequence[int]]) -> int:
    """How many leading tokens every text shares, leaving each at least one token of its own."""
    limit = min(len(t) for t in texts) - 1
    n = 0
    while n < limit and all(t[n] == texts[0][n] for t in texts):
        n += 1
    return n


def scored_tokens(continuations: Sequence[Sequence[int]]) -> int:
    """The token positions ``token_logprobs`` runs for these continuations (its FLOPs measure)."""
    shared = shared_prefix(continuations) if continuations else 0
    tail = max(len(c) for c in continuations) - shared if continuations else 0
    return shared + len(continuations) * tail


def _extend(
    runner: ModelRunner, prompt_kv: PrefixKV, prompt_len: int, ids: Sequence[int]
) -> tuple[PrefixKV, torch.Tensor]:
    """The prompt KV extended by ``ids`` (one row) and the log-probabilities after each id ``[C, V]``."""
    dev = runner.device
    cache = runner.new_cache(1, prompt_len + len(ids))
    for layer, (keys, values) in zip(cache.slab_layers, prompt_kv):
        layer.load_row(0, keys, values)
    cache.set_length(prompt_len)
    tokens = torch.tensor([list(ids)], dtype=torch.long, device=dev)  # [1, C]
    pos = (prompt_len + torch.arange(len(ids), device=dev)).unsqueeze(0)  # [1, C]
    mask = torch.ones((1, prompt_len + len(ids)), dtype=torch.bool, device=dev)
    logits = runner.forward(tokens, pos, mask, cache, purpose="counterfactual", last_only=False)
    kv = tuple(layer.used() for layer in cache.slab_layers)
    return kv, torch.log_softmax(logits[0], dim=-1)  # [C, V]


def _batched(
    runner: ModelRunner,
    prompt_kv: PrefixKV,
    prompt_len: int,
    first_logprobs: torch.Tensor,
    texts: Sequence[Sequence[int]],
    pad_id: int,
) -> list[list[float]]:
    """Every text right-padded into one ``[K, S]`` batch on K copies of the prompt KV; one forward."""
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
        ids[row, : len(text)] = torch.tensor(list(text), dtype=torch.long)
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


@dataclass(frozen=True)
class Contrast:
    """A claim against its variants: ``value`` (nats per token), the best variant (1-based)."""

    value: float
    best: int
    claim_logprobs: tuple[float, ...]  # the claim's token log-probabilities up to its last window


def _windows(
    claim: Sequence[int], variant: Sequence[int], lookahead: int
) -> tuple[int, int, int]:
    """(start, claim end, variant end) of the span where ``variant`` departs from ``claim``."""
    n, m = len(claim), len(variant)
    start = 0
    while start < min(n, m) and claim[start] == variant[start]:
        start += 1
    start = min(start, n - 1, m - 1)  # one text extends the other: its last token is the change
    suffix = 0
    while suffix < min(n, m) - start and claim[n - 1 - suffix] == variant[m - 1 - suffix]:
        suffix += 1
    claim_end = min(n, max(start + 1, n - suffix + lookahead))
    variant_end = min(m, max(start + 1, m - suffix + lookahead))
    return start, claim_end, variant_end


def window_cost(
    claim: Sequence[int], variants: Sequence[Sequence[int]], lookahead: int = 2
) -> int:
    """The token positions ``window_contrast`` runs (its FLOPs measure)."""
    spans = [_windows(claim, v, lookahead) for v in variants]
    width = max((end - start for start, _, end in spans), default=0)
    needed = max((c_end for _, c_end, _ in spans), default=0)
    return needed + len(spans) * width


def window_contrast(
    runner: ModelRunner,
    prompt_kv: PrefixKV,
    prompt_len: int,
    first_logprobs: torch.Tensor,
    claim: Sequence[int],
    variants: Sequence[Sequence[int]],
    *,
    lookahead: int = 2,
    pad_id: int = 0,
) -> Contrast:
    """The claim against its variants, scored on their changed spans (see the module doc)."""
    if not claim or not variants or any(not v or list(v) == list(claim) for v in variants):
        raise InvalidInput("a claim and its variants must be non-empty and differ")
    dev = runner.device
    spans = [_windows(claim, v, lookahead) for v in variants]
    c = max(c_end for _, c_end, _ in spans)  # claim tokens after every window are not needed
    kv, after = _extend(runner, prompt_kv, prompt_len, claim[:c])  # after: [C, V]
    claim_lp = [float(first_logprobs[claim[0]])]
    if c > 1:
        idx = torch.tensor(list(claim[1:c]), dtype=torch.long, device=dev)
        claim_lp += after[:-1].gather(1, idx.unsqueeze(1)).squeeze(1).tolist()
    k = len(variants)
    width = max(v_end - start for start, _, v_end in spans)
    base = prompt_len + c
    cache = runner.new_cache(k, base + width)
    for layer, (keys, values) in zip(cache.slab_layers, kv):
        for row in range(k):
            layer.load_row(row, keys, values)
    cache.set_length(base)
    ids = torch.full((k, width), pad_id, dtype=torch.long, device=dev)  # [K, W]
    pos = torch.zeros((k, width), dtype=torch.long, device=dev)  # [K, W]
    mask = torch.zeros((k, base + width), dtype=torch.bool, device=dev)  # [K, L + C + W]
    for row, (variant, (start, _, v_end)) in enumerate(zip(variants, spans)):
        span = list(variant[start:v_end])
        ids[row, : len(span)] = torch.tensor(span, dtype=torch.long)
        pos[row] = prompt_len + start + torch.arange(width, device=dev)
        mask[row, : prompt_len + start] = True  # the prompt and the claim before the change
        mask[row, base : base + len(span)] = True
    logits = runner.forward(ids, pos, mask, cache, purpose="counterfactual", last_only=False)
    logprobs = torch.log_softmax(logits, dim=-1)  # [K, W, V]
    scores: list[float] = []
    for row, (variant, (start, c_end, v_end)) in enumerate(zip(variants, spans)):
        opening = first_logprobs if start == 0 else after[start - 1]  # [V]
        v_lp = [float(opening[variant[start]])]
        for j in range(1, v_end - start):
            v_lp.append(float(logprobs[row, j - 1, variant[start + j]]))
        c_lp = claim_lp[start:c_end]
        scores.append(sum(c_lp) / len(c_lp) - sum(v_lp) / len(v_lp))
    best = min(range(k), key=lambda i: scores[i])
    return Contrast(value=scores[best], best=best + 1, claim_logprobs=tuple(claim_lp))


@dataclass(frozen=True)
class RowContext:
    """Where a beam's answer so far lives in the decode's KV slab (see ``row_contrast``).

    ``visible`` is the row's padding mask over the written columns ``[C]``
    (True: a column the row attends to); in column order the visible columns
    are the row's logical positions ``0, 1, ...``: the branch prompt
    (``prompt_length`` tokens, the last one ``prompt_last_token``) then the
    answer's tokens that have been fed. It is valid while the row holds that
    beam: during the judge call that receives it, before the rows move.
    """

    cache: SlabCache
    row: int
    visible: torch.Tensor  # [C] bool
    prompt_length: int
    prompt_last_token: int


def row_cost(
    claim: Sequence[int], variants: Sequence[Sequence[int]], lookahead: int = 2
) -> int:
    """The token positions ``row_contrast`` runs (its FLOPs measure): each variant its window
    (variants of equal window width share a forward, so none is padded)."""
    return sum(end - start for start, _, end in (_windows(claim, v, lookahead) for v in variants))


@dataclass(frozen=True)
class RowClaim:
    """One claim of a row's answer, ``tokens[start:end]``, and its variants (each a whole
    alternative of the claim's tokens)."""

    start: int
    end: int
    variants: tuple[tuple[int, ...], ...]


def rows_cost(tokens: Sequence[int], claims: Sequence[RowClaim], lookahead: int = 2) -> int:
    """The token positions ``rows_contrast`` runs for ``claims`` of the answer ``tokens``."""
    return sum(row_cost(tokens[c.start : c.end], c.variants, lookahead) for c in claims)


def row_contrast(
    runner: ModelRunner,
    context: RowContext,
    tokens: Sequence[int],
    start: int,
    logprobs: Sequence[float],
    variants: Sequence[Sequence[int]],
    *,
    lookahead: int = 2,
    pad_id: int = 0,
) -> Contrast:
    """The claim ``tokens[start:]`` against its ``variants`` over the row's own KV (module doc).

    ``logprobs[k]`` is the model's log-probability of ``tokens[k]`` where the
    decode chose it (before steering). Every variant is a whole alternative
    of the claim (its tokens, not the answer's); each is scored on its
    changed window, as ``window_contrast`` does, but in the context of the
    answer before the claim. The row must have been fed every answer token
    before the last one of the claim (the beam search's parent row is).
    """
    claim = RowClaim(start, len(tokens), tuple(tuple(v) for v in variants))
    return rows_contrast(runner, context, tokens, logprobs, [claim], lookahead=lookahead, pad_id=pad_id)[0]


def rows_contrast(
    runner: ModelRunner,
    context: RowContext,
    tokens: Sequence[int],
    logprobs: Sequence[float],
    claims: Sequence[RowClaim],
    *,
    lookahead: int = 2,
    pad_id: int = 0,
) -> list[Contrast]:
    """Every claim of one answer (``tokens``, the row's) against its variants, as
    ``row_contrast`` scores one: all their variant rows in one ragged batch over the row's
    KV, one forward per window width (rows of equal width together, so no row is padded)."""
    if not claims:
        return []
    jobs: list[tuple[int, tuple[int, ...], tuple[int, int, int]]] = []  # (claim, variant, span)
    for n, c in enumerate(claims):
        body = list(tokens[c.start : c.end])
        if not body or not c.variants or any(not v or list(v) == body for v in c.variants):
            raise InvalidInput("a claim and its variants must be non-empty and differ")
        if len(logprobs) < c.end:
            raise InvalidInput("every claim token needs its log-probability")
        jobs.extend((n, tuple(v), _windows(body, v, lookahead)) for v in c.variants)
    columns = context.visible.nonzero().squeeze(1)  # [P + fed] in logical order
    # Row r keeps the logical positions before its change's input token: base + s - 1.
    kept = [context.prompt_length + claims[n].start + span[0] - 1 for n, _, span in jobs]
    if max(kept) > int(columns.numel()):
        raise InvalidInput("the row has not been fed the answer before the claims' changes")
    v_scores: list[list[float]] = [[] for _ in jobs]
    widths = sorted({end - s for _, _, (s, _, end) in jobs})
    for width in widths:
        group = [j for j, (_, _, (s, _, end)) in enumerate(jobs) if end - s == width]
        held = max(kept[j] for j in group)
        _score_group(runner, context, tokens, claims, jobs, kept, group, held, width, columns, v_scores, pad_id)
    out: list[Contrast] = []
    for n, c in enumerate(claims):
        scores: list[float] = []
        for j, (m, _, (s, c_end, _)) in enumerate(jobs):
            if m != n:
                continue
            c_lp = [float(x) for x in logprobs[c.start + s : c.start + c_end]]
            v_lp = v_scores[j]
            scores.append(sum(c_lp) / len(c_lp) - sum(v_lp) / len(v_lp))
        best = min(range(len(scores)), key=lambda i: scores[i])
        out.append(
            Contrast(
                value=scores[best],
                best=best + 1,
                claim_logprobs=tuple(float(x) for x in logprobs[c.start : c.end]),
            )
        )
    return out


def _score_group(
    runner: ModelRunner,
    context: RowContext,
    tokens: Sequence[int],
    claims: Sequence[RowClaim],
    jobs: Sequence[tuple[int, tuple[int, ...], tuple[int, int, int]]],
    kept: Sequence[int],
    group: Sequence[int],
    held: int,
    width: int,
    columns: torch.Tensor,
    v_scores: list[list[float]],
    pad_id: int,
) -> None:
    """One forward for the variant rows ``group`` (all ``width`` wide): each row gets the
    row's keys and values before its change, then runs its window; fills ``v_scores``."""
    dev = runner.device
    k = len(group)
    cache = runner.new_cache(k, held + width)
    index = columns[:held]
    for source, target in zip(context.cache.slab_layers, cache.slab_layers):
        keys, values = source.used()
        row_k = keys[context.row : context.row + 1].index_select(2, index)  # [1, H, held, D]
        row_v = values[context.row : context.row + 1].index_select(2, index)
        for r in range(k):
            target.load_row(r, row_k, row_v)
    cache.set_length(held)
    ids = torch.full((k, width), pad_id, dtype=torch.long, device=dev)  # [K, W]
    pos = torch.zeros((k, width), dtype=torch.long, device=dev)  # [K, W]
    mask = torch.zeros((k, held + width), dtype=torch.bool, device=dev)  # [K, held + W]
    for row, j in enumerate(group):
        n, variant, (s, _, v_end) = jobs[j]
        start = claims[n].start
        before = tokens[start + s - 1] if start + s > 0 else None
        prior = context.prompt_last_token if before is None else before
        feed = [prior, *variant[s : v_end - 1]]
        ids[row, : len(feed)] = torch.tensor(feed, dtype=torch.long)
        pos[row] = kept[j] + torch.arange(width, device=dev)
        mask[row, : kept[j]] = True
        mask[row, held : held + len(feed)] = True
    logits = runner.forward(ids, pos, mask, cache, purpose="counterfactual", last_only=False)
    lp = torch.log_softmax(logits, dim=-1)  # [K, W, V]
    for row, j in enumerate(group):
        _, variant, (s, _, v_end) = jobs[j]
        target_ids = torch.tensor(list(variant[s:v_end]), dtype=torch.long, device=lp.device)
        v_scores[j] = lp[row, : v_end - s].gather(1, target_ids.unsqueeze(1)).squeeze(1).tolist()
