"""A count of lines: "write a poem of exactly four lines", "at most three lines".

A generic ``count(lines)`` constraint (no filter, whole answer) compiles to
one ``LineCount``. Lines are the verifier's (``reasoning.constraints.form.units``:
the non-blank lines of ``str.splitlines``). A row's state is the number of
non-blank lines before the current one, whether the current one holds text,
and how many tokens it holds, each updated from the characters a token adds
(no re-reading of the answer).

- a maximum: once the current line is the last one allowed and holds text,
  no token may hold a line break (the line goes on until the answer ends);
- a minimum: a line break is due once the current line holds its share of
  the budget left (and ends a sentence, or at once when the budget left
  holds little more than the lines owed); it is written where the model
  ends a word. The stop waits while lines are owed (``ends_ok``), and the
  owed lines keep their tokens in the budget (``owed``).

Guarantee: a text this controller lets through never holds more lines than
the maximum, and, within the token budget, an answer it lets end holds at
least the minimum. The compiler controls a line count only in a free body
without fixed text (a literal's line breaks would be forced past the mask).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import bounds, form_of_constraint, free_body
from inference.decoder.token_controllers.forcing import write_mark_at_word_end
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import tokens_left
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
from reasoning.constraints.form.model import Count, Filter, Unit
from reasoning.errors import ConflictError, LimitExceeded

__all__ = [
    "BREAKS",
    "LINE_TOKENS",
    "LineCount",
    "LineState",
    "Lining",
    "build_lines",
    "compile_lines",
]


#: The characters ``str.splitlines`` breaks a line at.
BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
#: Budget tokens an owed line is planned to take at the least: a break and a few words.
LINE_TOKENS = 3
_SENTENCE_END = ".!?\u3002\uff01\uff1f\"'\u201d\u2019)"


@dataclass(frozen=True)
class LineCount:
    """Between ``at_least`` and ``at_most`` (None: no maximum) non-blank lines (``sources``: ids)."""

    at_least: int = 0
    at_most: int | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class LineState:
    """A row's part: non-blank lines before the current one, whether it holds text, its tokens."""

    done: int = 0
    current: bool = False
    tokens: int = 0

    @property
    def lines(self) -> int:
        return self.done + (1 if self.current else 0)


def step(part: LineState, chunk: str) -> LineState:
    """``part`` after ``chunk`` is appended (a line break closes the current line)."""
    done, current, tokens = part.done, part.current, part.tokens + 1
    for ch in chunk:
        if ch in BREAKS:
            done, current, tokens = done + (1 if current else 0), False, 0
        elif not ch.isspace():
            current = True
    return LineState(done, current, tokens)


class Lining(Controller):
    """The line count at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: LineCount) -> None:
        self.ctx = ctx
        self.spec = spec
        self.want = spec
        tables = ctx.tables
        self._breaks = tables.holding(BREAKS)
        self._newline = tables.encode("\n")[0]

    def start(self) -> LineState:
        return LineState()

    def _need(self, state: SteerState) -> int:
        part: LineState = state.parts[self.slot]
        return max(0, self.want.at_least - part.lines)

    def owed(self, state: SteerState) -> Owed:
        need = self._need(state)
        return Owed(tokens=need * LINE_TOKENS) if need else Owed()

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_TARGET if self._need(d.state) else HOLD_NONE

    def ends_ok(self, state: SteerState) -> bool:
        return not self._need(state)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state = d.state
        part: LineState = state.parts[self.slot]
        budget = self.ctx.max_new_tokens
        need = self._need(state)
        if not need or not part.current or budget is None or state.pending:
            return None
        if self.want.at_most is not None and part.lines >= self.want.at_most:
            return None
        left = tokens_left(budget, d)
        if left <= need * LINE_TOKENS:
            return RowPlan("only", self._newline)
        share = left / (need + 1)
        if part.tokens >= share and (state.text.rstrip(" ")[-1:] in _SENTENCE_END or part.tokens >= 2 * share):
            d.marks[self.slot] = self._newline
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
        at_most = self.want.at_most
        if at_most is None:
            return
        for r, state in enumerate(states):
            part: LineState = state.parts[self.slot]
            if part.current and part.lines >= at_most:
                allowed[r] &= ~self._breaks

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Break a due line where the model ends its word."""
        write_mark_at_word_end(plans, self.slot, rows, self.ctx.tables.starts_wordchar)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        return step(before.parts[self.slot], new.text[len(before.text) :])

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        lines = len([ln for ln in state.text.splitlines() if ln.strip()])
        over = self.want.at_most is not None and lines > self.want.at_most
        return ("lines",) if over or lines < self.want.at_least else ()


def build_lines(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The line controller, when a request counts the answer's lines."""
    spec = spec_of(specs, LineCount)
    return Lining(ctx, spec) if spec is not None else None


def compile_lines(ctx: CompileContext) -> LineCount | None:
    """The ``token_controllers.lines.LineCount`` of the counts of the answer's lines (a range is two
    constraints; None: none, or not controllable here: a body that is not free, fixed text,
    citations or a stated decision).

    Raises:
        ConflictError: a minimum above a maximum of lines.
        LimitExceeded: more lines than the token budget holds.
    """
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    max_new_tokens, inserts = ctx.max_new_tokens, ctx.inserts
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
             and form.unit is Unit.LINES and form.per is None and form.of is None and form.filter == Filter()]
    if not found:
        return None
    lo = max(bounds(form.relation, form.n)[0] for _, form in found)
    his = [hi for _, form in found if (hi := bounds(form.relation, form.n)[1]) is not None]
    hi = min(his) if his else None
    ids = tuple(c.id for c, _ in found)
    if hi is not None and lo > hi:
        raise ConflictError(f"at least {lo} lines but at most {hi}", constraint_ids=list(ids))
    if max_new_tokens is not None and lo * LINE_TOKENS > max_new_tokens:
        raise LimitExceeded(f"{lo} lines cannot fit in {max_new_tokens} new tokens", constraint_ids=list(ids))
    if inserts or not free_body(layout):
        return None
    if hi is not None and hi < 1:
        return None
    controlled.update(ids)
    return LineCount(at_least=lo, at_most=hi, sources=ids)
