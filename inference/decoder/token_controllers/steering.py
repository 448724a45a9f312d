"""``ConstraintSteering``: the token controllers of one request, composed.

One object implements the ``Steering`` protocol for a request. It drives the
compiled layout (``token_controllers.layout``: literal / free / formal segments)
and the controllers the request needs, each a plug-in of
``token_controllers.protocol`` built from ``token_controllers.registry.FAMILIES`` in
that fixed order:

1. ``bounds`` (counted maxima and minima: words, sentences, a letter),
2. ``charset`` (commas, case, script: masses move to allowed variants),
3. ``citations`` (a citation mode spelling a shown evidence id),
4. ``sentences`` (the current sentence closes when the budget is tight),
5. ``placeholders`` (paced ``[...]`` openings),
6. ``forbidden`` (forbidden words, checked per candidate),
7. ``keywords`` (paced insertions, capped counts),
8. ``capitals`` (paced capital words),
9. ``words`` (every token adds a word when the minimum falls behind).

Per step: the controllers ``shift`` the batch (in order); each row is
planned: a literal or a finished layout forces its token, a ``route`` claims
the row (citation mode, an insertion), a formal segment gets its matcher's
mask; a free row's exit (the next literal's first token or EOS; ``]`` in an
open bracket) is changed by ``exit`` hooks, its stop held back by ``holds``
(the gate segment only), its end forced by the budget, the segment deadline,
a long bracket or a ``forces`` hook (waiting while an ``ends_ok`` hook
objects), and ``pace`` hooks decide in order. Free rows are masked together:
the layout's structure masks, then ``mask`` hooks in order, then the
sentence-closing demand, the stop mass moved to the exit, ``reweigh`` hooks;
with lazy checks the best ``TOP_K`` survivors are checked one by one.
Row planning lives in ``token_controllers.planning``, the lazy checks in
``token_controllers.candidates``.

Guarantees (beyond the protocol's): every kept token passes every check; a
row is never left without a finite entry: when nothing passes, the state's
forced exit (the next literal or EOS) is allowed and the state records the
violation it causes in ``violations``, so it is reported, never silent.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

import torch

from inference.decoder.token_controllers.candidates import TOP_K, CandidateChecks
from inference.decoder.token_controllers.charset import CharPolicy, split_utf8
from inference.decoder.token_controllers.count_tallies import Limits
from inference.decoder.token_controllers.layout import CompiledLayout
from inference.decoder.token_controllers.planning import Planner, later_of
from inference.decoder.token_controllers.protocol import (
    NEG_INF,
    Context,
    Controller,
    RowPlan,
    SteerState,
)
from inference.decoder.token_controllers.registry import FAMILIES
from inference.decoder.token_controllers.template import Formal, Literal, Segment
from inference.decoder.vocab import VocabTables

__all__ = ["TOP_K", "ConstraintSteering", "SteerState"]

_S = TypeVar("_S")
_HOOKS = (
    "shift", "owed", "route", "exit", "holds", "forces", "ends_ok", "forced", "pace", "precede", "mask",
    "reweigh", "prepare", "narrow", "check", "check_pieced", "holding", "advance", "unmet",
)


class ConstraintSteering:
    """Token controllers compiled from a request's constraints (see module doc).

    Build it with ``inference.decoder.compile.compile_steering``; ``specs`` are
    the compiled specs of the request (``CharPolicy``, ``Limits`` and one per
    controller family), each read by the registered builder it belongs to.
    """

    def __init__(
        self,
        tables: VocabTables,
        *,
        segments: tuple[Segment, ...],
        specs: Sequence[Any] = (),
        max_new_tokens: int | None = None,
        controlled: frozenset[str] = frozenset(),
        assisted: frozenset[str] = frozenset(),
        uncontrolled: frozenset[str] = frozenset(),
    ) -> None:
        self.tables = tables
        self.specs = tuple(specs)
        self.max_new_tokens = max_new_tokens
        self.controlled, self.assisted, self.uncontrolled = controlled, assisted, uncontrolled
        policy = next((s for s in specs if isinstance(s, CharPolicy)), CharPolicy())
        self.limits = next((s for s in specs if isinstance(s, Limits)), Limits())
        self.eos = tables.eos_ids[0]
        self._lazy_fragments = policy.active or self.limits.has_max
        self.layout = CompiledLayout(
            tables,
            segments,
            policy_mask=policy.allowed_mask(tables) if policy.active else ~tables.special,
            limits=self.limits,
            lazy_fragments=self._lazy_fragments,
            max_new_tokens=max_new_tokens,
        )
        self._segments = self.layout.segments
        ctx = Context(tables, self.layout, self.limits, max_new_tokens, lambda s, owed: later_of(self.layout, s, owed))
        built = [family.build(ctx, specs) for family in FAMILIES]
        self._bind(tuple(c for c in built if c is not None))

    def _bind(self, controllers: tuple[Controller, ...]) -> None:
        """Number the controllers and list, per hook, those that override it."""
        for slot, c in enumerate(controllers):
            c.slot = slot
        self.controllers = controllers
        self._hooked = {
            name: tuple(c for c in controllers if getattr(type(c), name) is not getattr(Controller, name))
            for name in _HOOKS
        }
        self._lazy_always = self._lazy_fragments or any(c.lazy for c in controllers)
        self._planner = Planner(self.layout, len(controllers), self._hooked)
        self._plan = self._planner.plan
        self._checks = CandidateChecks(self.tables, len(controllers), self._hooked, self._lazy_fragments)

    def spec(self, kind: type[_S]) -> _S | None:
        """The compiled spec of type ``kind`` this steering enforces, if any
        (a rebound controller's own, see ``for_evidence``)."""
        found = (c.spec for c in self.controllers if isinstance(c.spec, kind))
        return next(found, None) or next((s for s in self.specs if isinstance(s, kind)), None)

    @property
    def device(self) -> torch.device:
        """Where the tables live, and so where the beam search selects tokens."""
        return self.tables.device

    def for_evidence(self, ids: Sequence[str]) -> ConstraintSteering:
        """This steering for a branch whose prompt shows the evidence ``ids``.

        Each controller is rebound (``Controller.for_evidence``: the citation
        controller cites only the branch's own ids); every compiled table is
        shared. When no controller changes it is ``self`` (so the beam search
        still steers all branches in one call). Constraints a rebound
        controller can no longer meet (``demoted``) count as assisted.
        """
        rebound = tuple(c.for_evidence(ids) for c in self.controllers)
        if all(a is b for a, b in zip(rebound, self.controllers)):
            return self
        bound = copy.copy(self)
        bound._bind(rebound)
        lost = frozenset().union(*(c.demoted() for c in rebound))
        bound.controlled, bound.assisted = self.controlled - lost, self.assisted | lost
        bound.uncontrolled = self.uncontrolled - lost
        return bound

    # --- protocol -----------------------------------------------------

    def initial_state(self) -> SteerState:
        matcher = self.layout.matcher_proto.deep_copy() if self.layout.has_formal else None
        state = SteerState(matcher=matcher, parts=tuple(c.start() for c in self.controllers))
        return self.layout.enter(state, 0)

    def apply(self, states: list[Any], logprobs: torch.Tensor) -> torch.Tensor:
        """Adjusted log-probabilities. ``logprobs: [B, V]``; returns ``[B, V]``."""
        lp = logprobs.float()
        for c in self._hooked["shift"]:
            lp = c.shift(lp)
        plans = [self._plan(state) for state in states]
        free = [r for r, plan in enumerate(plans) if plan.kind == "free"]
        if len(free) == len(plans):
            out = self._free_rows(states, plans, lp)  # [B, V]: the common case, no copy
        else:
            out = torch.full_like(lp, NEG_INF)  # [B, V]
            if free:
                out[free] = self._free_rows([states[r] for r in free], [plans[r] for r in free], lp[free])
        for r, plan in enumerate(plans):
            if plan.kind == "only":
                out[r, plan.exit] = 0.0
            elif plan.kind == "formal":
                out[r] = self._formal_row(states[r], plan, lp[r])
            elif plan.owner >= 0:
                self.controllers[plan.owner].route_row(states[r], plan, lp[r], out[r])
        checked = [r for r, plan in enumerate(plans) if plan.kind != "only"]
        if checked:
            alive = (out.amax(dim=-1) > NEG_INF).tolist()  # [B]: one pass, no copy of the rows
            for r in checked:
                if not alive[r]:
                    out[r, plans[r].exit] = 0.0
        return out.to(logprobs.dtype)

    def forced(self, state: Any) -> int | None:
        """The token ``apply`` leaves ``state``'s row as its only choice whatever the model's
        scores (a literal's, a text a controller is writing, a finished layout's EOS), else
        None (the row is masked over the scores). No controller state is touched."""
        assert isinstance(state, SteerState)
        plan = self._plan(state)
        return plan.exit if plan.kind == "only" else None

    def advance(self, state: Any, token_id: int) -> SteerState:
        assert isinstance(state, SteerState)
        if state.finished:
            return state
        layout = self.layout
        comp = self._segments[state.seg] if state.seg < len(self._segments) else None
        if token_id in self.tables.eos_ids:
            return self._finish(state)
        if (
            comp is not None
            and not isinstance(comp.segment, Literal)
            and token_id == comp.target
            and not any(c.holding(state) for c in self._hooked["holding"])
        ):
            if not layout.holds_text(state):
                state = dataclasses.replace(state, violations=state.violations + ("empty_part",))
            state = layout.enter(state, state.seg + 1)
            comp = self._segments[state.seg]
        text, tail = split_utf8(state.pending + self.tables.token_bytes[token_id])
        chunk = text if text is not None else ""
        new: SteerState = dataclasses.replace(
            state,
            text=state.text + chunk,
            pending=tail,
            n_tokens=state.n_tokens + 1,
            counts=state.counts.add(chunk, self.limits.letter),
        )
        if self._hooked["advance"]:
            parts = list(state.parts)
            for c in self._hooked["advance"]:
                parts[c.slot] = c.advance(state, new, token_id, comp, self._plan)
            new = dataclasses.replace(new, parts=tuple(parts))
        if comp is None:
            return new
        if isinstance(comp.segment, Literal):
            pos = state.lit_pos + 1
            if pos >= len(comp.tokens):
                return layout.enter(dataclasses.replace(new, lit_pos=0), new.seg + 1)
            return dataclasses.replace(new, lit_pos=pos)
        if isinstance(comp.segment, Formal) and new.matcher is not None:
            matcher = new.matcher.deep_copy()
            if not matcher.consume_token(token_id):
                new = dataclasses.replace(new, violations=new.violations + ("format",))
            new = dataclasses.replace(new, matcher=matcher)
        bracket = new.bracket_tokens + 1 if new.counts.bracket_open else 0
        worded = new.seg_worded or any(ch.isalpha() for ch in chunk)
        return dataclasses.replace(new, seg_tokens=new.seg_tokens + 1, bracket_tokens=bracket, seg_worded=worded)

    def _finish(self, state: SteerState) -> SteerState:
        problems = list(state.violations) + self.layout.problems(state)
        for c in self._hooked["unmet"]:
            problems.extend(c.unmet(state))
        return dataclasses.replace(state, finished=True, violations=tuple(dict.fromkeys(problems)))

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        """What the text fails of the controlled requirements, were it to end now.

        Empty when none. The beam search calls it on the answer it returns,
        finished or cut by the token budget, to report rather than hide a
        violation: the layout's "structure", "empty_part" (a part holds no
        word), "minimum", "format", then each controller's (``unmet``).
        """
        return state.violations if state.finished else self._finish(state).violations

    # --- masking -----------------------------------------------------

    def _free_rows(self, states: list[SteerState], plans: list[RowPlan], lp: torch.Tensor) -> torch.Tensor:
        """Masked rows of beams in free segments. ``lp: [R, V]`` -> ``[R, V]``."""
        layout = self.layout
        seg_ids = torch.tensor([p.seg for p in plans], device=lp.device)
        base = layout.allowed_stack[seg_ids]  # [R, V]
        allowed = base.clone()
        fragments = layout.fragment_stack[seg_ids]  # [R, V]
        layout.mask_structure(states, plans, allowed, fragments)
        for c in self._hooked["mask"]:
            c.mask(states, plans, allowed, fragments, base, lp)
        layout.mask_close(states, plans, allowed, fragments)
        rows = torch.where(allowed, lp, NEG_INF)  # [R, V]
        layout.stop_mass(states, plans, seg_ids, rows, lp)
        for c in self._hooked["reweigh"]:
            c.reweigh(states, plans, rows)
        if self._lazy_always or any(s.pending for s in states):
            rows = self._checks.cut(states, plans, rows, lp, fragments)
        return rows

    def _formal_row(self, state: SteerState, plan: RowPlan, lp: torch.Tensor) -> torch.Tensor:
        over = self._over if self.limits.has_max else None
        row = self.layout.formal_row(state, plan, lp, over)
        if self._lazy_always or state.pending:
            row = self._checks.cut([state], [plan], row.unsqueeze(0), lp.unsqueeze(0), None)[0]
        return row

    def _over(self, state: SteerState, plan: RowPlan) -> torch.Tensor:
        later = plan.later or later_of(self.layout, state, self._planner.owed(state))
        over = self.limits.over_max(self.tables, state.counts, later)
        assert over is not None
        return over

