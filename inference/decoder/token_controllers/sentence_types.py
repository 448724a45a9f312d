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
from fractions import Fraction
from math import lcm
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
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.piece_sentences import closed_sentences
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
from reasoning.constraints.form.model import (
    Count,
    Filter,
    Form,
    Measure,
    Position,
    Spread,
    Unit,
    Wrap,
)
from reasoning.constraints.model import Kind, Relation

__all__ = [
    "MOST_ROUND",
    "SentenceTypes",
    "SentenceTyping",
    "build_sentence_types",
    "compile_sentence_types",
    "pattern_of",
]


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

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        """The stop once a pattern written once is complete; the due mark when the budget runs out."""
        state = d.state
        if state.pending:
            return None
        due = self._due(state)
        if due is None:
            return RowPlan("only", self._eos[0]) if self._eos else None
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
            return RowPlan("only", mark_id)  # (not after an abbreviation: "A." closes no sentence)
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

    def holds(self, d: RowPlanDraft) -> int:
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
        plan_of: Callable[[SteerState], RowPlan],
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


#: The most sentences one round of the pattern may hold.
MOST_ROUND = 8


_MARKS = ".?!"


def _typed(form: Count) -> str | None:
    """The mark of a count of sentences by type (None: another count)."""
    mark = form.filter.ends_with or ""
    if form.unit is Unit.SENTENCES and form.per is None and len(mark) == 1 and mark in _MARKS \
            and form.filter == Filter(ends_with=mark) and form.relation is Relation.EXACTLY:
        return mark
    return None


def pattern_of(exact: dict[str, int], ratios: Sequence[tuple[str, str, float]]) -> tuple[str, ...] | None:
    """The marks of one round: ``exact`` counts of each mark, or the smallest whole numbers in the
    ``ratios`` (part, whole, fraction); None when they disagree or the round is too long.
    Marks are interleaved, the most owed first, a statement before a question before an exclamation
    on a tie (two statements to a question: '.', '?', '.'; two of each: '.', '?', '.', '?')."""
    counts: dict[str, Fraction] = {m: Fraction(n) for m, n in exact.items()}
    for part, whole, fraction in ratios:
        share = Fraction(fraction).limit_denominator(MOST_ROUND)
        if share <= 0:
            return None
        if part in counts and whole in counts:
            if counts[part] != counts[whole] * share:
                return None
        elif whole in counts:
            counts[part] = counts[whole] * share
        elif part in counts:
            counts[whole] = counts[part] / share
        else:
            counts[whole], counts[part] = Fraction(share.denominator), Fraction(share.numerator)
    if not counts:
        return None
    scale = lcm(*(c.denominator for c in counts.values()))
    whole_counts = {m: int(c * scale) for m, c in counts.items()}
    if sum(whole_counts.values()) > MOST_ROUND or min(whole_counts.values()) < 1:
        return None
    pattern: list[str] = []
    left = {m: whole_counts[m] for m in sorted(whole_counts, key=_MARKS.index)}  # a statement first on a tie
    while any(left.values()):
        mark = max(left, key=lambda m: left[m])
        pattern.append(mark)
        left[mark] -= 1
    return tuple(pattern)


def compile_sentence_types(ctx: CompileContext) -> SentenceTypes | None:
    """The ``SentenceTypes`` of sentences counted by type (None: none, or not controllable here).

    Counts of the sentences ending with one mark (``.``, ``?``, ``!``) compile to one pattern:
    exact counts of each type ("问句和陈述句各两句": two of each) are a pattern written once; ratios
    of two types with a common type between them ("twice as many statements as questions",
    "equal numbers of statements, questions and exclamations") the smallest whole round of marks,
    repeated. Controlled only where the controller can promise it: every count is of this shape
    (exact, or an exact ratio), the round holds at most :data:`MOST_ROUND` sentences, in a free
    body without fixed text, with no controller that inserts words (``inserts``: citations or a
    stated decision) or bounds the sentences and no other rule on them."""
    constraints, layout, controlled, inserts = ctx.hard, ctx.layout, ctx.controlled, ctx.inserts
    exact: dict[str, int] = {}
    ratios: list[tuple[str, str, float]] = []
    ids: list[str] = []
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or (mark := _typed(form)) is None:
            continue
        if form.of is None and form.n >= 1:
            exact[mark] = form.n
        elif form.of is not None and form.fraction is not None and isinstance(form.of, Measure) \
                and _typed(Count(unit=form.of.unit, relation=Relation.EXACTLY, filter=form.of.filter)) is not None:
            ratios.append((mark, str(form.of.filter.ends_with), float(form.fraction)))
        else:
            return None
        ids.append(c.id)
    # A count of all the sentences writes no text of its own (its close demand ends the open
    # sentence with a mark the due-mark mask leaves); ``_fits`` checks it against the rounds.
    if not ids or (exact and ratios) or inserts \
            or any(c.kind in INSERTING and c.kind is not Kind.SENTENCE_COUNT for c in constraints):
        return None
    totals: list[tuple[int, int | None]] = []
    for q in constraints:
        if q.id in ids:
            continue
        for f in forms_of(q):
            if isinstance(f, (Wrap, Position, Spread)) and Unit.SENTENCES in (getattr(f, "unit", None),
                                                                              getattr(f, "per", None)):
                return None
            if _total(f):
                assert isinstance(f, Count)
                totals.append(bounds(f.relation, f.n))
            elif isinstance(f, Count) and Unit.SENTENCES in (f.unit, f.per) or isinstance(f, Count) and f.of is not None:
                return None
    exact = _filled(exact, totals)
    pattern = pattern_of(exact, ratios)
    if pattern is None or not free_body(layout) or not _fits(len(pattern), bool(ratios), totals):
        return None
    controlled.update(ids)
    return SentenceTypes(pattern=pattern, repeat=bool(ratios), sources=tuple(ids))


def _total(form: Form) -> bool:
    """Whether ``form`` counts all of the answer's sentences ("five sentences", "at least two")."""
    return isinstance(form, Count) and form.unit is Unit.SENTENCES and form.per is None and form.of is None \
        and form.filter == Filter()


def _filled(exact: dict[str, int], totals: Sequence[tuple[int, int | None]]) -> dict[str, int]:
    """Exact counts of some types beside an exact count of all sentences, the rest plain statements
    ("five sentences: two questions and one exclamation" holds two statements): ``.`` takes what the
    total leaves when no count of statements is given (a statement adds to no other type's count)."""
    if not exact or "." in exact or len(totals) != 1 or totals[0][0] != totals[0][1]:
        return exact
    rest = totals[0][0] - sum(exact.values())
    return {**exact, ".": rest} if rest > 0 else exact


def _fits(round_length: int, repeat: bool, totals: Sequence[tuple[int, int | None]]) -> bool:
    """Whether the answer's sentences, one round of ``round_length`` (or whole rounds when the
    pattern ``repeat``-s), can meet every count of all the sentences (``totals``: least, most)."""
    rounds = range(1, MOST_ROUND + 1) if repeat else range(1, 2)
    return any(all(lo <= m * round_length and (hi is None or m * round_length <= hi) for lo, hi in totals)
               for m in rounds)
