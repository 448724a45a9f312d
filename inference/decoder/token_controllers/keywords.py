"""Required and capped keywords, counted the way IFEval and our verifier count them.

A keyword's count is the number of case-insensitive, non-overlapping
substring matches in the whole answer (``re.findall``), so "risky" counts for
"risk". A hard ``keywords_present`` requirement (each keyword at least once)
and a ``keyword_frequency`` bound become one ``Keyword`` each, with a
minimum, a maximum or both.

Minimums are met by *insertion*: the keyword's tokens, forced one after the
other like a literal. The steering inserts a keyword in three cases:

- the model chooses the token that begins an owed keyword (the steering
  favours it while the keyword is owed); the rest is then forced, so a chosen
  " mount" for an owed "mountain" becomes the keyword (``starts``);
- the model wants to stop while a keyword is owed: the stop's probability
  moves to the keyword's first token (as for a missing placeholder);
- a keyword is *due*: owed keywords are paced over the token budget, the k-th
  of N once k / (N + 1) of it is spent, and a due keyword is inserted at the
  next boundary the model itself predicts (its likeliest token does not
  continue a word), or at once when the budget left holds only the owed
  insertions.

A keyword that is one terminal or clause mark ("three question marks") is
written as punctuation (``token_controllers.marks``): once due, where the model
would end a sentence (or a clause) right after a word, in that end's place;
it is not favoured mid-sentence, a sentence asked to close ends on it, and
with little budget left per owed terminal mark the sentence is asked to end.

The token budget keeps room for the insertions still owed, and word and
letter maxima keep room for their words, so a minimum holds within the budget.
Maximums are per-token checks: a candidate that would make a capped
keyword's count exceed its maximum fails, wherever it would complete it,
with room kept for the occurrences that owed keywords will bring ("risk"
inside a required "risk appetite").

``later`` arguments are the keyword's occurrences in the literals the layout
still has to write (an end phrase, a postscript marker): they count for the
minimum and against the maximum before they are written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from inference.decoder.token_controllers.count_tallies import count_text
from inference.decoder.token_controllers.forcing import ForcedText, Writer, force_token
from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.marks import (
    CLAUSE_MARKS,
    TERMINAL_MARKS,
    after_mark,
    mark_places,
)
from inference.decoder.token_controllers.pacing import insert_urgent, next_due, tokens_left
from inference.decoder.token_controllers.protocol import (
    HOLD_NONE,
    HOLD_TARGET,
    Context,
    Controller,
    Owed,
    RowPlan,
    RowPlanDraft,
    SteerState,
    spec_of,
)
from inference.decoder.token_controllers.template import Free
from inference.decoder.vocab import joins_run

__all__ = ["RUNNING_TEXT", "UNWRITABLE", "Keyword", "KeywordState", "Keywording", "Keywords", "build_keywords"]

#: Roles where an owed keyword (or capital word) is written when it is due.
RUNNING_TEXT = ("body",)
_KEYWORD_BONUS = 1.0  # log-probability added to the first token of an owed keyword
_KEYWORD_COMMIT_CHARS = 3  # a chosen first token commits to its keyword once it spells this much of it
_MARK_ROOM = 8  # budget tokens kept per owed terminal mark: with fewer left, the sentence ends on it

#: Characters a keyword may not hold to be inserted: they would open or close
#: a part of the layout (highlights, placeholders, titles, lines).
UNWRITABLE = frozenset("*[]<>\n\r")


@dataclass(frozen=True)
class Keyword:
    """One keyword and its inclusive bounds. ``text`` is the form inserted
    (already folded to the answer's letter case); ``sources`` are the ids of
    the constraints behind the bounds."""

    text: str
    at_least: int = 0
    at_most: int | None = None
    sources: tuple[str, ...] = ()
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _starts: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _overlaps: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError("a keyword needs a non-blank text")
        escaped = re.escape(self.text)
        object.__setattr__(self, "_pattern", re.compile(escaped, re.IGNORECASE))
        object.__setattr__(self, "_starts", re.compile(f"(?={escaped})", re.IGNORECASE))
        folded = self.text.lower()
        # "aa", "abab": two occurrences can overlap, and greedy counting then skips some.
        object.__setattr__(self, "_overlaps", any(folded[:k] == folded[-k:] for k in range(1, len(folded))))

    def count(self, text: str) -> int:
        """Occurrences in ``text``, as IFEval counts them."""
        return len(self._pattern.findall(text))

    def new_matches(self, text: str, chunk: str) -> int:
        """At least as many as the occurrences ``chunk`` adds to ``text``.

        Matches that end inside ``text`` are the same with or without
        ``chunk`` (a left-to-right scan never looks past a match), so the
        count can grow at most by the (possibly overlapping) matches that
        end inside ``chunk``; exact for every keyword that cannot overlap
        itself.
        """
        window = text[len(text) - len(self.text) + 1 :] if len(self.text) > 1 else ""
        joined = window + chunk
        return sum(1 for m in self._starts.finditer(joined) if m.start() + len(self.text) > len(window))

    def count_after(self, count: int, text: str, chunk: str) -> int:
        """``count(text + chunk)`` from ``count == count(text)``: the matches
        ``chunk`` adds (exact when two occurrences cannot overlap), else a recount."""
        return self.count(text + chunk) if self._overlaps else count + self.new_matches(text, chunk)


@dataclass(frozen=True)
class Keywords:
    """The keywords of one request."""

    items: tuple[Keyword, ...]

    @property
    def has_min(self) -> bool:
        return any(k.at_least > 0 for k in self.items)

    @property
    def has_max(self) -> bool:
        return any(k.at_most is not None for k in self.items)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for k in self.items for s in k.sources))

    def counts(self, text: str) -> tuple[int, ...]:
        """Each keyword's occurrences in ``text``."""
        return tuple(k.count(text) for k in self.items)

    def counts_after(self, counts: Sequence[int], text: str, chunk: str) -> tuple[int, ...]:
        """``counts(text + chunk)`` from ``counts == counts(text)``, in time of the chunk."""
        return tuple(k.count_after(c, text, chunk) for k, c in zip(self.items, counts))

    def owed(self, counts: Sequence[int], later: Sequence[int]) -> tuple[int, ...]:
        """Occurrences each keyword still needs beyond ``counts`` and the later literals."""
        return tuple(max(0, k.at_least - c - n) for k, c, n in zip(self.items, counts, later))

    def exceeded(self, counts: Sequence[int], later: Sequence[int]) -> bool:
        """Whether ``counts`` with the later literals hold a capped keyword too often."""
        return any(
            k.at_most is not None and c + n > k.at_most for k, c, n in zip(self.items, counts, later)
        )

    def held(self, owed: Sequence[int], later: Sequence[int]) -> tuple[int, ...]:
        """Occurrences each keyword will still get from the later literals and
        from the other keywords still owed ("risk" inside an owed "risk
        appetite"), which a maximum must keep room for."""
        return tuple(
            n + sum(o * k.count(other.text) for other, o in zip(self.items, owed) if other is not k and o)
            for k, n in zip(self.items, later)
        )

    def may_append(self, counts: Sequence[int], text: str, chunk: str, later: Sequence[int]) -> bool:
        """Whether appending ``chunk`` to ``text`` (whose counts are ``counts``)
        keeps every capped keyword within its maximum."""
        return all(
            k.at_most is None or c + n + k.new_matches(text, chunk) <= k.at_most
            for k, c, n in zip(self.items, counts, later)
        )


@dataclass(frozen=True, slots=True)
class KeywordState:
    """A row's keywords: each one's occurrences in the text, and the rest of a
    keyword being inserted (forced next)."""

    counts: tuple[int, ...] = ()
    pending: tuple[int, ...] = ()
    marked: bool = False  # the last token was an owed mark


class Keywording(Writer):
    """Keyword minima inserted and paced, maxima checked per candidate (see the module doc)."""

    def __init__(self, ctx: Context, keywords: Keywords) -> None:
        self.ctx = ctx
        self.keywords = keywords
        tables = ctx.tables
        self.lazy = keywords.has_max
        self._need = sum(k.at_least for k in keywords.items)
        # Per keyword, its tokens after a word (" risk") and after whitespace ("risk").
        # A keyword that begins with a Han character is written without a space
        # before it either way (Chinese and Japanese text has none).
        # A mark (``token_controllers.marks``) follows its word with no space, in place of the
        # sentence or clause end the model would write.
        self._places = tuple(mark_places(tables, k.text) for k in keywords.items)
        self.texts = tuple(
            ForcedText(tables, k.text,
                       lead="" if place is not None or k.text[0].isalnum() and not joins_run(k.text[0]) else " ")
            for k, place in zip(keywords.items, self._places)
        )
        self._place_of = {t.first(""): place for t, place in zip(self.texts, self._places) if place is not None}
        self._after_mark = after_mark(tables) if self._place_of else None
        # First token -> (keyword, the tokens that finish it, whether the model's
        # own choice of it commits to the keyword: it spells enough of it).
        starts: dict[int, list[tuple[int, tuple[int, ...], bool]]] = {}
        for i, forced in enumerate(self.texts):
            enough = min(_KEYWORD_COMMIT_CHARS, len(keywords.items[i].text))
            for tokens in (forced.spelling.spaced, forced.spelling.bare):
                if tokens:
                    eligible = len(tables.texts[tokens[0]].strip()) >= enough
                    starts.setdefault(tokens[0], []).append((i, tokens[1:], eligible))
        self._starts = {t: tuple(found) for t, found in starts.items()}
        self._bonus = tuple(
            tuple(t for t, found in self._starts.items() if any(i == j and ok for j, _, ok in found))
            if self._places[i] is None else ()  # a mark is not favoured mid-sentence
            for i in range(len(self.texts))
        )
        self._reserve = tuple(count_text(" " + k.text, ctx.limits.letter) for k in keywords.items)
        # Each keyword's occurrences in the literals after each segment.
        self._later = tuple(self._literal_counts(c.later_literals) for c in ctx.layout.segments)

    def _literal_counts(self, literals: Sequence[str]) -> tuple[int, ...]:
        """Each keyword's occurrences in ``literals``, counted one literal at a time."""
        per_literal = [self.keywords.counts(text) for text in literals]
        return tuple(sum(col) for col in zip(*per_literal)) if per_literal else (0,) * len(self.keywords.items)

    def start(self) -> KeywordState:
        return KeywordState(counts=(0,) * len(self.keywords.items))

    def _owed_each(self, state: SteerState) -> tuple[int, ...]:
        """Occurrences each keyword still needs (the later literals' own counted)."""
        if state.seg >= len(self._later):
            return ()
        return self.keywords.owed(state.parts[self.slot].counts, self._later[state.seg])

    def owed(self, state: SteerState) -> Owed:
        each = self._owed_each(state)
        if not any(each):
            return Owed()
        words = sum(n * c.words for n, c in zip(each, self._reserve))
        units = sum(n * c.units for n, c in zip(each, self._reserve))
        letter = sum(n * c.letter for n, c in zip(each, self._reserve))
        tokens = sum(n * len(t.spelling.spaced) for n, t in zip(each, self.texts)) if self._need else 0
        return Owed(tokens=tokens, words=words, units=units, letter=letter, insert=True, writes=True)

    def _exit_token(self, state: SteerState) -> int:
        """The first token of the first owed keyword, as it is written here
        (bare after whitespace or at the start, else after a space); -1 if none."""
        if self._need == 0 or state.counts.bracket_open:
            return -1
        return next((t.first(state.text) for n, t in zip(self._owed_each(state), self.texts) if n), -1)

    def exit(self, d: RowPlanDraft) -> None:
        segment = d.comp.segment
        assert isinstance(segment, Free)
        keyword = -1
        if d.exit == d.target and segment.role in RUNNING_TEXT:
            keyword = self._exit_token(d.state)
        if keyword >= 0 and segment.gate and (keyword not in self._place_of or _after_word(d.state.text)):
            # A forced end writes an owed keyword first. The model's own wish
            # to stop is only held back (the pacing inserts the keyword), so
            # the keywords spread through the text instead of piling up at its end.
            d.exit, d.opens = keyword, False
        d.marks[self.slot] = keyword

    def holds(self, d: RowPlanDraft) -> int:
        return HOLD_TARGET if d.marks.get(self.slot, -1) >= 0 else HOLD_NONE

    def _due(self, d: RowPlanDraft) -> bool:
        """Whether an owed keyword should be inserted now: the k-th of N once
        k / (N + 1) of the budget is spent, or at once when the budget is urgent."""
        budget = self.ctx.max_new_tokens
        if budget is None:
            return False
        owed = sum(self._owed_each(d.state))
        if owed == 0:
            return False
        return insert_urgent(d, budget) or next_due(d, budget, self._need - owed, self._need)

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state = d.state
        keyword = d.marks.get(self.slot, -1)
        due = keyword >= 0 and not state.pending and d.ends_clean and self._due(d)
        if keyword in self._place_of:
            return self._pace_mark(d, keyword, due)
        last = state.text[-1:]
        budget = self.ctx.max_new_tokens
        if due and (last == "" or not joins_run(last) or (budget is not None and insert_urgent(d, budget))):
            return RowPlan("only", keyword)
        if d.close and keyword >= 0 and d.ends_clean:
            # Owed text is written before the sentence ends, not after it.
            return RowPlan("only", keyword)
        d.marks[self.slot] = keyword if due else -1
        return None

    def _pace_mark(self, d: RowPlanDraft, mark: int, due: bool) -> RowPlan | None:
        """An owed mark, once due, waits for a word end where the model would end the sentence
        (or the clause) and takes that end's place (``reweigh``); it is written at once when the
        budget is urgent, and it ends the sentence when the sentence is asked to close (a
        terminal mark). With little budget left per owed terminal mark, the sentence is asked
        to end, on the mark."""
        state = d.state
        after_word = _after_word(state.text)
        budget = self.ctx.max_new_tokens
        terminal = self.ctx.tables.texts[mark] in TERMINAL_MARKS
        if due and after_word and budget is not None and insert_urgent(d, budget):
            return RowPlan("only", mark)
        if d.close and after_word and terminal and d.ends_clean and not state.pending:
            return RowPlan("only", mark)  # the sentence ends on the owed mark
        if due and after_word and terminal and budget is not None and not d.close:
            owed = sum(n for n, place in zip(self._owed_each(state), self._places) if n and place is not None)
            if tokens_left(budget, d) <= owed * _MARK_ROOM:
                d.close = "end"
        d.marks[self.slot] = mark if due and after_word else -1
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
        """Right after an owed mark, no other mark begins the next token."""
        if self._after_mark is None:
            return
        for r, state in enumerate(states):
            if state.parts[self.slot].marked:
                allowed[r] &= self._after_mark

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor) -> None:
        """Favour the first tokens of owed keywords; insert a due one where the
        model ends its word (its likeliest token does not continue the word)."""
        if not self._need:
            return
        wordchar = self.ctx.tables.starts_wordchar
        for r, (state, plan) in enumerate(zip(states, plans)):
            keyword = plan.marks.get(self.slot, -1)
            if keyword >= 0:
                best = int(rows[r].argmax())
                place = self._place_of.get(keyword)
                at = bool(place[best]) if place is not None else not bool(wordchar[best])
                if at and force_token(rows, r, keyword):
                    continue
            ids = [t for n, starts in zip(self._owed_each(state), self._bonus) if n for t in starts]
            if ids and not state.counts.bracket_open:
                rows[r, ids] += _KEYWORD_BONUS

    def prepare(self, state: SteerState, plan: RowPlan) -> Any:
        """Occurrences of each capped keyword that the rest of the answer will
        bring (see ``Keywords.held``); None when no keyword is capped here."""
        if not self.keywords.has_max or state.seg >= len(self._later):
            return None
        return self.keywords.held(self._owed_each(state), self._later[state.seg])

    def check(self, state: SteerState, memo: Any, text: str, tail: bytes, closing: bool) -> bool:
        return memo is None or self.keywords.may_append(state.parts[self.slot].counts, state.text, text, memo)

    def advance(
        self,
        before: SteerState,
        new: SteerState,
        token_id: int,
        comp: LayoutSegment | None,
        plan_of: Callable[[SteerState], RowPlan],
    ) -> Any:
        part: KeywordState = before.parts[self.slot]
        chunk = new.text[len(before.text) :]
        counts = self.keywords.counts_after(part.counts, before.text, chunk) if chunk else part.counts
        if part.pending:
            pending = part.pending[1:]
        elif token_id in self._starts and comp is not None and isinstance(comp.segment, Free):
            pending = self._commit(before, token_id, plan_of)
        else:
            pending = ()
        marked = bool(self._place_of) and token_id in self._place_of and any(self._owed_each(before))
        return KeywordState(counts, pending, marked)

    def _commit(self, state: SteerState, token_id: int, plan_of: Callable[[SteerState], RowPlan]) -> tuple[int, ...]:
        """The tokens forced after ``token_id`` when it begins an owed keyword
        (none when it does not). The model's own choice commits only when the
        token spells enough of the keyword; the steering's exit always does."""
        owed = self._owed_each(state)
        if state.counts.bracket_open or not any(owed):
            return ()
        plan: RowPlan | None = None
        for i, rest, eligible in self._starts[token_id]:
            if not owed[i]:
                continue
            if not eligible:
                plan = plan or plan_of(state)
                if token_id not in (plan.exit, plan.marks.get(self.slot, -1)):
                    continue
            return rest
        return ()

    def unmet(self, state: SteerState) -> tuple[str, ...]:
        none_later = (0,) * len(self.keywords.items)
        found = self.keywords.counts(state.text)
        if any(self.keywords.owed(found, none_later)) or self.keywords.exceeded(found, none_later):
            return ("keywords",)
        return ()


def _after_word(text: str) -> bool:
    """Whether a mark written after ``text`` follows a word (not whitespace, not another mark)."""
    last = text[-1:]
    return last != "" and not last.isspace() and last not in TERMINAL_MARKS and last not in CLAUSE_MARKS


def build_keywords(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The keyword controller, for hard keyword minima and maxima."""
    keywords = spec_of(specs, Keywords)
    return Keywording(ctx, keywords) if keywords is not None else None
