"""Citations of the evidence facts the prompt shows, written by the model's choice.

When a hard ``cite_sources`` constraint is active and the prompt shows
numbered evidence facts (``[E1] ...``, see ``inference.prompting``), the
answer must cite at least ``need`` distinct ids in the one citation syntax of
``reasoning.constraints.citations`` (``[E3]``). ``Citations`` is what the
steering needs for that:

- after an opening bracket (``[`` or `` [``) the row is in *citation mode*:
  only tokens that keep the text after the bracket a prefix of ``E<id>]``
  for an id that exists (and is not cited yet) stay allowed, so the model
  picks *which* fact to cite and cannot invent one;
- the end of the answer is held back until ``need`` ids are cited; the
  stop's probability moves to the opening bracket instead (the same
  mechanism as a missing placeholder), so a citation is written before EOS.

The ids are those of *one* prompt: each evidence branch shows its own facts,
so each branch gets its own ``Citations`` (``for_ids``). A branch that shows
fewer ids than ``need`` cannot meet the requirement: the steering pushes only
for what it can (``owed``: every shown id) and ``missing`` still counts the
shortfall, so the steering's ``unmet`` reports it ("citations") instead of
letting the branch cite a fact it never saw.

Guarantee: every citation written in citation mode names a shown fact and
is parsed by ``citations.evidence_ids``; from any prefix a completion exists
(an ``E``, digits one by one, ``]``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from inference.decoder.vocab import VocabTables

__all__ = ["Citations"]

_ID = re.compile(r"E\d+")
_CHARS = frozenset("E0123456789]")


@dataclass(frozen=True)
class Citations:
    """The evidence ids that exist and how many distinct ones must be cited.

    ``sources`` are the ids of the ``cite_sources`` constraints behind ``need``.
    """

    ids: tuple[str, ...]
    need: int = 1
    sources: tuple[str, ...] = ()
    _cache: dict[tuple[str, frozenset[str]], list[int]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        bad = [i for i in self.ids if not _ID.fullmatch(i)]
        if bad:
            raise ValueError(f"evidence ids must look like E1, E2, ...: {bad}")

    @property
    def reachable(self) -> bool:
        """Whether the shown ids are enough to meet ``need``."""
        return len(self.ids) >= self.need

    def for_ids(self, ids: tuple[str, ...]) -> Citations:
        """The same requirement over the ids another prompt shows (a fresh token cache)."""
        return Citations(ids, need=self.need, sources=self.sources)

    def missing(self, cited: frozenset[str]) -> int:
        """How many more distinct ids the requirement needs (what ``unmet`` reports)."""
        return max(0, self.need - len(cited))

    def owed(self, cited: frozenset[str]) -> int:
        """How many more distinct ids the steering pushes for: ``missing``,
        capped by the shown ids not cited yet (``cited`` holds only shown ids)."""
        return max(0, min(self.need, len(self.ids)) - len(cited))

    def completed(self, inside: str) -> str | None:
        """The id when ``inside`` (the text after ``[``) is a whole citation."""
        if inside.endswith("]") and inside[:-1] in self.ids:
            return inside[:-1]
        return None

    def next_tokens(self, tables: VocabTables, inside: str, cited: frozenset[str]) -> list[int]:
        """Token ids that keep ``inside`` on the way to ``E<id>]`` of an id not
        in ``cited`` (all ids once no more are owed)."""
        exclude = cited if self.owed(cited) else frozenset()
        key = (inside, exclude)
        found = self._cache.get(key)
        if found is None:
            targets = [f"{i}]" for i in self.ids if i not in exclude]
            found = [
                idx
                for idx in _candidates(tables)
                if any(t.startswith(inside + tables.texts[idx]) for t in targets)
            ]
            self._cache[key] = found
        return found


def _candidates(tables: VocabTables) -> list[int]:
    """Complete, non-special tokens made only of ``E``, digits and ``]``."""

    def build() -> list[int]:
        special = tables.special.tolist()
        fragment = tables.fragment.tolist()
        return [
            idx
            for idx, text in enumerate(tables.texts)
            if text and not special[idx] and not fragment[idx] and set(text) <= _CHARS
        ]

    return tables.cached("citation-candidates", build)  # type: ignore[no-any-return]
