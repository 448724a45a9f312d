"""Every piece ends with an item of a class the model picks: "end every sentence with an emoji".

``position(unit, k=0, ends_with, word_class=emoji)`` for sentences, lines or paragraphs compiles
to one ``ClassClosing``. Unlike a closing text (``closing_texts``), no one item is fixed: the
model writes the member of the class it finds likeliest where it would end the piece ("Keep
going 💪!", "Rest well 😴."), so the mark belongs to what the sentence says. Pieces and the
judgement are the verifier's (``units.pieces``; ``form.classes.in_class``: the piece's last
character ends an emoji, closing marks and quotes after it left out). A row's part of the state
is where its current piece starts (``count_maxima.piece_start``).

While the current piece holds a letter or digit and does not end with an item of the class
(*open*):

- a token that could end the piece (a sentence-ending mark; a line break for lines and
  paragraphs) is masked;
- where the model's own best token would end the piece or stop, only the class's one-token
  items (``class_items``) are allowed: the model picks among them; so it is where a
  sentence-closing demand (``RowPlanDraft.close``, from the landing or a sentence count) would end
  the piece: the demand is taken over, and the item is written at the model's next word end
  (the demand comes back once the piece ends with the item, and its mark follows);
- when the token budget is about to run out, the item is written at once (the model's pick);
- every candidate, whatever its bytes, is checked on the pieces it completes (each must end
  with an item of the class), and the stop is held.

Once the piece ends with an item the model may end it as it likes (or write on, which opens it
again). Guarantee: an answer this controller lets end has every piece ending with an item of
the class; the compiler controls it only in a free body without fixed text, without
controllers that write words of their own, and without another rule on the same pieces' ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import emoji
import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import INSERTING, form_of_constraint, forms_of, free_body
from inference.decoder.token_controllers.closing_texts import CLOSED_UNITS, piece_ends
from inference.decoder.token_controllers.count_maxima import piece_start
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_ALL,
    HOLD_NONE,
    Context,
    Controller,
    JudgesText,
    Owed,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.vocab import VocabTables
from reasoning.constraints.form import units
from reasoning.constraints.form.classes import in_class
from reasoning.constraints.form.model import Position, Unit, WordClass, Wrap
from reasoning.constraints.model import Kind

__all__ = [
    "CLOSED_CLASSES",
    "ClassClosing",
    "ClassClosingState",
    "ClassClosings",
    "build_class_closings",
    "class_items",
    "compile_class_closing",
]

#: The classes whose items a one-token mask can offer at a piece's end.
CLOSED_CLASSES: frozenset[str] = frozenset({"emoji"})
_LAST_TOKENS = 3  # budget tokens left at which an open piece gets the fallback item


@dataclass(frozen=True)
class ClassClosing:
    """Every ``per`` piece ends with an item of ``word_class`` (``sources``: the constraint ids)."""

    per: Unit
    word_class: WordClass
    sources: tuple[str, ...] = ()

    @property
    def form(self) -> Position:
        """The form the controller keeps, as the verifier judges it."""
        return Position(unit=self.per, op="ends_with", text="", k=0, word_class=self.word_class)

    def closed(self, piece: str) -> bool:
        """Whether ``piece`` ends with an item of the class."""
        return in_class(piece, "ends_with", self.word_class)


@dataclass(frozen=True)
class ClassClosingState:
    """A row's part: where its current piece starts."""

    start: int = 0


#: Below this code point the ``emoji`` package also lists text symbols (™, ©, ‼) that read as
#: punctuation in running text; the items offered are pictographs.
_PICTOGRAPHS = 0x2600
_JOINERS = "\ufe0f\u200d"
_MARKS = ".!?\u3002\uff01\uff1f\"'\u201d\u2019)]"  # a sentence mark and the closers after it
#: What ends a piece right after its item: one sentence mark (a run reads as a stutter, a closer
#: after it as a quote never opened); a line break.
_ENDS_AFTER = {
    Unit.SENTENCES: re.compile(r"[.!?\u3002\uff01\uff1f][ \t]*"),
    Unit.LINES: re.compile(r"[ \t]*\n+"),
    Unit.PARAGRAPHS: re.compile(r"[ \t]*\n\n+"),
}


def _is_item(text: str, word_class: str) -> bool:
    body = text[1:] if text[:1] == " " else text
    return (
        word_class == "emoji"
        and bool(body)
        and emoji.purely_emoji(body)
        and all(ord(ch) >= _PICTOGRAPHS or ch in _JOINERS for ch in body)
    )


def class_items(tables: VocabTables, word_class: str) -> torch.Tensor:
    """``[V]`` bool: tokens that are one whole item of ``word_class`` (after at most one space)."""

    def build() -> torch.Tensor:
        values = [
            _is_item(t, word_class) and not bool(tables.special[i]) and not bool(tables.fragment[i])
            for i, t in enumerate(tables.texts)
        ]
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    table: torch.Tensor = tables.cached(("class-items", word_class), build)
    return table


