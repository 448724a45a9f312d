"""The validation report of one ontology upload (value objects)."""

from __future__ import annotations

import msgspec

__all__ = [
    "DisjointnessViolation",
    "ImportReport",
    "MaterialisationReport",
    "RuleReport",
    "SparqlReport",
    "ValidationReport",
]


class DisjointnessViolation(msgspec.Struct, frozen=True, kw_only=True):
    """An individual typed (asserted or inferred) with two classes declared disjoint."""

    individual: str
    class_a: str
    class_b: str


class ImportReport(msgspec.Struct, frozen=True, kw_only=True):
    """An ``owl:imports`` of the file: reported, never fetched."""

    iri: str
    fetched: bool = False
    note: str = "imports are not followed; upload the imported ontology to the same domain"


class MaterialisationReport(msgspec.Struct, frozen=True, kw_only=True):
    """How OWL 2 RL materialisation went: engine, time and sizes before and after."""

    engine: str
    seconds: float
    timed_out: bool
    triples_before: int
    triples_after: int
    note: str | None = None


class RuleReport(msgspec.Struct, frozen=True, kw_only=True):
    """One declared decision rule and whether it was accepted.

    ``kind`` is ``sparql``, ``triple`` or ``unknown``; ``implements`` the
    regulatory rule individual it names with ``tv:implements``; ``decides``
    the ``tv:DecisionProperty`` predicates it constructs. ``ok`` False means
    the upload is refused; ``error`` says why and ``hostile`` marks a rule
    that would reach outside the case (SERVICE, FROM, LOAD, updates).
    """

    id: str
    shape: str | None
    kind: str
    implements: str | None = None
    requires_inputs: tuple[str, ...] = ()
    decides: tuple[str, ...] = ()
    ok: bool
    error: str | None = None
    hostile: bool = False


class SparqlReport(msgspec.Struct, frozen=True, kw_only=True):
    """One SPARQL text (or ``sh:pattern``) of the ontology and whether it was accepted.

    ``node`` holds it under ``property`` (``sh:construct``, ``sh:select``,
    ``sh:ask``, ``sh:update`` or ``sh:pattern``). ``ok`` False means the
    upload is refused; ``error`` says why and ``hostile`` marks a text that
    would reach outside the case (SERVICE, FROM, LOAD, updates).
    """

    node: str
    property: str
    ok: bool
    error: str | None = None
    hostile: bool = False


class ValidationReport(msgspec.Struct, frozen=True, kw_only=True):
    """What an ontology engineer needs to judge an upload.

    ``undeclared_*`` list terms used as classes or properties without a
    declaration (terms of RDF, RDFS, OWL, XSD, SKOS, Dublin Core, PROV and the
    view vocabulary count as declared); each list is capped and the full
    count is given. ``consistent`` is False when an individual violates an
    ``owl:disjointWith`` or is inferred to be an ``owl:Nothing``. ``rules``
    lists the declared decision rules (an upload with a refused rule is not
    stored, so a stored report has only accepted ones); ``sparql`` every
    SPARQL text and ``sh:pattern`` the ontology carries, checked the same way.
    """

    media_type: str
    size_bytes: int
    parse_seconds: float
    index_seconds: float
    warnings: tuple[str, ...]
    imports: tuple[ImportReport, ...]
    undeclared_classes: tuple[str, ...]
    undeclared_class_count: int
    undeclared_properties: tuple[str, ...]
    undeclared_property_count: int
    disjointness_violations: tuple[DisjointnessViolation, ...]
    unsatisfiable_individuals: tuple[str, ...]
    materialisation: MaterialisationReport
    views: tuple[str, ...]
    consistent: bool
    rules: tuple[RuleReport, ...] = ()
    sparql: tuple[SparqlReport, ...] = ()
