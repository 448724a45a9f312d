"""The k-th sentence ends with a text: "the first sentence must end with the word 'friends'"; or holds
one: "the word 'ocean' must appear in the third sentence".

A generic ``position(sentences, k, ends_with, text)`` with ``k >= 1`` (the
last sentence's ending is the layout's end phrase; a ``k`` counted from the
end beside an exact count of sentences is counted from the start,
``compile.forms.placed_from_start``) compiles to one ``SentenceEnd``. A text
that is one end mark ("the third sentence is a question": ``?``) is the
sentence's mark, written with no space where the model would end it. Sentences and the comparison are the verifier's
(``units.pieces``: a sentence ends at a run of ``.!?。！？`` before whitespace
or the end; a one-word text is the sentence's last word without its
punctuation, a longer one a suffix, ignoring case). A row's phase is read
from its text after each token until the k-th sentence is closed:

- *before*: fewer than ``k - 1`` sentences are complete: no rule;
- *open* (the k-th sentence is being written): no token may hold a sentence
  terminal, so the sentence cannot end on another word; but after a digit a
  ``.`` (alone, or with digits) may follow, as in a decimal ("3.5" ends no
  sentence), unless the budget is short;
- *decimal* (the text ends in a digit and a ``.``): only a token that begins
  with a digit may follow, so the ``.`` is the number's, not an end; Where the model
  would end it (its likeliest token holds a terminal, or is the stop), the
  text is written instead (`` text`` after a word, ``text`` after
  whitespace), token by token; also where the landing asks the sentence to
  close, where the sentence grows past ``_LONG_CHARS`` characters (both at
  the model's next word end), and at once when the budget left holds little
  more than the text and its mark;
- *worded*: the sentence ends with the text: only a token that ends the
  sentence there may follow (a terminal run, closers, then whitespace or
  nothing);
- *marked*: the text ends in that terminal run: the next token begins with
  whitespace, or the answer ends;
- *done*: no rule.

With ``op="contains"`` (``position(sentences, k, contains, text)``) the text may stand anywhere in
the sentence: once the open sentence holds it (as the verifier reads it: a whole word or phrase)
the phase is *held*, and the sentence may end as the model likes; the text is written, as above,
where the model would end the sentence without it.

The stop is held until the k-th sentence is closed (``ends_ok``), and the
text and its mark keep their tokens in the budget (``owed``).

Guarantee: an answer this controller lets end has its k-th sentence ending
with the text, provided nothing else writes tokens into the answer: the
compiler controls it only in a free body without fixed text, with no
controller that inserts words or rules every sentence's end mark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import (
    INSERTING,
    bounds,
    form_of_constraint,
    forms_of,
    free_body,
    placed_from_start,
)
from inference.decoder.token_controllers.count_maxima import PIECE_UNITS
from inference.decoder.token_controllers.forcing import (
    ForcedText,
    Writer,
    allow_only,
    write_mark_at_word_end,
)
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.openings import closed_pieces
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_ALL,
    HOLD_NONE,
    Context,
    Controller,
    Owed,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.sentence_marks import CLOSERS as _CLOSERS
from inference.decoder.token_controllers.sentence_marks import TERMINALS
from inference.decoder.token_controllers.sentence_marks import TERMINALS as _TERMINALS
from inference.decoder.token_controllers.template import Layout
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Position, Unit, Wrap
from reasoning.constraints.form.verify import check, matches
from reasoning.constraints.model import Constraint, Kind

__all__ = [
    "SentenceEnd",
    "SentenceEndState",
    "SentenceEnding",
    "build_sentence_ends",
    "compile_sentence_end",
]


#: The characters that end a sentence for the verifier, and the closers that may follow them.
_BARE = ".,;:!?\"'\u201c\u201d\u2018\u2019()[]{}*`"  # the verifier's punctuation around a last word
_LONG_CHARS = 220  # a k-th sentence this long gets its text at the model's next word end
_DECIMAL = re.compile(r"\.\d*")  # after a digit: a decimal point (a digit must follow it), no sentence end
_ENDS_HERE = re.compile(r"[.!?\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*(\s.*)?", re.DOTALL)


@dataclass(frozen=True)
class SentenceEnd:
    """Sentence ``k`` (``k >= 1``) ends with ``text``, or (``op="contains"``) holds it (``sources``:
    the constraint ids)."""

    k: int
    text: str
    sources: tuple[str, ...] = ()
    op: Literal["ends_with", "contains"] = "ends_with"

    @property
    def form(self) -> Position:
        return Position(unit=Unit.SENTENCES, op=self.op, text=self.text, k=self.k)


@dataclass(frozen=True)
class SentenceEndState:
    """A row's part: its phase (see the module doc) and the tokens of the text still to force."""

    phase: str = "before"
    pending: tuple[int, ...] = ()


