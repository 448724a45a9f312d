"""The sentence around a stretch of a prompt, split at sentence marks: one helper for the readers.

A reader that needs "the sentence this reading came from" without a parse
(the Chinese readers, or an English reader looking past the parse's own
sentence split) cuts the text at the nearest marks on either side. The marks
are the caller's: English readers split at ``.!?`` and line breaks, Chinese
ones at ``。！？`` and line breaks, the clause accounting at both.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ENGLISH_MARKS", "MARKS", "sentence_bounds"]

ENGLISH_MARKS: Final = ".!?\n"
"""Where an English sentence ends (a line break ends one too)."""

MARKS: Final = ".!?。！？\n"
"""Where a sentence of either script ends."""


def sentence_bounds(
    text: str, start: int, end: int, marks: str = ENGLISH_MARKS, *, with_mark: bool = True
) -> tuple[int, int]:
    """``(left, right)`` of the sentence of ``text`` holding ``text[start:end]``.

    ``left`` is just after the last mark before ``start`` (0 when there is
    none); ``right`` is the first mark at or after ``end``, the mark included
    when ``with_mark`` (just past it) and left out otherwise, or ``len(text)``
    when no mark follows. ``left <= start`` always holds.
    """
    left = max(text.rfind(mark, 0, start) for mark in marks) + 1
    stops = [i for i in (text.find(mark, end) for mark in marks) if i >= 0]
    if not stops:
        return left, len(text)
    return left, min(stops) + 1 if with_mark else min(stops)
