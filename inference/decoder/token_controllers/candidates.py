"""Lazy per-candidate checks: the best candidates of a row, judged one by one.

Rules the ``[V]`` tables cannot describe (a forbidden word that a candidate
completes, a capped keyword, a byte fragment judged on the character it
completes) are checked on the best ``TOP_K`` candidates of each row that
survive the masks; the row is cut to those that pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from inference.decoder.token_controllers.charset import split_utf8
from inference.decoder.token_controllers.protocol import NEG_INF, Controller, RowPlan, SteerState
from inference.decoder.topk import row_topk
from inference.decoder.vocab import VocabTables

__all__ = ["TOP_K", "CandidateChecks"]

TOP_K = 32
_MAX_LAZY_ROUNDS = 4


class CandidateChecks:
    """The lazy checks of one set of controllers (``hooked``: per hook, those that override it)."""

    def __init__(
        self, tables: VocabTables, n_controllers: int, hooked: dict[str, tuple[Controller, ...]], lazy_fragments: bool
    ) -> None:
        self.tables = tables
        self.slots_of = n_controllers
        self.hooked = hooked
        self._lazy_fragments = lazy_fragments
        self._fragment_list: list[bool] = tables.fragment.tolist()
        self._fragment_ids = torch.nonzero(tables.fragment).flatten()
        self._continuation: torch.Tensor = tables.cached("continuation", lambda: _continuation(tables))

    def cut(
        self, states: list[SteerState], plans: list[RowPlan], rows: torch.Tensor, lp: torch.Tensor,
        fragments: torch.Tensor | None,
    ) -> torch.Tensor:
        """Cut each row to its best candidates that pass the per-token checks.

        ``rows, lp: [R, V]``. ``fragments: [R, V]`` are the byte fragments
        each free row's class admits: with lazy fragments they are masked
        out of ``rows`` and come back from ``lp`` here (None for a formal
        row, whose grammar mask already holds them). Mid-character rows are
        narrowed to continuation bytes first (all of them are examined), then
        the ``narrow`` hooks cut the pool. ``rows`` is the caller's to give:
        it is narrowed in place and its memory holds the result.
        """
        pool = rows  # narrowed in place: the caller hands its rows over
        if self._lazy_fragments and fragments is not None:
            # Fragments are a few hundred tokens: merge them in by index, not over [R, V].
            idx = self._fragment_ids
            pool[:, idx] = torch.maximum(rows[:, idx], lp[:, idx].masked_fill(~fragments[:, idx], NEG_INF))
        pending = [r for r, s in enumerate(states) if s.pending]
        if pending:
            source = lp if fragments is not None else rows
            follow = self._continuation if fragments is None else self._continuation & fragments[pending]
            pool[pending] = source[pending].masked_fill(~follow, NEG_INF)
        for c in self.hooked["narrow"]:
            c.narrow(states, pool)
        k = min(pool.shape[-1], TOP_K * _MAX_LAZY_ROUNDS)
        values, indices = row_topk(pool, k)  # [R, k]
        keep_rows: list[int] = []
        keep_cols: list[int] = []
        keep_vals: list[float] = []
        preparers = self.hooked["prepare"]
        for r, (vals, idxs) in enumerate(zip(values.tolist(), indices.tolist())):
            found = 0
            memo: list[Any] = [None] * self.slots_of
            for c in preparers:
                memo[c.slot] = c.prepare(states[r], plans[r])
            passes = self._judge(states[r], plans[r].forced, memo)
            for value, idx in zip(vals, idxs):
                if value == NEG_INF:
                    break
                if passes(idx):
                    keep_rows.append(r)
                    keep_cols.append(idx)
                    keep_vals.append(value)
                    found += 1
                    if found >= TOP_K:
                        break
        kept = pool.fill_(NEG_INF)  # the pool's memory again, not a fresh [R, V]
        if keep_rows:
            kept[keep_rows, keep_cols] = torch.tensor(keep_vals, dtype=kept.dtype, device=kept.device)
        return kept

    def _judge(self, state: SteerState, closing: bool, memo: list[Any]) -> Callable[[int], bool]:
        """Whether token ``idx`` may follow ``state`` (``closing``: the segment
        is past its end and waits only for a clean place to stop), as one
        function per row: what the row's state fixes (EOS's verdict, the
        hooks to call) is settled once, not per candidate."""
        tables = self.tables
        eos_ids = tables.eos_ids
        pending = state.pending
        fragment = self._fragment_list
        texts = tables.texts
        token_bytes = tables.token_bytes
        pieced = self.hooked["check_pieced"]
        checks = tuple((c.check, memo[c.slot]) for c in self.hooked["check"])
        eos_ok: bool | None = None

        def passes(idx: int) -> bool:
            nonlocal eos_ok
            if idx in eos_ids:
                if eos_ok is None:
                    eos_ok = not pending and all(c.ends_ok(state) for c in self.hooked["ends_ok"])
                return eos_ok
            tail = b""
            if pending or fragment[idx]:
                raw = token_bytes[idx]
                text, tail = split_utf8(pending + raw)
                if text is None:
                    return False
                for c in pieced:
                    if not c.check_pieced(state, memo[c.slot], raw, text, tail):
                        return False
            else:
                text = texts[idx]
            for check, part in checks:
                if not check(state, part, text, tail, closing):
                    return False
            return True

        return passes


def _continuation(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens that can follow an unfinished character (they start
    with a continuation byte; a few dozen, so a pending row checks them all)."""
    values = [bool(raw) and 0x80 <= raw[0] <= 0xBF for raw in tables.token_bytes]
    return torch.tensor(values, dtype=torch.bool, device=tables.device) & tables.fragment
