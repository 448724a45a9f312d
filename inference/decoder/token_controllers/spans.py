"""Counts of delimited spans: "two side comments in parentheses", "quote exactly three phrases".

A generic ``count(spans, left, right)`` constraint whose delimiters are marks
(one character, or a few: ``**bold**``, ``<<title>>``, a fence of backquotes)
compiles to one ``SpanCount``. Spans are the verifier's
(``reasoning.constraints.form.units``: ``left``, then text without a line
break, then ``right``, found left to right without overlap; with
``nonempty`` a span of only delimiters and spaces is no span). A row's
state is the number of spans before a settled point and that point (the
end of the last span found, or the start of the last line), so each step
re-reads only the text since it: a span never crosses a line break, and a
found span stays found however the text grows. The count is the verifier's
count on that tail, so controller and verifier cannot disagree.

How each bound is kept:

- a maximum: a token may open spans only while room is left. Every
  ``left`` of a token may open at most one span (an open span may still
  close too), so a token whose ``left`` delimiters could take the count past
  the maximum is masked; each candidate is also checked on the count of the
  tail it makes (a delimiter of several characters may be spelled across
  tokens);
- a minimum: owed spans are paced over the token budget, the k-th of N once
  k / (N + 1) of it is spent (or at once when the budget left holds little
  more than the owed spans). A due span opens where the model ends a word
  (its likeliest token does not continue it): ``left`` is written, after a
  space where the text does not end in one. Inside an open span a line
  break and ``left`` are refused, and ``right`` is refused until the span
  holds a letter or digit; once it holds ``_CLOSE_AFTER`` tokens (or the
  budget left is short) ``right`` is written where the model ends a word,
  and forced when the budget left holds only what is owed. The stop waits
  while spans are owed or one is open (``ends_ok``), and the owed spans
  keep their tokens in the budget (``owed``).

Guarantee: a text this controller lets through never holds more spans than
the maximum, and an answer it lets end holds at least the minimum. The
compiler controls a span count only where no fixed text of the layout holds
a delimiter and nothing else forces text into the answer's running prose.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import (
    bounds,
    fixed_texts,
    form_of_constraint,
    required_keywords,
)
from inference.decoder.token_controllers.forcing import ForcedText, Writer, write_mark_at_word_end
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import next_due, tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_NONE,
    HOLD_TARGET,
    Context,
    Controller,
    JudgesText,
    Owed,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Measure, Unit
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError, LimitExceeded

__all__ = [
    "SPAN_TOKENS",
    "SpanCount",
    "SpanState",
    "Spanning",
    "build_spans",
    "compile_spans",
]


#: Budget tokens one owed span is planned to take: its opening, a few words, its close.
SPAN_TOKENS = 7
_CLOSE_AFTER = 4  # tokens inside a span after which it closes where the model ends a word


@dataclass(frozen=True)
class SpanCount:
    """Between ``at_least`` and ``at_most`` (None: no maximum) spans ``left ... right``
    (marks, one character or a few) in the answer (``sources``: the constraint ids)."""

    left: str
    right: str
    at_least: int = 0
    at_most: int | None = None
    nonempty: bool = True
    sources: tuple[str, ...] = ()

    @property
    def measure(self) -> Measure:
        return Measure(unit=Unit.SPANS, filter=Filter(left=self.left, right=self.right, nonempty=self.nonempty))


@dataclass(frozen=True)
class SpanState:
    """A row's part: spans found before ``since``, where the unsettled tail starts,
    tokens written inside the open span, and the tokens still to force."""

    closed: int = 0
    since: int = 0
    inside: int = 0
    pending: tuple[int, ...] = ()


class Spanning(Writer, JudgesText):
    """The span count at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: SpanCount) -> None:
        self.ctx = ctx
        self.spec = spec
        self.want = spec
        tables = ctx.tables
        self._measure = spec.measure
        self._pattern = re.compile(re.escape(spec.left) + r"[^\n]+?" + re.escape(spec.right))
        self._opens = self._vector(lambda t: t.count(spec.left))
        self._has_right = self._vector(lambda t: int(spec.right in t)) > 0
        self._newline = tables.has_newline
        self._opening = ForcedText(tables, spec.left)
        self._closing = ForcedText(tables, spec.right, lead="")
        self._close_tokens = len(self._closing.spelling.bare)
        self.lazy = spec.at_most is not None

    def _vector(self, value: Callable[[str], int]) -> torch.Tensor:
        tables = self.ctx.tables

        def build() -> torch.Tensor:
            return torch.tensor([value(t) for t in tables.texts], dtype=torch.int32, device=tables.device)

        return tables.cached(("spans", self.want.left, self.want.right, value.__code__), build)  # type: ignore[no-any-return]

    def start(self) -> SpanState:
        return SpanState()

    def _tail(self, state: SteerState) -> str:
        return state.text[state.parts[self.slot].since :]

    def _open(self, state: SteerState) -> bool:
        return self.want.left in self._tail(state)

    def _owed_spans(self, state: SteerState) -> int:
        part: SpanState = state.parts[self.slot]
        return max(0, self.want.at_least - part.closed - (1 if self._open(state) else 0))

    def owed(self, state: SteerState) -> Owed:
        need = self._owed_spans(state)
        tokens = need * SPAN_TOKENS + (self._close_tokens + 1 if self._open(state) else 0)
        return Owed(tokens=tokens, insert=True, writes=True) if tokens else Owed()

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_TARGET

    def ends_ok(self, state: SteerState) -> bool:
        part: SpanState = state.parts[self.slot]
        return part.closed >= self.want.at_least and not (self.want.at_least and self._open(state))

    def _left_tokens(self, d: RowPlanDraft) -> int:
        budget = self.ctx.max_new_tokens
        if budget is None:
            return 1 << 30
        return tokens_left(budget, d)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Open a due span, or close one that is long enough, where the model ends a word;
        at once when the budget left holds only what is owed."""
        state = d.state
        part: SpanState = state.parts[self.slot]
        if part.pending or not self.want.at_least:
            return None
        left = self._left_tokens(d)
        tail = self._tail(state)
        if self.want.left in tail:
            content = tail[tail.index(self.want.left) + len(self.want.left) :]
            if not any(ch.isalnum() for ch in content):
                return None
            urgent = left <= self._owed_spans(state) * SPAN_TOKENS + self._close_tokens + 1
            if urgent:
                return self._closing.begin(state)
            if part.inside >= _CLOSE_AFTER or d.close:
                d.marks[self.slot] = self._closing.first(state.text)
            return None
        need = self._owed_spans(state)
        if not need or d.close:
            return None
        budget = self.ctx.max_new_tokens
        if left <= need * SPAN_TOKENS:
            return self._opening.begin(state)
        if budget is not None and next_due(d, budget, self.want.at_least - need, self.want.at_least, kept=SPAN_TOKENS):
            d.marks[self.slot] = self._opening.first(state.text)
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
        spec = self.spec
        for r, state in enumerate(states):
            part: SpanState = state.parts[self.slot]
            tail = self._tail(state)
            is_open = spec.left in tail
            if spec.at_most is not None:
                # Each ``left`` may open one span; an open span may still close.
                room = spec.at_most - part.closed - (1 if is_open else 0)
                if is_open and spec.left == spec.right:
                    room += 1  # the first quote of the token closes the open span
                allowed[r] &= self._opens <= max(room, 0)
            if is_open:
                content = tail[tail.index(spec.left) + len(spec.left) :]
                allowed[r] &= ~self._newline
                if spec.left != spec.right:
                    allowed[r] &= self._opens == 0
                if not any(ch.isalnum() for ch in content):
                    allowed[r] &= ~self._has_right

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Write a due opening or close where the model ends its word."""
        write_mark_at_word_end(plans, self.slot, rows, self.ctx.tables.starts_wordchar)

    def fits(self, state: SteerState, text: str) -> bool:
        """Whether appending ``text`` keeps the count within the maximum (counted on the tail)."""
        if self.want.at_most is None:
            return True
        part: SpanState = state.parts[self.slot]
        return part.closed + units.count(self._measure, self._tail(state) + text) <= self.want.at_most

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: SpanState = before.parts[self.slot]
        chunk = new.text[len(before.text) :]
        # Inside an open span the close is what was begun (「 and 」 share their first byte).
        begun = self._closing if self._open(before) else self._opening
        pending = begun.rest(part.pending, True, token_id) or ()
        if not chunk:
            return SpanState(part.closed, part.since, part.inside, pending)
        tail = new.text[part.since :]
        closed, since = part.closed, part.since
        found = list(self._pattern.finditer(tail))
        if found:
            end = found[-1].end()
            closed += units.count(self._measure, tail[:end])
            since += end
        line = new.text.rfind("\n", since)
        if line >= 0:
            since = line + 1
        opened = self.want.left in new.text[since:]
        inside = part.inside + 1 if opened and since == part.since else (1 if opened else 0)
        return SpanState(closed, since, inside, pending)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        count = units.count(self._measure, state.text)
        short = count < self.want.at_least
        over = self.want.at_most is not None and count > self.want.at_most
        return ("spans",) if short or over else ()


