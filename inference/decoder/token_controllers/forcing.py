"""Forced text: a controller writes a text of its own at a point it chooses, token by token.

One mechanism for every controller that writes text into the answer (an
opening, a closing, the k-th sentence's ending, a floor's inserted item, a
keyword, a span's delimiters, a hashtag, a stated decision):

- ``Spelling``: a tokenizer spells a text differently after a word (with
  its leading space) and after whitespace or at the start of the answer;
  the spelling that fits the text so far is the one written;
- ``ForcedText``: one text and where it was begun this step. Its first
  token is written now (``begin``: a plan that takes the row), where the
  model's own best token would end what the text must precede (``intend``
  in the mask, ``force_intended`` / ``force`` on the masked rows), or where
  the model ends its word (``write_mark_at_word_end`` over ``RowPlanDraft.marks``);
  once begun, the rest of that spelling (or of the tokens still pending) is
  what ``rest`` gives;
- ``Writer``: the base of a controller whose row part carries ``pending``
  (the tokens of a begun text still to write): the row is routed to the
  next of them, and the segment is held, until none is left.

Guarantee: a text begun by its first token is written whole, in the
spelling it began, with nothing between its tokens (the route claims the
row before any other planning); a masked token is never brought back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from inference.decoder.token_controllers.protocol import NEG_INF, Controller, RowPlan, SteerState
from inference.decoder.vocab import VocabTables

__all__ = ["ForcedText", "Spelling", "Writer", "allow_only", "force_token", "write_mark_at_word_end"]


@dataclass(frozen=True)
class Spelling:
    """``spaced``: the text's tokens after a word; ``bare``: after whitespace or at the start."""

    spaced: tuple[int, ...]
    bare: tuple[int, ...]

    @classmethod
    def of(cls, tables: VocabTables, text: str, lead: str = " ") -> Spelling:
        """``text``'s spellings; ``lead`` is what separates it from a word before it (none
        before a Han character)."""
        return cls(tuple(tables.encode(lead + text)), tuple(tables.encode(text)))

    @staticmethod
    def bare_after(text: str) -> bool:
        """Whether the bare spelling is the one after ``text`` (the start, or whitespace)."""
        return text == "" or text[-1].isspace()

    def fitting(self, text: str) -> tuple[int, ...]:
        """The spelling to write after ``text``."""
        return self.bare if self.bare_after(text) else self.spaced

    def rest_after(self, token_id: int) -> tuple[int, ...] | None:
        """The tokens still to force once ``token_id`` began a spelling (None: it began neither)."""
        for spelling in (self.spaced, self.bare):
            if spelling and token_id == spelling[0]:
                return spelling[1:]
        return None


def force_token(rows: torch.Tensor, r: int, token: int) -> bool:
    """Leave ``token`` the only choice of row ``r`` of a step's scores, where the masks still
    allow it; True when it did (a masked token is never brought back)."""
    if token < 0 or not rows[r, token] > NEG_INF:
        return False
    rows[r] = NEG_INF
    rows[r, token] = 0.0
    return True


def allow_only(allowed: torch.Tensor, fragments: torch.Tensor, r: int, token: int) -> bool:
    """Leave ``token`` the only allowed token of row ``r`` of a step's mask (and no byte
    fragment), where the mask still allows it; True when it did."""
    if token < 0 or not bool(allowed[r, token]):
        return False
    allowed[r] = False
    allowed[r, token] = True
    fragments[r] = False
    return True


def write_mark_at_word_end(
    plans: Sequence[RowPlan], slot: int, rows: torch.Tensor, starts_wordchar: torch.Tensor
) -> None:
    """Force each row's marked token (``plans[r].marks[slot]``, a token id) where the
    model's own best token would not continue a word, so an inserted text never splits
    a word; a row whose mark the masks already removed is left as it is."""
    for r, plan in enumerate(plans):
        token = plan.marks.get(slot, -1)
        if token >= 0 and not bool(starts_wordchar[int(rows[r].argmax())]):
            force_token(rows, r, token)


class ForcedText:
    """One text a controller forces, and the rows it began it on this step (see the module doc).

    The record of begun rows lives for one step: ``clear`` starts a step's (the mask phase,
    before any ``intend``); ``began`` is read by ``advance`` on the state the token was chosen on.
    """

    def __init__(self, tables: VocabTables, text: str, lead: str = " ") -> None:
        self.text = text
        self.spelling = Spelling.of(tables, text, lead)
        self._begun: dict[int, int] = {}  # id(state) -> the first token forced on it this step

    def first(self, text: str) -> int:
        """The first token of the spelling that fits after ``text`` (-1: it spells to nothing)."""
        spelling = self.spelling.fitting(text)
        return spelling[0] if spelling else -1

    def tokens(self, text: str) -> int:
        """How many tokens the text takes after ``text``."""
        return len(self.spelling.fitting(text))

    def begin(self, state: SteerState) -> RowPlan | None:
        """A plan that writes the text's first token on ``state``'s row now (None: no token)."""
        token = self.first(state.text)
        return RowPlan("only", token, seg=state.seg) if token >= 0 else None

    def clear(self) -> None:
        """Forget the rows begun on the last step."""
        self._begun = {}

    def intend(self, state: SteerState, allowed: torch.Tensor) -> bool:
        """Note that the text begins on ``state``'s row this step, where its first token is
        still ``allowed`` (``[V]``); ``force_intended`` then forces it on the masked row."""
        token = self.first(state.text)
        if token < 0 or not bool(allowed[token]):
            return False
        self._begun[id(state)] = token
        return True

    def force_intended(self, rows: torch.Tensor, r: int, state: SteerState) -> None:
        """Force the first token ``intend`` noted for ``state`` on row ``r`` of the masked scores."""
        force_token(rows, r, self._begun.get(id(state), -1))

    def force(self, rows: torch.Tensor, r: int, state: SteerState) -> bool:
        """Force the text's first token on row ``r`` of the masked scores now, noting it
        (False: the masks removed it)."""
        token = self.first(state.text)
        if not force_token(rows, r, token):
            return False
        self._begun[id(state)] = token
        return True

    def began(self, state: SteerState, token_id: int) -> bool:
        """Whether ``token_id``, chosen on ``state``, is the first token forced on it this step."""
        return self._begun.get(id(state)) == token_id

    def rest(self, pending: tuple[int, ...], began: bool, token_id: int) -> tuple[int, ...] | None:
        """The tokens of the text still to write after ``token_id``: the rest of ``pending``, or,
        where none is pending and the text may have begun (``began``), the rest of the spelling
        ``token_id`` began. None: nothing of the text is being written (``token_id`` began
        neither spelling, or ``began`` is False); ``()`` is a text just written whole."""
        if pending:
            return pending[1:]
        return self.spelling.rest_after(token_id) if began else None


class Writer(Controller):
    """The base of a controller that writes texts of its own token by token.

    Its row part carries ``pending``, the tokens of a begun text still to write
    (``pending`` reads it; a part of another shape overrides it): the row is routed to
    the next of them before any other planning, and the segment is held meanwhile.
    """

    def pending(self, state: SteerState) -> tuple[int, ...]:
        """The tokens of the text being written on ``state``'s row, still to write."""
        part: Any = state.parts[self.slot]
        pending: tuple[int, ...] = part.pending
        return pending

    def route(self, state: SteerState) -> RowPlan | None:
        pending = self.pending(state)
        return RowPlan("only", pending[0], seg=state.seg) if pending else None

    def holding(self, state: SteerState) -> bool:
        return bool(self.pending(state))
