"""Required and capped keywords, counted the way IFEval and our verifier count them.

A keyword's count is the number of case-insensitive, non-overlapping
substring matches in the whole answer (``re.findall``), so "risky" counts for
"risk". A hard ``keywords_present`` requirement (each keyword at least once)
and a ``keyword_frequency`` bound become one ``Keyword`` each, with a
minimum, a maximum or both.

Minimums are met by *insertion*: the keyword's tokens, forced one after the
other like a literal. The steering inserts a keyword in three cases:

- the model chooses the token that begins an owed keyword (the steering
  favours it while the keyword is owed); the rest is then forced, so a chosen
  " mount" for an owed "mountain" becomes the keyword (``starts``);
- the model wants to stop while a keyword is owed: the stop's probability
  moves to the keyword's first token (as for a missing placeholder);
- a keyword is *due*: owed keywords are paced over the token budget, the k-th
  of N once k / (N + 1) of it is spent, and a due keyword is inserted at the
  next boundary the model itself predicts (its likeliest token does not
  continue a word), or at once when the budget left holds only the owed
  insertions.

The token budget keeps room for the insertions still owed, and word and
letter maxima keep room for their words, so a minimum holds within the budget.
Maximums are per-token checks: a candidate that would make a capped
keyword's count exceed its maximum fails, wherever it would complete it,
with room kept for the occurrences that owed keywords will bring ("risk"
inside a required "risk appetite").

``later`` arguments are the keyword's occurrences in the literals the layout
still has to write (an end phrase, a postscript marker): they count for the
minimum and against the maximum before they are written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["UNWRITABLE", "Keyword", "Keywords"]

#: Characters a keyword may not hold to be inserted: they would open or close
#: a part of the layout (highlights, placeholders, titles, lines).
UNWRITABLE = frozenset("*[]<>\n\r")


@dataclass(frozen=True)
class Keyword:
    """One keyword and its inclusive bounds. ``text`` is the form inserted
    (already folded to the answer's letter case); ``sources`` are the ids of
    the constraints behind the bounds."""

    text: str
    at_least: int = 0
    at_most: int | None = None
    sources: tuple[str, ...] = ()
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _starts: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _overlaps: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError("a keyword needs a non-blank text")
        escaped = re.escape(self.text)
        object.__setattr__(self, "_pattern", re.compile(escaped, re.IGNORECASE))
        object.__setattr__(self, "_starts", re.compile(f"(?={escaped})", re.IGNORECASE))
        folded = self.text.lower()
        # "aa", "abab": two occurrences can overlap, and greedy counting then skips some.
        object.__setattr__(self, "_overlaps", any(folded[:k] == folded[-k:] for k in range(1, len(folded))))

    def count(self, text: str) -> int:
        """Occurrences in ``text``, as IFEval counts them."""
        return len(self._pattern.findall(text))

    def new_matches(self, text: str, chunk: str) -> int:
        """At least as many as the occurrences ``chunk`` adds to ``text``.

        Matches that end inside ``text`` are the same with or without
        ``chunk`` (a left-to-right scan never looks past a match), so the
        count can grow at most by the (possibly overlapping) matches that
        end inside ``chunk``; exact for every keyword that cannot overlap
        itself.
        """
        window = text[len(text) - len(self.text) + 1 :] if len(self.text) > 1 else ""
        joined = window + chunk
        return sum(1 for m in self._starts.finditer(joined) if m.start() + len(self.text) > len(window))

    def count_after(self, count: int, text: str, chunk: str) -> int:
        """``count(text + chunk)`` from ``count == count(text)``: the matches
        ``chunk`` adds (exact when two occurrences cannot overlap), else a recount."""
        return self.count(text + chunk) if self._overlaps else count + self.new_matches(text, chunk)


@dataclass(frozen=True)
class Keywords:
    """The keywords of one request."""

    items: tuple[Keyword, ...]

    @property
    def has_min(self) -> bool:
        return any(k.at_least > 0 for k in self.items)

    @property
    def has_max(self) -> bool:
        return any(k.at_most is not None for k in self.items)

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s for k in self.items for s in k.sources))

    def counts(self, text: str) -> tuple[int, ...]:
        """Each keyword's occurrences in ``text``."""
        return tuple(k.count(text) for k in self.items)

    def counts_after(self, counts: Sequence[int], text: str, chunk: str) -> tuple[int, ...]:
        """``counts(text + chunk)`` from ``counts == counts(text)``, in time of the chunk."""
        return tuple(k.count_after(c, text, chunk) for k, c in zip(self.items, counts))

    def owed(self, counts: Sequence[int], later: Sequence[int]) -> tuple[int, ...]:
        """Occurrences each keyword still needs beyond ``counts`` and the later literals."""
        return tuple(max(0, k.at_least - c - n) for k, c, n in zip(self.items, counts, later))

    def exceeded(self, counts: Sequence[int], later: Sequence[int]) -> bool:
        """Whether ``counts`` with the later literals hold a capped keyword too often."""
        return any(
            k.at_most is not None and c + n > k.at_most for k, c, n in zip(self.items, counts, later)
        )

    def held(self, owed: Sequence[int], later: Sequence[int]) -> tuple[int, ...]:
        """Occurrences each keyword will still get from the later literals and
        from the other keywords still owed ("risk" inside an owed "risk
        appetite"), which a maximum must keep room for."""
        return tuple(
            n + sum(o * k.count(other.text) for other, o in zip(self.items, owed) if other is not k and o)
            for k, n in zip(self.items, later)
        )

    def may_append(self, counts: Sequence[int], text: str, chunk: str, later: Sequence[int]) -> bool:
        """Whether appending ``chunk`` to ``text`` (whose counts are ``counts``)
        keeps every capped keyword within its maximum."""
        return all(
            k.at_most is None or c + n + k.new_matches(text, chunk) <= k.at_most
            for k, c, n in zip(self.items, counts, later)
        )
