"""Exports parse back: node-link with networkx, Turtle and JSON-LD with rdflib."""

from __future__ import annotations

import json

import networkx as nx
import pytest
import rdflib.namespace as rdfns
from rdflib import RDF, Graph, Literal, URIRef
from rdflib.compare import isomorphic
from rdflib.namespace import OWL, RDFS

from reasoning.constraints.model import Constraint, Hardness, Kind, Premise, Span
from reasoning.graph import build_graph, node_link, to_jsonld, to_networkx, to_turtle
from reasoning.graph.rdf import CG, to_rdf
from reasoning.graph.vocabulary import PARAM_PROPERTIES, VOCABULARY_PATH, class_name

PROMPT = "Answer in English. 必须用中文回答. Use under 50 words, at most 100 words; cite nothing before 2020."


def _span(text: str) -> Span:
    start = PROMPT.index(text)
    return Span(start=start, end=start + len(text), text=text)


@pytest.fixture(scope="module")
def graph_and_premises() -> tuple[object, tuple[Premise, ...]]:
    constraints = [
        Constraint(
            id="c1",
            kind=Kind.RESPONSE_LANGUAGE,
            params={"language": "en"},
            source=_span("Answer in English"),
        ),
        Constraint(
            id="c2",
            kind=Kind.RESPONSE_LANGUAGE,
            params={"language": "zh"},
            source=_span("必须用中文回答"),
        ),
        Constraint(
            id="c3",
            kind=Kind.WORD_COUNT,
            params={"relation": "less than", "n": 50},
            source=_span("under 50 words"),
        ),
        Constraint(
            id="c4",
            kind=Kind.WORD_COUNT,
            params={"relation": "at most", "n": 100},
            hardness=Hardness.SOFT,
            source=_span("at most 100 words"),
        ),
        Constraint(
            id="c5",
            kind=Kind.CITATION_TIME_WINDOW,
            params={"not_before": "2020-01-01"},
            source=_span("cite nothing before 2020"),
        ),
        Constraint(id="c6", kind=Kind.JSON_FORMAT, params={"schema": {"type": "object"}}),
    ]
    premises = (Premise(id="p1", text="assume a tax rate of 20%", topic="tax rate", value="20%"),)
    return build_graph(constraints, prompt=PROMPT), premises


def test_node_link_round_trips_through_networkx(graph_and_premises) -> None:  # type: ignore[no-untyped-def]
    graph, premises = graph_and_premises
    data = json.loads(json.dumps(node_link(graph, premises)))
    g = nx.node_link_graph(data, directed=True, multigraph=True, edges="edges")
    assert isinstance(g, nx.MultiDiGraph)
    assert set(g.nodes) == {"c1", "c2", "c3", "c4", "c5", "c6", "p1"}
    assert g.nodes["p1"]["type"] == "premise"
    assert g.nodes["c2"]["source"]["text"] == "必须用中文回答"
    assert g.has_edge("c1", "c2", key="excludes")
    assert g.has_edge("c3", "c4", key="entails")
    assert g.graph["conflicts"] == [{"a": "c1", "b": "c2", "reason": graph.conflicts[0].reason}]
    assert nx.utils.graphs_equal(g, to_networkx(graph, premises))


def test_turtle_parses_back_with_every_constraint_edge_and_conflict(graph_and_premises) -> None:  # type: ignore[no-untyped-def]
    graph, premises = graph_and_premises
    g = Graph().parse(data=to_turtle(graph, premises, base="urn:test:"), format="turtle")
    node = URIRef("urn:test:c5")
    assert (node, RDF.type, CG.CitationTimeWindow) in g
    assert (node, CG.notBefore, Literal("2020-01-01", datatype=rdfns.XSD.date)) in g
    assert (node, CG.sourceText, Literal("cite nothing before 2020")) in g
    assert (URIRef("urn:test:c1"), CG.excludes, URIRef("urn:test:c2")) in g
    assert (URIRef("urn:test:c4"), CG.hardness, CG.soft) in g
    assert (URIRef("urn:test:p1"), RDF.type, CG.Premise) in g
    reasons = {str(o) for s in g.subjects(RDF.type, RDF.Statement) for o in g.objects(s, CG.reason)}
    assert len(reasons) == len({e.reason for e in graph.edges})
    conflicts = list(g.subjects(RDF.type, CG.Conflict))
    assert len(conflicts) == 1
    assert set(g.objects(conflicts[0], CG.between)) == {
        URIRef("urn:test:c1"),
        URIRef("urn:test:c2"),
    }
    params = json.loads(str(g.value(URIRef("urn:test:c6"), CG.params)))
    assert params == {"schema": {"type": "object"}}


def test_jsonld_parses_back_to_the_same_triples(graph_and_premises) -> None:  # type: ignore[no-untyped-def]
    graph, premises = graph_and_premises
    text = to_jsonld(graph, premises, base="urn:test:")
    doc = json.loads(text)
    assert doc["@context"]["cg"] == str(CG)
    parsed = Graph().parse(data=text, format="json-ld")
    expected = to_rdf(graph, premises, base="urn:test:")
    assert isomorphic(parsed, expected)


def test_default_base_is_stable_per_content(graph_and_premises) -> None:  # type: ignore[no-untyped-def]
    graph, premises = graph_and_premises
    assert to_turtle(graph, premises) == to_turtle(graph, premises)


def test_vocabulary_declares_every_term_the_export_uses(graph_and_premises) -> None:  # type: ignore[no-untyped-def]
    vocab = Graph().parse(VOCABULARY_PATH)
    declared = {s for s in vocab.subjects() if isinstance(s, URIRef) and str(s).startswith(str(CG))}
    for kind in Kind:
        cls = CG[class_name(kind)]
        assert (cls, RDF.type, OWL.Class) in vocab
        assert (cls, RDFS.subClassOf, CG.Constraint) in vocab
        assert vocab.value(cls, RDFS.comment) is not None
    for prop in set(PARAM_PROPERTIES.values()):
        assert CG[prop] in declared, prop
    graph, premises = graph_and_premises
    used = {
        t
        for triple in to_rdf(graph, premises)
        for t in triple
        if isinstance(t, URIRef) and str(t).startswith(str(CG))
    }
    assert used <= declared, used - declared
    for term in declared:
        assert vocab.value(term, RDFS.label) is not None, term
