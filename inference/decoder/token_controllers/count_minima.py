"""Minima of the constraint form's counts of the whole answer that the model writes anyway:
characters, letters, distinct words.

A generic ``count`` constraint with a lower bound on characters or letters
(no filter), or on distinct words, compiles to one ``Minimum``. Counts are
the form's own (``units.count``; characters and letters add up over tokens,
``count_maxima.item_vector``), so the controller and the verifier agree.

- the model's stop is held back while a minimum is unmet (as ``Bounds``
  holds a word minimum);
- a kept minimum (``kept``: characters, letters) also holds the end
  (``ends_ok``: a forced end waits) and stays reachable: the rate it needs
  is ``r = ceil(owed / (tokens left - slack))`` items per token; once
  ``r >= 2`` (or the items owed are as many as the tokens left), every token
  must add at least ``r`` items. Each such step lowers what is owed by at
  least ``r``, so the rate needed never rises and the minimum is met before
  the budget ends. The compiler refuses a minimum above ``MOST_PER_TOKEN``
  items per budget token (``LimitExceeded``);
- a distinct-words minimum is only assisted: holding the stop gives the
  model room, but no mask can promise that the next word is new.

Guarantee (kept minima): within the token budget the answer ends only
once each kept minimum holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import (
    KEPT_UNITS,
    bounds,
    form_of_constraint,
    literal_text,
    whole_length,
)
from inference.decoder.token_controllers.count_maxima import added, item_vector
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_NONE,
    HOLD_TARGET,
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Measure, Unit
from reasoning.errors import ConflictError, LimitExceeded

__all__ = [
    "KEPT_UNITS",
    "MOST_PER_TOKEN",
    "Minima",
    "Minimum",
    "Minimums",
    "build_minima",
    "compile_minima",
]


_SLACK = 3  # budget tokens kept beyond the owed items (a closing period, an end)
#: The most items per token a minimum may need from the start (many tokens of the vocabulary
#: are words this long with their space; the model still chooses which).
MOST_PER_TOKEN = 6


@dataclass(frozen=True)
class Minimum:
    """At least ``at_least`` items of ``measure`` in the answer (``sources``: the constraint ids)."""

    measure: Measure
    at_least: int
    sources: tuple[str, ...] = ()

    @property
    def kept(self) -> bool:
        return self.measure.unit in KEPT_UNITS


@dataclass(frozen=True)
class Minimums:
    """The whole-answer minima of one request."""

    items: tuple[Minimum, ...]


class Minima(Controller):
    """The minima at decode time (see the module doc). Its part of a row's state is the
    running count of each kept minimum (the others are counted when asked)."""

    def __init__(self, ctx: Context, minimums: Minimums) -> None:
        self.spec = minimums
        self.items = minimums.items
        self.budget = ctx.max_new_tokens
        self._kept = tuple(i for i, m in enumerate(self.items) if m.kept)
        self._vectors = {i: item_vector(ctx.tables, self.items[i].measure) for i in self._kept}

    def start(self) -> Any:
        return (0,) * len(self.items)

    def _met(self, state: SteerState, i: int) -> bool:
        m = self.items[i]
        have = state.parts[self.slot][i] if m.kept else units.count(m.measure, state.text)
        return bool(have >= m.at_least)

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if all(self._met(d.state, i) for i in range(len(self.items))) else HOLD_TARGET

    def ends_ok(self, state: SteerState) -> bool:
        return all(self._met(state, i) for i in self._kept)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Mark, per kept minimum behind its pace, the items every token must add now."""
        if self.budget is None or d.state.pending:
            return None
        left = tokens_left(self.budget, d, slack=_SLACK, owed=d.owed_tokens)
        counts = d.state.parts[self.slot]
        behind: list[tuple[int, int]] = []
        for i in self._kept:
            owed = self.items[i].at_least - counts[i]
            if owed <= 0:
                continue
            rate = -(-owed // max(1, left))
            if rate >= 2 or owed >= left:
                behind.append((i, rate))
        if behind:
            d.marks[self.slot] = tuple(behind)
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
        for r, plan in enumerate(plans):
            behind: tuple[tuple[int, int], ...] = plan.marks.get(self.slot, ())
            for i, rate in behind:
                # Every token adds ``rate`` items now, if any allowed token can.
                adding = allowed[r] & (self._vectors[i] >= rate)
                if bool(adding.any()):
                    allowed[r] = adding
                    fragments[r] = False

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        counts: tuple[int, ...] = before.parts[self.slot]
        chunk = new.text[len(before.text) :]
        if not chunk or not self._kept:
            return counts
        return tuple(
            n + added(m.measure, before.text, chunk) if m.kept else n for n, m in zip(counts, self.items)
        )

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        short = any(units.count(m.measure, state.text) < m.at_least for m in self.items if m.kept)
        return ("form-minimum",) if short else ()


def build_minima(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The minima controller, when a request sets a minimum of characters, letters or distinct words."""
    minimums = spec_of(specs, Minimums)
    return Minima(ctx, minimums) if minimums is not None and minimums.items else None


def compile_minima(ctx: CompileContext) -> Minimums | None:
    """The ``token_controllers.count_minima.Minimums`` of the whole-answer minima of characters, letters
    (no filter: controlled) and distinct words (assisted), in a body that is not formal. A range
    (an exact count) is controlled when its cap is in ``tally`` too.

    Raises:
        ConflictError: a minimum above a maximum of the same count.
        LimitExceeded: more characters or letters than the token budget can add
            (``MOST_PER_TOKEN`` per token, besides what the fixed text holds).
    """
    constraints, layout, tally = ctx.hard, ctx.layout, ctx.compiled["tally"]
    controlled, assisted, max_new_tokens = ctx.controlled, ctx.assisted, ctx.max_new_tokens
    literals = literal_text(layout)
    found: list[Minimum] = []
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or form.per is not None or form.of is not None:
            continue
        lo = bounds(form.relation, form.n)[0]
        kept = form.unit in KEPT_UNITS and whole_length(form)
        if not lo or not (kept or form.unit is Unit.UNIQUE_WORDS) or layout.body.kind == "formal":
            continue
        for q in constraints:
            other = form_of_constraint(q) if q.id != c.id else None
            if isinstance(other, Count) and other.per is None and other.of is None and other.measure == form.measure:
                hi = bounds(other.relation, other.n)[1]
                if hi is not None and hi < lo:
                    raise ConflictError(f"at least {lo} {form.unit.value.replace('_', ' ')} but at most {hi}",
                                        constraint_ids=[c.id, q.id])
        if kept and max_new_tokens is not None and lo - units.count(form.measure, literals) > MOST_PER_TOKEN * max_new_tokens:
            raise LimitExceeded(f"at least {lo} {form.unit.value} cannot fit in {max_new_tokens} new tokens",
                                constraint_ids=[c.id])
        capped = tally is not None and any(c.id in cap.sources for cap in tally.caps)
        if bounds(form.relation, form.n)[1] is not None and not capped:
            continue  # a range whose cap is not kept: left to the prompt
        found.append(Minimum(form.measure, lo, (c.id,)))
        (controlled if kept else assisted).add(c.id)
    return Minimums(tuple(found)) if found else None