def build_spans(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The span controller, when a request counts spans between delimiters made of marks."""
    spec = spec_of(specs, SpanCount)
    return Spanning(ctx, spec) if spec is not None else None


#: The most characters a controlled span delimiter has ("**", "<<", a fence of three backquotes).
_MOST_DELIMITER = 3


def compile_spans(ctx: CompileContext) -> SpanCount | None:
    """The ``token_controllers.spans.SpanCount`` of the counts of spans between one pair of
    delimiters made of one to three marks (None: none, or not controllable here).

    Controlled: every whole-answer count of those spans (a range is two constraints), in a free
    body whose fixed text (literals, required keywords) holds neither delimiter, with
    no citations or stated decision (``inserts``: their brackets and sentences are forced) and
    no wrapper of the answer.

    Raises:
        ConflictError: a minimum above a maximum of the same spans.
        LimitExceeded: more spans than the token budget holds.
    """
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    max_new_tokens, inserts = ctx.max_new_tokens, ctx.inserts
    found: list[tuple[Constraint, Count]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Count) and form.unit is Unit.SPANS and form.per is None and form.of is None:
            found.append((c, form))
    if not found:
        return None
    f = found[0][1].filter
    left, right = f.left or "", f.right or ""
    same = [(c, form) for c, form in found if form.filter == f]
    lo = max(bounds(form.relation, form.n)[0] for _, form in same)
    his = [hi for _, form in same if (hi := bounds(form.relation, form.n)[1]) is not None]
    hi = min(his) if his else None
    ids = tuple(c.id for c, _ in same)
    if hi is not None and lo > hi:
        raise ConflictError(f"at least {lo} spans in {left}...{right} but at most {hi}", constraint_ids=list(ids))
    if max_new_tokens is not None and lo * SPAN_TOKENS > max_new_tokens:
        raise LimitExceeded(f"{lo} spans in {left}...{right} cannot fit in {max_new_tokens} new tokens",
                            constraint_ids=list(ids))
    if not 1 <= len(left) <= _MOST_DELIMITER or not 1 <= len(right) <= _MOST_DELIMITER \
            or any(ch.isalnum() or ch.isspace() for ch in left + right):
        return None  # a delimiter of marks only (a word or a line break is not written inside prose)
    fixed = list(fixed_texts(layout)) + required_keywords(constraints)
    if inserts or layout.wrap is not None or layout.body.kind != "free" \
            or any(ch in text for text in fixed for ch in (left, right, "\n")):
        return None
    if any(c.kind == Kind.QUOTATION for c in constraints) and '"' in (left, right):
        return None
    controlled.update(ids)
    return SpanCount(left=left, right=right, at_least=lo, at_most=hi, nonempty=f.nonempty, sources=ids)
