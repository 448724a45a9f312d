"""A word in the k-th sentence, where it fits: "include the keyword eat in the third sentence".

``position(sentences, k, contains, text)`` (``k >= 1``) compiles to one ``SentenceWord``. The
sentence ending controller (``sentence_ends``) held such a word too, by writing it where the
model would end the sentence without it: "... at the end of a long, narrow table eat." reads
as a word pasted on, not a sentence that holds it. Here the word is the model's own choice of
where it continues the sentence:

- while the k-th sentence is written and does not hold the text (*open*), no token may end the
  sentence (the terminals are masked, a decimal point after a digit aside, as in
  ``sentence_ends``) and the stop is held; where the model would end it, it goes on instead
  (a clause, a list, a phrase after a comma);
- the first token of the text gets a bonus of log-probability that grows with the words the
  sentence already holds (``_BONUS`` + ``_GROWTH`` per word, ``_END_BONUS`` more where the model
  would have ended it, at most ``_MOST``): the model takes the text where its own probability
  of it is highest against the alternatives, which is where the words before lead to it;
  once its first token is chosen the rest of the text is forced;
- as a last resort, where the sentence runs past ``_LONG_CHARS`` characters, where a
  sentence-closing demand comes (``RowPlanDraft.close``) or the budget left holds little more than
  the text, the text is written at the model's next word end (at once when the budget is
  short), as before.

Once the sentence holds the text (*held*) the model ends it as it likes. Sentences and the
comparison are the verifier's (``units.pieces``, ``verify.matches``). Guarantee, as for
``sentence_ends``: an answer this controller lets end has its k-th sentence holding the text,
provided nothing else writes tokens into the answer (the compile step's terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import forms_of, placed_from_start
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.sentence_ends import (
    SentenceEnd,
    SentenceEnding,
    SentenceEndState,
    sentence_text_rule,
)
from reasoning.constraints.form import units
from reasoning.constraints.form.kinds import GENERIC_KINDS
from reasoning.constraints.form.model import Position, Unit
from reasoning.constraints.model import Constraint

__all__ = ["SentenceWord", "SentenceWording", "build_sentence_words", "compile_sentence_word"]

_BONUS = 1.0  # log-probability added to the text's first token in the open sentence
_GROWTH = 0.15  # and per word the sentence already holds
_END_BONUS = 1.5  # and where the model would have ended the sentence
_MOST = 4.5  # the bonus's ceiling
_LONG_CHARS = 200  # an open sentence this long gets the text at the model's next word end


@dataclass(frozen=True)
class SentenceWord:
    """Sentence ``k`` (``k >= 1``) holds ``text``, written where the model continues into it
    (``sources``: the constraint ids)."""

    k: int
    text: str
    sources: tuple[str, ...] = ()

    @classmethod
    def of(cls, rule: SentenceEnd) -> SentenceWord:
        """The word of a sentence-text rule that holds its text (``op="contains"``)."""
        return cls(k=rule.k, text=rule.text, sources=rule.sources)

    @property
    def form(self) -> Position:
        return Position(unit=Unit.SENTENCES, op="contains", text=self.text, k=self.k)


class SentenceWording(SentenceEnding):
    """The word of the k-th sentence at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: SentenceWord) -> None:
        super().__init__(
            ctx, SentenceEnd(k=spec.k, text=spec.text, sources=spec.sources, op="contains")
        )
        self.spec = spec
        self._wants_end: dict[int, bool] = {}

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """The text at once when the budget is short; at the next word end on a closing demand or
        a long sentence (the sentence goes on otherwise: a close demand is no end here)."""
        state = d.state
        part: SentenceEndState = state.parts[self.slot]
        if part.phase != "open" or part.pending or state.pending:
            return None
        first = self._text.first(state.text)
        if first < 0:
            return None
        budget = self.ctx.max_new_tokens
        if (
            budget is not None
            and budget - state.n_tokens - d.comp.reserve_tokens <= self._text.tokens(state.text) + 3
        ):
            return self._text.begin(state)
        current = units.pieces(Unit.SENTENCES, state.text)[-1:] or [""]
        if d.close or len(current[0]) >= _LONG_CHARS:
            d.close = ""
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
        self._wants_end = {}
        for r, state in enumerate(states):
            phase = state.parts[self.slot].phase
            if phase == "open":
                best = int(lp[r].argmax())
                ends = (
                    self._not_decimal
                    if state.text[-1:].isdigit() and not self._short(state)
                    else self._terminal
                )
                self._wants_end[r] = best in self._eos or bool(ends[best])
                allowed[r] &= ~ends
            elif phase == "decimal":
                allowed[r] &= self._digit_first
                fragments[r] = False

    def reweigh(
        self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor
    ) -> None:
        """The growing bonus on the text's first token; a due text where the model ends its word."""
        for r, state in enumerate(states):
            part: SentenceEndState = state.parts[self.slot]
            if part.phase != "open" or part.pending or state.pending:
                continue
            token = self._text.first(state.text)
            if token < 0:
                continue
            current = units.pieces(Unit.SENTENCES, state.text)[-1:] or [""]
            bonus = (
                _BONUS
                + _GROWTH * len(current[0].split())
                + (_END_BONUS if self._wants_end.get(r) else 0.0)
            )
            rows[r, token] += min(bonus, _MOST)
        super().reweigh(states, plans, rows)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if super().unmet(state) == () else ("sentence-word",)


def build_sentence_words(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentence-word controller, when a request puts a text in the k-th sentence."""
    spec = spec_of(specs, SentenceWord)
    return SentenceWording(ctx, spec) if spec is not None else None


def _contained(c: Constraint, constraints: Sequence[Constraint]) -> Position | None:
    """``c``'s word in the k-th sentence, ``k`` counted from the start (``placed_from_start``)."""
    if GENERIC_KINDS.get(c.kind) is not Position:
        return None
    form = next(iter(forms_of(c)), None)
    form = placed_from_start(form, constraints) if isinstance(form, Position) else form
    if isinstance(form, Position) and form.unit is Unit.SENTENCES and form.op == "contains" and form.k >= 1 \
            and form.word is None and form.same_as is None:
        return form
    return None


def compile_sentence_word(ctx: CompileContext) -> SentenceWord | None:
    """The ``SentenceWord`` of a word in the k-th sentence (None: none, or not controllable here).

    ``position(sentences, k, contains, text)`` with ``k >= 1`` ("the word 'ocean' must appear in
    the third sentence", 第二句话必须包含“风险”这个词): the k-th sentence may not end before it holds
    the text, which the model is led to continue into. Controlled on the terms of the k-th
    sentence's ending (``sentence_ends.sentence_text_rule``): one such position, no ending of a
    sentence controlled beside it (``compiled["sentence_end"]``: one controller of sentence ends),
    a text without a terminal or a line break, a free body without fixed text, no controller that
    writes words of its own, no other rule on sentences' ends or openings, and no maximum that
    counts an item of the text.
    """
    if ctx.compiled["sentence_end"] is not None:
        return None
    found = [(c, form) for c in ctx.hard if (form := _contained(c, ctx.hard)) is not None]
    rule = sentence_text_rule(ctx.hard, ctx.layout, ctx.controlled, found, inserts=ctx.inserts)
    return SentenceWord.of(rule) if rule is not None else None
