"""POST /v1/evidence/query end to end on the bundled domains (SCENARIOS.md flows 1 and 3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from rdflib import Graph, Namespace

from tests.conftest import load_bundled

URL = "/v1/evidence/query"
Client = AsyncTestClient[Litestar]
Problem = Callable[[Any, int], dict[str, Any]]
AML = "https://tenet.dev/ontologies/aml#"
CLIN = "https://tenet.dev/ontologies/clinical#"
AML_PROMPT = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on "
    "our PEP list. Should this be escalated? Answer in under 80 words, cite the rules you rely "
    "on, and do not cite rules in force before 2020."
)


@pytest.fixture
async def acme_reason(app: Litestar, make_key: Any) -> dict[str, str]:
    """Headers of a ``reason`` key of tenant acme, which has the bundled domains."""
    await load_bundled(app, "acme")
    headers: dict[str, str] = await make_key("acme", ["reason"])
    return headers


def facts(payload: dict[str, Any], view: str) -> list[dict[str, Any]]:
    [graph] = [g for g in payload["subgraphs"] if g["view"] == view]
    return list(graph["facts"])


async def test_bundled_domains_load_once_per_tenant(client: Client, app: Litestar,
                                                    make_key: Any) -> None:
    await load_bundled(app, "acme")
    await load_bundled(app, "acme")
    headers = await make_key("acme", ["ontology:read"])
    listed = (await client.get("/v1/ontologies", headers=headers)).json()["data"]
    assert sorted(v["domain"] for v in listed) == ["aml", "clinical"]
    assert all(v["current"] for v in listed)


async def test_clinical_query_links_finding_and_anatomy_with_dated_guidelines(
    client: Client, acme_reason: dict[str, str],
) -> None:
    response = await client.post(URL, headers=acme_reason, json={
        "text": "ground-glass opacity in the right lower lobe", "domain": "clinical",
        "hops": 2, "today": "2026-11-29",
    })
    assert response.status_code == 200, response.text
    payload = response.json()
    linked = {e["iri"]: e for e in payload["linked"]}
    assert set(linked) == {CLIN + "GroundGlassOpacity", CLIN + "RightLowerLobe"}
    assert linked[CLIN + "GroundGlassOpacity"]["mention"] == "ground-glass opacity"
    assert {g["view"] for g in payload["subgraphs"]} == {"findings", "anatomy", "guidelines"}
    guideline_facts = facts(payload, "guidelines")
    addressed = {f["subject"] for f in guideline_facts
                 if f["predicate"] == CLIN + "addressesFinding"
                 and f["object"] == CLIN + "GroundGlassOpacity"}
    assert {CLIN + "rec-F2017-pure-ggn", CLIN + "rec-BTS2015-ggo"} <= addressed
    dated = {f["subject"]: f for f in guideline_facts if f["subject"] == CLIN + "rec-F2017-pure-ggn"}
    fleischner = dated[CLIN + "rec-F2017-pure-ggn"]
    assert fleischner["effective"] == "2017-02-23"
    assert fleischner["modified"] == "2017-07-01"
    assert fleischner["stale_hint"] == "Fleischner Society 2017 guidelines last updated 2017-07-01"
    assert any(f["subject"] == CLIN + "RightLowerLobe" and f["object"] == CLIN + "RightLung"
               for f in facts(payload, "anatomy"))
    assert all(f["ontology_version"] == payload["ontology_version"]
               for g in payload["subgraphs"] for f in g["facts"])


async def test_aml_prompt_links_parties_and_list_and_marks_the_stale_pep_list(
    client: Client, app: Litestar, make_key: Any,
) -> None:
    await load_bundled(app, "acme")
    headers = await make_key("acme", ["ontology:read"])
    response = await client.post(URL, headers=headers, json={
        "text": AML_PROMPT, "domain": "aml", "today": "2026-11-29",
    })
    assert response.status_code == 200, response.text
    payload = response.json()
    linked = {e["iri"] for e in payload["linked"]}
    assert {AML + "AcmeLtd", AML + "JonDoe", AML + "pepList", AML + "CY"} <= linked
    assert {g["view"] for g in payload["subgraphs"]} == {"compliance", "fund_flow",
                                                        "entity_relations"}
    compliance = facts(payload, "compliance")
    listed = next(f for f in compliance if f["predicate"] == AML + "listedOn")
    assert listed["subject"] == AML + "JonDoe"
    assert listed["stale_hint"] == "PEP list last updated 2024-05-11"
    assert any(f["subject"] == AML + "JonDoe" and f["predicate"] == AML + "subjectToRule"
               and f["object"] == AML + "AML-R-017" for f in compliance), "OWL 2 RL chain"
    rules = {f["subject"]: f["effective"] for f in compliance if f["effective"]}
    assert rules[AML + "AML-R-017"] == "2021-03-01"
    assert rules[AML + "AML-R-011"] == "2018-01-10"
    flow = facts(payload, "fund_flow")
    assert any(f["subject"] == AML + "AcmeLtd" and f["predicate"] == AML + "sentFundsTo"
               and f["object"] == AML + "JonDoe" for f in flow), "inferred by OWL 2 RL"
    ids = [f["id"] for g in payload["subgraphs"] for f in g["facts"]]
    by_id: dict[str, tuple[str, str, str]] = {}
    for graph in payload["subgraphs"]:
        for f in graph["facts"]:
            triple = (f["subject"], f["predicate"], f["object"])
            assert by_id.setdefault(f["id"], triple) == triple
    assert all(i.startswith("E") for i in ids)


async def test_chinese_query_links_chinese_labels_and_renders_chinese(
    client: Client, acme_reason: dict[str, str],
) -> None:
    response = await client.post(URL, headers=acme_reason, json={
        "text": "阿克米有限公司向乔恩·多伊转账200万欧元，他在我们的政治公众人物名单上。",
        "domain": "aml", "views": ["compliance"], "today": "2026-11-29",
    })
    assert response.status_code == 200, response.text
    payload = response.json()
    linked = {e["iri"]: e for e in payload["linked"]}
    assert {AML + "AcmeLtd", AML + "JonDoe", AML + "pepList"} <= set(linked)
    assert linked[AML + "pepList"]["label"] == "政治公众人物名单"
    [graph] = payload["subgraphs"]
    assert graph["view"] == "compliance"
    assert any("政治公众人物名单" in f["text"] for f in graph["facts"])


async def test_turtle_format_returns_parseable_rdf_statements(
    client: Client, acme_reason: dict[str, str],
) -> None:
    response = await client.post(URL, headers=acme_reason, json={
        "text": "right lower lobe", "domain": "clinical", "format": "turtle", "hops": 1,
    })
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/turtle")
    graph = Graph().parse(data=response.text, format="turtle")
    ev = Namespace("https://tenet.dev/ns/evidence#")
    clin = Namespace(CLIN)
    assert (clin.RightLowerLobe, clin.partOf, clin.RightLung) in graph
    assert len(set(graph.subjects(ev.id, None))) >= 1


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"text": "right lower lobe", "domain": "cardiology"}, 404, "cardiology"),
        ({"text": "right lower lobe", "domain": "clinical", "views": ["nope"]}, 400, "nope"),
        ({"text": "right lower lobe", "domain": "clinical", "hops": 9}, 400, "hops"),
    ],
    ids=["unknown-domain", "unknown-view", "too-many-hops"],
)
async def test_bad_queries_get_problem_responses(
    client: Client, acme_reason: dict[str, str], assert_problem: Problem,
    body: dict[str, Any], status: int, needle: str,
) -> None:
    problem = assert_problem(await client.post(URL, headers=acme_reason, json=body), status)
    assert needle in str(problem)


async def test_another_tenants_domain_is_not_found(client: Client, app: Litestar,
                                                   make_key: Any, assert_problem: Problem) -> None:
    await load_bundled(app, "acme")
    other = await make_key("globex", ["reason"])
    assert_problem(await client.post(URL, headers=other, json={
        "text": "right lower lobe", "domain": "clinical"}), 404)


async def test_key_without_reason_or_read_scope_is_forbidden(client: Client, make_key: Any,
                                                             assert_problem: Problem) -> None:
    writer = await make_key("acme", ["audit:read"])
    assert_problem(await client.post(URL, headers=writer, json={
        "text": "right lower lobe", "domain": "clinical"}), 403)
