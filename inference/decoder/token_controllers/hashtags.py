"""A minimum of hashtags: "include at least three hashtags".

A generic ``count(hashtags)`` constraint with a lower bound compiles to one
``HashtagMinimum``. Hashtags are the verifier's (``reasoning.constraints.form.units``:
``#`` after whitespace or a mark, then word characters); a hashtag never
crosses whitespace, so a row's count grows by what each token adds to the
text after the last whitespace (``count_maxima.added``), never by re-reading the
answer. (A maximum is a cap of the tally.)

- owed hashtags are paced over the token budget, the k-th of N once
  k / (N + 1) of it is spent, or at once when the budget left holds little
  more than the owed ones; a due one begins where the model ends a word (its
  likeliest token does not continue it) with `` #`` (``#`` after
  whitespace);
- right after a ``#`` that begins a hashtag, only a token whose first
  character is a word character may follow (the model chooses the word);
- the stop waits while hashtags are owed (``ends_ok``), and the owed ones
  keep their tokens in the budget (``owed``).

Guarantee: within the token budget, an answer this controller lets end
holds at least the minimum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import bounds, form_of_constraint
from inference.decoder.token_controllers.count_maxima import added
from inference.decoder.token_controllers.forcing import ForcedText, Writer, write_mark_at_word_end
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import next_due, tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_NONE,
    HOLD_TARGET,
    Context,
    Controller,
    Owed,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Measure, Unit
from reasoning.errors import ConflictError, LimitExceeded

__all__ = [
    "HASHTAG_TOKENS",
    "HashtagMinimum",
    "Hashtagging",
    "build_hashtags",
    "compile_hashtags",
]


#: Budget tokens one owed hashtag is planned to take: its mark and a word.
HASHTAG_TOKENS = 3
_MEASURE = Measure(unit=Unit.HASHTAGS)


@dataclass(frozen=True)
class HashtagMinimum:
    """At least ``at_least`` hashtags in the answer (``sources``: the constraint ids)."""

    at_least: int
    sources: tuple[str, ...] = ()


def _begins_hashtag(text: str) -> bool:
    """Whether ``text`` ends with a ``#`` that a word would make a hashtag."""
    return text.endswith("#") and (len(text) == 1 or not (text[-2].isalnum() or text[-2] in "_#"))


class Hashtagging(Writer):
    """The hashtag minimum at decode time (see the module doc). Its part of a row's state
    is the running count and the tokens still to force."""

    def __init__(self, ctx: Context, spec: HashtagMinimum) -> None:
        self.ctx = ctx
        self.spec = spec
        self.want = spec
        tables = ctx.tables
        self._mark = ForcedText(tables, "#")

        def build() -> torch.Tensor:
            values = [bool(t) and (t[0].isalnum() or t[0] == "_") for t in tables.texts]
            return torch.tensor(values, dtype=torch.bool, device=tables.device)

        self._word_first = tables.cached(("hashtag-word-first", 0), build)

    def start(self) -> tuple[int, tuple[int, ...]]:
        return (0, ())

    def _need(self, state: SteerState) -> int:
        count: int = state.parts[self.slot][0]
        return max(0, self.want.at_least - count)

    def owed(self, state: SteerState) -> Owed:
        need = self._need(state)
        return Owed(tokens=need * HASHTAG_TOKENS, insert=True, writes=True) if need else Owed()

    def pending(self, state: SteerState) -> tuple[int, ...]:
        pending: tuple[int, ...] = state.parts[self.slot][1]
        return pending

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_TARGET if self._need(d.state) or _begins_hashtag(d.state.text) else HOLD_NONE

    def ends_ok(self, state: SteerState) -> bool:
        return not self._need(state)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state = d.state
        need = self._need(state)
        if not need or state.parts[self.slot][1] or _begins_hashtag(state.text) or state.pending:
            return None
        opening = self._mark.first(state.text)
        budget = self.ctx.max_new_tokens
        if budget is None or opening < 0:
            return None
        if tokens_left(budget, d) <= need * HASHTAG_TOKENS:
            return self._mark.begin(state)
        if next_due(d, budget, self.want.at_least - need, self.want.at_least, kept=HASHTAG_TOKENS) or d.close:
            d.marks[self.slot] = opening
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
        for r, state in enumerate(states):
            if self._need(state) and _begins_hashtag(state.text):
                allowed[r] &= self._word_first
                fragments[r] = False

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Begin a due hashtag where the model ends its word."""
        write_mark_at_word_end(plans, self.slot, rows, self.ctx.tables.starts_wordchar)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        count, pending = before.parts[self.slot]
        pending = self._mark.rest(pending, True, token_id) or ()
        chunk = new.text[len(before.text) :]
        return (count + added(_MEASURE, before.text, chunk) if chunk else count, pending)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return ("hashtags",) if units.count(_MEASURE, state.text) < self.want.at_least else ()


def build_hashtags(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The hashtag controller, when a request sets a minimum of hashtags."""
    spec = spec_of(specs, HashtagMinimum)
    return Hashtagging(ctx, spec) if spec is not None else None


def compile_hashtags(ctx: CompileContext) -> HashtagMinimum | None:
    """The ``token_controllers.hashtags.HashtagMinimum`` of a minimum of hashtags (None: none, or not
    controllable here: a formal body, citations or a stated decision beside it). A range is
    controlled when its cap is controlled too (``compile_tally``).

    Raises:
        ConflictError: the minimum above a maximum of hashtags.
        LimitExceeded: more hashtags than the token budget holds.
    """
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    max_new_tokens, inserts = ctx.max_new_tokens, ctx.inserts
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
             and form.unit is Unit.HASHTAGS and form.per is None and form.of is None and form.filter == Filter()]
    lows = [(c, lo) for c, form in found if (lo := bounds(form.relation, form.n)[0])]
    if not lows:
        return None
    source, lo = max(lows, key=lambda pair: pair[1])
    for c, form in found:
        hi = bounds(form.relation, form.n)[1]
        if hi is not None and hi < lo:
            raise ConflictError(f"at least {lo} hashtags but at most {hi}", constraint_ids=[source.id, c.id])
    if max_new_tokens is not None and lo * HASHTAG_TOKENS > max_new_tokens:
        raise LimitExceeded(f"{lo} hashtags cannot fit in {max_new_tokens} new tokens", constraint_ids=[source.id])
    if inserts or layout.body.kind == "formal":
        return None
    ids = tuple(c.id for c, _ in lows)
    for c, form in found:
        if c.id not in ids and c.id not in controlled:
            return None  # a cap left to the prompt: the range is too
    controlled.update(c.id for c, _ in found)
    return HashtagMinimum(at_least=lo, sources=ids)
