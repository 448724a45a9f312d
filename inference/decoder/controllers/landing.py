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
  must close (``Draft.close``: "end", or first a "word" to end on, the
  mechanism the sentence minimum uses), and a closed sentence ends the part
  now where it may stop, so no new sentence opens that the budget would cut.

A sentence maximum needs nothing of its own: ``Bounds`` ends the part after
its last allowed sentence end, and the token landing closes that sentence.
Titles and headings (parts that hold no sentence) are left alone. Where the
sentence still cannot close in time, the beam search rolls the answer back
to its last complete sentence (``beam._land``); this controller only makes
that rare.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from inference.decoder.controllers.counts import good_last_word
from inference.decoder.controllers.protocol import Context, Controller, Draft, Plan, SteerState
from inference.decoder.controllers.template import Free

__all__ = ["Landing", "build_landing"]

_SOFT_TOKENS = 12  # within this many budget tokens, mass moves toward the sentence end
_SOFT_WORDS = 6  # likewise for the words a maximum leaves
_HARD_TOKENS = 4  # within this many, the sentence must close
_HARD_WORDS = 2  # likewise for words: one word to end on, then the end
_BONUS = 4.0  # nats added to closing tokens at the very end of the soft window


class Landing(Controller):
    """Closes the current sentence as the room left nears what it needs (see the module doc)."""

    def __init__(self, ctx: Context) -> None:
        self.budget = ctx.max_new_tokens
        self.max_words = ctx.limits.max_words
        self.ends_sentence = ctx.layout.ends_sentence
        self.cjk_ends = ctx.tables.cached("cjk-ends", lambda: _cjk_ends(ctx.tables))

    def _room(self, d: Draft) -> float:
        """How close the part is to its end: 0 outside the soft window, up to 1
        at its end; above 1 inside the hard window."""
        state, comp = d.state, d.comp
        tokens: int | None = None
        if self.budget is not None:
            tokens = self.budget - state.n_tokens - comp.reserve_tokens - 2 - d.owed_tokens
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
        hard = (tokens is not None and tokens <= _HARD_TOKENS) or (words is not None and words <= _HARD_WORDS)
        return 1.0 + used if hard else used

    def pace(self, d: Draft) -> Plan | None:
        state, segment = d.state, d.comp.segment
        if not isinstance(segment, Free) or segment.sentences <= 0 and not segment.bare:
            return None
        counts = state.counts
        if counts.bracket_open or state.pending or not state.seg_worded:
            return None
        room = self._room(d)
        if room <= 0.0:
            return None
        hard = room > 1.0
        closed = counts.firm_run == "armed" or (counts.sentences > 0 and not counts.open_text)
        if closed:
            if hard and d.may_stop:
                return Plan("only", d.exit)
            d.marks[self.slot] = ("exit", min(room, 1.0))
            return None
        ends_ok = counts.sentence_words > 0 and good_last_word(counts.word_tail)
        cjk = _is_cjk(counts.last_char)
        if hard:
            if not d.close:
                d.close = "end" if ends_ok or cjk else "word"
            if cjk:
                d.marks[self.slot] = ("cjk", 1.0)
            return None
        if ends_ok or cjk:
            d.marks[self.slot] = ("cjk" if cjk else "end", room)
        return None

    def reweigh(self, states: Sequence[SteerState], plans: Sequence[Plan], rows: torch.Tensor) -> None:
        for r, plan in enumerate(plans):
            mark: Any = plan.marks.get(self.slot)
            if mark is None:
                continue
            what, share = mark
            bonus = _BONUS * float(share)
            if what == "exit":
                if plan.may_stop:
                    rows[r, plan.exit] += bonus
            else:
                # A Chinese sentence ends on 。！？ (its own ends gain double).
                gain = torch.where(self.ends_sentence, bonus, 0.0)  # [V]
                if what == "cjk":
                    gain = gain + torch.where(self.cjk_ends, 2.0 * _BONUS, 0.0)
                rows[r] += gain  # -inf stays -inf


def _is_cjk(ch: str) -> bool:
    """Whether ``ch`` is a Han character or CJK punctuation (a Chinese sentence is open)."""
    return bool(ch) and ("\u4e00" <= ch <= "\u9fff" or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef")


def _cjk_ends(tables: Any) -> torch.Tensor:
    """``[V]`` bool: tokens that are a Chinese sentence end (``。！？``, closers may follow)."""
    values = [bool(t) and t[0] in "\u3002\uff01\uff1f" for t in tables.texts]
    return torch.tensor(values, dtype=torch.bool, device=tables.device)


def build_landing(ctx: Context, specs: Sequence[Any]) -> Controller | None:
    """The landing, for every request with a token budget or a word maximum."""
    if ctx.max_new_tokens is None and ctx.limits.max_words is None:
        return None
    return Landing(ctx)
