"""A piece at a middle position opens with a text: the k-th sentence or line starts with it;
or every piece does ("every sentence begins with 'Note'", ``k = 0``); or the k-th line is the
text (``op="is"``: "the line before last must say exactly 'Kind regards,'", its ``k`` counted from
the start of an exact count of lines, ``compile.forms.placed_from_start``): the text and a line
break are forced where the line begins.

Pieces and the comparison are the verifier's (``units.pieces``; a one-word
text is compared with the piece's first word cut at ``.,?!'"``, a longer one
as a prefix, ignoring case: ``reasoning.constraints.form.verify``). A row's
part of the state is where its current piece starts (``count_maxima.piece_start``,
a settled boundary), how many pieces come before it, the tokens of the text
still to force and whether the text is written.

- *before*: once the row holds ``k - 1`` pieces and the last one is closed
  (a new word appended would open a new piece: a sentence end, a line
  break), the text is forced there (`` text`` after a non-space, ``text``
  after whitespace), token by token;
- *closing* (a one-word text): until the word is delimited, only tokens
  that begin with whitespace or one of ``.,?!'"`` are allowed, or the end;
- *done*: no restriction.

An opened piece holds a word of its own: until it holds more words than the
text, no token may end it (a sentence terminal; a line break for lines and
paragraphs) and the answer may not stop, so an opening never stands alone
as a piece ("Note. Note. Note.").

Every candidate is also checked on the k-th piece of the text it would
make (whatever token spells it: a piece that cannot become one starting
with the text is refused), the end waits while the check of the complete
answer fails (``ends_ok``) and the model's stop is held back until then.
*Every* piece (``Opening.every``; sentences, lines or paragraphs) is the same
rule at each piece start: the text is forced whenever a new word would open a
piece (the first one included), the one-word text is closed as above, and each
candidate is checked on every piece it would touch (the current one and any
it opens); the stop is held only while a forced text is being written.

So a text this controller lets end opens its k-th (or every) piece with the text,
provided nothing else forces tokens into the answer: the compiler controls
an opening only in a free body without fixed text and without controllers
that insert words (keywords, capital words, placeholders, citations, a
stated decision, a placed word). A budget that runs out first is cut and
reported (``unmet``).
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
    check_pieces_agree,
    form_of_constraint,
    free_body,
    opening_text,
    placed_from_start,
)
from inference.decoder.token_controllers.closing_texts import piece_ends
from inference.decoder.token_controllers.count_maxima import PIECE_UNITS, piece_start
from inference.decoder.token_controllers.forcing import ForcedText, Writer
from inference.decoder.token_controllers.layout import LayoutSegment
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
from inference.decoder.vocab import VocabTables
from reasoning.constraints.form import units
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.form.model import Count, Position, Unit
from reasoning.constraints.form.verify import check
from reasoning.constraints.model import Constraint, Kind

__all__ = [
    "EVERY_UNITS",
    "OPENED_UNITS",
    "Opening",
    "OpeningState",
    "Openings",
    "build_openings",
    "closed_pieces",
    "compile_opening",
    "opens_piece",
]


#: Pieces an opening can be placed in (paragraphs are the layout's: ``compile.lowering.lower_forms``).
OPENED_UNITS = frozenset({Unit.SENTENCES, Unit.LINES})
#: Pieces every one of which an opening can be placed in (a blank-line paragraph is free text's too).
EVERY_UNITS = OPENED_UNITS | {Unit.PARAGRAPHS}
#: What ends the first word of a piece for the verifier (IFEval's first-word rule).
WORD_CUTS = ".,?!'\""
_PROBE = " X"


def opens_piece(per: Unit, text: str, pieces: Sequence[str] | None = None) -> bool:
    """Whether a new word appended to ``text`` would open a new piece (sentence, line, paragraph).

    ``pieces``: ``text``'s pieces of ``per`` where the caller has them already.
    """
    before = units.pieces(per, text) if pieces is None else pieces
    return len(units.pieces(per, text + _PROBE)) > len(before)


def closed_pieces(per: Unit, text: str, pieces: Sequence[str] | None = None) -> int:
    """How many ``per`` pieces of ``text`` are complete: all of them once a new word would open
    another, else all but the open last one. ``pieces``: ``text``'s pieces where the caller has them."""
    found = units.pieces(per, text) if pieces is None else pieces
    return len(found) if opens_piece(per, text, found) else len(found) - 1


