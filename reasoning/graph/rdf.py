"""The RDF view of a constraint graph in the ``cg:`` vocabulary.

Per constraint: its kind class, ``cg:identifier``, hardness / scope / origin
individuals, ``cg:active``, ``cg:confidence``, ``cg:weight``, the source
span (``cg:sourceStart``, ``cg:sourceEnd``, ``cg:sourceText``), every
parameter as one ``rdf:JSON`` literal (``cg:params``) and, where the
vocabulary has a property for it, as typed literals (``cg:count 50``,
``cg:notBefore "2020-01-01"^^xsd:date``). Per edge: the direct triple
(``c1 cg:excludes c2``) and a reified ``rdf:Statement`` (``<base>edgeN``) with ``cg:reason``
and ``cg:edgeOrigin``. Conflicts are ``cg:Conflict`` nodes. Node IRIs are
``<base><id>``; the default base is derived from the graph's content, so
the same graph always gets the same IRIs.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec
from rdflib import RDF, RDFS, XSD, Graph, Literal, Namespace, URIRef

from reasoning.constraints.model import Constraint, Premise, Span
from reasoning.graph.graph import ConstraintGraph
from reasoning.graph.vocabulary import CG_NS, class_name, param_property

__all__ = ["CG", "JSONLD_CONTEXT", "default_base", "to_rdf"]

CG = Namespace(CG_NS)

#: Inline JSON-LD context used for compaction.
JSONLD_CONTEXT: dict[str, str] = {
    "cg": CG_NS,
    "rdf": str(RDF),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
}

_HARDNESS = {"hard": CG.hard, "soft": CG.soft}
_SCOPE = {
    "response": CG.responseScope,
    "evidence": CG.evidenceScope,
    "citation": CG.citationScope,
    "session": CG.sessionScope,
}
_ORIGIN = {"user": CG.userOrigin, "profile": CG.profileOrigin, "ontology": CG.ontologyOrigin}
_DATE_PARAMS = {"not_before", "not_after"}


def default_base(graph: ConstraintGraph) -> str:
    """A content-derived IRI base: ``urn:tenet:cg:<16 hex digits>:``."""
    digest = hashlib.sha256(msgspec.json.encode((graph.constraints, graph.edges))).hexdigest()
    return f"urn:tenet:cg:{digest[:16]}:"


def _literal(name: str, value: Any) -> Literal | None:
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list, tuple)):
        return None
    if name in _DATE_PARAMS and isinstance(value, str):
        try:
            return Literal(_dt.date.fromisoformat(value[:10]), datatype=XSD.date)
        except ValueError:
            return Literal(value)
    if isinstance(value, int):
        return Literal(value, datatype=XSD.integer)
    if isinstance(value, float):
        return Literal(value, datatype=XSD.double)
    return Literal(str(value))


def _add_span(g: Graph, node: URIRef, span: Span | None) -> None:
    if span is None:
        return
    g.add((node, CG.sourceStart, Literal(span.start, datatype=XSD.integer)))
    g.add((node, CG.sourceEnd, Literal(span.end, datatype=XSD.integer)))
    g.add((node, CG.sourceText, Literal(span.text)))


def _add_constraint(g: Graph, node: URIRef, c: Constraint, active: bool) -> None:
    g.add((node, RDF.type, CG[class_name(c.kind)]))
    g.add((node, RDF.type, CG.Constraint))
    g.add((node, CG.identifier, Literal(c.id)))
    g.add((node, CG.kindName, Literal(c.kind.value)))
    g.add((node, CG.hardness, _HARDNESS[c.hardness.value]))
    g.add((node, CG.scope, _SCOPE[c.scope.value]))
    g.add((node, CG.origin, _ORIGIN[c.origin.value]))
    g.add((node, CG.active, Literal(active)))
    g.add((node, CG.confidence, Literal(float(c.confidence), datatype=XSD.double)))
    g.add((node, CG.weight, Literal(float(c.weight), datatype=XSD.double)))
    g.add((node, CG.params, Literal(msgspec.json.encode(c.params).decode(), datatype=RDF.JSON)))
    for name, value in c.params.items():
        prop = param_property(name)
        if prop is None:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for item in values:
            lit = _literal(name, item)
            if lit is not None:
                g.add((node, CG[prop], lit))
    _add_span(g, node, c.source)


def _add_premise(g: Graph, node: URIRef, p: Premise) -> None:
    g.add((node, RDF.type, CG.Premise))
    g.add((node, CG.identifier, Literal(p.id)))
    g.add((node, RDFS.label, Literal(p.text, lang=p.language or None)))
    g.add((node, CG.topic, Literal(p.topic)))
    if p.value is not None:
        g.add((node, CG.value, Literal(p.value)))
    g.add((node, CG.negated, Literal(p.negated)))
    _add_span(g, node, p.source)


def to_rdf(
    graph: ConstraintGraph, premises: Sequence[Premise] = (), *, base: str | None = None
) -> Graph:
    """Build the RDF graph (see the module docstring); ``base`` overrides the IRI base."""
    ns = Namespace(base or default_base(graph))
    g = Graph()
    g.bind("cg", CG)
    g.bind("node", ns)
    root = ns["graph"]
    g.add((root, RDF.type, CG.ConstraintGraph))
    inactive = set(graph.inactive)
    for c in graph.constraints:
        node = ns[c.id]
        g.add((root, CG.hasConstraint, node))
        _add_constraint(g, node, c, c.id not in inactive)
    for p in premises:
        node = ns[p.id]
        g.add((root, CG.hasPremise, node))
        _add_premise(g, node, p)
    for i, edge in enumerate(graph.edges, start=1):
        s, o, pred = ns[edge.source], ns[edge.target], CG[edge.relation.value]
        g.add((s, pred, o))
        statement = ns[f"edge{i}"]
        g.add((statement, RDF.type, RDF.Statement))
        g.add((statement, RDF.subject, s))
        g.add((statement, RDF.predicate, pred))
        g.add((statement, RDF.object, o))
        g.add((statement, CG.reason, Literal(edge.reason)))
        g.add((statement, CG.edgeOrigin, Literal(edge.origin)))
    for i, conflict in enumerate(graph.conflicts, start=1):
        node = ns[f"conflict{i}"]
        g.add((root, CG.hasConflict, node))
        g.add((node, RDF.type, CG.Conflict))
        g.add((node, CG.between, ns[conflict.a]))
        g.add((node, CG.between, ns[conflict.b]))
        g.add((node, CG.reason, Literal(conflict.reason)))
    return g
