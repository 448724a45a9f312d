"""A minimum of words written in capitals, counted the way IFEval counts them.

IFEval counts the answer's nltk tokens that are ``isupper()`` ("NASA", "I",
"DON'T" as "DO" and "N'T"); our verifier counts the same tokens with
``textstats.count_capital_words``. A hard ``capital_word_frequency`` minimum
is met by capital words *the model chooses*:

- owed capital words are paced over the token budget like keywords (the
  k-th of N once k / (N + 1) of it is spent); a due one is written at the
  next word boundary: the row keeps only tokens that begin a word of at
  least two capital letters (" RISK", " NOT"), so the model picks the word;
- a word begun in capitals while one is owed continues without a lowercase
  letter until it ends ("RISK" cannot become "RISKy"), so it counts;
- the end is held back while one is owed, the budget keeps room for each
  owed word and a word maximum keeps a word for each.

A maximum ("less than") is left to the prompt: "I" and "A" are capital
words, and whether a run of capitals is one token or several is nltk's
decision, so a mask could not promise the bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.token_controllers.keywords import RUNNING_TEXT
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import insert_urgent, next_due
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
from inference.decoder.token_controllers.template import Free
from inference.decoder.vocab import VocabTables, joins_run
from reasoning.constraints.textstats import count_capital_words

__all__ = ["CAPITAL_WORD_TOKENS", "CapitalState", "CapitalWords", "Capitals", "build_capitals", "capital_starts"]

#: Budget tokens kept for one owed capital word (its first token and one more).
CAPITAL_WORD_TOKENS = 2


@dataclass(frozen=True)
class Capitals:
    """At least ``need`` capital words; ``sources`` are the constraints behind it."""

    need: int
    sources: tuple[str, ...] = ()

    def count(self, text: str) -> int:
        """Capital words in ``text``, as our verifier (and IFEval) count them."""
        return count_capital_words(text)

    def count_after(self, count: int, text: str, chunk: str) -> int:
        """``count(text + chunk)`` from ``count == count(text)``, recounting only
        the text after the last whitespace (no counted token holds whitespace,
        so the tokens before it are final)."""
        start = len(text)
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        rest = text[start:]
        return count - self.count(rest) + self.count(rest + chunk)

    def owed(self, count: int, later: int) -> int:
        """Capital words still needed beyond ``count`` and the later literals' ``later``."""
        return max(0, self.need - count - later)


def capital_starts(tables: VocabTables, *, spaced: bool) -> torch.Tensor:
    """``[V]`` bool: tokens that begin a word of capitals: leading spaces
    (required when ``spaced``: the text before ends in a word or a sign),
    then two or more letters, every one a capital."""

    def build() -> torch.Tensor:
        values = []
        for text in tables.texts:
            word = text.lstrip(" ")
            lead = len(text) > len(word)
            values.append(len(word) >= 2 and word.isalpha() and word.isupper() and (lead or not spaced))
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("capital-starts", spaced), build)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class CapitalState:
    """A row's capital words: how many the text holds, and whether it is inside
    a word begun in capitals while one is owed (it must stay in capitals)."""

    count: int = 0
    open: bool = False


