"""Landing: every length budget ends the answer on a complete sentence.

Whichever binds first -- the token budget (with the room the later
segments and the owed text keep), the segment's own token deadline (a
paragraph's share, a capped part) or a word maximum (with the room the rest
of the layout keeps) -- the room left in the current part of running text
(or list item) is compared with what closing its sentence needs:

- within ``_SOFT_TOKENS`` tokens (or ``_SOFT_WORDS`` words) of the end,
  mass moves toward closing: tokens that end the sentence after a word a
  period may follow gain up to ``_BONUS`` nats, and once the sentence is
  closed, so does the segment's exit (the stop, or the next literal);
- within ``_HARD_TOKENS`` tokens (or ``_HARD_WORDS`` words) the sentence
  must close (``RowPlanDraft.close``: "end", or first a "word" to end on, the
  mechanism the sentence minimum uses), and a closed sentence ends the part
  now where it may stop, so no new sentence opens that the budget would cut.

The model's own stop lands too: in the answer's last part of running text
(no part and no worded literal after it, so a final sentence end adds no
sentence for any judge), the stop waits while the text does not end
complete (``endings.ends_complete``). Where a terminal may follow the last
character (a word, a number, a closing quote), the mass the model put on
stopping moves to the tokens that end the sentence, in the model's own
proportions among them; after ``:``, ``,`` or a hyphen the text goes on.
A list item the model would leave as a bare line thus ends with a period
only where it ends the answer, so the count of sentences is unchanged.

A sentence maximum needs nothing of its own: ``Bounds`` ends the part after
its last allowed sentence end, and the token landing closes that sentence.
Titles and headings (parts that hold no sentence) are left alone. Where the
sentence still cannot close in time, the beam search rolls the answer back
to its last complete sentence (``beam._land``); this controller only makes
that rare.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from inference.decoder.endings import ends_complete
from inference.decoder.token_controllers.count_tallies import good_last_word
from inference.decoder.token_controllers.pacing import tokens_left
from inference.decoder.token_controllers.protocol import (
    NEG_INF,
    Context,
    Controller,
    RowPlan,
    RowPlanDraft,
    SteerState,
)
from inference.decoder.token_controllers.template import Free, Literal

__all__ = ["Landing", "build_landing"]

_SOFT_TOKENS = 12  # within this many budget tokens, mass moves toward the sentence end
_SOFT_WORDS = 6  # likewise for the words a maximum leaves
_HARD_TOKENS = 4  # within this many, the sentence must close
_HARD_WORDS = 2  # likewise for words: one word to end on, then the end
_BONUS = 4.0  # nats added to closing tokens at the very end of the soft window
_CLOSES_AFTER = frozenset("\"'\u201d\u2019)\u300d\u300f")  # a terminal may follow these closers


class Landing(Controller):
    """Closes the current sentence as the room left nears what it needs (see the module doc)."""

    def __init__(self, ctx: Context) -> None:
        self.budget = ctx.max_new_tokens
        self.max_words = ctx.limits.max_words
        self.ends_sentence = ctx.layout.ends_sentence
        self.cjk_ends = ctx.tables.cached("cjk-ends", lambda: _cjk_ends(ctx.tables))
        self.last_parts = _last_parts(ctx.layout.segments)
        # The tokens a bonus or a held stop can touch, as index lists (a few
        # hundred of the vocabulary): each step reads and writes those entries
        # only, never a [V] pass per row.
        self._ends_idx = torch.nonzero(self.ends_sentence).flatten()
        self._gain_idx = torch.nonzero(self.ends_sentence | self.cjk_ends).flatten()
        self._gain_end = torch.where(self.ends_sentence[self._gain_idx], 1.0, 0.0)  # [G]
        self._gain_cjk = torch.where(self.cjk_ends[self._gain_idx], 2.0 * _BONUS, 0.0)  # [G]

    def _room(self, d: RowPlanDraft) -> float:
        """How close the part is to its end: 0 outside the soft window, up to 1
        at its end; above 1 inside the hard window."""
        state = d.state
        tokens: int | None = None
        if self.budget is not None:
            tokens = tokens_left(self.budget, d, owed=d.owed_tokens)
        if state.seg_deadline is not None:
            deadline = state.seg_deadline - state.n_tokens
            tokens = deadline if tokens is None else min(tokens, deadline)
        words: int | None = None
        if self.max_words is not None and d.later is not None:
            later = d.later
            words = self.max_words - later.reserve.units - 2 * later.parts - state.counts.units
        used = 0.0
        if tokens is not None and tokens <= _SOFT_TOKENS:
            used = max(used, (_SOFT_TOKENS - tokens + 1) / (_SOFT_TOKENS + 1))
        if words is not None and words <= _SOFT_WORDS:
            used = max(used, (_SOFT_WORDS - words + 1) / (_SOFT_WORDS + 1))
        hard = (tokens is not None and tokens <= _HARD_TOKENS) or (
            words is not None and words <= _HARD_WORDS
        )
        return 1.0 + used if hard else used

    def pace(self, d: RowPlanDraft) -> RowPlan | None:
        state, segment = d.state, d.comp.segment
        if not isinstance(segment, Free) or segment.sentences <= 0 and not segment.bare:
            return None
        counts = state.counts
        if counts.bracket_open or state.pending or not state.seg_worded:
            return None
        hold = self._holds_stop(d)
        room = self._room(d)
        if room <= 0.0:
            if hold:
                d.marks[self.slot] = (hold, 0.0)
            return None
        hard = room > 1.0
        # Closed as the tallies count it and as ends_complete judges the text
        # (a "3. " is a counted end, but an empty list item).
        closed = (
            counts.firm_run == "armed" or (counts.sentences > 0 and not counts.open_text)
        ) and ends_complete(state.text)
        if closed:
            if hard and d.may_stop:
                return RowPlan("only", d.exit)
            d.marks[self.slot] = ("exit", min(room, 1.0))
            return None
        ends_ok = counts.sentence_words > 0 and good_last_word(counts.word_tail)
        cjk = _is_cjk(counts.last_char)
        if hard:
            if not d.close:
                d.close = "end" if ends_ok or cjk else "word"
            if cjk:
                d.marks[self.slot] = ("cjk", 1.0, hold)
            elif hold:
                d.marks[self.slot] = (hold, 0.0)
            return None
        if ends_ok or cjk:
            d.marks[self.slot] = ("cjk" if cjk else "end", room, hold)
        elif hold:
            d.marks[self.slot] = (hold, 0.0)
        return None

    def _holds_stop(self, d: RowPlanDraft) -> str:
        """How the model's stop waits in the answer's last part (see the module doc):
        "move" (its mass goes to the sentence ends), "wait" (the text goes on)
        or "" (the stop is free: the text ends complete, or it is not the last part)."""
        state = d.state
        if (
            not d.may_stop
            or d.opens
            or state.seg not in self.last_parts
            or ends_complete(state.text)
        ):
            return ""
        last = state.text.rstrip()[-1:]
        return "move" if last.isalnum() or last in _CLOSES_AFTER else "wait"

    def reweigh(
        self, states: Sequence[SteerState], plans: Sequence[RowPlan], rows: torch.Tensor
    ) -> None:
        for r, plan in enumerate(plans):
            mark: Any = plan.marks.get(self.slot)
            if mark is None:
                continue
            what, share, *held = mark
            hold = what if what in ("move", "wait") else (held[0] if held else "")
            if hold:
                self._hold_stop(rows[r], plan.exit, hold == "move")
            bonus = _BONUS * float(share)
            if what in ("move", "wait") or bonus == 0.0:
                continue
            if what == "exit":
                if plan.may_stop:
                    rows[r, plan.exit] += bonus
            else:
                # A Chinese sentence ends on 。！？ (its own ends gain double).
                # Only the sentence ends gain, so the [V] gain is nonzero on
                # ``_gain_idx`` alone: each entry gets the sum it would get.
                gain = self._gain_end * bonus  # [G]: bonus where a token ends a sentence, else 0
                if what == "cjk":
                    gain = gain + self._gain_cjk
                rows[r, self._gain_idx] += gain  # -inf stays -inf

    def _hold_stop(self, row: torch.Tensor, exit_token: int, move: bool) -> None:
        """The stop waits: the exit's mass leaves it (``row: [V]`` in place) and,
        with ``move``, joins the allowed sentence-ending tokens, scaled as the
        model weighs them. Where no sentence end is allowed now (a word to end
        on must come first), the text goes on; a row left with nothing else
        keeps its exit. The budget's forced end still ends the answer (and
        the rollback judges it), so a stop is never held past the budget."""
        stop = row[exit_token].clone()
        if not math.isfinite(float(stop)):
            return
        row[exit_token] = NEG_INF
        if move:
            idx = self._ends_idx
            values = row[idx]  # [E]: the sentence ends, in vocabulary order
            finite = torch.isfinite(values)
            if bool(finite.any()):
                kept = idx[finite]
                mass = torch.logsumexp(values[finite], dim=0)
                row[kept] += torch.logaddexp(mass, stop) - mass
                return
        if not bool(torch.isfinite(row).any()):
            row[exit_token] = stop


def _is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a Han character or CJK punctuation (a Chinese sentence is open)."""
    return bool(ch) and (
        "\u4e00" <= ch <= "\u9fff" or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef"
    )


def _last_parts(segments: Sequence[Any]) -> frozenset[int]:
    """Indexes of free segments after which only literals without a letter or
    a digit come (a closing quote, a fence): the answer's last running text,
    where a sentence end changes no judge's count of sentences."""
    out: set[int] = set()
    for index, comp in enumerate(segments):
        if not isinstance(comp.segment, Free):
            continue
        later = [c.segment for c in segments[index + 1 :]]
        if all(
            isinstance(seg, Literal) and not any(ch.isalnum() for ch in seg.text) for seg in later
        ):
            out.add(index)
    return frozenset(out)


def _cjk_ends(tables: Any) -> torch.Tensor:
    """``[V]`` bool: tokens that are a Chinese sentence end (``。！？``, closers may follow)."""
    values = [bool(t) and t[0] in "\u3002\uff01\uff1f" for t in tables.texts]
    return torch.tensor(values, dtype=torch.bool, device=tables.device)


def build_landing(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The landing, for every request with a token budget or a word maximum."""
    if ctx.max_new_tokens is None and ctx.limits.max_words is None:
        return None
    return Landing(ctx)