class ClassClosings(JudgesText):
    """Every piece's closing item at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: ClassClosing) -> None:
        self.ctx = ctx
        self.spec = spec
        tables = ctx.tables
        self._ends = piece_ends(spec.per)
        self._enders = tables.holding(self._ends)
        self._stops = self._enders.clone()
        self._stops[list(tables.eos_ids)] = True
        self._items = class_items(tables, spec.word_class)
        ends_after = _ENDS_AFTER[spec.per]

        def build() -> torch.Tensor:
            return torch.tensor(
                [ends_after.fullmatch(t) is not None for t in tables.texts],
                dtype=torch.bool,
                device=tables.device,
            )

        self._closers = tables.cached(("class-closing-ends", spec.per), build).clone()
        self._closers[list(tables.eos_ids)] = True
        self._after_mark = tables.starts_space.clone()
        self._after_mark[list(tables.eos_ids)] = True

    def start(self) -> ClassClosingState:
        return ClassClosingState()

    def _open(self, state: SteerState) -> bool:
        """Whether the current piece holds words without an item of the class at its end."""
        current = state.text[state.parts[self.slot].start :]
        return any(ch.isalnum() for ch in current) and not self.spec.closed(current)

    def _itemed(self, state: SteerState) -> bool:
        """Whether the text ends with the item just written after the piece's words (no mark yet)."""
        current = state.text[state.parts[self.slot].start :]
        return (
            bool(current)
            and not current[-1].isspace()
            and current[-1] not in self._ends + _MARKS
            and any(ch.isalnum() for ch in current)
            and self.spec.closed(current)
        )

    def _marked(self, state: SteerState) -> bool:
        """Whether the text ends with the sentence mark (and closers) right after the item."""
        current = state.text[state.parts[self.slot].start :]
        if self.spec.per is not Unit.SENTENCES or not current or current[-1] not in _MARKS:
            return False
        bare = current.rstrip(_MARKS)
        return bool(bare) and not bare[-1].isspace() and self.spec.closed(bare)

    def owed(self, state: SteerState) -> Owed:
        return Owed(tokens=2) if self._open(state) else Owed()

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def ends_ok(self, state: SteerState) -> bool:
        return not self._open(state)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """The item at once when the budget is about to run out inside an open piece; a closing
        demand on an open piece is taken over (its item comes first, at the model's word end)."""
        state = d.state
        if state.pending or not self._open(state):
            return None
        budget = self.ctx.max_new_tokens
        if budget is not None and tokens_left(budget, d, slack=0) <= _LAST_TOKENS:
            d.marks[self.slot] = "now"
            return None
        if d.close:
            d.close = ""
            d.marks[self.slot] = "word"
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
        starts_word = self.ctx.tables.starts_wordchar
        for r, state in enumerate(states):
            if state.pending:
                continue
            if self._itemed(state):
                keep = allowed[r] & self._closers  # the piece ends on its item
                if bool(keep.any()):
                    allowed[r] = keep
                    fragments[r] = False
                continue
            if self._marked(state):
                keep = (
                    allowed[r] & self._after_mark
                )  # the mark is the piece's last: a space or the end
                if bool(keep.any()):
                    allowed[r] = keep
                    fragments[r] = False
                continue
            if not self._open(state):
                continue
            allowed[r] &= ~self._enders
            best = int(lp[r].argmax())
            mark = plans[r].marks.get(self.slot, "")
            due = (
                bool(self._stops[best])
                or mark == "now"
                or (mark == "word" and not bool(starts_word[best]))
            )
            items = allowed[r] & self._items
            if due and bool(items.any()):
                allowed[r] = items
                fragments[r] = False

    def fits(self, state: SteerState, text: str) -> bool:
        part: ClassClosingState = state.parts[self.slot]
        pieces = units.pieces(self.spec.per, state.text[part.start :] + text)
        ends = any(ch in self._ends for ch in text)
        for index, piece in enumerate(pieces):
            if (index < len(pieces) - 1 or ends) and not self.spec.closed(piece):
                return False
        return True

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: ClassClosingState = before.parts[self.slot]
        if len(new.text) == len(before.text):
            return part
        return ClassClosingState(piece_start(self.spec.per, new.text, part.start))

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        from reasoning.constraints.form.verify import check

        return () if check(self.spec.form, state.text).satisfied else ("class-closing",)


def build_class_closings(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The class-closing controller, when a request ends every piece with an item of a class."""
    spec = spec_of(specs, ClassClosing)
    return ClassClosings(ctx, spec) if spec is not None else None


def compile_class_closing(ctx: CompileContext) -> ClassClosing | None:
    """The ``ClassClosing`` of every sentence, line or paragraph ending with an item of a class
    (None: none, or not controllable here).

    Controlled: one such position, in a free body without fixed text, with no controller that
    writes words of its own (citations, a stated decision, keywords, a placed word) and no other
    rule on the ends of the same pieces (a closing text, one mark ending every sentence).
    """
    constraints, layout, controlled = ctx.hard, ctx.layout, ctx.controlled
    inserts, placed = ctx.inserts, ctx.placed
    found = [
        (c, form)
        for c in constraints
        if isinstance(form := form_of_constraint(c), Position)
        and form.op == "ends_with"
        and form.k == 0
        and form.word_class in CLOSED_CLASSES
        and form.unit in CLOSED_UNITS
    ]
    if len(found) != 1 or inserts or placed or not free_body(layout):
        return None
    c, form = found[0]
    writes = INSERTING - {Kind.WORD_COUNT, Kind.SENTENCE_COUNT}  # counts land on the model's ends
    if any(q.kind in writes for q in constraints):
        return None
    for q in constraints:
        if q.id != c.id and any(
            isinstance(f, Position)
            and f.op == "ends_with"
            and f.unit in (form.unit, Unit.ANSWER)
            or isinstance(f, Wrap)
            and f.unit is form.unit
            for f in forms_of(q)
        ):
            return None  # another rule on these pieces' ends: left to the prompt
    assert form.word_class is not None
    controlled.add(c.id)
    return ClassClosing(per=form.unit, word_class=form.word_class, sources=(c.id,))