@dataclass(frozen=True)
class Opening:
    """The ``k``-th (``k >= 2``) ``per`` piece starts with ``text``, or every one (``k = 0``)
    (``sources``: the constraint ids); ``exact``: the k-th line is the text and nothing more
    ("the line before last must say exactly 'Kind regards,'": the text and a line break forced)."""

    per: Unit
    k: int
    text: str
    sources: tuple[str, ...] = ()
    exact: bool = False

    @property
    def every(self) -> bool:
        return self.k == 0

    @property
    def one_word(self) -> bool:
        return not self.exact and len(self.text.split()) == 1 and re.search(r"\w", self.text) is not None

    def may_open(self, text: str) -> bool:
        """Whether a piece may begin with ``text`` (as much of it as is given) and still open
        with this opening's text."""
        return _consistent(self, text, complete=False)

    @property
    def form(self) -> Position:
        return Position(unit=self.per, op="is" if self.exact else "starts_with", text=self.text, k=self.k)


@dataclass(frozen=True)
class OpeningState:
    """A row's part (see the module doc)."""

    start: int = 0
    before: int = 0
    pending: tuple[int, ...] = ()
    written: bool = False
    done: bool = False


def _consistent(opening: Opening, piece: str, complete: bool) -> bool:
    """Whether the k-th ``piece`` (complete, or still growing) starts, or can still start, with the text."""
    target = opening.text.strip().lower()
    low = piece.strip().lower()
    if opening.exact:
        return low == target if complete else target.startswith(low)
    if not opening.one_word:
        return low.startswith(target) or (not complete and target.startswith(low))
    parts = low.split()
    if not parts:
        return not complete
    word = parts[0].lstrip("'").lstrip('"')
    cut = next((i for i, ch in enumerate(word) if ch in WORD_CUTS), None)
    if cut is not None:
        return word[:cut] == target
    if complete or len(parts) > 1:
        return word == target
    return target.startswith(word)


