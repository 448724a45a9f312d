"""Pacing owed items over the token budget: the one rule every owing controller reads.

A controller that still owes items (keywords, capital words, words with given
initials, placeholders, spans, hashtags, line breaks, sentence marks, the
items of a kept minimum) asks the same two questions on each step of a row:

- how many budget tokens the row has left (``tokens_left``): the budget less
  the tokens written, the later segments' reserve (``reserve_tokens``), a
  slack for a closing mark and the end, and, for a controller that runs
  after the owed text of the others, the tokens they keep (``owed``);
- whether the next owed item is due (``next_due``): of ``total`` items, the
  (``done`` + 1)-th is due once (``done`` + 1) / (``total`` + 1) of the usable
  budget is spent (the budget less the reserve, the slack and the tokens
  ``kept`` for others), so ``total`` items spread evenly and the last one
  still leaves a share of the budget after it;
- and, for insertions, whether the budget left holds little more than what
  every insertion still owes (``insert_urgent``): then one is written at once.

Guarantee: the same figures for every caller, so two controllers pacing over
the same budget agree on what is left and on when their items fall due.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inference.decoder.token_controllers.protocol import RowPlanDraft

__all__ = ["SLACK", "insert_urgent", "next_due", "tokens_left"]

#: Budget tokens kept beyond what is owed: a closing mark, the end.
SLACK = 2


def tokens_left(budget: int, d: RowPlanDraft, *, slack: int = SLACK, owed: int = 0) -> int:
    """The budget tokens row ``d`` has left: ``budget`` less the tokens written, the later
    segments' reserve, ``slack`` and ``owed`` (tokens the owed text of others keeps)."""
    return budget - d.state.n_tokens - d.comp.reserve_tokens - slack - owed


def next_due(d: RowPlanDraft, budget: int, done: int, total: int, *, kept: int = 0, slack: int = SLACK) -> bool:
    """Whether the (``done`` + 1)-th of ``total`` owed items is due on row ``d``: once
    (``done`` + 1) / (``total`` + 1) of the usable budget (``budget`` less the later
    segments' reserve, ``slack`` and ``kept``) is spent."""
    usable = budget - d.comp.reserve_tokens - slack - kept
    return d.state.n_tokens >= usable * (done + 1) / (total + 1)


def insert_urgent(d: RowPlanDraft, budget: int) -> bool:
    """Whether the budget left holds little more than the owed insertions
    (``d.inserts``: keywords, capital words): they are written at once then."""
    return tokens_left(budget, d) <= d.inserts + 1
