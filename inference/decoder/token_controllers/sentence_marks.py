"""Every sentence ends with one given mark: "end every sentence with an exclamation mark".

A generic ``wrap`` constraint on each sentence with no opening and a
sentence-ending mark as its close (``wrap(sentences, "", "!")``) compiles to
one ``SentenceMark``. Sentences are the verifier's
(``reasoning.constraints.textstats.split_sentences``: a run of ``.!?。！？``,
with any closing quotes or brackets, before whitespace or the end), so a
sentence can only end where a terminal is written. The controller keeps:

- no token holds another terminal than the mark (one ``[V]`` mask per step),
  so every sentence end the text gets is a run of the mark;
- no closing quote or bracket directly after the mark, and no mark right
  after whitespace or at the start (a sentence of the mark alone is too
  short to end with it): checked per candidate on the last character before
  it, so the check costs the candidate's length;
- the answer may end only after the mark (``ends_ok``), so its last piece is
  a sentence that ends with it too; when the token budget is about to run
  out inside a sentence, the mark is written after its last word (a run-on
  sentence still gets its end).

Guarantee: an answer this controller lets end has every sentence ending
with the mark. The compiler controls it only in a free body without fixed
text (a literal would be forced past the mask) and without required
keywords that hold a terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import form_of_constraint, free_body, required_keywords
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from reasoning.constraints.form.model import Unit, Wrap
from reasoning.errors import ConflictError

__all__ = [
    "CLOSERS",
    "TERMINALS",
    "SentenceMark",
    "SentenceMarking",
    "build_sentence_marks",
    "compile_sentence_mark",
]


#: The characters that end a sentence for the verifier.
TERMINALS = ".!?\u3002\uff01\uff1f"
#: What may follow a sentence's terminal and still belong to the sentence (its last character then).
CLOSERS = "\"'\u201d\u2019)]"
_LAST_TOKENS = 3  # budget tokens left at which an open sentence gets its mark


@dataclass(frozen=True)
class SentenceMark:
    """Every sentence ends with ``mark`` (one of ``TERMINALS``; ``sources``: the constraint ids)."""

    mark: str
    sources: tuple[str, ...] = ()


def _fits(before: str, text: str, mark: str) -> bool:
    """Whether ``text`` after ``before`` puts no closer right after the mark and no mark
    right after whitespace or at the start."""
    previous = before[-1:]
    for ch in text:
        if ch == mark and (previous == "" or previous.isspace()):
            return False
        if ch in CLOSERS and previous == mark:
            return False
        previous = ch
    return True


class SentenceMarking(Controller):
    """The sentence mark at decode time (see the module doc)."""

    lazy = True

    def __init__(self, ctx: Context, spec: SentenceMark) -> None:
        self.spec = spec
        self.mark = spec.mark
        others = set(TERMINALS) - {spec.mark}
        tables = ctx.tables
        self._banned = tables.holding(frozenset(others))
        self.ctx = ctx
        marks = tables.encode(spec.mark)
        self._mark_id = marks[0] if len(marks) == 1 else -1

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """Write the mark after the last word when the budget is about to run out inside a sentence."""
        budget = self.ctx.max_new_tokens
        state = d.state
        if budget is None or state.pending or self._mark_id < 0:
            return None
        left = tokens_left(budget, d, slack=0)
        last = state.text.rstrip()[-1:]
        if left <= _LAST_TOKENS and last.isalnum() and state.text[-1:] == last:
            return RowPlan("only", self._mark_id)
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
        allowed &= ~self._banned

    def _may(self, state: SteerState, text: str) -> bool:
        return not any(ch in TERMINALS and ch != self.mark for ch in text) and _fits(state.text, text, self.mark)

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        return _fits(state.text, text, self.mark)

    def check_pieced(self, state: SteerState, memo: Any, raw: bytes, text: str, tail: bytes) -> bool:
        return self._may(state, text)

    def ends_ok(self, state: SteerState) -> bool:
        return state.text.rstrip().endswith(self.mark)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if self.ends_ok(state) and _fits("", state.text, self.mark) else ("sentence-mark",)


def build_sentence_marks(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentence-mark controller, when every sentence must end with one mark."""
    spec = spec_of(specs, SentenceMark)
    return SentenceMarking(ctx, spec) if spec is not None else None


def compile_sentence_mark(ctx: CompileContext) -> SentenceMark | None:
    """The ``token_controllers.sentence_marks.SentenceMark`` of every sentence ending with one
    sentence-ending mark (``wrap(sentences, "", mark)``; None: none, or not controllable here).

    Controlled: in a free body without fixed text, citations or a stated decision (``inserts``),
    whose required keywords hold no terminal.

    Raises:
        ConflictError: two different marks for every sentence.
    """
    constraints, layout, controlled, inserts = ctx.hard, ctx.layout, ctx.controlled, ctx.inserts
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Wrap)
             and form.unit is Unit.SENTENCES and not form.left and len(form.right) == 1 and form.right in TERMINALS]
    if not found:
        return None
    marks = {form.right for _, form in found}
    if len(marks) > 1:
        raise ConflictError("every sentence cannot end with two different marks",
                            constraint_ids=[c.id for c, _ in found])
    if inserts or not free_body(layout):
        return None
    if any(ch in TERMINALS for text in required_keywords(constraints) for ch in text):
        return None
    ids = tuple(c.id for c, _ in found)
    controlled.update(ids)
    return SentenceMark(mark=found[0][1].right, sources=ids)
