"""Evidence subgraphs as RDF (Turtle), for clients that want the graph itself.

Each fact becomes an ``rdf:Statement`` (standard RDF reification) carrying
its id, view, score, hops and dates, derived from its ontology version; the
source triples themselves are included, so the document is both the
evidence and its provenance.
"""

from __future__ import annotations

from collections.abc import Iterable

from rdflib import RDF, Graph, Literal, Namespace, URIRef
from rdflib.namespace import DCTERMS, PROV, XSD
from rdflib.util import from_n3

from reasoning.evidence.model import EvidenceSubgraph
from reasoning.evidence.terms import TV

__all__ = ["EV", "subgraphs_to_turtle"]

EV = Namespace("https://tenet.dev/ns/evidence#")


def subgraphs_to_turtle(subgraphs: Iterable[EvidenceSubgraph], *, run: str = "query") -> str:
    """A Turtle document of the subgraphs' source triples and their evidence facts."""
    graph = Graph()
    graph.bind("ev", EV)
    graph.bind("tv", Namespace(TV))
    graph.bind("prov", PROV)
    graph.bind("dcterms", DCTERMS)
    for sub in subgraphs:
        view = URIRef(f"urn:tenet:evidence:{run}:view:{sub.view}")
        graph.add((view, RDF.type, EV.Subgraph))
        graph.add((view, EV.view, Literal(sub.view)))
        graph.add((view, EV.relevance, Literal(sub.relevance, datatype=XSD.decimal)))
        for seed in sub.seeds:
            graph.add((view, EV.seed, URIRef(seed)))
        for fact in sub.facts:
            subject, predicate = URIRef(fact.subject), URIRef(fact.predicate)
            obj = from_n3(fact.object) if fact.object.startswith('"') else URIRef(fact.object)
            graph.add((subject, predicate, obj))  # type: ignore[arg-type]
            node = URIRef(f"urn:tenet:evidence:{run}:{fact.id}")
            graph.add((view, EV.fact, node))
            graph.add((node, RDF.type, RDF.Statement))
            graph.add((node, RDF.subject, subject))
            graph.add((node, RDF.predicate, predicate))
            graph.add((node, RDF.object, obj))  # type: ignore[arg-type]
            graph.add((node, EV.id, Literal(fact.id)))
            graph.add((node, EV.text, Literal(fact.text)))
            graph.add((node, EV.score, Literal(fact.score, datatype=XSD.decimal)))
            graph.add((node, EV.hops, Literal(fact.hops)))
            graph.add((node, PROV.wasDerivedFrom,
                       URIRef(f"urn:tenet:ontology-version:{fact.ontology_version}")))
            if fact.modified:
                graph.add((node, DCTERMS.modified, Literal(fact.modified, datatype=XSD.date)))
            if fact.effective:
                graph.add((node, EV.effective, Literal(fact.effective, datatype=XSD.date)))
            if fact.stale_hint:
                graph.add((node, EV.staleHint, Literal(fact.stale_hint)))
    return graph.serialize(format="turtle")
