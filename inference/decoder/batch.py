"""The ragged batch: several sequences of different prompt lengths decoded in lockstep.

Every row writes the token of decode step ``t`` to the same physical column
of the KV slab; a row whose prompt is shorter than the longest carries
attention-mask zeros on the columns in the middle it does not use, and its
``positions`` are its own logical positions (so rotary embeddings see no
gap). The same layout serves evidence branches of one request (shared prompt
prefix + a per-branch suffix) and, later, concurrent requests micro-batched
together (``request_of_row``). A row rolled back by a step repair masks the
columns it abandons and restarts its positions, with no copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from inference.decoder.kv_slab import PrefixKV, SlabCache
from inference.decoder.runner import ModelRunner
from reasoning.errors import InvalidInput

__all__ = ["BatchState", "PartStore", "prefill_branches", "prefill_prefix"]


@dataclass
class BatchState:
    """Everything a decode step needs besides the model: mutable, owned by one decode."""

    cache: SlabCache
    mask: torch.Tensor  # [N, C] bool: column c holds a token row r may attend to
    columns: int  # physical columns written so far
    positions: torch.Tensor  # [N] long: logical position of each row's next input token
    branch_of_row: tuple[int, ...]  # branch index of every row (row // width)
    request_of_row: tuple[str, ...]  # request id of every row (micro-batching)
    prompt_lengths: tuple[int, ...]  # per branch: logical prompt length
    prompt_last_token: tuple[int, ...]  # per branch: last prompt token id (for step repair)
    prompt_last_column: tuple[int, ...]  # per branch: physical column of that token
    width: int
    branch_kv: tuple[PrefixKV, ...] = ()  # per branch: the prompt's KV [1, H, L_b, D] (read-only)
    first_logits: torch.Tensor | None = None  # [B, V]: next-token logits after each branch prompt
    shared_columns: int = 0  # columns every row of a branch holds identically (its prompt)

    @property
    def rows(self) -> int:
        return len(self.branch_of_row)

    def fork(self, dst: Sequence[int], src: Sequence[int]) -> None:
        """Rows ``dst[i]`` become copies of rows ``src[i]`` (cache and mask); only changed rows move.

        ``dst[i]`` and ``src[i]`` must be rows of the same branch: only the
        columns after the branch's shared prompt are copied.
        """
        if not dst:
            return
        self.cache.copy_rows(dst, src, self.shared_columns)
        d = torch.tensor(list(dst), dtype=torch.long, device=self.mask.device)
        s = torch.tensor(list(src), dtype=torch.long, device=self.mask.device)
        self.mask[d] = self.mask[s]
        self.positions[d] = self.positions[s]


def prefill_prefix(runner: ModelRunner, prefix_ids: Sequence[int]) -> PrefixKV:
    """Prefill the shared prompt prefix once; return its per-layer keys and values ``[1, H, L, D]``."""
    if not prefix_ids:
        return ()
    n = len(prefix_ids)
    cache = runner.new_cache(1, n)
    ids = torch.tensor([list(prefix_ids)], dtype=torch.long, device=runner.device)  # [1, L]
    pos = torch.arange(n, device=runner.device).unsqueeze(0)  # [1, L]
    mask = torch.ones((1, n), dtype=torch.bool, device=runner.device)
    runner.forward(ids, pos, mask, cache, purpose="prefill", last_only=True)
    return tuple(layer.used() for layer in cache.slab_layers)


def prefill_branches(
    runner: ModelRunner,
    prefix_len: int,
    prefix_kv: PrefixKV,
    suffixes: Sequence[Sequence[int]],
    *,
    width: int,
    max_new_tokens: int,
    slack: int = 0,
    pad_id: int = 0,
    request_ids: Sequence[str] | None = None,
    shared: Sequence[int] = (),
    parts_store: PartStore | None = None,
    prefix_ids: Sequence[int] = (),
) -> tuple[BatchState, torch.Tensor]:
    """Prefill every branch suffix on the shared prefix; expand to ``width`` beams.

    Returns the batch (rows ``b * width .. b * width + width - 1`` belong to
    branch ``b``) and the next-token logits of each branch ``[B, V]``.
    Suffixes of near lengths are prefilled in one forward (``_bins``: a much
    shorter one gets its own rather than padding), right-padded, and each
    forward's last tokens end on one column (``_prefill_rests``); the pad
    columns stay masked. Every row's suffix starts on the same column.

    ``shared[b]`` (when given) is how many leading tokens of suffix ``b`` it
    shares with the branches whose suffixes begin with the same tokens (a
    group: ``prompting.PromptPlan.shared``). Each group's part is prefilled
    once, in one forward for all groups, and its keys and values are copied
    into its branches' rows before the rest of every suffix is prefilled:
    the same keys, values and logits as prefilling each suffix whole, for
    one group part's tokens instead of one per branch. A row then holds
    ``prefix | its group's part | masked columns up to the longest part |
    the rest of its suffix``; its positions are its own logical ones
    (``prompt_last_column`` is the physical column of its last token, and
    ``branch_kv`` its prompt's keys and values without the gap).

    ``parts_store`` (with the prefix's ``prefix_ids``) keeps each group part's
    keys and values across decodes, keyed by the prefix and the part's tokens
    (a tenant's ``PrefixScope``): a part found there is not prefilled again,
    one prefilled is stored. The FLOPs a found part saves are counted under
    ``prefill_reused`` (what its forward would have counted), so the
    counterfactual checks' budget, a share of every FLOPs count, is the same
    whether the parts were found or prefilled.
    """
    if not suffixes or any(len(s) == 0 for s in suffixes):
        raise InvalidInput("every branch needs a non-empty prompt suffix")
    cut = [int(shared[b]) if shared else 0 for b in range(len(suffixes))]
    if len(cut) != len(suffixes) or any(not 0 <= c < len(s) for c, s in zip(cut, suffixes)):
        raise InvalidInput("a branch's shared part must be shorter than its suffix")
    dev = runner.device
    n_branch = len(suffixes)
    parts = list(dict.fromkeys(tuple(s[:c]) for s, c in zip(suffixes, cut) if c))
    part_of = [parts.index(tuple(s[:c])) if c else -1 for s, c in zip(suffixes, cut)]
    g_max = max((len(p) for p in parts), default=0)
    rests = [s[c:] for s, c in zip(suffixes, cut)]
    r_max = max(len(r) for r in rests)
    start = prefix_len + g_max  # the physical column of every suffix rest's first token
    used = start + r_max
    capacity = used + max_new_tokens + slack
    group_kv = (
        _group_parts(runner, prefix_len, prefix_kv, parts, pad_id, parts_store, tuple(prefix_ids))
        if parts
        else []
    )
    mask = torch.zeros((n_branch, capacity), dtype=torch.bool, device=dev)  # [B, C]
    mask[:, :prefix_len] = True
    cache = runner.new_cache(n_branch * width, capacity)
    next_logits: list[torch.Tensor] = [torch.empty(0)] * n_branch
    last_column = [0] * n_branch
    kv_rows: list[PrefixKV] = [()] * n_branch
    for members in _bins([len(r) for r in rests]):
        longest = max(len(rests[b]) for b in members)
        work = runner.new_cache(len(members), start + longest)
        for i, layer in enumerate(work.slab_layers):
            for j, b in enumerate(members):
                if part_of[b] >= 0:
                    layer.load_row(j, *group_kv[part_of[b]][i])
                elif prefix_kv:
                    layer.load_row(j, *prefix_kv[i])
        work.set_length(start)
        for b in members:
            mask[b, prefix_len : prefix_len + cut[b]] = True
        logits = _prefill_rests(runner, work, mask, members, [rests[b] for b in members], start, longest,
                                [prefix_len + cut[b] for b in members], pad_id)
        for j, b in enumerate(members):
            next_logits[b] = logits[j]
            last_column[b] = start + longest - 1
            kv_rows[b] = _prompt_kv(work, mask[b, : start + longest], j, prefix_len + len(suffixes[b]))
        expand = torch.tensor([b * width + k for b in members for k in range(width)], device=dev)
        for big, small in zip(cache.slab_layers, work.slab_layers):
            assert big._k is not None and big._v is not None and small._k is not None and small._v is not None
            big._k[:, :, : start + longest].index_copy_(0, expand, small._k.repeat_interleave(width, dim=0))
            big._v[:, :, : start + longest].index_copy_(0, expand, small._v.repeat_interleave(width, dim=0))
    cache.set_length(used)
    cache.share(used, width)  # a branch's beams hold its prompt alike until they fork after it
    first = torch.stack(next_logits)  # [B, V]
    lengths = tuple(prefix_len + len(s) for s in suffixes)
    rows = n_branch * width
    state = BatchState(
        cache=cache,
        mask=mask.repeat_interleave(width, dim=0),
        columns=used,
        positions=torch.tensor(
            [lengths[r // width] for r in range(rows)], dtype=torch.long, device=dev
        ),
        branch_of_row=tuple(r // width for r in range(rows)),
        request_of_row=tuple(request_ids[r // width] if request_ids else "" for r in range(rows)),
        prompt_lengths=lengths,
        prompt_last_token=tuple(int(s[-1]) for s in suffixes),
        prompt_last_column=tuple(last_column),
        width=width,
        branch_kv=tuple(kv_rows),
        first_logits=first,
        shared_columns=used,
    )
    return state, first


def _bins(lengths: Sequence[int]) -> list[list[int]]:
    """Branches grouped for their rests' forwards, longest first: a rest joins a forward while
    the padding it needs is at most ``max(32, longest // 4)`` tokens, else it starts another
    (a pad token costs a real one's compute; a forward more costs little beside 32 tokens)."""
    bins: list[list[int]] = []
    for b in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if bins and lengths[bins[-1][0]] - lengths[b] <= max(32, lengths[bins[-1][0]] // 4):
            bins[-1].append(b)
        else:
            bins.append([b])
    return bins


def _prefill_rests(
    runner: ModelRunner,
    work: SlabCache,
    mask: torch.Tensor,
    rows: Sequence[int],
    rests: Sequence[Sequence[int]],
    start: int,
    longest: int,
    offsets: Sequence[int],
    pad_id: int,
) -> torch.Tensor:
    """Prefill ``rests`` (branches ``rows``) into ``work`` from column ``start``; their next-token
    logits ``[len(rows), V]``.

    Rests of one length go in at once. Otherwise every rest but its last token goes in
    right-padded; the last tokens then go in together at column ``start + longest - 1`` (a
    shorter rest leaves masked columns before it), so only that column's logits are computed:
    the LM head over every position of a ragged batch is most of a short prefill's cost in
    low precision. ``mask`` rows ``rows`` are filled in.
    """
    dev = runner.device
    n = len(rows)
    ids = torch.full((n, longest), pad_id, dtype=torch.long, device=dev)  # [n, S]
    pos = torch.zeros((n, longest), dtype=torch.long, device=dev)  # [n, S]
    sub = torch.zeros((n, start + longest), dtype=torch.bool, device=dev)  # [n, C]
    for j, (b, rest, offset) in enumerate(zip(rows, rests, offsets)):
        body = len(rest) - 1
        ids[j, :body] = torch.tensor(list(rest[:body]), dtype=torch.long)
        ids[j, -1] = int(rest[-1])
        pos[j] = offset + torch.arange(longest, device=dev)
        pos[j, -1] = offset + body
        mask[b, start : start + body] = True
        mask[b, start + longest - 1] = True
        sub[j] = mask[b, : start + longest]
    if len({len(r) for r in rests}) == 1:  # they all end on the last column already
        return runner.forward(ids, pos, sub, work, purpose="prefill", last_only=True)[:, -1]
    runner.forward(ids[:, :-1], pos[:, :-1], sub[:, :-1], work, purpose="prefill", last_only=True)
    logits = runner.forward(ids[:, -1:], pos[:, -1:], sub, work, purpose="prefill", last_only=True)
    return logits[:, -1]


class PartStore(Protocol):
    """Where prefilled group parts are kept across decodes (``prefix_cache.PrefixScope``)."""

    def get(self, token_ids: Sequence[int]) -> PrefixKV | None: ...

    def put(self, token_ids: Sequence[int], kv: PrefixKV) -> bool: ...


def _group_parts(
    runner: ModelRunner,
    prefix_len: int,
    prefix_kv: PrefixKV,
    parts: Sequence[Sequence[int]],
    pad_id: int,
    store: PartStore | None,
    prefix_ids: tuple[int, ...],
) -> list[PrefixKV]:
    """Per group part, the keys and values of the prefix and the part ``[1, H, prefix_len +
    len(part), D]`` per layer: found in ``store`` (keyed by ``prefix_ids + part``), the rest
    prefilled together in one forward (``_prefill_parts``) and stored (a copy of their own)."""
    keys = [prefix_ids + tuple(part) for part in parts]
    found: list[PrefixKV | None] = [
        store.get(key) if store is not None and len(prefix_ids) == prefix_len else None
        for key in keys
    ]
    missing = [g for g, kv in enumerate(found) if kv is None]
    flops = runner.counters.flops
    before = flops.get("prefill", 0.0)
    if missing:
        fresh = _prefill_parts(runner, prefix_len, prefix_kv, [parts[g] for g in missing], pad_id)
        for j, g in enumerate(missing):
            used = prefix_len + len(parts[g])
            kv = tuple((k[j : j + 1, :, :used], v[j : j + 1, :, :used]) for k, v in fresh)
            if store is not None and len(prefix_ids) == prefix_len:
                kv = tuple((k.clone(), v.clone()) for k, v in kv)
                store.put(keys[g], kv)
            found[g] = kv
    if len(missing) < len(parts):  # what one forward of every part would have counted
        whole = 2.0 * runner.parameters * len(parts) * max(len(p) for p in parts)
        spent = flops.get("prefill", 0.0) - before
        flops["prefill_reused"] = flops.get("prefill_reused", 0.0) + whole - spent
    return [kv for kv in found if kv is not None]


def _prefill_parts(
    runner: ModelRunner,
    prefix_len: int,
    prefix_kv: PrefixKV,
    parts: Sequence[Sequence[int]],
    pad_id: int,
) -> PrefixKV:
    """Each group's shared part prefilled on the prefix, one row per group, in one forward:
    per layer keys and values ``[G, H, prefix_len + longest part, D]`` (a shorter part's
    trailing columns hold padding no row of its group will attend to)."""
    dev = runner.device
    longest = max(len(p) for p in parts)
    used = prefix_len + longest
    cache = runner.new_cache(len(parts), used)
    for layer, (keys, values) in zip(cache.slab_layers, prefix_kv):
        for g in range(len(parts)):
            layer.load_row(g, keys, values)
    cache.set_length(prefix_len)
    ids = torch.full((len(parts), longest), pad_id, dtype=torch.long, device=dev)  # [G, S]
    mask = torch.zeros((len(parts), used), dtype=torch.bool, device=dev)  # [G, C]
    mask[:, :prefix_len] = True
    for g, part in enumerate(parts):
        ids[g, : len(part)] = torch.tensor(list(part), dtype=torch.long)
        mask[g, prefix_len : prefix_len + len(part)] = True
    pos = (prefix_len + torch.arange(longest, device=dev)).unsqueeze(0).expand(len(parts), -1)
    runner.forward(ids, pos, mask, cache, purpose="prefill", last_only=True)
    return tuple(layer.used() for layer in cache.slab_layers)


def _prompt_kv(work: SlabCache, row_mask: torch.Tensor, row: int, length: int) -> PrefixKV:
    """Row ``row``'s prompt keys and values ``[1, H, length, D]`` per layer: its unmasked
    columns (a view when they are its first ``length``, else gathered past its gap)."""
    layers = [layer.used() for layer in work.slab_layers]
    if bool(row_mask[:length].all()):
        return tuple((k[row : row + 1, :, :length], v[row : row + 1, :, :length]) for k, v in layers)
    columns = row_mask.nonzero().squeeze(1)
    return tuple(
        (k[row : row + 1].index_select(2, columns), v[row : row + 1].index_select(2, columns))
        for k, v in layers
    )
