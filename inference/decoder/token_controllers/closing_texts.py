"""A piece ends with a text: every sentence / line / paragraph (``k = 0``), or the k-th one.

``position(unit, k, ends_with, text)`` for sentences, lines or paragraphs
(the last piece is the end phrase's: ``compile.lowering.lower_forms``) compiles
to one ``Closing``. Pieces and the comparison are the verifier's
(``units.pieces``, ``verify.matches``: a one-word text is the piece's last
word without its punctuation, "... indeed." closes with "indeed"; a longer
one a suffix, "... That is all."). A row's part of the state is where its
current piece starts (``count_maxima.piece_start``), how many pieces come before
it, and the tokens of the text still to force. Where the rule applies (every
piece, or the k-th):

- a token that could end the piece (a sentence-ending mark; a line break
  for lines and paragraphs) is masked while the current piece does not end
  with the text, and every candidate is checked on the pieces it would
  complete (each must end with the text) and on the current one when it
  holds a piece end;
- where the model's own best token would end the piece, or stop, before the
  text is written, the text is forced there, token by token (the model then
  ends the piece as it wanted to); so is it when the token budget is about
  to run out (a paragraph of a counted blank-line body: its share of the
  budget, the layout's segment deadline), and a text of words closing a line
  or paragraph is then written after a sentence end (the open sentence is
  asked to end a few tokens before, so no sentence is cut by the text);
- the stop is held while the text is being written or the current piece
  (the k-th: until it is complete) does not end with it.

The k-th paragraph is counted as the verifier counts it (``\n\n``
separators, an empty paragraph included), so no candidate may write an empty
paragraph (a separator at the start, or two with only whitespace between):
then the k-th of the controller's pieces is the verifier's k-th paragraph.
Before the k-th paragraph has begun, a paragraph break (``\n\n``) is
written at a sentence end once the budget left holds little more than the
paragraphs still to begin (``_PARAGRAPH_TOKENS`` each; the open sentence is
asked to end then), so it begins in time.

A wrap of every piece with nothing before it (``wrap(lines, "", ";")``: "a
semicolon at the end of each line", "end every sentence with '!?'") is the
same closing, judged as the wrap is (the piece's last characters, so
"done;!" is open). A text of marks follows the last word without a space;
its first token is forced even where it ends the piece ("!"), the rest
follows. Where another controller ends an open piece now (a count of lines
breaking the line late in the budget), the text comes first (``precede``).

So a text this controller lets end closes every (or its k-th) piece with
the text, provided nothing else forces tokens into the answer: the compiler
controls a closing only in a free body without fixed text (or, for every
paragraph, the blank-line body of a paragraph count, which holds only its
blank lines) and without controllers that insert words. A budget that runs out first is reported
(``unmet``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import (
    INSERTING,
    bounds,
    case_of,
    check_pieces_agree,
    fixed_texts,
    form_of_constraint,
    forms_of,
    free_body,
    placed_from_start,
)
from inference.decoder.token_controllers.count_maxima import PIECE_UNITS, piece_start
from inference.decoder.token_controllers.count_tallies import good_last_word
from inference.decoder.token_controllers.forcing import ForcedText, Writer
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_ALL,
    HOLD_NONE,
    Context,
    Controller,
    JudgesText,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.sentence_marks import TERMINALS
from inference.decoder.token_controllers.template import Layout
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Form, Position, Unit, Wrap
from reasoning.constraints.form.verify import check, matches
from reasoning.constraints.model import Kind

__all__ = [
    "CLOSED_UNITS",
    "Closing",
    "ClosingState",
    "Closings",
    "build_closings",
    "compile_closing",
    "piece_ends",
]


#: Pieces a closing text can be placed at the end of.
CLOSED_UNITS = frozenset({Unit.SENTENCES, Unit.LINES, Unit.PARAGRAPHS})
_PARAGRAPH_TOKENS = 24  # budget tokens planned for each paragraph still to begin before the k-th ends
_CLOSE_TOKENS = 8  # budget tokens before a text of words is due when the open sentence is asked to end


def piece_ends(unit: Unit) -> str:
    """The characters that may end a piece of ``unit`` (what a closing masks until its text is written)."""
    return TERMINALS if unit is Unit.SENTENCES else "\n"


@dataclass(frozen=True)
class Closing:
    """Every ``per`` piece (``k = 0``), or the ``k``-th, ends with ``text`` (``sources``: the constraint ids)."""

    per: Unit
    k: int
    text: str
    sources: tuple[str, ...] = ()
    wrap: bool = False  # read as a wrap ("a semicolon at the end of each line"): the piece's last characters

    @property
    def form(self) -> Position | Wrap:
        if self.wrap:
            return Wrap(left="", right=self.text, unit=self.per)
        return Position(unit=self.per, op="ends_with", text=self.text, k=self.k)

    def closed(self, piece: str) -> bool:
        """Whether ``piece`` ends with the text (a wrap's: nothing after it, "done;!" is open)."""
        if self.wrap:
            return piece.strip().endswith(self.text)
        return matches(piece, "ends_with", self.text, self.per)


@dataclass(frozen=True)
class ClosingState:
    """A row's part: where the current piece starts, the pieces before it, the text's tokens still to force."""

    start: int = 0
    before: int = 0
    pending: tuple[int, ...] = ()


def _empty_paragraph(text: str) -> bool:
    """Whether ``text`` holds an empty paragraph before its last one (``\n\n`` separators, as
    ``textstats.blank_line_paragraphs`` splits)."""
    return any(not piece.strip() for piece in text.split("\n\n")[:-1])


class Closings(Writer, JudgesText):
    """A piece's closing text at decode time (see the module doc)."""

    def __init__(self, ctx: Context, closing: Closing) -> None:
        self.ctx = ctx
        self.spec = closing
        self.closing = closing
        tables = ctx.tables
        ends = piece_ends(closing.per)
        self._enders = tables.holding(ends)
        self._ends = ends
        self._stops = torch.zeros_like(self._enders)
        self._stops[list(tables.eos_ids)] = True
        self._stops |= self._enders
        # A text of marks follows the piece's last word ("... doors;"); words stand apart.
        self._text = ForcedText(tables, closing.text, lead=" " if re.search(r"\w", closing.text) else "")
        self._counts_empty = closing.k > 0 and closing.per is Unit.PARAGRAPHS  # the verifier counts them
        self._break = ForcedText(tables, "\n\n", lead="")
        # A text of words closing a line or paragraph follows a whole sentence ("... game. Stay tuned.").
        self._worded = closing.per is not Unit.SENTENCES and re.search(r"\w", closing.text) is not None

    def start(self) -> ClosingState:
        return ClosingState()

    def _applies(self, part: ClosingState) -> bool:
        return self.closing.k == 0 or part.before == self.closing.k - 1

    def _open(self, state: SteerState) -> bool:
        """Whether the rule applies to the current piece and it holds words without the text at its end."""
        part: ClosingState = state.parts[self.slot]
        if part.pending or not self._applies(part):
            return False
        current = state.text[part.start :]
        return any(ch.isalnum() for ch in current) and not self.closing.closed(current)

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def _slack(self, state: SteerState, reserve: int) -> int | None:
        """The budget tokens left before the text must begin in a piece that owes it (None: no
        budget, or nothing owed); a paragraph of a counted body ends at its share of the budget."""
        budget = self.ctx.max_new_tokens
        if budget is None or state.pending or not self._open(state):
            return None
        left = budget - state.n_tokens - reserve
        if state.seg_deadline is not None:
            left = min(left, state.seg_deadline - state.n_tokens)
        return left - self._text.tokens(state.text) - 2

    def _budget_due(self, state: SteerState, reserve: int) -> bool:
        """Whether ``pace`` begins the text on ``state``'s row: the budget is about to run out, or
        (a text of words) nearly so, right after a sentence end."""
        slack = self._slack(state, reserve)
        if slack is None:
            return False
        return slack <= 0 or self._worded and slack <= _CLOSE_TOKENS and state.text.rstrip()[-1:] in TERMINALS

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Write the text when the budget is about to run out inside a piece that owes it (a text
        of words after a sentence end: the open sentence is asked to end a few tokens before); break
        the paragraph at a sentence end when the k-th paragraph must begin to fit the budget."""
        if self._budget_due(d.state, d.comp.reserve_tokens):
            return self._text.begin(d.state)
        slack = self._slack(d.state, d.comp.reserve_tokens)
        if slack is not None and slack <= _CLOSE_TOKENS and self._worded:
            text = d.state.text
            if not d.close:
                words = text[d.state.parts[self.slot].start :].split()
                d.close = "end" if words and good_last_word(words[-1]) else "word"
            return None
        if not self._break_due(d):
            return None
        text = d.state.text
        if text[-1:] and text[-1] in TERMINALS:
            return self._break.begin(d.state)
        if not d.close:  # the open sentence is asked to end first
            words = text[d.state.parts[self.slot].start :].split()
            d.close = "end" if words and good_last_word(words[-1]) else "word"
        return None

    def _may_break(self, state: SteerState) -> bool:
        """Whether a paragraph break may be due on ``state``'s row: the k-th paragraph (counted with
        empty ones) has not begun, and the current one holds words."""
        part: ClosingState = state.parts[self.slot]
        return self._counts_empty and self.ctx.max_new_tokens is not None and not part.pending \
            and not state.pending and part.before < self.closing.k - 1 \
            and any(ch.isalnum() for ch in state.text[part.start :])

    def _break_due(self, d: RowPlanDraft) -> bool:
        """Whether the paragraph before the k-th must end for the k-th to fit the budget left."""
        budget = self.ctx.max_new_tokens
        if budget is None or not self._may_break(d.state):
            return False
        part: ClosingState = d.state.parts[self.slot]
        return tokens_left(budget, d) <= (self.closing.k - part.before) * _PARAGRAPH_TOKENS

    def _break_begun(self, state: SteerState, token_id: int, plan_of: Callable[[SteerState], RowPlan]) -> bool:
        """Whether ``token_id`` is the paragraph break ``pace`` began on ``state``'s row: its first
        token, forced alone after a sentence end where a break may be due (the row's plan is
        rebuilt only then), so a tokenizer that spells ``\n\n`` in two writes the second too."""
        text = state.text
        if token_id != self._break.first(text) or not (text[-1:] and text[-1] in TERMINALS) \
                or not self._may_break(state):
            return False
        plan = plan_of(state)
        return plan.kind == "only" and plan.exit == token_id

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        self._text.clear()
        for r, state in enumerate(states):
            if not self._open(state) or state.pending:
                continue
            intended = bool(self._stops[int(lp[r].argmax())]) and self._text.intend(state, allowed[r])
            allowed[r] &= ~self._enders
            if intended:  # the text's first token, though it may end the piece ("!?"): the rest follows
                allowed[r, self._text.first(state.text)] = True

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Force the text's first token where the model would end the piece (or stop) without it."""
        for r, state in enumerate(states):
            self._text.force_intended(rows, r, state)

    def precede(self, d: RowPlanDraft, plan: RowPlan) -> RowPlan | None:
        """The text first where another controller writes a piece end now in a piece that owes it
        (a count of lines breaking the line when the budget left holds little more than its lines)."""
        exit_ends = plan.kind == "only" and 0 <= plan.exit < len(self._stops) and bool(self._stops[plan.exit])
        if not exit_ends or d.state.pending or not self._open(d.state):
            return None
        return self._text.begin(d.state)

    def fits(self, state: SteerState, text: str) -> bool:
        part: ClosingState = state.parts[self.slot]
        first = self._text.first(state.text)
        if first >= 0 and self._text.began(state, first) and text == self.ctx.tables.texts[first]:
            return True  # the text's first token, forced here: the rest follows (``pending``)
        if self.closing.k and part.before > self.closing.k - 1:
            return True
        if self._counts_empty and "\n" in text and _empty_paragraph(state.text + text):
            return False
        pieces = units.pieces(self.closing.per, state.text[part.start :] + text)
        ends = any(ch in self._ends for ch in text)
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            if (not last or ends) and (self.closing.k == 0 or part.before + index == self.closing.k - 1) \
                    and not self.closing.closed(piece):
                return False
        return True

    def ends_ok(self, state: SteerState) -> bool:
        part: ClosingState = state.parts[self.slot]
        if part.pending:
            return False
        if self.closing.k:
            return part.before > self.closing.k - 1 or part.before == self.closing.k - 1 and not self._open(state) \
                and any(ch.isalnum() for ch in state.text[part.start :])
        return not self._open(state)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: ClosingState = before.parts[self.slot]
        began = not part.pending and (self._text.began(before, token_id)
                                      or self._budget_due(before, comp.reserve_tokens if comp is not None else 0))
        pending = self._text.rest(part.pending, began, token_id)
        if pending is None:
            pending = self._break.rest((), self._break_begun(before, token_id, plan_of), token_id) or ()
        if len(new.text) == len(before.text) and not new.pending and not before.pending:
            return ClosingState(part.start, part.before, pending)
        start = piece_start(self.closing.per, new.text, part.start)
        passed = len(units.pieces(self.closing.per, new.text[part.start : start])) if start > part.start else 0
        return ClosingState(start, part.before + passed, pending)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if check(self.closing.form, state.text).satisfied else ("closing",)


