"""The intermediate result of a language extractor, before ids are assigned."""

from __future__ import annotations

from typing import Any

import msgspec

from reasoning.constraints.model import Hardness, Kind

__all__ = ["Found"]


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
