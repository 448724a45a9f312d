"""How many sentences of each type, relative to one another: "twice as many statements as questions",
"equal numbers of statements, questions and exclamations", 问句和陈述句各两句.

Counts of the sentences ending with one mark (``count(sentences, ends_with=m)``: exactly n of each
type, or a ratio of two types) compile to one ``SentenceTypes``: a ``pattern`` of marks, the
mark each sentence ends with in turn (``.``, ``.``, ``?`` for two statements to a question), and
whether it ``repeat``-s (a ratio: any whole number of rounds) or is written once (exact counts).
Sentences are the verifier's (``units.pieces``). The controller keeps:

- no token holds another terminal than the mark the open sentence is due to end with (one ``[V]``
  mask per mark, built once), and no closing quote or bracket right after a mark (the verifier's
  filter compares the sentence's last character);
- the answer may end only right after a sentence's mark, at the end of a round (``ends_ok``);
  when the pattern is written once, the answer ends there (the stop is the only token); when the
  budget left holds little more than the round's remaining sentences (a few tokens each), the due
  mark is written after the open sentence's next word, so the round is finished in time.

Guarantee: an answer this controller lets end has its sentences ending with the pattern's marks,
so every count of a type holds (for a ratio, in every whole round), provided nothing else writes
tokens into the answer: the compiler controls it only in a free body without fixed text, with no
other rule on sentences and no controller that inserts words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.controllers.layout import LayoutSegment
from inference.decoder.controllers.pacing import tokens_left
from inference.decoder.controllers.piece_sentences import closed_sentences
from inference.decoder.controllers.protocol import (
    HOLD_ALL,
    HOLD_NONE,
    Context,
    Controller,
    Draft,
    JudgesText,
    Plan,
    SteerState,
    spec_of,
)
from inference.decoder.controllers.sentence_marks import CLOSERS, TERMINALS

__all__ = ["SentenceTypes", "SentenceTyping", "build_sentence_types"]

_LAST_TOKENS = 3  # budget tokens left at which an open sentence gets its mark
_PER_SENTENCE = 4  # budget tokens kept for each sentence the round still owes after the open one


@dataclass(frozen=True)
class SentenceTypes:
    """Sentence ``i`` ends with ``pattern[i % len(pattern)]`` (``repeat``) or ``pattern[i]`` and the
    answer holds ``len(pattern)`` sentences (``sources``: the constraint ids)."""

    pattern: tuple[str, ...]
    repeat: bool
    sources: tuple[str, ...] = ()


class SentenceTyping(JudgesText):
    """The sentence types at decode time (see the module doc)."""

    def __init__(self, ctx: Context, spec: SentenceTypes) -> None:
        self.ctx = ctx
        self.spec = spec
        tables = ctx.tables
        self._banned = {mark: tables.holding(frozenset(set(TERMINALS) - {mark})) for mark in set(spec.pattern)}
        self._mark_ids = {mark: ids[0] if len(ids := tables.encode(mark)) == 1 else -1 for mark in set(spec.pattern)}
        self._eos = list(tables.eos_ids)

    def start(self) -> int:
        return 0

    def _due(self, state: SteerState) -> str | None:
        """The mark the open sentence ends with (None: the pattern, written once, is complete)."""
        closed: int = state.parts[self.slot]
        if not self.spec.repeat and closed >= len(self.spec.pattern):
            return None
        due: str = self.spec.pattern[closed % len(self.spec.pattern)]
        return due

    def pace(self, d: Draft) -> Plan | None:
        """The stop once a pattern written once is complete; the due mark when the budget runs out."""
        state = d.state
        if state.pending:
            return None
        due = self._due(state)
        if due is None:
            return Plan("only", self._eos[0]) if self._eos else None
        budget = self.ctx.max_new_tokens
        mark_id = self._mark_ids.get(due, -1)
        if budget is None or mark_id < 0:
            return None
        last = state.text.rstrip()[-1:]
        closed: int = state.parts[self.slot]
        size = len(self.spec.pattern)
        owed = size - closed % size if self.spec.repeat else size - closed
        # Near the end of the budget every word closes a sentence: the round is finished in time.
        if tokens_left(budget, d, slack=0) <= _LAST_TOKENS + _PER_SENTENCE * (owed - 1) and last.isalnum() \
                and state.text[-1:] == last and closed_sentences(state.text + due + " ")[0] > closed:
            return Plan("only", mark_id)  # (not after an abbreviation: "A." closes no sentence)
        return None

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[Plan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        for r, state in enumerate(states):
            due = self._due(state)
            if due is not None:
                allowed[r] &= ~self._banned[due]

    def fits(self, state: SteerState, text: str) -> bool:
        """No closer right after a mark, no other terminal than the due one (a token may close one
        sentence and open the next: the due mark moves with it)."""
        written = state.text
        previous = written[-1:]
        closed: int = state.parts[self.slot]
        for ch in text:
            if ch in CLOSERS and previous in TERMINALS:
                return False
            if ch in TERMINALS:
                if not self.spec.repeat and closed >= len(self.spec.pattern):
                    return False
                if ch != self.spec.pattern[closed % len(self.spec.pattern)]:
                    return False
            previous = ch
            written += ch
            if ch.isspace() and written[-2:-1] in TERMINALS:
                closed = closed_sentences(written)[0]
        return True

    def holds(self, d: Draft) -> int:
        return HOLD_NONE if self.ends_ok(d.state) else HOLD_ALL

    def ends_ok(self, state: SteerState) -> bool:
        text = state.text.rstrip()
        if not text or text[-1] not in TERMINALS:
            return False
        closed = closed_sentences(text)[0]
        size = len(self.spec.pattern)
        return closed > 0 and (closed % size == 0 if self.spec.repeat else closed == size)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], Plan],
    ) -> Any:
        if len(new.text) == len(before.text):
            return before.parts[self.slot]
        return closed_sentences(new.text)[0]

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return () if self.ends_ok(state) else ("sentence-types",)


def build_sentence_types(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The sentence-types controller, when a request counts its sentences by type."""
    spec = spec_of(specs, SentenceTypes)
    return SentenceTyping(ctx, spec) if spec is not None else None
