"""Value objects of the case graph: the facts one request states, as RDF.

Terms are N-Triples strings (:mod:`reasoning.evidence.terms`). Every fact
keeps the span of the request it was read from, and the premise that stated
it, so retracting a premise removes exactly its own facts
(:meth:`CaseGraph.without_premises`).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from reasoning.evidence.terms import Triple

__all__ = ["CaseEntity", "CaseFact", "CaseGraph"]


class CaseFact(msgspec.Struct, frozen=True, kw_only=True):
    """One triple of the case with its source.

    ``origin`` says how it was read: ``mention`` (the request names the
    entity), ``label`` (the name of a new individual), ``relation`` (a
    property label between two mentions), ``apposition`` ("Acme Ltd
    (Cyprus)"), ``class`` (a class phrase), ``typing`` (a property's domain
    or range, or a superclass), ``input`` (a typed literal) or ``default``
    (the evaluation date; no span). ``start``/``end`` index the request text.
    """

    subject: str
    predicate: str
    object: str
    origin: str
    start: int | None = None
    end: int | None = None
    text: str = ""
    premise_id: str | None = None

    @property
    def triple(self) -> Triple:
        return (self.subject, self.predicate, self.object)


class CaseEntity(msgspec.Struct, frozen=True, kw_only=True):
    """An individual the request names: an ontology individual or a new one (``is_new``)."""

    term: str
    label: str
    start: int
    end: int
    is_new: bool = False


class CaseGraph(msgspec.Struct, frozen=True, kw_only=True):
    """The case of one request: its focus node ``case``, entities and facts."""

    case: str
    entities: tuple[CaseEntity, ...]
    facts: tuple[CaseFact, ...]
    evaluation_date: str

    def triples(self) -> set[Triple]:
        """The distinct triples of the case."""
        return {fact.triple for fact in self.facts}

    def premise_ids(self) -> tuple[str, ...]:
        """The premises that stated at least one fact, in first-use order."""
        return tuple(dict.fromkeys(f.premise_id for f in self.facts if f.premise_id))

    def without_premises(self, premise_ids: Iterable[str]) -> CaseGraph:
        """The case with the facts of the given premises removed (the others are kept as is)."""
        dropped = set(premise_ids)
        return CaseGraph(case=self.case, entities=self.entities,
                         facts=tuple(f for f in self.facts if f.premise_id not in dropped),
                         evaluation_date=self.evaluation_date)

    def with_facts(self, facts: Iterable[CaseFact]) -> CaseGraph:
        """The case with more facts (e.g. premises stated in a later session turn)."""
        return CaseGraph(case=self.case, entities=self.entities, facts=self.facts + tuple(facts),
                         evaluation_date=self.evaluation_date)
