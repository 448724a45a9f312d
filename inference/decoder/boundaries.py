"""Where a reasoning step ends: end of sentence, list item or line, per token id.

A table of three flags per vocabulary entry is built once per tokenizer, so
the decode loop decides step boundaries with list lookups, never by decoding
text per token:

- ``hard``: the token contains a line break or a CJK sentence terminator
  (。！？；): the step ends with this token;
- ``soft``: the token ends with ``.``, ``!``, ``?`` or ``;``: the step ends
  here only if the next token starts with white space (or is EOS), so
  "3.5" and "e.g." inside a word do not split a step;
- ``space``: the token starts with white space.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["BoundaryTable", "boundary_table"]

_HARD_CHARS = ("\n", "。", "！", "？", "；")
_SOFT_END = (".", "!", "?", ";")


@dataclass(frozen=True)
class BoundaryTable:
    """Per-token boundary flags (index = token id)."""

    hard: tuple[bool, ...]
    soft: tuple[bool, ...]
    space: tuple[bool, ...]

    def closes_before(self, previous: int | None, token: int) -> bool:
        """True when ``token`` opens a new step after a soft end (the step excludes ``token``)."""
        return previous is not None and self.soft[previous] and self.space[token]


_tables: dict[tuple[str, int], BoundaryTable] = {}
_lock = threading.Lock()


def boundary_table(tokenizer: Any, vocab_size: int) -> BoundaryTable:
    """The boundary table of ``tokenizer`` over ``vocab_size`` ids (cached per tokenizer)."""
    key = (str(getattr(tokenizer, "name_or_path", id(tokenizer))), vocab_size)
    with _lock:
        table = _tables.get(key)
        if table is None:
            table = _build(tokenizer, vocab_size)
            _tables[key] = table
        return table


def _build(tokenizer: Any, vocab_size: int) -> BoundaryTable:
    texts = tokenizer.batch_decode([[i] for i in range(min(vocab_size, len(tokenizer)))])
    texts += [""] * (vocab_size - len(texts))
    hard = tuple(any(c in t for c in _HARD_CHARS) for t in texts)
    soft = tuple(t.rstrip(" ").endswith(_SOFT_END) and not t.endswith("...") for t in texts)
    space = tuple(t[:1].isspace() for t in texts)
    return BoundaryTable(hard=hard, soft=soft, space=space)
