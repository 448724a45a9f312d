"""Value objects for evidence: facts, subgraphs and the seeds they grew from."""

from __future__ import annotations

import msgspec

__all__ = ["EvidenceFact", "EvidenceSubgraph", "LinkedEntity"]


class LinkedEntity(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt mention resolved to an ontology individual or class."""

    iri: str
    label: str
    mention: str
    start: int
    end: int
    score: float
    is_class: bool = False


class EvidenceFact(msgspec.Struct, frozen=True, kw_only=True):
    """One triple of evidence with where it came from and how fresh it is.

    ``id`` is stable within a run ("E1", "E2", ...) so the model can cite it;
    ``text`` is the fact rendered as a short sentence with labels.
    ``stale_hint`` is set when the fact's freshness date is older than the
    staleness horizon ("PEP list last updated 2024-05-11").
    """

    id: str
    subject: str
    predicate: str
    object: str
    text: str
    view: str
    score: float
    hops: int
    ontology_version: str
    modified: str | None = None
    effective: str | None = None
    stale_hint: str | None = None


class EvidenceSubgraph(msgspec.Struct, frozen=True, kw_only=True):
    """The ranked facts of one view, cut to a token budget."""

    view: str
    relevance: float
    seeds: tuple[str, ...]
    facts: tuple[EvidenceFact, ...]
