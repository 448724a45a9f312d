"""Where an inserted punctuation mark reads as punctuation.

A count of a mark ("use at least three question marks", "exactly two
semicolons") is met by inserting the mark (``token_controllers.keywords``). A mark
written after any word reads as noise ("stretch my?? legs"); written where the
model itself would end a sentence or a clause, in place of what it would
write there, it reads as the sentence's or the clause's own mark:

- a *terminal* mark (``.!?`` and their full-width forms, ``…``) takes the place
  of a sentence end (a token that ends a sentence after a word: a terminal,
  closers, then whitespace or nothing), of a line break or of the stop;
- a *clause* mark (``,;:`` and their full-width forms, ``、``) also takes
  the place of a clause end (``,`` ``;`` ``:`` then whitespace or nothing);
- another character (``#``, ``*``, a dash) has no such place: it is written
  where the model ends a word, as any keyword.

Right after an inserted mark no token may begin with another terminal or
clause mark ("?." or "?,"), so the mark is the place's only one.

Guarantee: these are only places and masks; the count itself is the keyword
controller's (paced over the budget, written at once when the budget runs
short).
"""

from __future__ import annotations

import re

import torch

from inference.decoder.token_controllers.sentence_marks import CLOSERS, TERMINALS
from inference.decoder.vocab import VocabTables

__all__ = ["CLAUSE_MARKS", "TERMINAL_MARKS", "after_mark", "mark_places"]

#: Marks that end a sentence, and marks that end a clause.
TERMINAL_MARKS = frozenset(TERMINALS + "\u2026")
CLAUSE_MARKS = frozenset(",;:\uff0c\uff1b\uff1a\u3001")
_CLOSERS = re.escape(CLOSERS)
_SENTENCE_END = re.compile(rf"[.!?\u2026][!?]*[{_CLOSERS}]*(?:\s.*)?|[\u3002\uff01\uff1f].*", re.DOTALL)
_CLAUSE_END = re.compile(rf"[,;:][{_CLOSERS}]*(?:\s.*)?|[\uff0c\uff1b\uff1a\u3001].*", re.DOTALL)


def mark_places(tables: VocabTables, mark: str) -> torch.Tensor | None:
    """``[V]`` bool: the tokens an owed ``mark`` is written in place of (see the module doc);
    None for a text that is no terminal or clause mark."""
    if mark in TERMINAL_MARKS:
        kinds: tuple[re.Pattern[str], ...] = (_SENTENCE_END,)
    elif mark in CLAUSE_MARKS:
        kinds = (_SENTENCE_END, _CLAUSE_END)
    else:
        return None

    def build() -> torch.Tensor:
        values = [t[:1] == "\n" or any(k.fullmatch(t) is not None for k in kinds) for t in tables.texts]
        table = torch.tensor(values, dtype=torch.bool, device=tables.device)
        table[list(tables.eos_ids)] = True
        return table

    return tables.cached(("mark-places", len(kinds)), build)  # type: ignore[no-any-return]


def after_mark(tables: VocabTables) -> torch.Tensor:
    """``[V]`` bool: tokens that may follow an inserted mark (none begins with a terminal or
    clause mark)."""
    marks = TERMINAL_MARKS | CLAUSE_MARKS

    def build() -> torch.Tensor:
        values = [t[:1] not in marks for t in tables.texts]
        return torch.tensor(values, dtype=torch.bool, device=tables.device)

    return tables.cached(("after-mark", 0), build)  # type: ignore[no-any-return]
