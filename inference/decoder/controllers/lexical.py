"""Forbidden words, checked at the token level across token boundaries.

A forbidden word is violated once it stands in the text as a whole word
(``\\bword\\b``, case-insensitive, IFEval's rule). A token can only complete
a violation together with the end of the text before it, so a candidate is
checked on ``tail + token`` where ``tail`` is the last ``max_len + 1``
characters: that window contains every occurrence the token could finish,
including a word split over several tokens ("fin" + "anc" + "ial").

A token that would leave the whole word at the very end of the text is
refused too, although "risk" could still become "risky": waiting for the
next token can strand the beam where every likely continuation (a space, a
period) completes the violation. The cost is that a longer word spelled
through the forbidden one ("risk" + "y") is not written that way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ForbiddenWords"]


@dataclass(frozen=True)
class ForbiddenWords:
    """The words no answer may contain as whole words."""

    words: tuple[str, ...]

    def __post_init__(self) -> None:
        alternatives = "|".join(re.escape(w) for w in sorted(self.words, key=len, reverse=True))
        object.__setattr__(self, "_pattern", re.compile(rf"\b(?:{alternatives})\b", re.IGNORECASE))
        object.__setattr__(self, "_window", max(len(w) for w in self.words) + 1)

    @property
    def window(self) -> int:
        return self._window  # type: ignore[attr-defined,no-any-return]

    def token_ok(self, tail: str, chunk: str) -> bool:
        """False when appending ``chunk`` to text ending in ``tail`` writes a
        forbidden word whole (followed by a non-word char or by the end)."""
        text = tail[-self.window :] + chunk
        return self._pattern.search(text) is None  # type: ignore[attr-defined]

    def ends_ok(self, tail: str) -> bool:
        """False when the text, ending now, would end in a forbidden word."""
        text = tail[-self.window :]
        return not any(m.end() == len(text) for m in self._pattern.finditer(text))  # type: ignore[attr-defined]

    def violated(self, text: str) -> bool:
        return self._pattern.search(text) is not None  # type: ignore[attr-defined]
