"""A share of the sentences ends with one mark: "at least half of your sentences are questions".

A generic ratio count whose part is the sentences ending with one
sentence-ending mark and whose whole is every sentence, with a lower bound
(``count(sentences, ends_with="?") / count(sentences) >= f``), compiles to one
``SentenceShare``. Sentences are the verifier's
(``reasoning.constraints.textstats.split_sentences``); a row's part of the
state is where its current sentence starts (``count_maxima.piece_start``, a settled
boundary) and how many complete sentences before it there are, and how many
of them end with the mark, kept as the text grows. The controller keeps:

- a token holding another terminal than the mark is masked (one ``[V]``
  mask) wherever closing the current sentence without the mark would leave
  the share below the bound (``q / (n + 1) < f`` with ``q`` of the ``n``
  complete sentences marked); the mark itself is never masked, and a marked
  sentence only raises the share, so after every sentence end the share
  holds;
- no closing quote or bracket right after the mark there (the sentence
  would end with it), checked per candidate;
- the answer may end only where the share is kept, its unfinished last
  piece counted as a sentence (with the mark or not), and the stop
  is held while it does not; when the token budget is about to run out
  inside a sentence that must end with the mark, the mark is written after
  its last word. The mass the model puts on the other ends moves to the
  mark where they are masked, so the sentence ends where the model would
  end it, with the mark.

Guarantee: an answer this controller lets end has the share of its
sentences ending with the mark. The compiler controls it only in a free
body without fixed text (a literal would be forced past the mask), without
citations, a stated decision or required keywords that hold a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import form_of_constraint, free_body, required_keywords
from inference.decoder.token_controllers.count_maxima import piece_start
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.protocol import (
    HOLD_ALL,
    HOLD_NONE,
    NEG_INF,
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.sentence_marks import CLOSERS, TERMINALS
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Measure, Unit, Wrap
from reasoning.constraints.model import Constraint, Relation
from reasoning.errors import ConflictError

__all__ = [
    "SentenceShare",
    "ShareState",
    "Sharing",
    "build_shares",
    "compile_sentence_share",
]


_LAST_TOKENS = 3  # budget tokens left at which an open sentence gets its mark


@dataclass(frozen=True)
class SentenceShare:
    """At least (``strict``: more than) ``fraction`` of the sentences end with ``mark`` (one of
    ``TERMINALS``; ``sources``: the constraint ids)."""

    mark: str
    fraction: float
    strict: bool = False
    sources: tuple[str, ...] = ()

    @property
    def form(self) -> Count:
        return Count(unit=Unit.SENTENCES, filter=Filter(ends_with=self.mark), of=Measure(unit=Unit.SENTENCES),
                     fraction=self.fraction, relation=Relation.MORE_THAN if self.strict else Relation.AT_LEAST)

    def holds(self, marked: int, sentences: int) -> bool:
        """Whether ``marked`` of ``sentences`` keep the share (no sentence: only a zero share)."""
        if sentences <= 0:
            return self.fraction <= 0 and not self.strict
        share = marked / sentences
        return share > self.fraction if self.strict else share >= self.fraction


@dataclass(frozen=True)
class ShareState:
    """A row's part: where its current sentence starts, and the complete sentences before it
    (``sentences``) of which ``marked`` end with the mark."""

    start: int = 0
    sentences: int = 0
    marked: int = 0
    forcing: int = 0  # tokens of the mark written by a forced end (0: none in progress)


class Sharing(Controller):
    """The sentence share at decode time (see the module doc)."""

    lazy = True

    def __init__(self, ctx: Context, spec: SentenceShare) -> None:
        self.ctx = ctx
        self.spec = spec
        self.want = spec
        others = set(TERMINALS) - {spec.mark}
        tables = ctx.tables
        self._others = tables.holding(frozenset(others))
        self._mark_ids = tuple(tables.encode(spec.mark))
        self._other_ids = torch.nonzero(self._others).flatten()
        self._moved: dict[int, torch.Tensor] = {}  # per masked row of this step: the other ends' mass

    def start(self) -> ShareState:
        return ShareState()

    def _other_end_ok(self, state: SteerState) -> bool:
        """Whether the current sentence may end without the mark."""
        part: ShareState = state.parts[self.slot]
        return self.want.holds(part.marked, part.sentences + 1)

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        moved: dict[int, torch.Tensor] = {}
        for r, state in enumerate(states):
            if not self._other_end_ok(state):
                allowed[r] &= ~self._others
                if len(self._mark_ids) == 1:
                    moved[r] = torch.logsumexp(lp[r, self._other_ids], dim=0)
        self._moved = moved

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """The mass the model put on ending the sentence otherwise goes to the mark, in the rows
        whose other ends were masked (so the sentence ends where the model would end it)."""
        mark = self._mark_ids[0] if self._mark_ids else -1
        for r, mass in self._moved.items():
            if rows[r, mark] > NEG_INF:
                rows[r, mark] = torch.logaddexp(rows[r, mark], mass)
        self._moved = {}

    def _may(self, state: SteerState, text: str, *, pieced: bool) -> bool:
        """Whether ``text`` may follow where the current sentence must end with the mark: no
        other terminal (a whole token's is masked already) and no closer right after the mark
        (the sentence would end with the closer)."""
        if self._other_end_ok(state):
            return True
        previous = state.text[-1:]
        for ch in text:
            if pieced and ch in TERMINALS and ch != self.want.mark or ch in CLOSERS and previous == self.want.mark:
                return False
            previous = ch
        return True

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        return self._may(state, text, pieced=False)

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        return self._may(state, text, pieced=True)

    def _must_mark(self, state: SteerState, reserve: int) -> bool:
        """Whether the budget (``reserve``: the tokens the later segments keep) is about to run
        out inside a sentence that must end with the mark."""
        budget = self.ctx.max_new_tokens
        part: ShareState = state.parts[self.slot]
        if budget is None or state.pending or not self._mark_ids or part.forcing or self._other_end_ok(state):
            return False
        current = state.text[part.start :].strip()
        if not re.search(r"\w", current) or current.endswith(self.want.mark):
            return False
        return budget - state.n_tokens - reserve <= max(_LAST_TOKENS, len(self._mark_ids) + 1)

    def route(self, state: SteerState) -> RowPlan | None:
        part: ShareState = state.parts[self.slot]
        if 0 < part.forcing < len(self._mark_ids):
            return RowPlan("only", self._mark_ids[part.forcing], seg=state.seg)
        return None

    def holding(self, state: SteerState) -> bool:
        return bool(state.parts[self.slot].forcing)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Write the mark after the current sentence's text when the budget is about to run
        out inside a sentence that must end with it."""
        return RowPlan("only", self._mark_ids[0]) if self._must_mark(d.state, d.comp.reserve_tokens) else None

    def ends_ok(self, state: SteerState) -> bool:
        part: ShareState = state.parts[self.slot]
        current = state.text[part.start :].strip()
        if not current:
            return self.want.holds(part.marked, part.sentences)
        return self.want.holds(part.marked + current.endswith(self.want.mark), part.sentences + 1)

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: ShareState = before.parts[self.slot]
        forcing = part.forcing
        if forcing and forcing < len(self._mark_ids) and token_id == self._mark_ids[forcing]:
            forcing += 1
        elif not forcing and token_id == self._mark_ids[0] and len(self._mark_ids) > 1 \
                and self._must_mark(before, comp.reserve_tokens if comp is not None else 0):
            forcing = 1  # the mark's first token, written by ``pace``: its other tokens follow
        else:
            forcing = 0
        forcing = forcing if forcing < len(self._mark_ids) else 0
        if len(new.text) == len(before.text) and not new.pending and not before.pending:
            return replace(part, forcing=forcing)
        start = piece_start(Unit.SENTENCES, new.text, part.start)
        if start <= part.start:
            return replace(part, forcing=forcing)
        passed = units.pieces(Unit.SENTENCES, new.text[part.start : start])
        marked = sum(1 for piece in passed if piece.endswith(self.want.mark))
        return ShareState(start, part.sentences + len(passed), part.marked + marked, forcing)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if self.ends_ok(state) else ("sentence-share",)


def build_shares(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentence-share controller, when a share of the sentences must end with one mark."""
    spec = spec_of(specs, SentenceShare)
    return Sharing(ctx, spec) if spec is not None else None


def compile_sentence_share(ctx: CompileContext) -> SentenceShare | None:
    """The ``token_controllers.shares.SentenceShare`` of a lower bound on the share of the sentences
    ending with one sentence-ending mark ("at least half of the sentences are questions":
    ``count(sentences, ends_with="?") / count(sentences) >= 0.5``; None: none, or not
    controllable here).

    Controlled: in a free body without fixed text, citations or a stated decision
    (``inserts``), whose required keywords hold no terminal, beside no other rule on every
    sentence's end mark.

    Raises:
        ConflictError: a share of sentences with the mark above a maximum share of them, or
            beside every sentence ending with another mark.
    """
    constraints, layout, controlled, inserts = ctx.hard, ctx.layout, ctx.controlled, ctx.inserts
    found: list[tuple[Constraint, Count, str]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or form.of is None or form.fraction is None or form.per is not None:
            continue
        mark = form.filter.ends_with or ""
        if form.unit is Unit.SENTENCES and form.of == Measure(unit=Unit.SENTENCES) and len(mark) == 1 \
                and mark in TERMINALS and form.filter == Filter(ends_with=mark) \
                and form.relation in (Relation.AT_LEAST, Relation.MORE_THAN) and form.fraction > 0:
            found.append((c, form, mark))
    if not found:
        return None
    c, form, mark = max(found, key=lambda item: (item[1].fraction or 0.0, item[1].relation is Relation.MORE_THAN))
    fraction = float(form.fraction or 0.0)
    for q in constraints:
        other = form_of_constraint(q)
        if isinstance(other, Wrap) and other.unit is Unit.SENTENCES and not other.left and other.right != mark \
                and other.right in TERMINALS:
            raise ConflictError(f"every sentence cannot end with {other.right!r} when some must end with {mark!r}",
                                constraint_ids=[c.id, q.id])
        capped = isinstance(other, Count) and other.of == form.of and other.measure == form.measure \
            and other.per is None and other.fraction is not None and other.relation in (Relation.AT_MOST,
                                                                                        Relation.LESS_THAN)
        if capped and isinstance(other, Count) and other.fraction is not None and (
                other.fraction < fraction or other.fraction == fraction
                and (other.relation is Relation.LESS_THAN or form.relation is Relation.MORE_THAN)):
            raise ConflictError(f"a share of the sentences ending with {mark!r} of at least {fraction:g} "
                                f"and at most {other.fraction:g}", constraint_ids=[c.id, q.id])
    if fraction > 1 or fraction == 1 and form.relation is Relation.MORE_THAN:
        raise ConflictError(f"more than every sentence cannot end with {mark!r}", constraint_ids=[c.id])
    if inserts or not free_body(layout):
        return None
    if any(ch in TERMINALS for text in required_keywords(constraints) for ch in text):
        return None
    if any(isinstance(q_form := form_of_constraint(q), Wrap) and q_form.unit is Unit.SENTENCES for q in constraints):
        return None  # every sentence's end is another controller's
    ids = tuple(q.id for q, _, m in found if m == mark)
    controlled.update(ids)
    return SentenceShare(mark=mark, fraction=fraction, strict=form.relation is Relation.MORE_THAN, sources=ids)
