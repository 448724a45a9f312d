"""Minima per piece: each sentence / paragraph / line holds at least ``n`` words,
characters or letters.

A generic ``count`` constraint with a lower bound and ``per`` compiles to one
``Floor``. Pieces and counts are the form's own (``units.pieces``,
``units.count``), so the controller and the verifier cannot disagree on
where a piece ends or what it holds. A row's part of the state is, per
floor, where its current piece starts (``count_maxima.piece_start``: the boundary
before it is settled, appending never moves it).

How each minimum is kept:

- a piece may not end short: every candidate is judged on the text from
  the current piece's start with the candidate and a probe `` X`` (a new
  word) appended; every piece of that text but the probe's own must hold
  the minimum. So a full stop, a line break or a blank line that would
  close a short piece is refused (the model writes on), whichever token
  spells it;
- the answer may not end short (``ends_ok``): all its pieces hold the
  minimum, and it has one;
- a sentence-closing demand (``RowPlanDraft.close``, from the landing or a
  per-sentence cap) is withdrawn while the current piece is short: the
  piece goes on;
- the answer ends where a new piece would not fit (``forces``): once the
  current piece is closed and holds its minimum, the end is forced when
  the token budget left is below what a new piece needs (two tokens per
  word, a token per four characters, and room to close).

A floor of numbers, digits or emoji ("every sentence must contain a
number", "every paragraph with at least one emoji") is kept the same way,
and since a model rarely writes them unasked, an item is also inserted: where
a piece still owes one and the model's own best token would end the piece, a
digit (``7``) or an emoji (``✅``), after a space, is forced there instead
(the model then ends the piece as it wanted to), and so it is when the
token budget is about to run out.

Guarantee: every text this controller lets through has no short piece
other than its last, and an answer it lets end has none. A budget that runs
out inside a short piece (its words took more tokens than planned) is cut;
the beam search rolls the answer back to its last complete sentence
(``beam._land``), whose pieces all hold the minimum, and reports the
floor unmet otherwise. The compiler controls a floor only in a free body
without fixed text (literals are forced past the checks) and where
nothing inserts sentence ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import (
    bounds,
    form_of_constraint,
    forms_of,
    free_body,
    required_keywords,
    whole_length,
)
from inference.decoder.token_controllers.closing_texts import piece_ends
from inference.decoder.token_controllers.count_maxima import PIECE_UNITS, piece_start
from inference.decoder.token_controllers.forcing import ForcedText, Writer
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.openings import opens_piece
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    JudgesText,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Measure, Unit
from reasoning.constraints.model import Constraint
from reasoning.errors import ConflictError, LimitExceeded

__all__ = [
    "FLOOR_UNITS",
    "INSERTED_ITEMS",
    "INSERTED_UNITS",
    "Floor",
    "FloorState",
    "Flooring",
    "Floors",
    "build_floors",
    "compile_floors",
    "tokens_for",
]


#: Units a floor can hold per piece: the model writes them in every piece anyway.
FLOOR_UNITS = frozenset({Unit.WORDS, Unit.CHARACTERS, Unit.LETTERS})
#: The item inserted into a piece that owes a number, a digit or an emoji, by unit.
INSERTED_ITEMS: Mapping[Unit, str] = {Unit.NUMBERS: "7", Unit.DIGITS: "7", Unit.EMOJI: "\u2705"}
#: Units a floor inserts where the piece would end without them.
INSERTED_UNITS = frozenset(INSERTED_ITEMS)
_PROBE = " X"  # a new word: what would start the next piece
_CLOSE_TOKENS = 3  # a terminal, a closer, a margin


@dataclass(frozen=True)
class Floor:
    """At least ``at_least`` items of ``measure`` in each ``per`` piece (``sources``: the constraint ids)."""

    measure: Measure
    at_least: int
    per: Unit
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class FloorState:
    """A row's part: where each floor's current piece starts, and the item's tokens still to force."""

    starts: tuple[int, ...]
    pending: tuple[int, ...] = ()


@dataclass(frozen=True)
class Floors:
    """The per-piece minima of one request."""

    items: tuple[Floor, ...]


