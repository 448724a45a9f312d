"""Each sentence a step longer (or shorter) than the one before: "each sentence must be exactly two
words longer than the previous one".

``spread(words, sentences, step=n)`` compiles to one ``SentenceSteps``. Sentences and words are the
verifier's (``units.pieces``, ``units.words``). The first sentence's length is the model's, between
``FIRST_WORDS``; sentence i then holds exactly ``first + i * step`` words. The controller keeps:

- while the open sentence holds fewer words than its target, no token holds a sentence terminal;
- once it holds its target, a candidate may only finish the last word or end the sentence (a token
  that starts another word is refused, checked per candidate on the words it makes);
- the first sentence ends at ``FIRST_WORDS[1]`` words at most (the others follow from it);
- the answer may end only right after a sentence; at a new sentence whose target the budget left
  cannot hold (or, stepping down, a target below one word), the answer ends there.

Guarantee: an answer this controller lets end has every sentence exactly ``step`` words longer than
the one before, provided nothing else writes tokens into the answer: the compiler controls it only
in a free body without fixed text, with no other rule on sentences or words and no inserting
controller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import INSERTING, form_of_constraint, forms_of, free_body
from inference.decoder.token_controllers.openings import opens_piece
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
from inference.decoder.token_controllers.sentence_marks import CLOSERS, TERMINALS
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Position, Spread, Unit, Wrap

__all__ = [
    "FIRST_WORDS",
    "MOST_STEP",
    "SentenceStepping",
    "SentenceSteps",
    "build_sentence_steps",
    "compile_sentence_steps",
    "targets",
]


#: The first sentence's length in words: at least, at most.
FIRST_WORDS = (3, 10)
_TOKENS_PER_WORD = 3  # budget tokens kept for each word a new sentence needs


@dataclass(frozen=True)
class SentenceSteps:
    """Each sentence holds exactly ``step`` more words than the one before (``sources``: the ids)."""

    step: int
    sources: tuple[str, ...] = ()


def targets(text: str, step: int) -> tuple[int, int, int | None]:
    """(closed sentences, words of the open sentence, its target: None for a first sentence) of ``text``.

    A sentence is closed once whitespace follows its terminal: a mark at the very end may still
    be followed by a word ("Stop!Now" is one sentence to the verifier)."""
    pieces = units.pieces(Unit.SENTENCES, text)
    ended = text[-1:].isspace() and opens_piece(Unit.SENTENCES, text, pieces)
    closed = len(pieces) if ended else max(0, len(pieces) - 1)
    current = len(units.words(pieces[closed])) if closed < len(pieces) else 0
    if closed == 0:
        return closed, current, None
    return closed, current, len(units.words(pieces[0])) + closed * step


def _in_step(lengths: Sequence[int], step: int) -> bool:
    """Whether sentences of these lengths keep the rule (the first within ``FIRST_WORDS``)."""
    if not lengths:
        return True
    if not FIRST_WORDS[0] <= lengths[0] <= FIRST_WORDS[1]:
        return False
    return all(b - a == step for a, b in pairwise(lengths))


class SentenceStepping(JudgesText):
    """The sentences' steps at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: SentenceSteps) -> None:
        self.ctx = ctx
        self.spec = spec
        tables = ctx.tables
        self._terminal = tables.holding(TERMINALS)
        self._continues = tables.starts_wordchar
        self._eos = list(tables.eos_ids)

    def _most(self, target: int | None) -> int:
        return FIRST_WORDS[1] if target is None else target

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """The stop at a new sentence the budget (or a step down) cannot hold; the period once a
        sentence at its length ends its last word where the budget runs out."""
        state = d.state
        if state.pending or not self._eos:
            return None
        ended = state.text.rstrip()[-1:] in TERMINALS + CLOSERS  # the next sentence may begin with this token
        closed, words, target = targets(state.text + " " if ended else state.text, self.spec.step)
        if closed and words == 0 and target is not None and self.ends_ok(state):
            budget = self.ctx.max_new_tokens
            short = budget is not None and tokens_left(budget, d, slack=0) <= target * _TOKENS_PER_WORD + 2
            if target < 1 or short:
                return RowPlan("only", self._eos[0])
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
            _, words, target = targets(state.text, self.spec.step)
            least = FIRST_WORDS[0] if target is None else target
            if words < least:
                allowed[r] &= ~self._terminal
            elif words >= self._most(target) and state.text[-1:].isalnum():
                allowed[r] &= self._terminal | self._continues  # finish the word, then the sentence

    def fits(self, state: SteerState, text: str) -> bool:
        """The closed sentences keep the step, the open one holds no more words than its target."""
        full = state.text + text
        closed, words, target = targets(full, self.spec.step)
        lengths = [len(units.words(p)) for p in units.pieces(Unit.SENTENCES, full)[:closed]]
        return _in_step(lengths, self.spec.step) and words <= self._most(target)

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def ends_ok(self, state: SteerState) -> bool:
        text = state.text.rstrip()
        if not text or text[-1] not in TERMINALS:
            return False
        lengths = [len(units.words(p)) for p in units.pieces(Unit.SENTENCES, text)]
        return _in_step(lengths, self.spec.step)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if self.ends_ok(state) else ("sentence-steps",)


def build_sentence_steps(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentence-steps controller, when each sentence is a step longer than the one before."""
    spec = spec_of(specs, SentenceSteps)
    return SentenceStepping(ctx, spec) if spec is not None else None


#: The largest step (words) between consecutive sentences the controller takes on.
MOST_STEP = 5


def compile_sentence_steps(ctx: CompileContext) -> SentenceSteps | None:
    """The ``SentenceSteps`` of a step between sentences (None: none, or not controllable here).

    ``spread(words, sentences, step=n)`` ("each sentence exactly two words longer than the
    previous one", 每句话比前一句多两个字) is controlled where the controller can promise it: a
    step of at most :data:`MOST_STEP` words either way, in a free body without fixed text, with no
    controller that inserts words and no other rule on sentences or words (their counts would
    pull the lengths elsewhere)."""
    constraints, layout, controlled, inserts = ctx.hard, ctx.layout, ctx.controlled, ctx.inserts
    found = [(c, f) for c in constraints if isinstance(f := form_of_constraint(c), Spread) and f.step is not None
             and f.unit is Unit.WORDS and f.per is Unit.SENTENCES]
    if len(found) != 1 or inserts or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    assert form.step is not None
    if form.step == 0 or abs(form.step) > MOST_STEP or not free_body(layout):
        return None
    for q in constraints:
        for f in forms_of(q) if q.id != c.id else ():
            if isinstance(f, (Wrap, Position, Spread)) or isinstance(f, Count) and (
                    f.unit in (Unit.SENTENCES, Unit.WORDS) or f.per is not None or f.of is not None):
                return None
    controlled.add(c.id)
    return SentenceSteps(step=form.step, sources=(c.id,))
