"""Row planning: what one beam row needs this step, decided through the hooks.

``Planner.plan`` is the composer's per-row decision (``steering`` lists its
order): a literal or a finished layout forces its token; a ``route`` hook
may claim the row; a formal segment gets its matcher; a free row's exit,
stop, forced end and pacing are decided by the hooks in registry order;
a one-sentence part (``Free.single``) leaves once its sentence has ended.
``later_of`` is what the upper bounds keep room for: the later literals'
counts plus every controller's owed words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from inference.decoder.token_controllers.count_tallies import Later
from inference.decoder.token_controllers.layout import CompiledLayout, bracket_token
from inference.decoder.token_controllers.protocol import (
    HOLD_ALL,
    HOLD_TARGET,
    NOTHING_OWED,
    Controller,
    Owed,
    RowPlan,
    RowPlanDraft,
    SteerState,
)
from inference.decoder.token_controllers.template import Formal, Free, Literal

__all__ = ["BRACKET_CAP", "Planner", "later_of"]

BRACKET_CAP = 8  # tokens an open bracket may hold before it must close
_ENDED = re.compile("[.!?\u3002\uff01\uff1f][.!?\"'\u201d\u2019)\\]]*\\s*$")
_ENDED_TAIL = 16  # characters of the text's end the sentence-end check reads


def later_of(layout: CompiledLayout, state: SteerState, owed: Sequence[Owed]) -> Later:
    """What the rest of the layout and the owed text add, for the upper bounds."""
    comp = layout.segments[state.seg]
    reserve = comp.reserve
    words = sum(o.words for o in owed)
    units = sum(o.units for o in owed)
    letter = sum(o.letter for o in owed)
    if words or units or letter:
        reserve = dataclasses.replace(
            reserve, words=reserve.words + words, units=reserve.units + units, letter=reserve.letter + letter
        )
    return Later(reserve, comp.free_after, comp.sentences, any(o.writes for o in owed))


class Planner:
    """Plans rows for one set of controllers (``hooked``: per hook, those that override it)."""

    def __init__(self, layout: CompiledLayout, n_controllers: int, hooked: dict[str, tuple[Controller, ...]]) -> None:
        self.layout = layout
        self.n = n_controllers
        self.hooked = hooked
        self.close_bracket = bracket_token(layout.tables, "]")

    def owed(self, state: SteerState) -> tuple[Owed, ...]:
        """Each controller's owed text, by slot."""
        owed = [NOTHING_OWED] * self.n
        for c in self.hooked["owed"]:
            owed[c.slot] = c.owed(state)
        return tuple(owed)

    def plan(self, state: SteerState) -> RowPlan:
        """What a row needs: one forced token, a controller's mode, a free-text or a grammar mask."""
        if state.finished or state.seg >= len(self.layout.segments):
            return RowPlan("only", self.layout.eos)
        comp = self.layout.segments[state.seg]
        if isinstance(comp.segment, Literal):
            return RowPlan("only", comp.tokens[state.lit_pos])
        for c in self.hooked["route"]:
            routed = c.route(state)
            if routed is not None:
                return routed
        owed = self.owed(state)
        owed_tokens = sum(o.tokens for o in owed)
        later = later_of(self.layout, state, owed) if self.layout.limits.has_max else None
        budget_out = self.layout.max_new_tokens is not None and (
            self.layout.max_new_tokens - state.n_tokens <= comp.reserve_tokens + 2 + owed_tokens
        )
        if isinstance(comp.segment, Formal):
            return RowPlan("formal", comp.target, seg=state.seg, forced=budget_out, later=later, owed=owed)
        inserts = sum(o.tokens for o in owed if o.insert)
        d = RowPlanDraft(state, comp, comp.target, comp.target, owed, owed_tokens, inserts, later=later)
        bracket_open = state.counts.bracket_open
        if bracket_open and self.close_bracket >= 0:
            d.exit = self.close_bracket
        for c in self.hooked["exit"]:
            c.exit(d)
        segment = comp.segment
        assert isinstance(segment, Free)
        may_stop = state.seg_tokens >= 1 and not state.pending and self.layout.holds_text(state)
        if segment.gate and not bracket_open and may_stop:
            hold = max((c.holds(d) for c in self.hooked["holds"]), default=0)
            may_stop = hold < HOLD_ALL and (hold < HOLD_TARGET or d.opens)
        d.may_stop = may_stop
        if segment.single and may_stop and _ENDED.search(state.text[-_ENDED_TAIL:]):
            # A one-sentence part ends with its first sentence end (a token that
            # would open another sentence after it is masked: ``mask_structure``).
            return RowPlan("only", d.exit)
        d.forced = (
            budget_out
            or (state.seg_deadline is not None and state.n_tokens >= state.seg_deadline)
            or (bracket_open and state.bracket_tokens >= BRACKET_CAP)
            or any(c.forces(d) for c in self.hooked["forces"])
        )
        d.ends_clean = all(c.ends_ok(state) for c in self.hooked["ends_ok"])
        if d.forced and not state.pending and d.ends_clean:
            for c in self.hooked["forced"]:
                kept = c.forced(d)
                if kept is not None:
                    return kept
            return RowPlan("only", d.exit)
        for c in self.hooked["pace"]:
            taken = c.pace(d)
            if taken is not None:
                first = (p for e in self.hooked["precede"] if e is not c and (p := e.precede(d, taken)) is not None)
                return next(first, taken)
        return RowPlan(
            "free", d.exit, seg=state.seg, may_stop=d.may_stop, forced=d.forced, close=d.close,
            marks=d.marks, later=later, owed=owed,
        )

