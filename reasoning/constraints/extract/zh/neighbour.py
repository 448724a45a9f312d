"""A piece named by where it stands (上一行, 前一句, 下一段, 同一行) is no count of pieces.

"每一行的缩进都要比上一行多" (every line indented more than the line above)
holds 一行 after 上: the line before, not "one line". The count readers take
that 一 for a number (exactly 1 line, or 1 line per line); a count whose
span begins right after 上 / 前 / 下 / 后 / 同 / 另 / 每 is dropped here.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasoning.constraints.extract.found import Found
from reasoning.constraints.model import Kind

__all__ = ["refine_neighbour_chinese"]

_NEIGHBOURS = frozenset("上前下后同另每")
_PIECE_UNITS = frozenset({"lines", "sentences", "paragraphs", "words", "bullets"})


def _neighbour(text: str, f: Found) -> bool:
    if f.kind is not Kind.COUNT or f.params.get("unit") not in _PIECE_UNITS or f.params.get("n") != 1:
        return False
    span = text[f.start:f.end]
    at = f.start + span.find("一")
    return span.find("一") >= 0 and at > 0 and text[at - 1] in _NEIGHBOURS and "个" not in text[at:f.end]


def refine_neighbour_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """``found`` without the counts of one piece read from a neighbour's name."""
    return [f for f in found if not _neighbour(text, f)]
