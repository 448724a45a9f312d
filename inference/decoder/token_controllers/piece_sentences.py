"""Sentences per paragraph: "exactly two sentences in every paragraph", "at most three each".

A generic ``count(sentences, per=paragraphs)`` bound compiles to one
``PieceSentences``, in one of two bodies (``compile_piece_sentences``): the blank-line
body of a counted number of paragraphs (each paragraph is one free segment,
left at its exit token), or a free body whose paragraphs are the model's own
(``free``: it writes the blank lines, as many as it likes). Sentences and
paragraphs are the verifier's (``units.pieces``). The current paragraph is
the text after the last ``\n\n`` (the verifier's paragraph separator); its
closed sentences are counted from the text on each plan.

- a minimum: while the current paragraph holds fewer closed sentences, its
  exit (the next paragraph, or the end) and line breaks are masked, and the
  stop is held; when the sentences still owed (here and in the paragraphs
  after) need the budget left, the current sentence is asked to close;
- a maximum: while its last allowed sentence is open no token may end it
  and begin another one; once the paragraph holds that many closed
  sentences, a counted paragraph's segment ends (``forces``), and in a free
  body the next tokens write ``\n\n`` (a token that begins with it, or a
  line break alone and then a token that begins with one), or the answer
  stops where the model's own best token is the stop, so the paragraph ends
  there.

Guarantee: within the token budget, an answer this controller lets end
has every paragraph within the bounds. The compiler controls it only in
those bodies, with no controller that inserts text, no other sentence rule
and (in a free body) no fixed text and no other rule on paragraphs or lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import (
    INSERTING,
    bounds,
    form_of_constraint,
    forms_of,
    free_body,
)
from inference.decoder.token_controllers.count_tallies import good_last_word
from inference.decoder.token_controllers.openings import closed_pieces
from inference.decoder.token_controllers.pacing import tokens_left
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
from inference.decoder.token_controllers.template import Free
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Position, Unit, Wrap

__all__ = [
    "PieceSentences",
    "PieceSentencing",
    "build_piece_sentences",
    "closed_sentences",
    "compile_piece_sentences",
]


_TOKENS_PER_SENTENCE = 10  # budget tokens an owed sentence is planned to take at the least
_CHARS_PER_TOKEN = 4  # a rough token length of running text, to pace a sentence's share
#: A token that ends a sentence and goes on with the next one.
_ENDS_AND_GOES_ON = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+\S|[\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*\s*\S")


@dataclass(frozen=True)
class PieceSentences:
    """Between ``at_least`` and ``at_most`` (None: no maximum) sentences in every paragraph."""

    at_least: int = 0
    at_most: int | None = None
    sources: tuple[str, ...] = ()
    free: bool = False  # the paragraphs are the model's own, in a free body


def current_paragraph(text: str) -> str:
    """The text after the last paragraph separator (``textstats.blank_line_paragraphs``'s)."""
    return text.rsplit("\n\n", 1)[-1]


def closed_sentences(paragraph: str) -> tuple[int, str]:
    """The closed sentences of ``paragraph`` and the open one's text ("" when none is open)."""
    pieces = units.pieces(Unit.SENTENCES, paragraph)
    closed = closed_pieces(Unit.SENTENCES, paragraph, pieces) if pieces else 0
    return closed, "" if closed == len(pieces) else pieces[-1]


class PieceSentencing(Controller):
    """The sentences of every paragraph at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: PieceSentences) -> None:
        self.ctx = ctx
        self.spec = spec
        self.want = spec
        tables = ctx.tables

        def build() -> torch.Tensor:
            values = [_ENDS_AND_GOES_ON.search(t) is not None for t in tables.texts]
            return torch.tensor(values, dtype=torch.bool, device=tables.device)

        def breaks(after_newline: bool) -> torch.Tensor:
            def build() -> torch.Tensor:
                values = [t.startswith("\n") if after_newline else t.startswith("\n\n") or t == "\n"
                          for t in tables.texts]
                return torch.tensor(values, dtype=torch.bool, device=tables.device)

            table: torch.Tensor = tables.cached(("piece-sentences-breaks", after_newline), build)
            return table

        self._goes_on = tables.cached(("piece-sentences-goes-on", 0), build)
        # Tokens that complete a paragraph separator, after a line break and elsewhere.
        self._breaks = (breaks(False), breaks(True))
        self._newline = tables.has_newline
        self._eos = frozenset(tables.eos_ids)
        self._breaking: list[int] = []

    def _body(self, d: RowPlanDraft) -> bool:
        segment = d.comp.segment
        return isinstance(segment, Free) and segment.role == "body"

    def _short(self, state: SteerState) -> bool:
        return closed_sentences(current_paragraph(state.text))[0] < self.want.at_least

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_ALL if self._short(d.state) else HOLD_NONE

    def ends_ok(self, state: SteerState) -> bool:
        return not self._short(state)

    def forces(self, d: RowPlanDraft) -> bool:
        """End the paragraph once it holds the most sentences allowed, at their end."""
        most = self.want.at_most
        if most is None or self.want.free or not self._body(d) or d.state.pending:
            return False
        closed, open_text = closed_sentences(current_paragraph(d.state.text))
        return closed >= most and not open_text

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Ask the open sentence to close when the sentences still owed need the budget left;
        mark the row for the masks (whether the paragraph is short, whether its last allowed
        sentence is open)."""
        state = d.state
        if not self._body(d) or state.pending:
            return None
        closed, open_text = closed_sentences(current_paragraph(state.text))
        short = closed < self.want.at_least
        last = self.want.at_most is not None and closed >= self.want.at_most - 1
        full = self.want.free and self.want.at_most is not None and closed >= self.want.at_most and not open_text
        if short or last:
            d.marks[self.slot] = (short, last, full)
        if short and not self._budget_out(state):
            d.may_stop = False  # a middle paragraph's exit is no stop the holds could refuse
        budget = self.ctx.max_new_tokens
        if budget is None or not open_text or d.close:
            return None
        missing = max(1, self.want.at_least - closed) + self.want.at_least * d.comp.bodies_after
        left = tokens_left(budget, d, owed=d.owed_tokens)
        share = left / missing
        due = left <= _TOKENS_PER_SENTENCE * missing or len(open_text) >= share * _CHARS_PER_TOKEN
        if due or (short and d.forced):  # a forced end (the part's deadline) waits for the sentence
            words = open_text.split()
            d.close = "end" if words and good_last_word(words[-1]) else "word"
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
        self._breaking = []  # full rows whose model goes on: they break, they do not stop
        for r, plan in enumerate(plans):
            short, last, full = plan.marks.get(self.slot, (False, False, False))
            if short and not self._budget_out(states[r]):
                # The paragraph may not end yet: no exit, no line break.
                keep = allowed[r] & ~self._newline
                keep[plan.exit] = False
                if bool(keep.any()):
                    allowed[r] = keep
            if last:
                allowed[r] &= ~self._goes_on
                fragments[r] &= ~self._goes_on
            if full:
                # A free body's full paragraph ends here: a line break (then a blank line) or the stop.
                keep = allowed[r] & self._breaks[states[r].text.endswith("\n")]
                best = int(lp[r].argmax())
                if best == plan.exit or best in self._eos:  # the model's own wish to stop is kept
                    keep[plan.exit] = bool(allowed[r, plan.exit])
                elif bool(keep.any()):
                    self._breaking.append(r)
                if bool(keep.any()):
                    allowed[r] = keep
                    fragments[r] = False

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """A full paragraph the model would go on with breaks: the stop mass moved to its exit
        is taken back."""
        for r in self._breaking:
            rows[r, plans[r].exit] = NEG_INF

    def _budget_out(self, state: SteerState) -> bool:
        """Whether the budget left is too short for anything but the end (then the cut is reported)."""
        budget = self.ctx.max_new_tokens
        if budget is None or state.seg >= len(self.ctx.layout.segments):
            return False
        return budget - state.n_tokens - self.ctx.layout.segments[state.seg].reserve_tokens <= 2

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        for paragraph in units.pieces(Unit.PARAGRAPHS, state.text):
            n = len(units.pieces(Unit.SENTENCES, paragraph))
            if n < self.want.at_least or self.want.at_most is not None and n > self.want.at_most:
                return ("piece-sentences",)
        return ()


def build_piece_sentences(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentences-per-paragraph controller, when a request bounds them (see the module doc)."""
    spec = spec_of(specs, PieceSentences)
    return PieceSentencing(ctx, spec) if spec is not None else None


def compile_piece_sentences(ctx: CompileContext) -> PieceSentences | None:
    """The ``token_controllers.piece_sentences.PieceSentences`` of a bound on the sentences of every
    paragraph ("exactly two sentences in each paragraph"; None: none, or not controllable here).

    Controlled: in the blank-line body of a counted number of paragraphs (``_lower_paragraphs``),
    or alone in a free body without fixed text whose paragraphs the model writes (``free``: no
    other rule on paragraphs or lines), with no controller that writes text of its own
    (``inserts``, the kinds of ``INSERTING``) and no other rule on sentences.
    """
    constraints, layout, controlled, inserts = ctx.hard, ctx.layout, ctx.controlled, ctx.inserts
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
             and form.unit is Unit.SENTENCES and form.per is Unit.PARAGRAPHS and form.of is None
             and form.filter == Filter()]
    free = free_body(layout)
    if len(found) != 1 or inserts or not (free or layout.body.kind == "blank_paragraphs") \
            or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    pieces = (Unit.SENTENCES, Unit.PARAGRAPHS, Unit.LINES) if free else (Unit.SENTENCES,)
    for q in constraints:
        for f in forms_of(q) if q.id != c.id else ():
            if isinstance(f, (Count, Position, Wrap)) and (
                    getattr(f, "unit", None) in pieces or getattr(f, "per", None) in pieces):
                return None
    lo, hi = bounds(form.relation, form.n)
    if hi is not None and hi < max(lo, 1):
        return None
    controlled.add(c.id)
    return PieceSentences(at_least=lo, at_most=hi, sources=(c.id,), free=free)