def _delimiters(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens that may follow a written one-word text (whitespace or a cut first)."""

    def build() -> torch.Tensor:
        values = [bool(t) and (t[0].isspace() or t[0] in WORD_CUTS) for t in tables.texts]
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("opening-delimiters", 0), build)  # type: ignore[no-any-return]


class Openings(Writer, JudgesText):
    """The k-th sentence / line opening with a text, at decode time (see the module doc)."""

    def __init__(self, ctx: Context, opening: Opening) -> None:
        self.ctx = ctx
        self.spec = opening
        self.opening = opening
        tables = ctx.tables
        self._text = ForcedText(tables, opening.text + "\n" if opening.exact else opening.text)
        self._words = len(opening.text.split())
        self._enders = tables.holding(piece_ends(opening.per))
        self._delimiters = _delimiters(tables)
        self._eos = list(tables.eos_ids)
        # Built once: a one-word opening once written lets only a delimiter or the end follow.
        self._not_enders = ~self._enders
        self._after_word = self._delimiters.clone()
        self._after_word[self._eos] = True

    def start(self) -> OpeningState:
        return OpeningState()

    def _due(self, state: SteerState) -> bool:
        part: OpeningState = state.parts[self.slot]
        window = state.text[part.start :]
        if self.opening.every:
            return not part.pending and opens_piece(self.opening.per, window)
        if part.written or part.pending or part.done:
            return False
        pieces = units.pieces(self.opening.per, window)
        return part.before + len(pieces) == self.opening.k - 1 and opens_piece(self.opening.per, window, pieces)

    def route(self, state: SteerState) -> RowPlan | None:
        writing = super().route(state)
        if writing is not None or state.pending or not self._due(state):
            return writing
        return self._text.begin(state)

    def _bare(self, state: SteerState) -> bool:
        """Whether the piece the text opened holds no word of its own yet (it may not end)."""
        part: OpeningState = state.parts[self.slot]
        if self.opening.exact or not part.written or not self.opening.every and part.before != self.opening.k - 1:
            return False
        return len(state.text[part.start :].split()) <= self._words

    def holds(self, d: RowPlanDraft) -> int:
        part: OpeningState = d.state.parts[self.slot]
        if self.opening.every:
            return HOLD_ALL if part.pending or self._bare(d.state) else HOLD_NONE
        return HOLD_NONE if part.done and not self._bare(d.state) else HOLD_ALL

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
            part: OpeningState = state.parts[self.slot]
            if self._bare(state):
                allowed[r] &= self._not_enders
                fragments[r] &= self._not_enders
            if self.opening.one_word and part.written and not part.done:
                allowed[r] &= self._after_word
                fragments[r] = False

    def fits(self, state: SteerState, text: str) -> bool:
        part: OpeningState = state.parts[self.slot]
        if self.opening.every:
            pieces = units.pieces(self.opening.per, state.text[part.start :] + text)
            last = len(pieces) - 1
            return all(_consistent(self.opening, piece, complete=i < last) for i, piece in enumerate(pieces))
        if part.done:
            return True
        index = self.opening.k - 1 - part.before
        pieces = units.pieces(self.opening.per, state.text[part.start :] + text)
        if index < 0 or index >= len(pieces):
            return True
        return _consistent(self.opening, pieces[index], complete=index < len(pieces) - 1)

    def ends_ok(self, state: SteerState) -> bool:
        if self.opening.every and state.parts[self.slot].pending or self._bare(state):
            return False
        return check(self.opening.form, state.text).satisfied

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: OpeningState = before.parts[self.slot]
        if part.done and not self.opening.every or len(new.text) == len(before.text) and not part.pending:
            return part
        start = piece_start(self.opening.per, new.text, part.start)
        passed = len(units.pieces(self.opening.per, new.text[part.start : start])) if start > part.start else 0
        moved = OpeningState(start=start, before=part.before + passed, pending=part.pending, written=part.written)
        rest = self._text.rest(part.pending, self._due(before), token_id)
        if rest is not None:
            return OpeningState(start, moved.before, rest, written=not rest, done=not rest and self._settled(new))
        if part.written:
            return OpeningState(start, moved.before, written=True, done=part.done or self._settled(new))
        return moved

    def _settled(self, new: SteerState) -> bool:
        """Whether the written text can no longer change (a longer text is a prefix; a word is delimited)."""
        if not self.opening.one_word:  # (an exact line: its break is written)
            return True
        return bool(new.text) and (new.text[-1].isspace() or new.text[-1] in WORD_CUTS)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        unwritten = self.opening.every and state.parts[self.slot].pending
        return () if not unwritten and check(self.opening.form, state.text).satisfied else ("opening",)


def build_openings(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The opening controller, when a request opens a middle sentence or line with a text."""
    opening = spec_of(specs, Opening)
    return Openings(ctx, opening) if opening is not None else None


def compile_opening(ctx: CompileContext) -> Opening | None:
    """The ``token_controllers.openings.Opening`` of a sentence or line at a middle position, or of every
    sentence, line or paragraph (``k = 0``), that starts with a text (None: none, or not
    controllable here).

    Controlled: one such position (``k >= 2`` or every piece), in a free body without fixed text, with no
    controller that forces words of its own (``inserts``: citations or a stated decision;
    ``placed``: a word placement; the kinds of ``INSERTING``), and no maximum that counts an
    item of the text (its tokens are forced past the masks).

    Raises:
        ConflictError: every piece opening with a text that the start phrase, or another
            opening of the same pieces, cannot begin with.
    """
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    inserts, placed = ctx.inserts, ctx.placed
    found: list[tuple[Constraint, Position]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Position) and form.unit in OPENED_UNITS:
            form = placed_from_start(form, constraints)  # "the line before last": its k from the start
        exact = isinstance(form, Position) and form.op == "is" and form.unit is Unit.LINES and form.k >= 2
        if isinstance(form, Position) and (form.op == "starts_with" or exact) and (
                form.unit in OPENED_UNITS and form.k >= 2 or form.unit in EVERY_UNITS and form.k == 0):
            found.append((c, form))
    _check_openings_agree(constraints, found)
    if len(found) != 1 or inserts or placed or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    kinds = {q.kind for q in constraints}
    text = " ".join(opening_text(form).split())
    text = text.lower() if Kind.ALL_LOWERCASE in kinds else text.upper() if Kind.ALL_CAPITALS in kinds else text
    if not text or not free_body(layout):
        return None
    if units.pieces(form.unit, text + " X")[:-1] or "\n" in text:
        return None  # the text would itself end a piece
    for q in constraints:
        try:
            forms = form_of(q.kind, q.params) or ()
        except (TypeError, ValueError, KeyError):
            return None
        for cap in forms:
            if isinstance(cap, Count) and cap.of is None and cap.unit is not Unit.UNIQUE_WORDS \
                    and bounds(cap.relation, cap.n)[1] is not None and units.count(cap.measure, " " + text + " ") > 0 \
                    and not _adds_no_piece(cap.unit, text):
                return None  # (a distinct-words cap reserves the placed words: ``compile_tally``)
    controlled.add(c.id)
    return Opening(per=form.unit, k=form.k, text=text, sources=(c.id,), exact=form.op == "is")


def _adds_no_piece(unit: Unit, text: str) -> bool:
    """Whether an opening text leaves a cap on sentences, lines or paragraphs untouched: it opens a
    piece the answer writes anyway and ends none, so it counts no piece of its own ("every line
    opens with '~'" beside "exactly 5 lines")."""
    return unit in PIECE_UNITS and not units.pieces(unit, text + " X")[:-1]


def _check_openings_agree(constraints: Sequence[Constraint], found: Sequence[tuple[Constraint, Position]]) -> None:
    """Every piece opening with a text beside the answer's start phrase, or another opening of
    the same pieces, that the text cannot begin: ``ConflictError`` ("every sentence begins with
    'Note'" and "start your answer with 'Hello'")."""
    def agree(form: Position, text: str) -> bool:
        return Opening(per=form.unit, k=0, text=" ".join(form.text.split())).may_open(text)

    check_pieces_agree(constraints, found, Kind.START_PHRASE, "begin with", agree)