def _ends_with(piece: str, text: str) -> bool:
    """Whether ``piece`` (a sentence so far, without its mark) ends with ``text``, as the verifier compares."""
    target = text.strip().lower()
    low = piece.strip().lower()
    if len(target.split()) == 1:
        words = low.split()
        return bool(words) and words[-1].strip(_BARE) == target.strip(_BARE)
    return low.endswith(target)


class SentenceEnding(Writer):
    """The k-th sentence's ending at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: SentenceEnd) -> None:
        self.ctx = ctx
        self.spec = spec
        self.want = spec
        tables = ctx.tables
        # A sentence's mark ("?": the k-th sentence is a question) follows its last word directly.
        self._text = ForcedText(tables, spec.text, lead=" " if re.search(r"\w", spec.text) else "")
        self._eos = list(tables.eos_ids)

        def vector(name: str, value: Callable[[str], bool]) -> torch.Tensor:
            def build() -> torch.Tensor:
                return torch.tensor([value(t) for t in tables.texts], dtype=torch.bool, device=tables.device)

            return tables.cached(("sentence-end", name), build)  # type: ignore[no-any-return]

        self._terminal = tables.holding(_TERMINALS)
        self._not_decimal = self._terminal & ~vector("decimal", lambda t: _DECIMAL.fullmatch(t) is not None)
        self._ends_here = vector("ends-here", lambda t: _ENDS_HERE.fullmatch(t) is not None)
        after = vector("after-mark", lambda t: bool(t) and t[0].isspace())
        self._after_mark = after.clone()
        self._after_mark[self._eos] = True
        self._digit_first = vector("digit-first", lambda t: t[:1].isdigit())

    def _phase(self, text: str) -> str:
        if text[-2:-1].isdigit() and text.endswith(".") and self._phase(text[:-1]) == "open":
            return "decimal"
        pieces = units.pieces(Unit.SENTENCES, text)
        closed = closed_pieces(Unit.SENTENCES, text, pieces)
        k = self.want.k
        if closed >= k:
            tail = text[-1:]
            return "marked" if tail and (tail in _TERMINALS or tail in _CLOSERS) else "done"
        if closed < k - 1:
            return "before"
        current = pieces[-1] if pieces and closed < len(pieces) else ""
        if self.want.op == "contains":
            return "held" if matches(current, "contains", self.want.text, Unit.SENTENCES) else "open"
        # (a text that is one mark closes the sentence itself: the phase goes from open to marked)
        worded = self.want.text not in _TERMINALS and _ends_with(current, self.want.text) and not text[-1:].isspace()
        return "worded" if worded else "open"

    def start(self) -> SentenceEndState:
        return SentenceEndState(self._phase(""))

    def owed(self, state: SteerState) -> Owed:
        phase = state.parts[self.slot].phase
        if phase in ("before", "open", "decimal"):
            return Owed(tokens=len(self._text.spelling.spaced) + 3, insert=True, writes=True)
        return Owed(tokens=2) if phase not in ("done", "held") else Owed()

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def ends_ok(self, state: SteerState) -> bool:
        return state.parts[self.slot].phase in ("marked", "done", "held")

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Write the text at once when the budget is short; at the next word end where the
        landing asks the sentence to close or the sentence runs long."""
        state = d.state
        part: SentenceEndState = state.parts[self.slot]
        if part.phase != "open" or part.pending or state.pending:
            return None
        first = self._text.first(state.text)
        if first < 0 or not self._may_write(state.text):
            return None
        budget = self.ctx.max_new_tokens
        if budget is not None and tokens_left(budget, d) <= self._text.tokens(state.text) + 2:
            return self._text.begin(state)
        current = units.pieces(Unit.SENTENCES, state.text)[-1:] or [""]
        if d.close or len(current[0]) >= _LONG_CHARS:
            d.close = ""  # the sentence closes on the text, not on the model's word
            d.marks[self.slot] = first
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
            phase = state.parts[self.slot].phase
            if phase == "open":
                best = int(lp[r].argmax())
                ends = self._not_decimal if state.text[-1:].isdigit() and not self._short(state) else self._terminal
                wants_end = best in self._eos or bool(ends[best])
                # Where the model would end the sentence, the text is written first.
                if not (wants_end and not state.pending and self._may_write(state.text)
                        and allow_only(allowed, fragments, r, self._text.first(state.text))):
                    allowed[r] &= ~ends
            elif phase == "decimal":
                allowed[r] &= self._digit_first
                fragments[r] = False
            elif phase in ("worded", "marked"):
                keep = allowed[r] & (self._ends_here if phase == "worded" else self._after_mark)
                if bool(keep.any()):
                    allowed[r] = keep
                    fragments[r] = False

    def _may_write(self, text: str) -> bool:
        """Whether the text may be written now: a mark only once the open sentence holds a word
        (a mark right after another sentence's would join its run: "... environment.?")."""
        if self.want.text not in _TERMINALS:
            return True
        pieces = units.pieces(Unit.SENTENCES, text)
        open_piece = pieces[-1] if pieces and closed_pieces(Unit.SENTENCES, text, pieces) < len(pieces) else ""
        return re.search(r"\w", open_piece) is not None

    def _short(self, state: SteerState) -> bool:
        """Whether the budget left holds little more than the text, its mark and a decimal's digit."""
        budget = self.ctx.max_new_tokens
        left = budget - state.n_tokens if budget is not None else 1 << 30
        return left <= self._text.tokens(state.text) + 4

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Write a due text where the model ends its word."""
        write_mark_at_word_end(plans, self.slot, rows, self.ctx.tables.starts_wordchar)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: SentenceEndState = before.parts[self.slot]
        pending = self._text.rest(part.pending, part.phase == "open", token_id) or ()
        if part.phase == "done" or len(new.text) == len(before.text):
            return SentenceEndState(part.phase, pending)
        return SentenceEndState(self._phase(new.text), pending)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if check(self.want.form, state.text).satisfied else ("sentence-end",)


def build_sentence_ends(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentence-ending controller, when a request ends the k-th sentence with a text."""
    spec = spec_of(specs, SentenceEnd)
    return SentenceEnding(ctx, spec) if spec is not None else None


