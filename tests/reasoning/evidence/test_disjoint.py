"""``excludes`` edges from ``owl:disjointWith`` in an uploaded ontology (real ingest, real linking)."""

from __future__ import annotations

import pytest

from reasoning.analysis import Status, analyse
from reasoning.constraints.model import Constraint, Kind
from reasoning.evidence.disjoint import disjointness_edges
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology
from reasoning.graph import EdgeKind

REGIMES = b"""@prefix ex: <https://example.org/reg#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
ex:EURegime a owl:Class ; rdfs:label "EU regime"@en .
ex:USRegime a owl:Class ; rdfs:label "US regime"@en ; owl:disjointWith ex:EURegime .
ex:GermanRegime a owl:Class ; rdfs:subClassOf ex:EURegime ; rdfs:label "German regime"@en .
ex:CommonLaw a owl:Class ; rdfs:label "common law"@en .
ex:EU a ex:EURegime ; rdfs:label "European Union"@en , "\xe6\xac\xa7\xe7\x9b\x9f"@zh ; skos:altLabel "EU"@en .
ex:DE a ex:GermanRegime ; rdfs:label "Germany"@en ; skos:altLabel "DE"@en .
ex:US a ex:USRegime ; rdfs:label "United States"@en , "\xe7\xbe\x8e\xe5\x9b\xbd"@zh ; skos:altLabel "US"@en .
ex:GB a ex:CommonLaw ; rdfs:label "United Kingdom"@en ; skos:altLabel "GB"@en .
"""


@pytest.fixture(scope="module")
def index() -> OntologyIndex:
    return ingest_ontology(REGIMES, "text/turtle").index.with_version("regimes-v1")


def _jurisdictions(*codes: str) -> list[Constraint]:
    return [Constraint(id=f"c{i}", kind=Kind.JURISDICTION, params={"code": code})
            for i, code in enumerate(codes, 1)]


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        (("EU", "US"), [("c1", "c2")]),
        (("US", "DE"), [("c1", "c2")]),
        (("EU", "DE"), []),
        (("EU", "GB"), []),
        (("EU", "EU"), []),
        (("EU", "XX"), []),
        (("EU",), []),
    ],
    ids=["declared", "through-an-inferred-superclass", "same-regime", "not-declared",
         "same-term", "unknown-code", "one-constraint"],
)
def test_disjoint_terms_give_one_excludes_edge(
    index: OntologyIndex, codes: tuple[str, ...], expected: list[tuple[str, str]],
) -> None:
    edges = disjointness_edges(index, _jurisdictions(*codes))
    assert [(e.source, e.target) for e in edges] == expected
    for edge in edges:
        assert edge.relation is EdgeKind.EXCLUDES and edge.origin == "ontology"
        assert "owl:disjointWith" in edge.reason and "regimes-v1" in edge.reason


def test_the_reason_names_the_terms_and_the_disjoint_classes(index: OntologyIndex) -> None:
    [edge] = disjointness_edges(index, _jurisdictions("US", "DE"))
    assert "US regime" in edge.reason and "EU regime" in edge.reason
    assert "United States" in edge.reason and "Germany" in edge.reason


def test_other_kinds_are_left_alone(index: OntologyIndex) -> None:
    constraints = [Constraint(id="c1", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["EU"]}),
                   Constraint(id="c2", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["US"]})]
    assert disjointness_edges(index, constraints) == []


def test_analyse_turns_two_disjoint_jurisdictions_into_a_conflict(index: OntologyIndex) -> None:
    prompt = "请依据欧盟的法律并根据美国的法规回答。"
    plain = analyse(prompt, cache=None)
    assert sorted(c.params["code"] for c in plain.constraints if c.kind is Kind.JURISDICTION) == [
        "EU", "US"]
    assert plain.status is Status.OK
    result = analyse(prompt, cache=None, domain_index=index)
    assert result.status is Status.NEEDS_CONFIRMATION
    [conflict] = result.graph.conflicts
    assert "owl:disjointWith" in conflict.reason

