"""The validation report of one ontology upload (value objects)."""

from __future__ import annotations

import msgspec

__all__ = [
    "DisjointnessViolation",
    "ImportReport",
    "MaterialisationReport",
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


class ValidationReport(msgspec.Struct, frozen=True, kw_only=True):
    """What an ontology engineer needs to judge an upload.

    ``undeclared_*`` list terms used as classes or properties without a
    declaration (terms of RDF, RDFS, OWL, XSD, SKOS, Dublin Core, PROV and the
    view vocabulary count as declared); each list is capped and the full
    count is given. ``consistent`` is False when an individual violates an
    ``owl:disjointWith`` or is inferred to be an ``owl:Nothing``.
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