def build_closings(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The closing controller, when a request ends every (or the k-th) sentence, line or paragraph with a text."""
    closing = spec_of(specs, Closing)
    return Closings(ctx, closing) if closing is not None else None


def compile_closing(ctx: CompileContext) -> Closing | None:
    """The ``token_controllers.closing_texts.Closing`` of every sentence, line or paragraph (``k = 0``), or the
    k-th line or paragraph, ending with a text (None: none, or not controllable here; the k-th
    sentence is ``compile_sentence_end``'s).

    Controlled: one such position, in a free body without fixed text, with no controller that
    forces words of its own (as for ``compile_opening``), a text that ends no piece before its own
    end, and no maximum that counts an item of the text (its tokens are forced past the masks).

    Raises:
        ConflictError: every piece ending with a text that the end phrase, or another closing
            of the same pieces, does not end with.
    """
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    inserts, placed = ctx.inserts, ctx.placed
    found = [(c, form) for c in constraints if c.id not in controlled
             and isinstance(own := _closing_form(form_of_constraint(c)), Position)
             and isinstance(form := placed_from_start(own, constraints) if own.unit is Unit.LINES else own, Position)
             and form.op == "ends_with" and form.unit in CLOSED_UNITS and form.text.strip()
             and (form.k == 0 or form.k >= 1 and form.unit in (Unit.LINES, Unit.PARAGRAPHS))]
    def agree(form: Position, text: str) -> bool:
        every = Closing(per=form.unit, k=0, text=" ".join(form.text.split()))
        return every.closed(text) or Closing(form.unit, 0, text).closed(every.text)

    read = [(c, form) for c, form in found if isinstance(form_of_constraint(c), Position)]  # a wrap: the prompt's
    check_pieces_agree(constraints, read, Kind.END_PHRASE, "end with", agree)
    if len(found) != 1 or inserts or placed or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    text = " ".join(form.text.split())
    case = case_of(constraints)
    text = text.lower() if case == "lower" else text.upper() if case == "upper" else text
    if not (free_body(layout) or form.unit is Unit.PARAGRAPHS and form.k == 0 and _paragraph_body(layout)):
        return None
    if any(ch in piece_ends(form.unit) for ch in text.rstrip(piece_ends(form.unit))) or "\n" in text:
        return None  # the text would end a piece before its own end
    for q in constraints:
        for cap in forms_of(q):
            if isinstance(cap, Count) and cap.of is None and cap.unit is not Unit.UNIQUE_WORDS \
                    and bounds(cap.relation, cap.n)[1] is not None and units.count(cap.measure, " " + text + " ") > 0 \
                    and not _adds_no_piece(cap.unit, form.unit, text):
                return None
    controlled.add(c.id)
    wrap = isinstance(form_of_constraint(c), Wrap)
    return Closing(per=form.unit, k=form.k, text=form.text if wrap else text, sources=(c.id,), wrap=wrap)


def _paragraph_body(layout: Layout) -> bool:
    """Whether the body is a counted number of blank-line paragraphs with no text of its own but
    the blank lines between them (``compile.lowering``: "three paragraphs" beside "end every
    paragraph with 'Stay tuned.'"): the model ends each paragraph where a closing can precede."""
    return layout.body.kind == "blank_paragraphs" and not layout.body.first_word \
        and not "".join(fixed_texts(layout)).strip()


def _closing_form(form: Form | None) -> Form | None:
    """A wrap of every sentence, line or paragraph with nothing before it (``wrap(lines, "", ";")``:
    "a semicolon at the end of each line") as the closing text it is; any other form unchanged.
    The verifiers agree: a wrap's piece ends with ``right``, as ``matches`` compares a text
    without a word of its own (a suffix)."""
    if isinstance(form, Wrap) and not form.left and form.unit in CLOSED_UNITS and form.right.strip() \
            and re.search(r"\w", form.right) is None:
        return Position(unit=form.unit, op="ends_with", text=form.right, k=0)
    return form


def _adds_no_piece(cap: Unit, per: Unit, text: str) -> bool:
    """Whether a closing text leaves a cap on sentences, lines or paragraphs untouched: it ends
    the piece the answer ends anyway (``cap`` is ``per``: the compiler has checked it ends no piece
    before its own end), or it holds no end of a ``cap`` piece ("every line ends with ';'" beside
    "exactly 4 lines"; "every sentence ends with '!?'" beside "at most 3 lines")."""
    return cap in PIECE_UNITS and (cap is per or len(units.pieces(cap, "X" + text + " X")) <= 1)