class CapitalWords(Controller):
    """Owed capital words paced and chosen by the model (see the module doc)."""

    def __init__(self, ctx: Context, capitals: Capitals) -> None:
        self.ctx = ctx
        self.capitals = capitals
        tables = ctx.tables
        self._starts = capital_starts(tables, spaced=False)
        self._starts_spaced = capital_starts(tables, spaced=True)
        self._later = tuple(sum(capitals.count(t) for t in c.later_literals) for c in ctx.layout.segments)

    def start(self) -> CapitalState:
        return CapitalState()

    def _owed_now(self, state: SteerState) -> int:
        """Capital words still needed (the later literals' own counted)."""
        if state.seg >= len(self._later):
            return 0
        return self.capitals.owed(state.parts[self.slot].count, self._later[state.seg])

    def owed(self, state: SteerState) -> Owed:
        n = self._owed_now(state)
        return Owed(tokens=CAPITAL_WORD_TOKENS * n, words=n, units=n, insert=True, writes=n > 0) if n else Owed()

    def _running(self, d: RowPlanDraft) -> int:
        """Capital words owed where they are written (running text), else 0."""
        segment = d.comp.segment
        return d.owed[self.slot].words if isinstance(segment, Free) and segment.role in RUNNING_TEXT else 0

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_ALL if self._running(d) else HOLD_NONE

    def forced(self, d: RowPlanDraft) -> RowPlan | None:
        if self._running(d) and not d.state.counts.bracket_open and d.exit == d.target:
            # The budget kept room for the owed capital words: one begins now.
            marks = {self.slot: "now"}
            return RowPlan("free", d.exit, seg=d.state.seg, forced=True, marks=marks, later=d.later, owed=d.owed)
        return None

    def _due(self, d: RowPlanDraft) -> bool:
        """Whether an owed capital word should begin now (paced as keywords are,
        over the budget the keywords leave)."""
        budget = self.ctx.max_new_tokens
        owed = d.owed[self.slot].words
        if budget is None or owed == 0:
            return False
        need = self.capitals.need
        return insert_urgent(d, budget) or next_due(d, budget, need - owed, need, kept=d.inserts_before(self.slot))

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state = d.state
        running = self._running(d)
        caps = ""
        if running and not state.pending and not state.counts.bracket_open and self._due(d):
            last = state.text[-1:]
            budget = self.ctx.max_new_tokens
            assert budget is not None
            caps = "now" if last == "" or not joins_run(last) or insert_urgent(d, budget) else "due"
        if d.close and running:
            caps, d.close = "now", ""
        if caps:
            d.marks[self.slot] = caps
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
        tables = self.ctx.tables
        limits = self.ctx.limits
        for r, (s, p) in enumerate(zip(states, plans)):
            caps_mark = p.marks.get(self.slot, "")
            if caps_mark == "now" or (caps_mark == "due" and not self._continues_word(lp[r], allowed[r])):
                # A capital word begins with the next token, if any is allowed.
                after_space = s.text == "" or s.text[-1].isspace()
                caps = (self._starts if after_space else self._starts_spaced) & base[r]
                if limits.has_max:
                    # The word kept in reserve for this capital word is spent on it.
                    n = self._owed_now(s) - 1
                    owed = list(p.owed)
                    owed[self.slot] = Owed(words=n, units=n, writes=n > 0)
                    later = self.ctx.later(s, owed)
                    over = limits.over_max(tables, s.counts, later)
                    assert over is not None
                    caps &= ~over
                if bool(caps.any()):
                    allowed[r] = caps
                    fragments[r] = False
                elif p.forced:
                    # No capital word can begin: the forced end is taken.
                    allowed[r] = False
                    allowed[r, p.exit] = True
            elif s.parts[self.slot].open:
                # A word begun in capitals ends or continues without a lowercase letter.
                allowed[r] &= ~tables.starts_wordchar | ~tables.has_lower
                fragments[r] &= ~tables.starts_wordchar

    def _continues_word(self, lp: torch.Tensor, allowed: torch.Tensor) -> bool:
        """Whether the row's likeliest allowed token continues the word the text ends in
        (``lp, allowed: [V]``): then the word is not finished yet."""
        best = int(lp.masked_fill(~allowed, float("-inf")).argmax())
        return bool(self.ctx.tables.starts_wordchar[best])

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: CapitalState = before.parts[self.slot]
        chunk = new.text[len(before.text) :]
        count = self.capitals.count_after(part.count, before.text, chunk) if chunk else part.count
        if bool(self._starts[token_id]):
            still = self._owed_now(before) > 0
        else:
            still = part.open and bool(self.ctx.tables.starts_wordchar[token_id])
        return CapitalState(count, still)

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        return ("capitals",) if self.capitals.owed(self.capitals.count(state.text), 0) else ()


def build_capitals(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The capital-word controller, for a hard capital-word minimum."""
    capitals = spec_of(specs, Capitals)
    return CapitalWords(ctx, capitals) if capitals is not None else None
