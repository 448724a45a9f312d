"""Counted bounds as controllers: maxima masked, minima held, the word pace kept.

``Bounds`` enforces ``count_tallies.Limits``: each upper bound (words, sentences,
a letter) masks the tokens that would break it, with room for what the
rest of the layout and the owed text add (``RowPlan.later``); a reached bound
forces the segment's end; a byte fragment is judged on the characters it
completes, an unfinished character as the worst it can become (a Han
character is one more word, a space or "。" may end a sentence), so a bound
holds under both IFEval's word count and our verifier's; an unmet minimum
holds back the model's stop.

``WordPace`` keeps a word minimum reachable: once the words still owed are
about as many as the budget tokens left, every token must add a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from inference.decoder.token_controllers.count_tallies import Limits
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_NONE,
    HOLD_TARGET,
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
)
from inference.decoder.token_controllers.sentences import run_tables

__all__ = ["Bounds", "WordPace", "build_bounds", "build_word_pace"]

_WORD_PACE_SLACK = 3  # budget tokens kept beyond one per owed word (a closing period, an end)


class Bounds(Controller):
    """Upper bounds masked and checked, lower bounds held (see the module doc)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.limits = ctx.limits
        self._has_max = ctx.limits.has_max
        if ctx.limits.max_sentences is not None:
            run_tables(ctx.tables)  # built (or read) with the steering, not in its first step

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.limits.mins_met(d.state.counts) else HOLD_TARGET

    def forces(self, d: RowPlanDraft) -> bool:
        if not self._has_max or d.state.counts.bracket_open:
            return False
        assert d.later is not None
        return self.limits.must_close(d.state.counts, d.later)

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        if not self._has_max:
            return
        rows = []
        for state, plan in zip(states, plans):
            assert plan.later is not None
            over = self.limits.over_max(self.ctx.tables, state.counts, plan.later)
            assert over is not None
            rows.append(over)
        allowed &= ~torch.stack(rows)

    def prepare(self, state: SteerState, plan: RowPlan) -> Any:
        return plan.later

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        """The upper bounds hold after ``text`` and, for an unfinished ``tail``,
        after whatever character it becomes."""
        if not self._has_max or memo is None:
            return True
        letter = self.limits.letter
        after = state.counts.add(text, letter)
        probes = [after]
        if tail:
            probes += [after.add(ch, letter) for ch in ("\u4e00", " ", "\u3002")]
            if letter is not None and not letter.isascii():
                probes.append(after.add(letter, letter))
        return not any(self.limits.exceeded(c, memo) for c in probes)


class WordPace(Controller):
    """Every token adds a word once the word minimum falls behind the budget."""

    def __init__(self, ctx: Context, need: int, budget: int) -> None:
        self.need = need
        self.budget = budget
        tables = ctx.tables
        # Tokens that add a word (IFEval's \w+ runs): fresh, and after a word character.
        self._adds_word = tables.word_runs >= 1
        self._adds_word_after_word = (tables.word_runs - tables.starts_wordchar.to(torch.int32)) >= 1

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state = d.state
        segment = d.comp.segment
        if getattr(segment, "gate", False) and not state.pending:
            owed = self.need - state.counts.words - d.comp.reserve.words - sum(o.words for o in d.owed)
            left = tokens_left(self.budget, d, slack=0, owed=d.owed_tokens)
            d.marks[self.slot] = owed > 0 and owed >= left - _WORD_PACE_SLACK
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
        for r, (s, p) in enumerate(zip(states, plans)):
            if p.marks.get(self.slot):
                # The word minimum is behind the budget: every token adds a word, if any can.
                adding = allowed[r] & (self._adds_word_after_word if s.counts.in_word else self._adds_word)
                if bool(adding.any()):
                    allowed[r] = adding
                    fragments[r] = False


def build_bounds(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """Counted bounds, when the request has any."""
    limits = ctx.limits
    if limits == Limits():
        return None
    return Bounds(ctx)


def build_word_pace(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The word pace, for a word minimum under a token budget."""
    if ctx.limits.min_words is None or ctx.max_new_tokens is None:
        return None
    return WordPace(ctx, ctx.limits.min_words, ctx.max_new_tokens)
