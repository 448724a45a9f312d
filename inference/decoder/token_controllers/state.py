"""A beam row's steering state: what the layout and every controller read.

Its own module so that the compiled layout (``token_controllers.layout``), which
moves a row between segments, and the plug-in protocol
(``token_controllers.protocol``), which names the layout in its ``Context``,
depend on it and not on each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inference.decoder.token_controllers.count_tallies import Counts

__all__ = ["SteerState"]


@dataclass(frozen=True, slots=True)
class SteerState:
    """One beam's state: the text and layout position every controller reads,
    and ``parts``, each controller's own state by slot. Immutable: the
    composer's ``advance`` returns a new one."""

    text: str = ""
    pending: bytes = b""  # bytes of an unfinished UTF-8 character
    n_tokens: int = 0
    seg: int = 0
    lit_pos: int = 0
    seg_tokens: int = 0
    seg_deadline: int | None = None
    seg_worded: bool = False  # the current part has written a letter (a part must hold a word)
    bracket_tokens: int = 0  # tokens inside an open bracket
    counts: Counts = field(default_factory=Counts)
    matcher: Any = None
    finished: bool = False
    violations: tuple[str, ...] = ()
    parts: tuple[Any, ...] = ()
