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

Building the table decodes every token one by one (14.6 s at a 262,144-token
vocabulary), so it is kept on disk beside the steering's vocabulary tables
(:func:`~inference.decoder.vocab.kept_dir_of`: the model cache, keyed by the
digest of the tokenizer's full definition) under a versioned name with the
logits width: a later process reads it. A file that cannot be read is rebuilt
and replaced; the table read equals the table built.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from inference.decoder.vocab import kept_dir_of

__all__ = ["BoundaryTable", "boundary_table"]

log = logging.getLogger("tenet.inference")

#: Bumped whenever the rule that builds the flags changes: a file of an older rule is never read.
_RULE = 1

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


def boundary_table(tokenizer: Any, vocab_size: int, cache_dir: Path | None = None) -> BoundaryTable:
    """The boundary table of ``tokenizer`` over ``vocab_size`` ids (cached per tokenizer).

    ``cache_dir``: the directory to keep it in; None takes the one of the vocabulary tables
    built for this tokenizer with a cache directory (``kept_dir_of``), if any.
    """
    key = (str(getattr(tokenizer, "name_or_path", id(tokenizer))), vocab_size)
    with _lock:
        table = _tables.get(key)
        if table is None:
            folder = cache_dir if cache_dir is not None else kept_dir_of(tokenizer)
            path = None if folder is None else folder / f"boundaries-v{_RULE}-{vocab_size}.pt"
            table = _read(path, vocab_size) if path is not None else None
            if table is None:
                table = _build(tokenizer, vocab_size)
                if path is not None:
                    _write(path, table)
            _tables[key] = table
        return table


def _read(path: Path, size: int) -> BoundaryTable | None:
    """The table of ``size`` ids kept at ``path``, or None when absent, unreadable or of
    another size."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
        flags = {name: tuple(bool(v) for v in data[name].tolist()) for name in ("hard", "soft", "space")}
    except FileNotFoundError:
        return None
    except Exception:  # a damaged or foreign file is rebuilt and replaced
        log.warning("boundary table at %s is unreadable; rebuilding it", path, exc_info=True)
        return None
    if any(len(f) != size for f in flags.values()):
        return None
    return BoundaryTable(**flags)


def _write(path: Path, table: BoundaryTable) -> None:
    """Keep ``table`` at ``path`` (written aside, then renamed: a reader never sees half)."""
    data = {name: torch.tensor(getattr(table, name), dtype=torch.bool) for name in ("hard", "soft", "space")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        torch.save(data, aside)
        os.replace(aside, path)
    except OSError:
        log.warning("could not keep the boundary table at %s", path, exc_info=True)


def _build(tokenizer: Any, vocab_size: int) -> BoundaryTable:
    texts = tokenizer.batch_decode([[i] for i in range(min(vocab_size, len(tokenizer)))])
    texts += [""] * (vocab_size - len(texts))
    hard = tuple(any(c in t for c in _HARD_CHARS) for t in texts)
    soft = tuple(t.rstrip(" ").endswith(_SOFT_END) and not t.endswith("...") for t in texts)
    space = tuple(t[:1].isspace() for t in texts)
    return BoundaryTable(hard=hard, soft=soft, space=space)
