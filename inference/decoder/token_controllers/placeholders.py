"""A minimum of ``[...]`` placeholders, opened where the model would stop and paced.

While the gate segment owes placeholders (``Limits.min_placeholders``), the
stop's probability moves to an opening ``[`` (the exit), so a placeholder is
written instead of the end. Placeholders are also paced over the token
budget: the k-th is due once k / (minimum + 1) of it is spent (less what
owed insertions keep), so they spread through the text instead of waiting
for the model to stop (a model that never stops would get at most one). A
due placeholder opens at once after whitespace or punctuation; after a
letter the row may only finish its word or open the placeholder as the
next word. When the budget left holds only the owed placeholders, one opens
at once, wherever the text is. An open bracket closes within a few tokens
(the composer's bracket cap).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from inference.decoder.token_controllers.layout import bracket_token
from inference.decoder.token_controllers.pacing import next_due, tokens_left
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
)
from inference.decoder.token_controllers.template import Free

__all__ = ["PLACEHOLDER_TOKENS", "Placeholders", "build_placeholders"]

PLACEHOLDER_TOKENS = 10  # budget kept for one forced placeholder ("[", text, "]")


class Placeholders(Controller):
    """Owed placeholders opened at the exit and paced (see the module doc)."""

    def __init__(self, ctx: Context, need: int) -> None:
        self.tables = ctx.tables
        self.need = need
        self.budget = ctx.max_new_tokens
        self._open_spaced = bracket_token(ctx.tables, " [")
        self._open_bare = bracket_token(ctx.tables, "[")

    def _needed(self, d: RowPlanDraft) -> bool:
        segment = d.comp.segment
        return isinstance(segment, Free) and segment.gate and d.state.counts.placeholders < self.need

    def exit(self, d: RowPlanDraft) -> None:
        if d.exit != d.target or d.state.counts.bracket_open or not self._needed(d):
            return
        token = self._open_bare if d.state.text[-1:].isspace() else self._open_spaced
        if token >= 0:
            d.exit, d.opens = token, token != d.target

    def _urgent(self, d: RowPlanDraft) -> bool:
        """Whether the budget left (less the owed insertions) holds only the placeholders still owed."""
        assert self.budget is not None
        owed = self.need - d.state.counts.placeholders
        return tokens_left(self.budget, d, owed=d.inserts) <= owed * PLACEHOLDER_TOKENS

    def _due(self, d: RowPlanDraft) -> bool:
        """Paced over the budget less the owed insertions."""
        have = d.state.counts.placeholders
        if self.budget is None or have >= self.need:
            return False
        return self._urgent(d) or next_due(d, self.budget, have, self.need, kept=d.inserts)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state = d.state
        opens = d.exit in (self._open_spaced, self._open_bare)
        due = self._needed(d) and opens and not state.pending and self._due(d)
        last = state.text[-1:]
        if due and (last == "" or not last.isalnum() or self._urgent(d)):
            return RowPlan("only", d.exit)
        if due:
            d.marks[self.slot] = True
        return None

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        for r, p in enumerate(plans):
            if p.marks.get(self.slot):
                # The next word is the placeholder: finish this word or open it.
                allowed[r] &= self.tables.fragment
                allowed[r, p.exit] = True


def build_placeholders(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The placeholder controller, for a placeholder minimum."""
    need = ctx.limits.min_placeholders
    return Placeholders(ctx, need) if need is not None else None
