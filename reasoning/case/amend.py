"""Amended premises, re-read: the request as it reads with a premise's new text.

A session amends a premise ("the tax rate is 25%", or a new sentence for it)
after the request was read. The case graph must hold what the amended
premise states, not what the old one did, so the request is read again with
each amended premise's span replaced by its new text (:func:`amend_request`):
the new words are read in the sentence they now stand in, with the same
premise id, so a later retraction still removes exactly their facts.

The case built from the amended text is then mapped back onto the original
request (:func:`restore_spans`): a fact read outside every amended premise
keeps its words and gets its offsets in the original request; a fact read
inside an amended premise (or across its border) has no span in the
original request, so its offsets are None while its ``text`` keeps the
amended words and its ``premise_id`` the premise. Guarantees: for every fact
with offsets, ``original[start:end] == text``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from reasoning.case.model import CaseEntity, CaseFact, CaseGraph
from reasoning.constraints.model import Premise, Span

__all__ = ["AmendedRequest", "amend_request", "restore_spans"]


class Edit(msgspec.Struct, frozen=True, kw_only=True):
    """One replaced premise span: ``[old_start, old_end)`` became ``[new_start, new_end)``."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int


class AmendedRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The request text with amended premises in place, and how its offsets map back."""

    text: str
    premises: tuple[Premise, ...]
    edits: tuple[Edit, ...] = ()

    @property
    def changed(self) -> bool:
        """True when at least one premise's text was replaced."""
        return bool(self.edits)


def amend_request(
    text: str, premises: Sequence[Premise], amended: Mapping[str, str]
) -> AmendedRequest:
    """``text`` with each premise in ``amended`` (id -> new text) replaced by its new text.

    Only premises read from ``text`` (with a source span) are replaced; an
    amendment that leaves a premise's text as it was changes nothing. The
    returned premises have their sources in the amended text.
    """
    todo = sorted(
        (
            p
            for p in premises
            if p.source is not None and p.id in amended and amended[p.id] != p.source.text
        ),
        key=lambda p: p.source.start if p.source is not None else 0,
    )
    if not todo:
        return AmendedRequest(text=text, premises=tuple(premises))
    pieces: list[str] = []
    edits: list[Edit] = []
    moved: dict[str, Span] = {}
    cursor = delta = 0
    for p in todo:
        source = p.source
        assert source is not None
        if source.start < cursor:  # overlapping premise spans: keep the first
            continue
        new_text = amended[p.id]
        pieces.append(text[cursor : source.start])
        new_start = source.start + delta
        pieces.append(new_text)
        edits.append(
            Edit(
                old_start=source.start,
                old_end=source.end,
                new_start=new_start,
                new_end=new_start + len(new_text),
            )
        )
        moved[p.id] = Span(start=new_start, end=new_start + len(new_text), text=new_text)
        delta += len(new_text) - (source.end - source.start)
        cursor = source.end
    pieces.append(text[cursor:])
    shifted = tuple(
        msgspec.structs.replace(p, text=amended[p.id], source=moved[p.id])
        if p.id in moved
        else msgspec.structs.replace(p, source=_shift(p.source, edits))
        if p.source is not None
        else p
        for p in premises
    )
    return AmendedRequest(text="".join(pieces), premises=shifted, edits=tuple(edits))


def _shift(source: Span, edits: Sequence[Edit]) -> Span:
    """An unamended premise's span in the amended text (it lies outside every edit)."""
    delta = sum(
        (e.new_end - e.new_start) - (e.old_end - e.old_start)
        for e in edits
        if e.old_end <= source.start
    )
    return Span(start=source.start + delta, end=source.end + delta, text=source.text)


def _back(start: int, end: int, edits: Sequence[Edit]) -> tuple[int, int] | None:
    """The original offsets of amended-text ``[start, end)``; None when it touches an edit."""
    delta = 0
    for e in edits:
        if end <= e.new_start:
            break
        if start < e.new_end:
            return None
        delta += (e.new_end - e.new_start) - (e.old_end - e.old_start)
    return start - delta, end - delta


def restore_spans(case: CaseGraph, amended: AmendedRequest) -> CaseGraph:
    """``case`` (built from ``amended.text``) with offsets into the original request (module doc)."""
    if not amended.changed:
        return case
    edits = amended.edits
    facts: list[CaseFact] = []
    for f in case.facts:
        if f.start is None or f.end is None:
            facts.append(f)
            continue
        back = _back(f.start, f.end, edits)
        facts.append(
            msgspec.structs.replace(
                f, start=back[0] if back else None, end=back[1] if back else None
            )
        )
    entities: list[CaseEntity] = []
    for e in case.entities:
        back = _back(e.start, e.end, edits)
        if back is None:  # named inside an amended premise: the premise's original span
            edit = next(x for x in edits if e.start < x.new_end and x.new_start < e.end)
            back = (edit.old_start, edit.old_end)
        entities.append(msgspec.structs.replace(e, start=back[0], end=back[1]))
    return CaseGraph(
        case=case.case,
        entities=tuple(entities),
        facts=tuple(facts),
        evaluation_date=case.evaluation_date,
    )
