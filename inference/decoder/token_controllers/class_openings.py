"""Every piece (or the k-th) opens with an item of a character class: "every sentence starts with
a capital letter", "begin each line with a lowercase letter", "each paragraph opens with a digit".

``position(unit, k, starts_with, word_class)`` for the classes a mask can promise (``capital``,
``lowercase``, ``number``; an emoji opening is an ``Opening`` of one emoji, a verb is left to
the prompt) compiles to one ``ClassOpening``. The class is the verifier's
(``form.classes.in_class``: the piece's first letter or digit is of that case, or a digit), and
so are the pieces (``units.pieces``). A row's part of the state is where its current piece
starts (``count_maxima.piece_start``) and how many pieces come before it.

- while the next letter or digit written will be the first of a piece the rule applies to,
  only tokens whose first letter or digit is of the class are allowed, with nothing before it
  but whitespace, an opening quote or bracket or a list marker (or only those);
- every candidate is checked on the pieces it touches (a token such as ". the" ends one piece
  and opens the next; a piece may not close without a letter or digit), whatever its bytes;
- the answer may not end before the verifier passes (the k-th piece must exist).

A named letter instead of a class ("every sentence must start with the letter T": the count of
``per`` pieces not starting with it, at most 0, ``ClassOpening.letter``) is the same rule with the
piece's first character: nothing but whitespace before the letter, which is compared without case,
as the count's ``starts_with`` compares a stripped piece.

Guarantee: an answer this controller lets end has every (or its k-th) piece opening with the
class, provided nothing else forces text into the answer: the compiler controls it only in a
free body without fixed text and without controllers that insert words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from inference.decoder.token_controllers.count_maxima import piece_start
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.openings import EVERY_UNITS, closed_pieces, opens_piece
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
from reasoning.constraints.form import units
from reasoning.constraints.form.classes import CHARACTER_CLASSES, in_class
from reasoning.constraints.form.model import Count, Filter, Form, Position, Unit, WordClass
from reasoning.constraints.form.verify import check
from reasoning.constraints.model import Kind, Relation
from reasoning.errors import ConflictError

__all__ = [
    "MASKED_CLASSES",
    "ClassOpening",
    "ClassOpeningState",
    "ClassOpenings",
    "build_class_openings",
    "compile_class_opening",
]


#: The classes whose first character a mask can promise.
MASKED_CLASSES: frozenset[str] = frozenset(CHARACTER_CLASSES)
#: What may stand before a piece's first letter or digit: an opening quote or bracket, a list marker.
_LEADS = frozenset("\"'\u201c\u2018([{*-#>")


@dataclass(frozen=True)
class ClassOpening:
    """Every ``per`` piece (``k = 0``), or the ``k``-th, opens with an item of ``word_class``, or
    (``letter``, every piece) with that letter as its first character."""

    per: Unit
    k: int
    word_class: WordClass | None
    sources: tuple[str, ...] = ()
    letter: str = ""

    @property
    def form(self) -> Form:
        """The form the controller keeps, as the verifier judges it."""
        if self.letter:
            return Count(unit=self.per, filter=Filter(starts_with=self.letter, negated=True),
                         relation=Relation.AT_MOST, n=0)
        return Position(unit=self.per, op="starts_with", text="", k=self.k, word_class=self.word_class)

    def opens(self, piece: str) -> bool:
        """Whether ``piece`` opens as the rule asks."""
        if self.letter:
            return piece.strip()[:1].lower() == self.letter
        assert self.word_class is not None
        return in_class(piece, "starts_with", self.word_class)

    def begun(self, piece: str) -> bool:
        """Whether ``piece`` already holds what the rule judges (a letter or digit; for a letter, any character)."""
        return bool(piece.strip()) if self.letter else any(ch.isalnum() for ch in piece)

    def applies(self, index: int) -> bool:
        """Whether the rule holds for the piece at ``index`` (0-based)."""
        return self.k == 0 or index == self.k - 1


@dataclass(frozen=True)
class ClassOpeningState:
    """A row's part: where its current piece starts, and how many pieces come before it."""

    start: int = 0
    before: int = 0