def tokens_for(floor: Floor) -> int:
    """Tokens a new piece is planned to need: two per word, one per four characters, two per
    inserted item and a word, and its close."""
    if floor.measure.unit is Unit.WORDS:
        return 2 * floor.at_least + _CLOSE_TOKENS
    if floor.measure.unit in INSERTED_UNITS:
        return 2 * floor.at_least + 2 + _CLOSE_TOKENS
    return -(-floor.at_least // 4) + _CLOSE_TOKENS


def _pieces_hold(floor: Floor, text: str, *, probe: bool) -> bool:
    """Whether every piece of ``text`` holds the floor (``probe``: all but the one a new word would open)."""
    found = units.pieces(floor.per, text + _PROBE if probe else text)
    judged = found[:-1] if probe else found
    return all(units.count(floor.measure, piece) >= floor.at_least for piece in judged)


class Flooring(Writer, JudgesText):
    """The per-piece minima at decode time (see the module doc)."""

    def __init__(self, ctx: Context, floors: Floors) -> None:
        self.spec = floors
        self.floors = floors.items
        self.budget = ctx.max_new_tokens
        self._need = max(tokens_for(f) for f in floors.items)
        tables = ctx.tables
        self._inserting = [i for i, f in enumerate(self.floors) if f.measure.unit in INSERTED_UNITS]
        self._items = {u: ForcedText(tables, INSERTED_ITEMS[u])
                       for u in {self.floors[i].measure.unit for i in self._inserting}}
        self._enders = {
            f.per: tables.holding(piece_ends(f.per))
            for f in self.floors
        }
        self._longest_item = max((len(t.spelling.spaced) for t in self._items.values()), default=0)

    def start(self) -> Any:
        return FloorState((0,) * len(self.floors))

    def _owing(self, state: SteerState) -> list[int]:
        """The inserting floors whose current piece still lacks items."""
        part: FloorState = state.parts[self.slot]
        return [i for i in self._inserting
                if units.count(self.floors[i].measure, state.text[part.starts[i] :]) < self.floors[i].at_least]

    def _item(self, state: SteerState) -> ForcedText | None:
        """The item of the first floor whose current piece still owes one (None: none owes)."""
        owing = self._owing(state)
        return self._items[self.floors[owing[0]].measure.unit] if owing else None

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Force the item where the model's best token would end a piece that still owes one."""
        for item in self._items.values():
            item.clear()
        if not self._inserting:
            return
        for r, state in enumerate(states):
            if state.pending or state.parts[self.slot].pending:
                continue
            best = int(rows[r].argmax())
            for i in self._owing(state):
                if bool(self._enders[self.floors[i].per][best]):
                    self._items[self.floors[i].measure.unit].force(rows, r, state)
                    break

    def fits(self, state: SteerState, text: str) -> bool:
        starts = state.parts[self.slot].starts
        full = state.text + text
        return all(_pieces_hold(f, full[s:], probe=True) for f, s in zip(self.floors, starts))

    def ends_ok(self, state: SteerState) -> bool:
        if state.parts[self.slot].pending:
            return False
        starts = state.parts[self.slot].starts
        return all(
            units.pieces(f.per, state.text) and _pieces_hold(f, state.text[s:], probe=False)
            for f, s in zip(self.floors, starts)
        )

    def forces(self, d: RowPlanDraft) -> bool:
        """End the answer at a closed piece when a new one would not fit in the budget left."""
        if self.budget is None:
            return False
        state = d.state
        left = tokens_left(self.budget, d, owed=d.owed_tokens)
        if left >= self._need:
            return False
        starts = state.parts[self.slot].starts
        return all(opens_piece(f.per, state.text[s:]) for f, s in zip(self.floors, starts)) and self.ends_ok(state)

    def _budget_due(self, state: SteerState, reserve: int) -> ForcedText | None:
        """The item owed where the budget is about to run out inside a piece that still owes one.

        The budget is tested against the longest item before the pieces are counted: far from the
        end no item is due, and counting every piece's items on every step is the cost.
        """
        if self.budget is None or state.pending or state.parts[self.slot].pending:
            return None
        if self.budget - state.n_tokens - reserve > self._longest_item + _CLOSE_TOKENS:
            return None
        item = self._item(state)
        if item is None or self.budget - state.n_tokens - reserve > len(item.spelling.spaced) + _CLOSE_TOKENS:
            return None
        return item

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Withdraw a demand to close the sentence while the current piece is short; insert the
        item when the budget is about to run out inside a piece that owes one."""
        due = self._budget_due(d.state, d.comp.reserve_tokens)
        if due is not None:
            return due.begin(d.state)
        if d.close and not self.ends_ok(d.state):
            d.close = ""
        return None

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: FloorState = before.parts[self.slot]
        pending: tuple[int, ...] = part.pending[1:]
        if not part.pending and self._items:
            begun = next((t for t in self._items.values() if t.began(before, token_id)), None) \
                or self._budget_due(before, comp.reserve_tokens if comp is not None else 0)
            pending = (begun.rest((), True, token_id) or ()) if begun is not None else ()
        if len(new.text) == len(before.text):
            return FloorState(part.starts, pending)
        return FloorState(tuple(piece_start(f.per, new.text, s) for f, s in zip(self.floors, part.starts)), pending)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        whole = all(
            units.pieces(f.per, state.text) and _pieces_hold(f, state.text, probe=False) for f in self.floors
        )
        return () if whole else ("floor",)


def build_floors(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The floor controller, when a request sets a minimum per sentence, paragraph or line."""
    floors = spec_of(specs, Floors)
    return Flooring(ctx, floors) if floors is not None and floors.items else None


def compile_floors(ctx: CompileContext) -> Floors | None:
    """The ``token_controllers.count_piece_minima.Floors`` of the per-piece minima (None: none controllable).

    Controlled: at least ``n`` words / characters / letters, or numbers / digits / emoji (an item
    inserted where the piece would end without it; not beside a cap that counts the item),
    with no filter, in each sentence, paragraph or line, in a free body without fixed text
    (literals are forced past the
    checks), with nothing that inserts a sentence or a piece end (``inserts``: citations
    or a stated decision; a keyword holding one). An exact count per piece is controlled
    when its cap is in ``tally`` too.

    Raises:
        ConflictError: a minimum per piece above a maximum per piece, or above a maximum of
            the whole answer (it has a piece), or a sentence minimum times a per-sentence
            word minimum above a word maximum.
        LimitExceeded: more words per piece than the token budget holds.
    """
    constraints, layout, tally, controlled = ctx.hard, ctx.layout, ctx.compiled["tally"], ctx.controlled
    max_new_tokens, inserts = ctx.max_new_tokens, ctx.inserts
    floors: list[Floor] = []
    found = [(c, f) for c in constraints if isinstance(f := form_of_constraint(c), Count)
             and f.per is not None and f.of is None and bounds(f.relation, f.n)[0]]
    for c, form in found:
        lo = bounds(form.relation, form.n)[0]
        _check_floor_fits(c, form, lo, constraints)
        if form.per not in PIECE_UNITS or form.unit not in FLOOR_UNITS | INSERTED_UNITS or not whole_length(form):
            continue
        if form.unit in INSERTED_UNITS and any(
                isinstance(cap, Count) and cap.of is None and bounds(cap.relation, cap.n)[1] is not None
                and units.count(cap.measure, " " + INSERTED_ITEMS[form.unit] + " ") > 0
                for q in constraints for cap in forms_of(q)):
            continue  # the inserted item is forced past the masks: a cap that counts it leaves the floor to the prompt
        if not free_body(layout) or inserts:
            continue
        if any(set(text) & _PIECE_ENDS for text in required_keywords(constraints)):
            continue
        if max_new_tokens is not None and form.unit is Unit.WORDS and lo > max_new_tokens:
            raise LimitExceeded(f"{lo} words per {form.per.value[:-1]} cannot fit in {max_new_tokens} new tokens",
                                constraint_ids=[c.id])
        hi = bounds(form.relation, form.n)[1]
        if hi is not None and not (tally is not None and any(c.id in cap.sources for cap in tally.caps)):
            continue
        floors.append(Floor(form.measure, lo, form.per, (c.id,)))
        controlled.add(c.id)
    return Floors(tuple(floors)) if floors else None


#: What would end a sentence, a line or a paragraph inside an inserted text.
_PIECE_ENDS = frozenset(".!?\u3002\uff01\uff1f\n")


def _check_floor_fits(c: Constraint, floor: Count, lo: int, constraints: Sequence[Constraint]) -> None:
    """Refuse a per-piece minimum that a maximum makes impossible (see ``compile_floors``)."""
    per = floor.per
    assert per is not None
    least_pieces, pieces_ids = 1, []
    for q in constraints:
        for f in forms_of(q):
            if isinstance(f, Count) and f.unit is per and f.per is None and f.of is None \
                    and f.filter == Filter() and bounds(f.relation, f.n)[0] > least_pieces:
                least_pieces, pieces_ids = bounds(f.relation, f.n)[0], [q.id]
    for q in constraints:
        if q.id == c.id:
            continue
        for f in forms_of(q):
            if not isinstance(f, Count) or f.of is not None or f.measure != floor.measure:
                continue
            hi = bounds(f.relation, f.n)[1]
            if hi is None:
                continue
            if f.per is per and hi < lo:
                raise ConflictError(f"at least {lo} {floor.unit.value} per {per.value[:-1]} but at most {hi}",
                                    constraint_ids=[c.id, q.id])
            if f.per is None and hi < lo * least_pieces:
                raise ConflictError(
                    f"{least_pieces} {per.value} of at least {lo} {floor.unit.value} do not fit in at most {hi}",
                    constraint_ids=[c.id, q.id, *pieces_ids],
                )
