"""The intermediate result of a language extractor, before ids are assigned."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from reasoning.constraints.model import Hardness, Kind

__all__ = ["Found", "counts_paragraphs", "overlaps"]


class Found(msgspec.Struct, frozen=True, kw_only=True):
    """A constraint read from ``prompt[start:end]``, not yet numbered.

    ``hardness`` is None when the extractor leaves it to the clause's
    modality markers ("must" / "preferably" / 必须 / 尽量).
    """

    kind: Kind
    params: dict[str, Any]
    start: int
    end: int
    confidence: float = 0.9
    hardness: Hardness | None = None


def overlaps(f: Found, start: int, end: int) -> bool:
    """Whether ``f`` was read from text overlapping ``prompt[start:end]`` (touching is no overlap)."""
    return f.start < end and start < f.end


def counts_paragraphs(found: Iterable[Found]) -> bool:
    """Whether a reading already counts the answer's paragraphs (a count, or the k-th one's first word)."""
    return any(
        f.kind in (Kind.PARAGRAPH_COUNT, Kind.NTH_PARAGRAPH_FIRST_WORD)
        or (f.kind is Kind.COUNT and f.params.get("unit") == "paragraphs" and f.params.get("per") is None)
        for f in found
    )
