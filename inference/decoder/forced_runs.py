"""Forced runs in one forward pass ("jump forward"): text the steering writes, fed ahead.

When the steering leaves a row no alternative for several tokens in a row
(a stated decision and its grounds, a layout literal, a citation, a text a
controller is writing, a grammar's only continuation), the one-token decode
loop would spend one forward pass per token on text that is already
decided. Here the run is *drafted* from the steering alone
(``Steering.forced``: the token a state leaves no alternative to, whatever
the model's scores), fed to the model in one multi-token forward over the
KV slab (a prefill chunk per row), and then *verified*: the beam search
selects every position from the logits that forward computed, exactly as it
would have one by one, and the run is followed only while every held row
chose its drafted token with no fork. At the first position where the
search does anything else (a pruned step, a finished beam, a fork, a repair)
the columns fed ahead are given back (:func:`rewind`) and decoding goes on
one token at a time from there. With a prompt lookup (``drafts.py``) a row's
run also takes guessed tokens where the steering leaves a choice (the text
the prompt shows after the answer's tail): a forced run is the draft that is
certain, and both are verified alike.

Guarantees: the selects, and so the tokens, scores, steering states, step
verdicts and announcements, are those of the one-by-one loop: a drafted
token only saves the forward pass, it never decides anything. A run starts
only when every live beam of every unfinished branch is held (so the rows
stay in lockstep on the slab's columns); rows of finished branches and dead
rows are fed their last token again, as the one-by-one loop feeds them.
The logits of a multi-token pass equal the one-token passes' up to
floating-point summation order (another kernel blocking and attention
path), as a prefill's do. Where the run holds one live beam per branch and
nothing else (the start of an answer: the beams have not spread yet), only
those rows are fed, through a view of every ``width``-th row of the slab.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from inference.decoder.batch import BatchState
from inference.decoder.drafts import PromptLookup, row_draft
from inference.decoder.kv_slab import SlabCache
from inference.decoder.runner import ModelRunner
from inference.decoder.steering_protocol import Steering

__all__ = ["MAX_LOGITS", "MAX_RUN", "ForcedRun", "draft_run", "feed_run", "rewind", "take"]

#: Most drafted tokens fed ahead in one pass.
MAX_RUN = 48
#: Most logits one pass returns (rows x (1 + run) x vocabulary: 128 MiB of float32), so a wide
#: batch feeds shorter runs.
MAX_LOGITS = 1 << 25


@dataclass
class ForcedRun:
    """A run fed ahead: per row its drafted tokens (None: a row not held to any), and the
    beams and their token counts when it was fed. ``taken`` counts the positions verified."""

    tokens: list[list[int] | None]
    beams: list[Any]
    lengths: list[int]
    width: int
    #: Per position: every row's token there was forced (certain); else a row's was a guess.
    certain: list[bool] = field(default_factory=list)
    taken: int = 0
    length: int = field(init=False)

    def __post_init__(self) -> None:
        self.length = max((len(t) for t in self.tokens if t is not None), default=0)

    def guessed(self, position: int) -> bool:
        """Whether some row's token at ``position`` was a lookup's guess (not forced)."""
        return position < len(self.certain) and not self.certain[position]

    def followed(self, beams: Sequence[Any], forks: Sequence[tuple[int, int]], held: Sequence[bool]) -> bool:
        """Whether the last select chose the drafted token on every held row, with no fork.

        ``held[b]``: branch ``b`` was unfinished before the select (a finished branch's
        rows are not extended). True moves the run one position on.
        """
        if forks:
            return False
        k = self.taken
        for r, drafted in enumerate(self.tokens):
            if drafted is None or not held[r // self.width]:
                continue
            bm = beams[r]
            if (
                bm is not self.beams[r]
                or not bm.alive
                or len(bm.tokens) != self.lengths[r] + k + 1
                or bm.tokens[-1] != drafted[k]
            ):
                return False
        self.taken += 1
        return True


def draft_run(
    beams: Sequence[Any],
    steerings: Sequence[Steering],
    done: Sequence[bool],
    width: int,
    *,
    eos_ids: frozenset[int],
    max_new_tokens: int,
    room: int,
    vocab: int,
    lookup: PromptLookup | None = None,
    guesses: int = 0,
    device: torch.device | None = None,
) -> ForcedRun | None:
    """The run every live beam of every unfinished branch is drafted, or None.

    A beam's run is its draft (``drafts.row_draft``): the tokens its steering
    forces from its state on, and with a ``lookup`` up to ``guesses`` tokens
    the prompt proposes where the steering leaves a choice (each allowed by
    the steering's masks at its position, checked over ``vocab`` scores on
    ``device``); EOS excluded (ending is the search's decision); at most up
    to the token before its ``max_new_tokens`` and ``room`` slab columns, and
    as long as the pass's logits stay within ``MAX_LOGITS``. The run is cut
    to the shortest of them; None when any such beam has none.
    """
    limit = min(MAX_RUN, room, MAX_LOGITS // max(1, len(beams) * vocab) - 1)
    tokens: list[list[int] | None] = [None] * len(beams)
    certain: list[bool] = []
    held = False
    for r, bm in enumerate(beams):
        b = r // width
        if done[b] or not bm.alive:
            continue
        if lookup is None and getattr(steerings[b], "forced", None) is None:
            return None
        draft = row_draft(
            steerings[b],
            bm.state,
            bm.tokens,
            limit=min(limit, max_new_tokens - 1 - len(bm.tokens)),
            eos_ids=eos_ids,
            lookup=lookup,
            branch=b,
            guesses=guesses,
            vocab=vocab,
            device=device or torch.device("cpu"),
        )
        if not draft.tokens:
            return None
        limit = min(limit, len(draft.tokens))
        tokens[r] = list(draft.tokens)
        certain = list(draft.certain) if not held else [a and c for a, c in zip(certain, draft.certain)]
        held = True
    if not held or limit <= 0:
        return None
    cut: list[list[int] | None] = [t[:limit] if t is not None else None for t in tokens]
    return ForcedRun(cut, list(beams), [len(bm.tokens) for bm in beams], width, certain[:limit])


def feed_run(runner: ModelRunner, state: BatchState, feed: torch.Tensor, run: ForcedRun) -> torch.Tensor:
    """Feed every row its next token and the run after it in one forward: ``[N, 1 + K, V]`` logits.

    ``feed: [N]`` (the tokens the one-by-one loop would feed now). A row not
    held to the run is fed its token again at every position (as that loop
    feeds a finished branch's or a dead row). The slab holds ``1 + K`` new
    columns (masked in for every row), but the batch's ``columns`` and
    ``positions`` advance by one, as after a one-token step: the columns fed
    ahead are entered one at a time as the search follows the run
    (:func:`take`), or given back (:func:`rewind`). So whatever reads the
    batch between two selects (a judge's view of a row: the mask up to
    ``columns``) sees what the one-by-one loop would show it.
    """
    k = run.length
    n = feed.shape[0]
    ids = feed.view(-1, 1).repeat(1, 1 + k)  # [N, 1 + K]
    drafted = [r for r, t in enumerate(run.tokens) if t is not None]
    ids[drafted, 1:] = torch.tensor(
        [run.tokens[r] for r in drafted], dtype=torch.long, device=feed.device
    )
    col = state.columns
    before = runner.counters.flops.get("decode", 0.0)
    state.mask[:, col : col + 1 + k] = True
    pos = state.positions.view(-1, 1) + torch.arange(1 + k, device=feed.device)  # [N, 1 + K]
    step = run.width
    if step > 1 and drafted == list(range(0, n, step)):
        # One live beam per branch (the start of an answer, where a decision is stated):
        # only those rows are fed, over a view of the slab; a branch's dead rows read its
        # live row's scores (they are never selected: their beams score -inf).
        state.cache.hold(state.mask[:, : col + 1 + k], 1 + k)  # the whole cache, before a view
        held = _strided(state.cache, step)
        logits = runner.forward(
            ids[::step], pos[::step], state.mask[::step, : col + 1 + k], held,
            purpose="decode", last_only=False,
        ).repeat_interleave(step, dim=0)
        state.cache.set_length(col + 1 + k)
    else:
        logits = runner.forward(
            ids, pos, state.mask[:, : col + 1 + k], state.cache, purpose="decode", last_only=False
        )
    state.columns = col + 1
    state.positions += 1
    _count_position(runner, n, before)
    assert logits.shape[:2] == (n, 1 + k)
    return logits


def _count_position(runner: ModelRunner, rows: int, before: float) -> None:
    """Count the decode FLOPs of one position of ``rows`` rows on top of ``before``: what the
    one-token loop counts per select, whatever was fed ahead (or given back). The
    counterfactual checks spend a share of these FLOPs, so their budget, and so the
    verdicts, do not depend on the feed; the real cost of a run shows in the forwards and
    in ``SearchStats.forced_fed`` / ``draft_fed``."""
    runner.counters.flops["decode"] = before + 2.0 * runner.parameters * rows


def _strided(cache: SlabCache, step: int) -> SlabCache:
    """A slab over every ``step``-th row of ``cache``: views of its tensors, so the keys and
    values a forward writes into it land in ``cache``'s rows (whose length the caller sets)."""
    return cache.every(step)


def take(runner: ModelRunner, state: BatchState) -> None:
    """Enter the next column fed ahead: the search followed the run one position on (its
    decode FLOPs counted as the one-token loop's step would count them)."""
    state.columns += 1
    state.positions += 1
    _count_position(runner, state.rows, runner.counters.flops.get("decode", 0.0))


def rewind(state: BatchState, columns: int) -> None:
    """Give back the ``columns`` columns fed ahead and not taken (a run the search left): the
    slab's length set back to the batch's ``columns`` and those columns masked out."""
    if columns <= 0:
        return
    col = state.columns
    state.cache.set_length(col)
    state.mask[:, col : col + columns] = False
