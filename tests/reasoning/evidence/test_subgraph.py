"""k-hop expansion, ranking, token budget, dates and time windows on a small hand-made graph."""

from __future__ import annotations

from datetime import date

import pytest

from reasoning.errors import InvalidInput
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import EvidenceSubgraph, LinkedEntity
from reasoning.evidence.subgraph import (
    apply_time_window,
    build_evidence,
    estimate_tokens,
    facts_about,
)

EX = "https://example.org/t#"
HUB_LEAVES = "\n".join(f"ex:hub ex:link ex:h{i} ." for i in range(20))
GRAPH = f"""@prefix ex: <{EX}> .
@prefix tv: <https://tenet.dev/ns/views#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
@prefix dcterms: <http://purl.org/dc/terms/> .
ex:a rdfs:label "Alpha" ; a ex:Kind ; ex:link ex:b ; ex:strong ex:s ; ex:weak ex:w ;
    ex:link ex:hub ; ex:onList ex:list .
ex:b rdfs:label "Bravo" ; ex:link ex:c .
ex:c rdfs:label "Charlie" ; ex:link ex:d .
ex:d rdfs:label "Delta" .
ex:s rdfs:label "Sierra" ; ex:since "2021-06-01"^^xsd:date .
ex:w rdfs:label "Whiskey" ; ex:since "2018-03-01"^^xsd:date .
ex:other a ex:Kind ; rdfs:label "Other" ; ex:link ex:o2 .
ex:list rdfs:label "Watch list" ; dcterms:modified "2024-05-11"^^xsd:date .
{HUB_LEAVES}
ex:profile a tv:Domain ; tv:effectiveDateProperty ex:since ; tv:freshnessVia ex:onList .
ex:main a tv:View ; tv:name "main" ;
    tv:includesProperty ex:link , ex:strong , ex:weak , ex:since , ex:onList ;
    tv:includesClass ex:Kind ;
    tv:relationWeight [ tv:onProperty ex:strong ; tv:weight 1.0 ] ,
        [ tv:onProperty ex:weak ; tv:weight 0.2 ] ;
    tv:defaultWeight 0.5 .
ex:narrow a tv:View ; tv:name "narrow" ; tv:includesProperty ex:strong .
"""
TODAY = date(2026, 11, 29)


@pytest.fixture(scope="module")
def index() -> OntologyIndex:
    return ingest_ontology(GRAPH.encode(), "text/turtle").index.with_version("t-1")


def seed(name: str, score: float = 1.0) -> LinkedEntity:
    return LinkedEntity(iri=EX + name, label=name, mention=name, start=0, end=len(name),
                        score=score)


def view(graphs: tuple[EvidenceSubgraph, ...], name: str) -> EvidenceSubgraph:
    return next(g for g in graphs if g.view == name)


def triples(graph: EvidenceSubgraph) -> set[tuple[str, str, str]]:
    short = lambda v: v.replace(EX, "")
    return {(short(f.subject), short(f.predicate), short(f.object)) for f in graph.facts}


def test_k_hop_expansion_reaches_exactly_k_steps(index: OntologyIndex) -> None:
    reach = {}
    for hops in (1, 2, 3):
        graphs = build_evidence(index, [seed("a")], hops=hops, token_budget=10_000,
                                views=["main"], today=TODAY, hub_degree=5)
        reach[hops] = triples(view(graphs, "main"))
    assert ("a", "link", "b") in reach[1] and ("b", "link", "c") not in reach[1]
    assert ("b", "link", "c") in reach[2] and ("c", "link", "d") not in reach[2]
    assert ("c", "link", "d") in reach[3]
    assert reach[1] < reach[2] < reach[3]
    assert {f.hops for f in view(build_evidence(
        index, [seed("a")], hops=3, token_budget=10_000, views=["main"], today=TODAY,
        hub_degree=5), "main").facts} == {1, 2, 3}


