"""The shared state of the Chinese readers: the text, its jieba word boundaries and the readings so far.

Every Chinese reader of :mod:`reasoning.constraints.extract.registry` takes one
:class:`Context`; a match counts only where it starts on a word boundary of
the segmentation (``starts``), so 行 in 银行 is no line.
"""

from __future__ import annotations

from spacy.tokens import Doc

from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.form import canonical
from reasoning.constraints.form.model import Form
from reasoning.constraints.model import Kind

__all__ = ["Context"]


class Context:
    """One prompt's Chinese parse and the readings of the readers run so far (``found``)."""

    def __init__(self, doc: Doc, text: str) -> None:
        self.doc = doc
        self.text = text
        self.starts = {t.idx for t in doc} | {len(text)}
        self.found: list[Found] = []

    def add(self, form: Form, start: int, end: int) -> None:
        """A form reading (as its named kind where one means it exactly), unless the same reading is there."""
        kind, params = canonical(form)
        key = (kind, params)
        if any((f.kind, f.params) == key for f in self.found):
            return
        self.found.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))

    def taken(self, start: int, end: int, kinds: frozenset[Kind] | None = None) -> bool:
        return any(overlaps(f, start, end) and (kinds is None or f.kind in kinds) for f in self.found)

    def drop(self, start: int, end: int, kinds: frozenset[Kind]) -> None:
        self.found = [f for f in self.found if not (f.kind in kinds and overlaps(f, start, end))]
