"""POST /v1/constraints end to end: real app, real extraction, real graph, over HTTP."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import networkx as nx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from rdflib import Graph

URL = "/v1/constraints"
Client = AsyncTestClient[Litestar]


async def post(client: Client, headers: dict[str, str], body: Any) -> Any:
    return await client.post(URL, json=body, headers=headers)


def by_kind(payload: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in payload["constraints"] if c["kind"] == kind]


async def test_chinese_prompt_gives_hard_language_and_citation_window(
    client: Client, make_key: Any
) -> None:
    headers = await make_key("acme", ["reason"])
    response = await post(client, headers, {"prompt": "必须用中文回答。禁止引用2020年前文献。"})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["status"] == "ok"
    assert payload["language"] == "zh"
    [lang] = by_kind(payload, "response_language")
    assert lang["params"] == {"language": "zh"} and lang["hardness"] == "hard"
    [window] = by_kind(payload, "citation_time_window")
    assert window["params"]["not_before"] == "2020-01-01"
    assert payload["conflicts"] == []
    assert {"extract", "graph"} <= set(payload["timings"]) <= {"parse", "extract", "graph"}
    assert payload["cached"] is False
    entropy = payload["entropy"]
    assert 0.0 <= entropy["score"] <= 1.0
    assert sum(entropy["breakdown"].values()) == pytest.approx(entropy["score"])
    assert set(payload["budget"]) == {
        "beam_width",
        "max_new_tokens",
        "evidence_hops",
        "counterfactual_checks",
    }
    graph = nx.node_link_graph(payload["graph"], directed=True, multigraph=True, edges="edges")
    assert {n for n, d in graph.nodes(data=True) if d["type"] == "constraint"} == {
        c["id"] for c in payload["constraints"]
    }


async def test_english_and_chinese_language_instructions_need_confirmation(
    client: Client, make_key: Any
) -> None:
    headers = await make_key("acme", ["reason"])
    prompt = "Answer in English. 必须用中文回答"
    response = await post(client, headers, {"prompt": prompt})
    assert response.status_code == 200, response.text
    payload = response.json()
    assert payload["status"] == "needs_confirmation"
    [conflict] = payload["conflicts"]
    ids = {c["id"]: c for c in payload["constraints"]}
    assert {ids[conflict["a"]]["params"]["language"], ids[conflict["b"]]["params"]["language"]} == {
        "en",
        "zh",
    }
    spans = conflict["spans"]
    assert all(prompt[s["start"] : s["end"]] == s["text"] for s in spans)
    assert any("中文" in s["text"] for s in spans) and any("English" in s["text"] for s in spans)
    assert payload["entropy"]["breakdown"]["conflicts"] > 0


async def test_profile_default_gives_way_to_the_user(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    body = {
        "prompt": "Write a haiku about rivers, all in lowercase letters.",
        "profile": {"defaults": [{"kind": "all_capitals", "params": {}, "hardness": "hard"}]},
    }
    payload = (await post(client, headers, body)).json()
    assert payload["status"] == "ok"
    [default] = [c for c in payload["constraints"] if c["origin"] == "profile"]
    [lower] = by_kind(payload, "all_lowercase")
    assert default["kind"] == "all_capitals"
    assert payload["inactive"] == [default["id"]]
    overrides = [e for e in payload["graph"]["edges"] if e["relation"] == "overrides"]
    assert [(e["source"], e["target"]) for e in overrides] == [(lower["id"], default["id"])]


@pytest.mark.parametrize("graph_format", ["turtle", "jsonld"])
async def test_rdf_formats_parse_back(client: Client, make_key: Any, graph_format: str) -> None:
    headers = await make_key("acme", ["reason"])
    body = {
        "prompt": "Use exactly 3 bullet points; the word 'risk' must appear at least twice.",
        "graph_format": graph_format,
    }
    payload = (await post(client, headers, body)).json()
    assert payload["graph_format"] == graph_format
    assert isinstance(payload["graph"], str)
    rdf = Graph().parse(
        data=payload["graph"], format="turtle" if graph_format == "turtle" else "json-ld"
    )
    kinds = {str(o) for o in rdf.objects(None, rdf.namespace_manager.expand_curie("cg:kindName"))}
    assert kinds == {c["kind"] for c in payload["constraints"]}
    assert {"bullet_count", "keyword_frequency"} <= kinds


async def test_unauthenticated_request_is_401_problem(client: Client) -> None:
    response = await client.post(URL, json={"prompt": "hello"})
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("application/problem+json")


async def test_key_without_reason_scope_is_403(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["audit:read"])
    response = await post(client, headers, {"prompt": "hello"})
    assert response.status_code == 403


BAD_BODIES = [
    ({"prompt": ""}, 400),
    ({"prompt": "   \n "}, 400),
    ({"prompt": "x" * 8001}, 413),
    ({"prompt": 42}, 400),
    ({}, 400),
    ({"prompt": "hi", "graph_format": "xml"}, 400),
    ({"prompt": "hi", "profile": {"defaults": [{"kind": "be_nice", "params": {}}]}}, 400),
    ({"prompt": "hi", "profile": {"defaults": [{"kind": "no_comma", "hardness": "maybe"}]}}, 400),
    ({"prompt": "hi", "unexpected": True}, 400),
    ({"prompt": "hi", "profile": {"defaults": [{"kind": "word_count", "params": {"n": 50}}]}}, 400),
    (
        {
            "prompt": "hi",
            "profile": {
                "defaults": [{"kind": "word_count", "params": {"relation": "about", "n": 5}}]
            },
        },
        400,
    ),
    (
        {"prompt": "hi", "profile": {"defaults": [{"kind": "bullet_count", "params": {"n": -1}}]}},
        400,
    ),
    (
        {
            "prompt": "hi",
            "profile": {"defaults": [{"kind": "forbidden_words", "params": {"words": []}}]},
        },
        400,
    ),
    (
        {
            "prompt": "hi",
            "profile": {
                "defaults": [{"kind": "citation_time_window", "params": {"not_before": "2020"}}]
            },
        },
        400,
    ),
]


@pytest.mark.parametrize(("body", "status"), BAD_BODIES)
async def test_bad_input_is_a_problem_response(
    client: Client, make_key: Any, body: Any, status: int
) -> None:
    headers = await make_key("acme", ["reason"])
    response = await post(client, headers, body)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["status"] == status and problem["detail"]
    assert "Traceback" not in response.text


async def test_non_json_body_is_400_problem(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    headers = {**headers, "Content-Type": "application/json"}
    response = await client.post(URL, content=b"\xff\xfe not json", headers=headers)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    json.loads(response.text)


async def test_domain_links_mentions_and_counts_unlinked_terms(
    client: Client, make_key: Any
) -> None:
    writer = await make_key("acme", ["ontology:write"])
    turtle = (Path(__file__).resolve().parents[2] / "ontologies" / "aml.ttl").read_bytes()
    upload = await client.post(
        "/v1/ontologies?domain=aml",
        content=turtle,
        headers={**writer, "Content-Type": "text/turtle"},
    )
    assert upload.status_code in (200, 201), upload.text
    headers = await make_key("acme", ["reason"])
    prompt = "Should the transfer from Acme Ltd to Jon Doe, a politically exposed person, be escalated by Zyxcorp?"
    plain = (await post(client, headers, {"prompt": prompt})).json()
    linked = (await post(client, headers, {"prompt": prompt, "domain": "aml"})).json()
    assert plain["linked"] == [] and plain["unlinked_terms"] == 0
    mentions = {m["mention"].lower() for m in linked["linked"]}
    assert "politically exposed person" in mentions
    assert all(prompt[m["start"] : m["end"]] == m["mention"] for m in linked["linked"])
    assert linked["unlinked_terms"] >= 1
    assert linked["entropy"]["features"]["unlinked_terms"] == linked["unlinked_terms"]
    assert linked["entropy"]["score"] > plain["entropy"]["score"]
    assert "link" in linked["timings"]


async def test_unknown_domain_is_404_problem(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    response = await post(client, headers, {"prompt": "Is this a PEP?", "domain": "nowhere"})
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize("graph_format", ["json", "turtle"])
async def test_a_repeated_prompt_gets_the_same_analysis_from_the_cache(
    client: Client, make_key: Any, graph_format: str
) -> None:
    """The first check parses on a worker thread; a repeat of a cached prompt may run inline."""
    headers = await make_key("acme", ["reason"])
    body = {
        # Unique per run: the extraction cache is process-wide.
        "prompt": f"Write a note about case {uuid.uuid4().hex} in fewer than 60 words. End with 'Regards'.",
        "graph_format": graph_format,
    }
    first = await post(client, headers, body)
    second = await post(client, headers, body)
    assert first.status_code == second.status_code == 200, (first.text, second.text)
    a, b = first.json(), second.json()
    assert (a.pop("cached"), b.pop("cached")) == (False, True)
    assert b["timings"]["parse"] == 0.0
    a.pop("timings"), b.pop("timings")
    assert a == b
    assert {c["kind"] for c in a["constraints"]} >= {"word_count", "end_phrase"}


async def test_the_extraction_cache_is_not_shared_between_tenants(client: Client, make_key: Any) -> None:
    """Tenant B sending tenant A's prompt is not told (``cached``, parse time) that A sent it."""
    alice, bob = await make_key("alice", ["reason"]), await make_key("bob", ["reason"])
    body = {"prompt": f"Explain wire {uuid.uuid4().hex} in fewer than 40 words."}
    first, again = await post(client, alice, body), await post(client, alice, body)
    other = await post(client, bob, body)
    assert [r.status_code for r in (first, again, other)] == [200, 200, 200]
    assert [r.json()["cached"] for r in (first, again, other)] == [False, True, False]
    assert other.json()["timings"]["parse"] > 0.0
    assert (await post(client, bob, body)).json()["cached"] is True


async def test_concurrent_checks_of_a_new_prompt_parse_it_once(app: Litestar, make_key: Any) -> None:
    """Requests overlapping the first check of a prompt wait for its parse instead of repeating it."""
    headers = await make_key("acme", ["reason"])
    body = {"prompt": f"Summarise audit {uuid.uuid4().hex} in exactly three bullet points. Do not use commas."}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        responses = await asyncio.gather(*(http.post(URL, json=body, headers=headers) for _ in range(8)))
    assert [r.status_code for r in responses] == [200] * 8
    payloads = [r.json() for r in responses]
    assert sorted(p["cached"] for p in payloads) == [False] + [True] * 7
    for p in payloads:
        p.pop("cached"), p.pop("timings")
    assert all(p == payloads[0] for p in payloads)