class ClassOpenings(JudgesText):
    """The class of every (or the k-th) piece's opening at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: ClassOpening) -> None:
        self.ctx = ctx
        self.spec = spec
        self.want = spec
        tables = ctx.tables
        letter = spec.letter
        first = CHARACTER_CLASSES[spec.word_class] if spec.word_class is not None else str.isalpha

        def build() -> torch.Tensor:
            values = []
            for t in tables.texts:
                if letter:
                    edge = t.lstrip()[:1]
                    values.append(edge == "" or edge.lower() == letter)
                    continue
                cut = next((i for i, ch in enumerate(t) if ch.isalnum()), len(t))
                lead, edge = t[:cut], t[cut : cut + 1]
                values.append(all(ch.isspace() or ch in _LEADS for ch in lead) and (edge == "" or first(edge)))
            return torch.tensor(values, dtype=torch.bool, device=tables.device)

        self._opening = tables.cached(("class-opening", spec.word_class, letter), build)

    def start(self) -> ClassOpeningState:
        return ClassOpeningState()

    def _awaiting(self, state: SteerState) -> bool:
        """Whether the next letter or digit written opens a piece the rule applies to."""
        part: ClassOpeningState = state.parts[self.slot]
        window = state.text[part.start :]
        pieces = units.pieces(self.want.per, window)
        if not pieces or opens_piece(self.want.per, window, pieces):
            return self.want.applies(part.before + len(pieces))
        current = pieces[-1]
        return self.want.applies(part.before + len(pieces) - 1) and not self.want.begun(current)

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
            if not state.pending and self._awaiting(state):
                allowed[r] &= self._opening

    def fits(self, state: SteerState, text: str) -> bool:
        """Every piece the rule applies to opens with the class once it holds a letter or a digit,
        and no such piece closes without one."""
        part: ClassOpeningState = state.parts[self.slot]
        full = state.text[part.start :] + text
        pieces = units.pieces(self.want.per, full)
        complete = closed_pieces(self.want.per, full, pieces)
        return all(self.want.opens(piece) for i, piece in enumerate(pieces)
                   if self.want.applies(part.before + i) and (i < complete or self.want.begun(piece)))

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def ends_ok(self, state: SteerState) -> bool:
        return check(self.want.form, state.text).satisfied

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: ClassOpeningState = before.parts[self.slot]
        if len(new.text) == len(before.text):
            return part
        start = piece_start(self.want.per, new.text, part.start)
        passed = len(units.pieces(self.want.per, new.text[part.start : start])) if start > part.start else 0
        return ClassOpeningState(start, part.before + passed)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if self.ends_ok(state) else ("class-opening",)


def build_class_openings(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The class-opening controller, when a request opens every (or the k-th) piece with a class."""
    spec = spec_of(specs, ClassOpening)
    return ClassOpenings(ctx, spec) if spec is not None else None


def compile_class_opening(ctx: CompileContext) -> ClassOpening | None:
    """The ``token_controllers.class_openings.ClassOpening`` of every (or the k-th) sentence, line or
    paragraph opening with a capital letter, a lowercase letter or a digit (None: none, or not
    controllable here; an emoji is an opening text, a verb is left to the prompt).

    Controlled: one such position, in a free body without fixed text, with no controller that
    writes words of its own (as for ``compile_opening``) and no other opening of the same pieces.

    Raises:
        ConflictError: a capital opening beside an all-lowercase answer, a lowercase one beside
            an all-capitals answer, a digit opening beside a cap of no digits.
    """
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    inserts, placed = ctx.inserts, ctx.placed
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Position)
             and form.op == "starts_with" and form.word_class in MASKED_CLASSES and form.unit in EVERY_UNITS]
    kinds = {q.kind: q.id for q in constraints}
    for c, form in found:
        against = {"capital": Kind.ALL_LOWERCASE, "lowercase": Kind.ALL_CAPITALS}.get(str(form.word_class))
        if against in kinds:
            raise ConflictError(f"every {form.unit.value[:-1]} cannot open with {form.word_class} letters "
                                "in an answer of the other case", constraint_ids=[c.id, kinds[against]])
        if form.word_class == "number":
            for q in constraints:
                for cap in forms_of(q):
                    if isinstance(cap, Count) and cap.unit in (Unit.DIGITS, Unit.NUMBERS) and cap.per is None \
                            and cap.of is None and bounds(cap.relation, cap.n)[1] == 0:
                        raise ConflictError("a piece cannot open with a digit in an answer without digits",
                                            constraint_ids=[c.id, q.id])
    letters = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
               and _letter_opening(form)]
    if len(found) + len(letters) != 1 or inserts or placed or any(c.kind in INSERTING for c in constraints):
        return None
    c, opening = (found or letters)[0]
    if not free_body(layout):
        return None
    for q in constraints:
        if q.id != c.id and any(isinstance(f, Position) and f.op == "starts_with"
                                and f.unit in (opening.unit, Unit.ANSWER) for f in forms_of(q)):
            return None  # another opening of these pieces: left to the prompt
    controlled.add(c.id)
    if isinstance(opening, Count):
        return ClassOpening(per=opening.unit, k=0, word_class=None, sources=(c.id,),
                            letter=(opening.filter.starts_with or "").lower())
    assert isinstance(opening, Position) and opening.word_class is not None
    return ClassOpening(per=opening.unit, k=opening.k, word_class=opening.word_class, sources=(c.id,))


def _letter_opening(form: Count) -> bool:
    """Whether ``form`` says every sentence / line / paragraph opens with a letter: none of them
    starts otherwise ("every sentence must start with the letter T")."""
    f = form.filter
    return form.unit in EVERY_UNITS and form.per is None and form.of is None and bounds(form.relation, form.n)[1] == 0 \
        and f.negated and f.starts_with is not None and len(f.starts_with) == 1 and f.starts_with.isalpha() \
        and f == Filter(starts_with=f.starts_with, negated=True)
