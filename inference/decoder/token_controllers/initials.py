"""A minimum of words that start or end with given letters, chosen by the model.

A generic ``count`` of words filtered by ``starts_with`` or ``ends_with``
(letters only) with a lower bound is met the way a capital-word minimum is
(``token_controllers.capitals``, whose pacing this reuses): owed words are paced
over the token budget (the k-th of N once k / (N + 1) of it is spent); a due
one begins at the next word boundary, where the row keeps only tokens that
begin a word with the letters (" well", " wander"), or, for an ending, only
tokens that are a whole word with it (" morning", " building"), so the model
picks the word; the end is held back while one is owed, and the budget keeps
room for each. A word judged by its start counts however it continues (no
rule on the tokens after it); a word judged by its end is closed: the token
after it may not continue the word ("morning" never becomes "mornings").

Counts are the form's (``units.count``: the verifier's words and filter).
Guarantee: within the token budget, the answer ends only once it holds the
minimum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from inference.decoder.compile.context import CompileContext
from inference.decoder.compile.forms import bounds, form_of_constraint, forms_of
from inference.decoder.token_controllers.capitals import Capitals, CapitalState, CapitalWords
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.protocol import (
    Context,
    Controller,
    RowPlan,
    SteerState,
    spec_of,
)
from inference.decoder.vocab import VocabTables
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Measure, Unit
from reasoning.constraints.model import Kind
from reasoning.errors import ConflictError, LimitExceeded

__all__ = [
    "Initial",
    "InitialWords",
    "Initials",
    "build_initials",
    "compile_initials",
    "final_words",
    "initial_starts",
]


@dataclass(frozen=True)
class Initial(Capitals):
    """At least ``need`` words of ``measure`` (words starting, or ending, with letters) in the answer."""

    measure: Measure = field(default_factory=lambda: Measure(unit=Unit.WORDS))

    @property
    def prefix(self) -> str:
        return (self.measure.filter.starts_with or "").lower()

    @property
    def suffix(self) -> str:
        return (self.measure.filter.ends_with or "").lower()

    def count(self, text: str) -> int:
        """Words of ``text`` that start with the letters, as the verifier counts them."""
        return units.count(self.measure, text)


@dataclass(frozen=True)
class Initials:
    """The compiled spec: one words-starting-with minimum (kept apart from ``Capitals``)."""

    item: Initial


def initial_starts(tables: VocabTables, prefix: str, *, spaced: bool) -> torch.Tensor:
    """``[V]`` bool: tokens that begin a word starting with ``prefix`` (letters only, any case):
    leading spaces (required when ``spaced``: the text before ends in a word or a sign)."""

    def build() -> torch.Tensor:
        values = []
        for text in tables.texts:
            word = text.lstrip(" ")
            lead = len(text) > len(word)
            values.append(
                len(word) >= len(prefix) and word.isalpha() and word.lower().startswith(prefix) and (lead or not spaced)
            )
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("initial-starts", prefix, spaced), build)  # type: ignore[no-any-return]


def final_words(tables: VocabTables, suffix: str, *, spaced: bool) -> torch.Tensor:
    """``[V]`` bool: tokens that are a whole word ending with ``suffix`` (letters only, any case,
    more letters than the suffix): leading spaces (required when ``spaced``), then the word."""

    def build() -> torch.Tensor:
        values = []
        for text in tables.texts:
            word = text.lstrip(" ")
            lead = len(text) > len(word)
            values.append(
                len(word) > len(suffix) and word.isalpha() and word.lower().endswith(suffix) and (lead or not spaced)
            )
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("final-words", suffix, spaced), build)  # type: ignore[no-any-return]


class InitialWords(CapitalWords):
    """Owed words with the initial letters, paced and chosen by the model (see the module doc)."""

    def __init__(self, ctx: Context, initial: Initial) -> None:
        super().__init__(ctx, initial)
        self.spec = initial
        self._closes = bool(initial.suffix)  # a word judged by its end ends with its token
        if self._closes:
            self._starts = final_words(ctx.tables, initial.suffix, spaced=False)
            self._starts_spaced = final_words(ctx.tables, initial.suffix, spaced=True)
        else:
            self._starts = initial_starts(ctx.tables, initial.prefix, spaced=False)
            self._starts_spaced = initial_starts(ctx.tables, initial.prefix, spaced=True)

    def mask(
        self,
        states: Sequence[SteerState],
        plans: Sequence[RowPlan],
        allowed: torch.Tensor,
        fragments: torch.Tensor,
        base: torch.Tensor,
        lp: torch.Tensor,
    ) -> None:
        super().mask(states, plans, allowed, fragments, base, lp)
        if not self._closes:
            return
        wordchar = self.ctx.tables.starts_wordchar
        for r, s in enumerate(states):
            if s.parts[self.slot].open:
                # The word with the ending is written: the next token does not continue it.
                allowed[r] &= ~wordchar
                fragments[r] &= ~wordchar

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: CapitalState = super().advance(before, new, token_id, comp, plan_of)
        # A begun word counts however it goes on; a word with the ending closes after its token.
        return CapitalState(part.count, self._closes and bool(self._starts[token_id]))

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return ("initials",) if self.capitals.owed(self.capitals.count(state.text), 0) else ()


def build_initials(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The initial- or final-letters controller, for a hard minimum of words starting or ending with
    given letters."""
    found = spec_of(specs, Initials)
    return InitialWords(ctx, found.item) if found is not None else None


def compile_initials(ctx: CompileContext) -> Initials | None:
    """The ``token_controllers.initials.Initials`` of a minimum of words starting, or ending, with given
    letters (no other filter, no maximum of its own), in a body that is not formal, beside no
    capital-word minimum (both would pace their words over the same budget).

    Raises:
        ConflictError: the minimum above a maximum of the same words or of all words.
        LimitExceeded: more such words than the token budget holds.
    """
    constraints, layout, controlled, max_new_tokens = ctx.hard, ctx.layout, ctx.controlled, ctx.max_new_tokens
    if layout.body.kind == "formal" or any(q.kind == Kind.CAPITAL_WORD_FREQUENCY for q in constraints):
        return None
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or form.unit is not Unit.WORDS or form.per is not None or form.of is not None:
            continue
        prefix = form.filter.starts_with or form.filter.ends_with or ""
        lo, hi = bounds(form.relation, form.n)
        if not lo or hi is not None or not prefix.isalpha() \
                or form.filter not in (Filter(starts_with=prefix), Filter(ends_with=prefix)):
            continue
        for q in constraints:
            for f in forms_of(q) if q.id != c.id else ():
                if isinstance(f, Count) and f.per is None and f.of is None and f.unit is Unit.WORDS \
                        and f.filter in (Filter(), form.filter):
                    most = bounds(f.relation, f.n)[1]
                    if most is not None and most < lo:
                        raise ConflictError(f"at least {lo} words with {prefix!r} but at most {most} words",
                                            constraint_ids=[c.id, q.id])
        if max_new_tokens is not None and lo > max_new_tokens:
            raise LimitExceeded(f"{lo} words cannot fit in {max_new_tokens} new tokens", constraint_ids=[c.id])
        controlled.add(c.id)
        return Initials(Initial(need=lo, sources=(c.id,), measure=form.measure))
    return None
