"""Checks of an uploaded ontology: undeclared terms and disjointness violations."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Final

from reasoning.evidence.report import DisjointnessViolation
from reasoning.evidence.terms import (
    OWL_ANNOTATION_PROPERTY,
    OWL_CLASS,
    OWL_DATATYPE_PROPERTY,
    OWL_DISJOINT_WITH,
    OWL_NOTHING,
    OWL_OBJECT_PROPERTY,
    RDF_PROPERTY,
    RDF_TYPE,
    RDFS_CLASS,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    Triple,
    iri,
    iri_value,
    is_iri,
)

__all__ = [
    "KNOWN_VOCABULARIES",
    "disjointness_violations",
    "undeclared_terms",
    "unsatisfiable_individuals",
]

KNOWN_VOCABULARIES: Final = (
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://www.w3.org/2000/01/rdf-schema#",
    "http://www.w3.org/2002/07/owl#",
    "http://www.w3.org/2001/XMLSchema#",
    "http://www.w3.org/2004/02/skos/core#",
    "http://purl.org/dc/terms/",
    "http://purl.org/dc/elements/1.1/",
    "http://www.w3.org/ns/prov#",
    "https://tenet.dev/ns/views#",
    "http://www.w3.org/ns/shacl#",
)
_KNOWN: Final = tuple(f"<{prefix}" for prefix in KNOWN_VOCABULARIES)
_OWL = "http://www.w3.org/2002/07/owl#"
_PROPERTY_TYPES: Final = frozenset({
    RDF_PROPERTY, OWL_OBJECT_PROPERTY, OWL_DATATYPE_PROPERTY, OWL_ANNOTATION_PROPERTY,
    *(iri(_OWL + name) for name in (
        "TransitiveProperty", "SymmetricProperty", "AsymmetricProperty", "FunctionalProperty",
        "InverseFunctionalProperty", "ReflexiveProperty", "IrreflexiveProperty",
        "OntologyProperty")),
})
_CLASS_TYPES: Final = frozenset({OWL_CLASS, RDFS_CLASS, iri(_OWL + "Restriction"),
                                 iri("http://www.w3.org/2000/01/rdf-schema#Datatype")})


def undeclared_terms(asserted: Sequence[Triple]) -> tuple[list[str], list[str]]:
    """``(classes, properties)`` used in ``asserted`` but never declared, as bare IRIs, sorted."""
    declared_classes: set[str] = set()
    declared_properties: set[str] = set()
    used_classes: set[str] = set()
    used_properties: set[str] = set()
    for s, p, o in asserted:
        used_properties.add(p)
        if p == RDF_TYPE:
            if o in _CLASS_TYPES:
                declared_classes.add(s)
            elif o in _PROPERTY_TYPES:
                declared_properties.add(s)
            else:
                used_classes.add(o)
        elif p == RDFS_SUBCLASSOF:
            used_classes.add(s)
            used_classes.add(o)
        elif p in (RDFS_DOMAIN, RDFS_RANGE):
            used_properties.add(s)
            if p == RDFS_DOMAIN:
                used_classes.add(o)
    classes = sorted(iri_value(c) for c in used_classes - declared_classes
                     if is_iri(c) and not c.startswith(_KNOWN))
    properties = sorted(iri_value(p) for p in used_properties - declared_properties
                        if is_iri(p) and not p.startswith(_KNOWN))
    return classes, properties


def disjointness_violations(triples: Sequence[Triple]) -> list[DisjointnessViolation]:
    """Individuals typed with two classes declared ``owl:disjointWith`` (asserted or inferred)."""
    disjoint: dict[str, set[str]] = defaultdict(set)
    for s, p, o in triples:
        if p == OWL_DISJOINT_WITH and s != o:
            disjoint[s].add(o)
            disjoint[o].add(s)
    if not disjoint:
        return []
    types: dict[str, set[str]] = defaultdict(set)
    for s, p, o in triples:
        if p == RDF_TYPE and o in disjoint:
            types[s].add(o)
    found: list[DisjointnessViolation] = []
    for individual in sorted(types):
        classes = sorted(types[individual])
        for i, a in enumerate(classes):
            for b in classes[i + 1:]:
                if b in disjoint[a]:
                    found.append(DisjointnessViolation(
                        individual=iri_value(individual), class_a=iri_value(a),
                        class_b=iri_value(b)))
    return found


def unsatisfiable_individuals(triples: Sequence[Triple]) -> list[str]:
    """Individuals the reasoner typed as ``owl:Nothing`` (an inconsistency)."""
    return sorted({iri_value(s) for s, p, o in triples if p == RDF_TYPE and o == OWL_NOTHING
                   and s != OWL_NOTHING})