def compile_sentence_end(ctx: CompileContext) -> SentenceEnd | None:
    """The ``SentenceEnd`` of the k-th sentence (``k >= 1``) ending with
    a text ("the first sentence ends with the word 'friends'"; None: none, or not controllable here).

    Controlled: one such position, its text without a terminal or a line break, in a free body
    without fixed text, with no controller that writes words of its own (``inserts``: citations
    or a stated decision; the kinds of ``INSERTING``), no other rule on sentence ends or
    openings, and no maximum that counts an item of the text (its tokens are forced past the masks).
    """
    constraints, layout, controlled, inserts = ctx.hard, ctx.layout, ctx.controlled, ctx.inserts
    found = [(c, form) for c in constraints if isinstance(read := form_of_constraint(c), Position)
             and (form := placed_from_start(read, constraints)).unit is Unit.SENTENCES
             and form.op == "ends_with" and form.k >= 1]
    return sentence_text_rule(constraints, layout, controlled, found, inserts=inserts)


def sentence_text_rule(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str],
    found: Sequence[tuple[Constraint, Position]], *, inserts: bool,
) -> SentenceEnd | None:
    """The ``SentenceEnd`` of the one position in ``found``, the k-th sentence ending with its text
    or (``op="contains"``) holding it, where the sentence-end controller can keep it: on the terms
    :func:`compile_sentence_end` names, the same for both (None: not one position, or not here)."""
    if len(found) != 1 or inserts:
        return None
    c, form = found[0]
    kinds = {q.kind for q in constraints}
    text = " ".join(form.text.split())
    text = text.lower() if Kind.ALL_LOWERCASE in kinds else text.upper() if Kind.ALL_CAPITALS in kinds else text
    mark = form.op == "ends_with" and len(text) == 1 and text in TERMINALS  # "... is a question": "?"
    # A mark writes no word: a sentence count's controller (which ends sentences) may stand beside it.
    if any(q.kind in INSERTING and not (mark and q.kind is Kind.SENTENCE_COUNT) for q in constraints):
        return None
    if not text or not mark and any(ch in TERMINALS or ch == "\n" for ch in text) or not free_body(layout):
        return None
    for q in constraints:
        for f in forms_of(q) if q.id != c.id else ():
            if isinstance(f, Wrap) and f.unit is Unit.SENTENCES or isinstance(f, Position) and f.unit is Unit.SENTENCES:
                return None
            if isinstance(f, Count) and (f.of is not None or f.unit is Unit.SENTENCES and f.filter.ends_with):
                return None
            if isinstance(f, Count) and f.of is None and f.unit not in (Unit.UNIQUE_WORDS, *PIECE_UNITS) \
                    and bounds(f.relation, f.n)[1] is not None and units.count(f.measure, " " + text + " ") > 0:
                return None  # (a count of lines or paragraphs: the text adds none)
    controlled.add(c.id)
    return SentenceEnd(k=form.k, text=text, sources=(c.id,), op="contains" if form.op == "contains" else "ends_with")
