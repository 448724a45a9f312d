"""Regular-expression pieces the extractors build their patterns from."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["alternation"]


def alternation(words: Iterable[str]) -> str:
    """A pattern matching any of ``words`` literally, longest first (so a word is never cut at a
    shorter one it begins with: 至少 before 至); no group around it."""
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))
