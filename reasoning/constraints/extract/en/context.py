"""The shared state of the English readers: the parse, the text, per-token caches and the readings so far.

Every English reader of :mod:`reasoning.constraints.extract.registry` takes one
:class:`Context` and adds to or replaces in its ``found``; all of them share the
one context of a prompt, so a later reader sees (and may refine) what an
earlier one read.
"""

from __future__ import annotations

import re

from spacy.tokens import Doc, Token

from reasoning.constraints.extract.found import Found
from reasoning.constraints.model import Hardness, Kind, Relation

__all__ = ["Context", "Quantity"]


class Quantity:
    """A parsed count: ``relation`` ``n`` or the range ``n``..``high``."""

    __slots__ = ("first", "high", "last", "n", "relation")

    def __init__(self, relation: Relation | None, n: int, first: int, last: int, high: int | None = None) -> None:
        self.relation = relation
        self.n = n
        self.high = high
        self.first = first
        self.last = last

    def bounds(self) -> list[tuple[Relation, int]]:
        """(relation, n) pairs: one for a comparison, two for a range."""
        if self.high is not None:
            return [(Relation.AT_LEAST, self.n), (Relation.AT_MOST, self.high)]
        return [(self.relation, self.n)] if self.relation is not None else []


class Context:
    """The doc, the text, per-token caches and prompt-wide cues."""

    def __init__(self, doc: Doc, text: str) -> None:
        self.doc = doc
        self.text = text
        self.tokens: list[Token] = list(doc)
        self.lowers = [t.lower_ for t in self.tokens]
        self.lemmas = [t.lemma_.lower() for t in self.tokens]
        lowered = text.lower()
        self.has_divider = re.search(r"(?<!\*)\*\*\*(?!\*)", text) is not None or "markdown divider" in lowered
        self.has_markdown_example = re.search(r"\*[^*\n]{1,60}\*", text) is not None
        self.found: list[Found] = []

    def add(self, kind: Kind, params: dict[str, object], start: int, end: int,
            confidence: float = 0.9, hardness: Hardness | None = None) -> None:
        self.found.append(Found(kind=kind, params=dict(params), start=start, end=max(end, start),
                                confidence=confidence, hardness=hardness))

    def chars(self, first: int, last: int) -> tuple[int, int]:
        return self.tokens[first].idx, self.tokens[last].idx + len(self.tokens[last].text)

    def has(self, kind: Kind) -> bool:
        return any(f.kind == kind for f in self.found)