def test_type_edges_are_not_followed_back_to_siblings(index: OntologyIndex) -> None:
    graphs = build_evidence(index, [seed("a")], hops=3, token_budget=10_000, views=["main"],
                            today=TODAY)
    found = triples(view(graphs, "main"))
    assert ("a", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type", "Kind") in found
    assert not any(s == "other" for s, _, _ in found)


def test_hubs_are_reached_but_not_expanded(index: OntologyIndex) -> None:
    small = build_evidence(index, [seed("a")], hops=2, token_budget=10_000, views=["main"],
                           today=TODAY, hub_degree=5)
    large = build_evidence(index, [seed("a")], hops=2, token_budget=10_000, views=["main"],
                           today=TODAY, hub_degree=100)
    assert ("a", "link", "hub") in triples(view(small, "main"))
    assert not any(s == "hub" for s, _, _ in triples(view(small, "main")))
    assert sum(1 for s, _, _ in triples(view(large, "main")) if s == "hub") == 20


def test_ranking_prefers_heavy_relations_short_paths_and_specific_neighbours(
    index: OntologyIndex,
) -> None:
    graphs = build_evidence(index, [seed("a")], hops=2, token_budget=10_000, views=["main"],
                            today=TODAY, hub_degree=100)
    scores = {(f.subject.replace(EX, ""), f.object.replace(EX, "")): f.score
              for f in view(graphs, "main").facts}
    assert scores[("a", "s")] > scores[("a", "b")] > scores[("a", "w")]
    assert scores[("a", "b")] > scores[("b", "c")]
    assert scores[("a", "b")] > scores[("a", "hub")]
    facts = view(graphs, "main").facts
    assert [f.score for f in facts] == sorted((f.score for f in facts), reverse=True)
    assert facts[0].subject == EX + "a" and facts[0].object == EX + "s"


def test_token_budget_keeps_the_best_facts_within_budget(index: OntologyIndex) -> None:
    full = view(build_evidence(index, [seed("a")], hops=2, token_budget=10_000, views=["main"],
                               today=TODAY), "main")
    budget = sum(estimate_tokens(f.text) for f in full.facts[:3])
    cut = view(build_evidence(index, [seed("a")], hops=2, token_budget=budget, views=["main"],
                              today=TODAY), "main")
    assert sum(estimate_tokens(f.text) for f in cut.facts) <= budget
    assert [f.id for f in cut.facts[:3]] == [f.id for f in full.facts[:3]]
    assert len(cut.facts) < len(full.facts)


def test_freshness_via_a_list_gives_a_stale_hint_relative_to_today(index: OntologyIndex) -> None:
    def listed(today: date) -> str | None:
        graphs = build_evidence(index, [seed("a")], hops=1, token_budget=10_000,
                                views=["main"], today=today)
        fact = next(f for f in view(graphs, "main").facts if f.predicate == EX + "onList")
        assert fact.modified == "2024-05-11"
        return fact.stale_hint

    assert listed(TODAY) == "Watch list last updated 2024-05-11"
    assert listed(date(2024, 6, 1)) is None


def test_time_window_drops_facts_outside_and_keeps_undated(index: OntologyIndex) -> None:
    graphs = build_evidence(index, [seed("a")], hops=1, token_budget=10_000, views=["main"],
                            today=TODAY)
    effective = {f.object.replace(EX, ""): f.effective for f in view(graphs, "main").facts}
    assert effective["s"] == "2021-06-01" and effective["w"] == "2018-03-01"
    windowed = view(apply_time_window(graphs, date(2020, 1, 1)), "main")
    objects = {f.object.replace(EX, "") for f in windowed.facts}
    assert "s" in objects and "w" not in objects and "b" in objects
    upper = view(apply_time_window(graphs, None, date(2019, 1, 1)), "main")
    assert {"w", "b"} <= {f.object.replace(EX, "") for f in upper.facts}
    assert "s" not in {f.object.replace(EX, "") for f in upper.facts}


def test_fact_ids_are_shared_across_views_and_stable(index: OntologyIndex) -> None:
    first = build_evidence(index, [seed("a")], hops=2, token_budget=10_000, today=TODAY)
    second = build_evidence(index, [seed("a")], hops=2, token_budget=10_000, today=TODAY)
    assert first == second
    strong_main = next(f for f in view(first, "main").facts if f.predicate == EX + "strong")
    [strong_narrow] = view(first, "narrow").facts
    assert strong_main.id == strong_narrow.id
    ids = [f.id for g in first for f in g.facts]
    assert all(i.startswith("E") for i in ids)
    assert all(f.ontology_version == "t-1" for g in first for f in g.facts)


def test_no_seeds_give_empty_subgraphs(index: OntologyIndex) -> None:
    graphs = build_evidence(index, [], hops=2, token_budget=100, today=TODAY)
    assert {g.view for g in graphs} == {"main", "narrow"}
    assert all(g.facts == () and g.relevance == 0.0 for g in graphs)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"hops": 0}, "hops"), ({"hops": 9}, "hops"), ({"token_budget": 0}, "token_budget"),
     ({"views": ["missing"]}, "missing")],
)
def test_bad_parameters_are_refused(index: OntologyIndex, kwargs: dict[str, object],
                                    needle: str) -> None:
    params: dict[str, object] = {"hops": 2, "token_budget": 100, "today": TODAY, **kwargs}
    with pytest.raises(InvalidInput, match=needle):
        build_evidence(index, [seed("a")], **params)  # type: ignore[arg-type]


def test_token_estimate_counts_chinese_characters() -> None:
    assert estimate_tokens("磨玻璃影") == 4
    assert estimate_tokens("ground glass") == 3
    assert estimate_tokens("") == 1


BILINGUAL = f"""@prefix ex: <{EX}> .
@prefix tv: <https://tenet.dev/ns/views#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:r rdfs:label "Rule R"@en , "规则R"@zh ; ex:text "Large transfers are reported."@en ,
    "大额转账须报告。"@zh ; ex:note "Only said in English."@en ; ex:link ex:a .
ex:a rdfs:label "Alpha" .
ex:main a tv:View ; tv:name "main" ; tv:includesProperty ex:text , ex:note , ex:link .
"""


@pytest.mark.parametrize(("lang", "shown", "hidden"), [
    ("en", "Large transfers are reported.", "大额转账须报告。"),
    ("zh", "大额转账须报告。", "Large transfers are reported."),
])
def test_a_text_given_in_several_languages_is_shown_in_the_requests_only(
        lang: str, shown: str, hidden: str) -> None:
    bilingual = ingest_ontology(BILINGUAL.encode(), "text/turtle").index.with_version("b-1")
    graphs = build_evidence(bilingual, [seed("r")], hops=1, token_budget=10_000, lang=lang, today=TODAY)
    objects = [f.object for g in graphs for f in g.facts]
    assert any(shown in o for o in objects) and not any(hidden in o for o in objects)
    # A text in one language only is shown whatever the request's language.
    assert any("Only said in English." in o for o in objects)
    about = facts_about(bilingual, EX + "r", first_id=1, view="rules", today=TODAY, lang=lang, limit=3)
    assert any(shown in f.object for f in about) and not any(hidden in f.object for f in about)
