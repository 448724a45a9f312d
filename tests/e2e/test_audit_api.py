"""The compliance officer's flow over HTTP: runs, provenance, export, chain verification.

Runs are recorded through ``store.runs.record_run`` (what every run-producing
endpoint calls) into the real app's database; everything else goes through
the real app over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
import rdflib
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import text

from reasoning.constraints.model import Constraint, Kind, Verdict
from reasoning.evidence.model import EvidenceFact
from reasoning.provenance import (
    ActivitySpan,
    ModelAgent,
    ProvFormat,
    PruningDecision,
    RunKind,
    RunRecord,
    StepTrace,
    parse,
)
from store.db import transaction
from store.keys import get_or_create_tenant
from store.runs import record_run

MakeKey = Callable[[str, list[str]], Awaitable[dict[str, str]]]
Client = AsyncTestClient[Litestar]
T0 = datetime(2026, 4, 1, 10, 0, tzinfo=UTC)


def _record(tenant_id: str, at: datetime, n: int) -> RunRecord:
    return RunRecord(
        tenant_id=tenant_id,
        key_id=None,
        kind=RunKind.REASON,
        status="ok",
        prompt=f"Should transfer {n} be escalated? Answer in under 80 words.",
        started_at=at,
        finished_at=at + timedelta(milliseconds=250),
        result={"answer": f"Escalate transfer {n} [E1]."},
        model=ModelAgent(name="SmolLM2-135M-Instruct", sha256="5a" * 32, dtype="float32"),
        activities=(ActivitySpan(name="decode", started_at=at, ended_at=at + timedelta(milliseconds=200)),),
        constraints=(Constraint(id="C1", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 80}),),
        evidence=(
            EvidenceFact(
                id="E1", subject="aml:Rule12", predicate="aml:requires", object="aml:Escalation",
                text="Rule 12 requires escalation", view="compliance", score=0.9, hops=1,
                ontology_version="aml-2026-03",
            ),
        ),
        steps=(
            StepTrace(id="S1", text=f"Rule 12 applies to transfer {n} [E1].", started_at=at,
                      ended_at=at + timedelta(milliseconds=200), confidence=0.8, evidence_ids=("E1",)),
        ),
        pruning=(PruningDecision(rule="evidence_chain", at=at + timedelta(milliseconds=100), beam=1,
                                 text="Acme is sanctioned.", detail="no supporting evidence"),),
        answer=f"Escalate transfer {n} [E1].",
        verdicts=(Verdict(constraint_id="C1", satisfied=True),),
    )


async def _runs(app: Litestar, tenant: str, n: int, start: datetime = T0) -> list[str]:
    """Record ``n`` runs for the tenant named ``tenant``, one minute apart."""
    runtime = app.state.runtime
    async with transaction(runtime.sessionmaker) as db:
        tenant_id = (await get_or_create_tenant(db, tenant)).id
        ids = [
            (await record_run(db, _record(tenant_id, start + timedelta(minutes=i), i))).id
            for i in range(n)
        ]
    return ids


async def test_a_run_and_its_provenance_in_every_format(app: Litestar, client: Client, make_key: MakeKey) -> None:
    headers = await make_key("bank", ["audit:read"])
    [run_id] = await _runs(app, "bank", 1)
    detail = await client.get(f"/v1/runs/{run_id}", headers=headers)
    assert detail.status_code == 200
    body = detail.json()
    assert body["kind"] == "reason" and body["model"]["sha256"] == "5a" * 32
    assert body["steps"][0]["data"]["evidence_ids"] == ["E1"]
    documents = {}
    schema = (await client.get("/schema/openapi.json")).json()
    documented = schema["paths"]["/v1/runs/{run_id}/provenance"]["get"]["responses"]["200"]["content"]
    for fmt in ProvFormat:
        response = await client.get(f"/v1/runs/{run_id}/provenance", params={"format": fmt.value}, headers=headers)
        assert response.status_code == 200, response.text
        # Each format's media type is documented, and its charset is named once.
        content_type = response.headers["content-type"]
        assert content_type.split(";")[0] in documented and content_type.count("charset") <= 1
        documents[fmt] = parse(response.text, fmt)
    assert documented["application/json"]["schema"]["type"] == "object"  # PROV-JSON, not a string
    reference = documents[ProvFormat.JSON]
    assert documents[ProvFormat.PROVN] == reference
    assert documents[ProvFormat.XML] == reference
    assert documents[ProvFormat.JSONLD] == reference
    assert documents[ProvFormat.TURTLE] == reference.flattened()
    turtle = (await client.get(f"/v1/runs/{run_id}/provenance", params={"format": "ttl"}, headers=headers)).text
    graph = rdflib.Graph().parse(data=turtle, format="turtle")
    model = rdflib.URIRef("urn:tenet:agent:model/" + "5a" * 32)
    assert (model, rdflib.URIRef("urn:tenet:ns#sha256"), rdflib.Literal("5a" * 32)) in graph
    fact = rdflib.URIRef(f"urn:tenet:run:{run_id}/fact/E1")
    assert (fact, rdflib.URIRef("urn:tenet:ns#ontologyVersion"), rdflib.Literal("aml-2026-03")) in graph
    prune = rdflib.URIRef(f"urn:tenet:run:{run_id}/prune/1")
    assert (prune, rdflib.URIRef("urn:tenet:ns#rule"), rdflib.Literal("evidence_chain")) in graph


async def test_scopes_and_tenants_are_enforced(app: Litestar, client: Client, make_key: MakeKey) -> None:
    reader = await make_key("bank", ["audit:read"])
    reasoner = await make_key("bank", ["reason"])
    intruder = await make_key("rival", ["audit:read"])
    [run_id] = await _runs(app, "bank", 1)
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/provenance", "/v1/audit/export", "/v1/audit/verify", "/v1/audit/events"):
        assert (await client.get(path, headers=reader)).status_code == 200, path
        assert (await client.get(path, headers=reasoner)).status_code == 403, path
        assert (await client.get(path)).status_code == 401, path
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/provenance?format=provn"):
        response = await client.get(path, headers=intruder)
        assert response.status_code == 404 and response.headers["content-type"].startswith("application/problem+json")
    assert (await client.get("/v1/runs", headers=intruder)).json() == {"data": [], "next_cursor": None}
    export = await client.get("/v1/audit/export", params={"format": "json"}, headers=intruder)
    assert export.status_code == 200 and json.loads(export.text) == {"prefix": {"bundle": "urn:tenet:bundle:"}, "bundle": {}}
    events = (await client.get("/v1/audit/events", headers=intruder)).json()
    assert events["data"] == []
    verify = (await client.get("/v1/audit/verify", headers=intruder)).json()
    assert verify["intact"] and verify["checked"] == 0
    resumed = await client.get("/v1/audit/export", params={"after_run": run_id}, headers=intruder)
    assert resumed.status_code == 404


@pytest.mark.parametrize("fmt", [f.value for f in ProvFormat])
async def test_a_paged_time_range_export_resumes_with_the_cursor(
    app: Litestar, client: Client, make_key: MakeKey, fmt: str
) -> None:
    headers = await make_key("bank", ["audit:read"])
    ids = await _runs(app, "bank", 7)
    await _runs(app, "rival", 2)
    params = {"format": fmt, "limit": "3", "from": (T0 + timedelta(minutes=1)).isoformat(),
              "to": (T0 + timedelta(minutes=6)).isoformat()}
    seen: list[str] = []
    pages = 0
    while True:
        response = await client.get("/v1/audit/export", params=params, headers=headers)
        assert response.status_code == 200, response.text
        document = parse(response.text, fmt)
        if fmt == "ttl":
            runs = {r.identifier.uri for r in document.get_records() if r.identifier and r.identifier.uri.endswith("/run")}
            seen += sorted(uri.split(":")[3].removesuffix("/run") for uri in runs)
        else:
            seen += sorted(b.identifier.uri.rsplit(":", 1)[1] for b in document.bundles)
        pages += 1
        cursor = response.headers.get("x-next-cursor")
        if cursor is None:
            assert "link" not in response.headers
            break
        assert 'rel="next"' in response.headers["link"]
        params = {**params, "cursor": cursor}
    assert pages == 2
    assert sorted(seen) == sorted(ids[1:6])


async def test_an_export_resumes_after_the_last_complete_run(app: Litestar, client: Client, make_key: MakeKey) -> None:
    headers = await make_key("bank", ["audit:read"])
    ids = await _runs(app, "bank", 4)
    response = await client.get("/v1/audit/export", params={"after_run": ids[1], "format": "json"}, headers=headers)
    bundles = json.loads(response.text)["bundle"]
    assert sorted(bundles) == sorted(f"bundle:{i}" for i in ids[2:])


@pytest.mark.parametrize(
    "params",
    [{"format": "pdf"}, {"cursor": "garbage"}, {"limit": "0"}, {"limit": "10001"},
     {"from": "2026-02-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}],
)
async def test_bad_export_parameters_are_problems(client: Client, make_key: MakeKey, params: dict[str, str]) -> None:
    headers = await make_key("bank", ["audit:read"])
    response = await client.get("/v1/audit/export", params=params, headers=headers)
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "Traceback" not in response.text


async def test_verify_names_the_first_altered_event(app: Litestar, client: Client, make_key: MakeKey) -> None:
    headers = await make_key("bank", ["audit:read"])
    await _runs(app, "bank", 4)
    events = (await client.get("/v1/audit/events", params={"limit": 3}, headers=headers)).json()
    assert [e["chain_seq"] for e in events["data"]] == [1, 2, 3] and events["next_cursor"]
    rest = (await client.get("/v1/audit/events", params={"cursor": events["next_cursor"]}, headers=headers)).json()
    assert [e["chain_seq"] for e in rest["data"]] == [4] and rest["next_cursor"] is None
    intact = (await client.get("/v1/audit/verify", headers=headers)).json()
    assert intact.pop("signed_head").startswith("v1.")
    assert intact == {"intact": True, "checked": 4, "first_broken": None, "head_chain_seq": 4,
                      "head_hash": rest["data"][0]["hash"], "bundles": None, "head_check": None}
    deep = (await client.get("/v1/audit/verify", params={"bundles": "true"}, headers=headers)).json()
    assert deep["bundles"] == {"checked": 4, "first_mismatch": None, "reason": None}
    target = events["data"][1]
    async with transaction(app.state.runtime.sessionmaker) as db:
        await db.execute(text("UPDATE audit_events SET subject_id = 'forged' WHERE seq = :seq"), {"seq": target["seq"]})
    report = (await client.get("/v1/audit/verify", headers=headers)).json()
    assert report["intact"] is False and report["checked"] == 2
    assert report["first_broken"] == {"seq": target["seq"], "id": target["id"], "chain_seq": 2, "reason": "hash mismatch"}


@pytest.mark.parametrize(
    ("column", "value"),
    [("payload", "{not json"), ("payload", "[1, 2]"), ("created_at", "yesterday at noon")],
)
async def test_verify_names_a_row_whose_fields_no_longer_decode(
    app: Litestar, client: Client, make_key: MakeKey, column: str, value: str
) -> None:
    headers = await make_key("bank", ["audit:read"])
    await _runs(app, "bank", 3)
    events = (await client.get("/v1/audit/events", headers=headers)).json()["data"]
    target = events[1]
    async with transaction(app.state.runtime.sessionmaker) as db:
        await db.execute(text(f"UPDATE audit_events SET {column} = :value WHERE seq = :seq"),
                         {"value": value, "seq": target["seq"]})
    verified = await client.get("/v1/audit/verify", params={"bundles": "true"}, headers=headers)
    assert verified.status_code == 200, verified.text
    report = verified.json()
    assert report["intact"] is False and report["signed_head"] is None
    assert report["first_broken"] == {"seq": target["seq"], "id": target["id"], "chain_seq": 2,
                                      "reason": f"unreadable {column}"}
    listed = await client.get("/v1/audit/events", headers=headers)
    assert listed.status_code == 200, listed.text
    shown = {e["seq"]: e for e in listed.json()["data"]}
    assert shown[target["seq"]]["damaged"] == [column]
    assert shown[events[0]["seq"]]["damaged"] == []
    if column == "created_at":
        assert shown[target["seq"]]["created_at"] == value


async def test_a_signed_head_detects_a_deleted_tail(
    app: Litestar, client: Client, make_key: MakeKey, assert_problem: Callable[..., dict[str, object]]
) -> None:
    headers = await make_key("bank", ["audit:read"])
    await _runs(app, "bank", 3)
    first = (await client.get("/v1/audit/verify", headers=headers)).json()
    token = first["signed_head"]
    export = await client.get("/v1/audit/export", headers=headers)
    assert export.headers["x-tenet-audit-head"] == token  # the same head, signed at the export
    held = (await client.get("/v1/audit/verify", params={"head": token}, headers=headers)).json()
    assert held["head_check"] == {"chain_seq": 3, "hash": first["head_hash"], "holds": True,
                                  "reason": "present", "current_chain_seq": 3}
    async with transaction(app.state.runtime.sessionmaker) as db:
        await db.execute(text("DELETE FROM audit_events WHERE chain_seq = 3"))
    after = (await client.get("/v1/audit/verify", params={"head": token}, headers=headers)).json()
    assert after["intact"] is True  # the chain alone cannot tell
    assert after["head_check"]["holds"] is False and after["head_check"]["reason"] == "missing"
    assert after["head_check"]["current_chain_seq"] == 2
    forged = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
    assert "signature" in assert_problem(
        await client.get("/v1/audit/verify", params={"head": forged}, headers=headers), 400
    )["detail"]
    other = await make_key("other", ["audit:read"])
    assert_problem(await client.get("/v1/audit/verify", params={"head": token}, headers=other), 400)


async def test_purge_respects_the_retention_period(app: Litestar, client: Client, make_key: MakeKey) -> None:
    admin = await make_key("bank", ["admin"])
    await _runs(app, "bank", 2, start=datetime.now(UTC) - timedelta(days=400))
    await _runs(app, "bank", 1, start=datetime.now(UTC) - timedelta(days=10))
    refused = await client.post("/v1/audit/purge", headers=await make_key("bank", ["audit:read"]))
    assert refused.status_code == 403
    purged = await client.post("/v1/audit/purge", headers=admin)
    assert purged.status_code == 200 and purged.json() == {"removed": 2, "retention_days": 180}
    report = (await client.get("/v1/audit/verify", headers=admin)).json()
    assert report["intact"] and report["checked"] == 2
    runs = (await client.get("/v1/runs", headers=admin)).json()["data"]
    assert len(runs) == 3


@pytest.mark.model
async def test_a_real_reason_run_is_traceable_to_model_hash_and_constraints(
    model_client: Client, model_admin_headers: dict[str, str]
) -> None:
    response = await model_client.post(
        "/v1/reason",
        json={"prompt": "Name two primary colours. Answer in all lowercase letters.",
              "options": {"max_new_tokens": 12, "num_beams": 1}},
        headers=model_admin_headers,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    run_id = body["run_id"]
    provenance = await model_client.get(
        f"/v1/runs/{run_id}/provenance", params={"format": "ttl"}, headers=model_admin_headers
    )
    assert provenance.status_code == 200, provenance.text
    graph = rdflib.Graph().parse(data=provenance.text, format="turtle")
    tenet = rdflib.Namespace("urn:tenet:ns#")
    model_hashes = {str(o) for o in graph.objects(None, tenet.sha256)}
    assert body["model"]["sha256"] in model_hashes
    kinds = {str(o) for o in graph.objects(None, tenet.kind)}
    assert "all_lowercase" in kinds
    run = rdflib.URIRef(f"urn:tenet:run:{run_id}/run")
    assert (run, rdflib.RDF.type, rdflib.URIRef("http://www.w3.org/ns/prov#Activity")) in graph
    for fmt in ProvFormat:
        if fmt is ProvFormat.TURTLE:
            continue
        text_body = (await model_client.get(
            f"/v1/runs/{run_id}/provenance", params={"format": fmt.value}, headers=model_admin_headers
        )).text
        assert {b.identifier.uri for b in parse(text_body, fmt).bundles} == {f"urn:tenet:bundle:{run_id}"}
    verify = (await model_client.get("/v1/audit/verify", params={"bundles": "true"}, headers=model_admin_headers)).json()
    assert verify["intact"] and verify["bundles"]["first_mismatch"] is None
    assert verify["bundles"]["checked"] >= 1
