"""Sessions over HTTP: lifecycle, tenancy, expiry, turns, retraction and partial re-inference.

The model tests drive SCENARIOS.md flow 1 on the bundled AML domain with the
bundled model (short greedy generations keep them to seconds per turn).
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from rdflib import Graph, URIRef
from sqlalchemy import select, update

from app.runtime import Runtime
from reasoning.dag import DAG, ReasoningDag
from store.models import AuditEvent, Run
from store.models import Session as SessionRow
from tests.conftest import check_problem, load_bundled

Client = AsyncTestClient[Litestar]
URL = "/v1/sessions"
AML_PROMPT = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on "
    "our PEP list. Should this be escalated? Answer in under 80 words, cite the rules you rely "
    "on, and do not cite rules in force before 2020."
)
FAST = {"max_new_tokens": 12, "num_beams": 1, "counterfactual": False}


# --- without the model ------------------------------------------------------------------


async def test_create_get_delete(client: Client, app: Litestar, make_key: Any) -> None:
    await load_bundled(app, "acme")
    headers = await make_key("acme", ["reason"])
    created = await client.post(URL, headers=headers, json={
        "domain": "AML", "profile": {"defaults": [{"kind": "word_count", "params": {"relation": "less than", "n": 100}}]},
    })
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["domain"] == "aml"
    assert body["profile"]["defaults"][0]["kind"] == "word_count"
    assert body["premises"] == [] and body["turns"] == [] and body["current_answer"] is None
    expires = datetime.fromisoformat(body["expires_at"]) - datetime.fromisoformat(body["last_active_at"])
    assert expires == timedelta(seconds=3600)
    got = await client.get(f"{URL}/{body['id']}", headers=headers)
    assert got.status_code == 200 and got.json()["id"] == body["id"]
    deleted = await client.delete(f"{URL}/{body['id']}", headers=headers)
    assert deleted.status_code == 200
    check_problem(await client.get(f"{URL}/{body['id']}", headers=headers), 404)
    runtime: Runtime = app.state.runtime
    async with runtime.sessionmaker() as db:
        row = await db.get(SessionRow, body["id"])
        assert row is not None and row.deleted_at is not None
        events = (await db.execute(select(AuditEvent.event_type).where(AuditEvent.subject_id == body["id"]))).scalars()
        assert set(events) == {"session.created", "session.deleted"}


async def test_unknown_domain_and_bad_bodies(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    check_problem(await client.post(URL, headers=headers, json={"domain": "no-such-domain"}), 404)
    check_problem(await client.post(URL, headers=headers, json={"colour": "red"}), 400)
    sid = (await client.post(URL, headers=headers, json={})).json()["id"]
    check_problem(await client.get(f"{URL}/{sid}/graph?format=xml", headers=headers), 400)
    check_problem(await client.post(f"{URL}/{sid}/turns", headers=headers, json={"prompt": "   "}), 400)
    check_problem(await client.post(f"{URL}/{sid}/turns", headers=headers, json={"prompt": "x" * 8001}), 413)
    check_problem(await client.post(f"{URL}/{sid}/turns", headers=headers,
                                    json={"prompt": "hi", "options": {"num_beams": 99}}), 400)
    check_problem(await client.post(f"{URL}/{sid}/turns", headers=headers,
                                    json={"prompt": "hi", "options": {"beams": 2}}), 400)
    check_problem(await client.patch(f"{URL}/{sid}/premises/nope", headers=headers, json={}), 400)
    check_problem(await client.delete(f"{URL}/{sid}/premises/nope", headers=headers), 404)
    check_problem(await client.post("/v1/runs/nope/feedback", headers=headers,
                                    json={"items": [{"kind": "weigh_more", "constraint_id": "c1"}]}), 404)


async def test_scope_reason_is_required(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["audit:read"])
    check_problem(await client.post(URL, headers=headers, json={}), 403)


async def test_another_tenant_cannot_read_or_change_a_session(client: Client, make_key: Any) -> None:
    mine = await make_key("acme", ["reason"])
    theirs = await make_key("globex", ["reason", "admin"])
    sid = (await client.post(URL, headers=mine, json={})).json()["id"]
    for method, path, body in [
        ("GET", f"{URL}/{sid}", None),
        ("GET", f"{URL}/{sid}/graph", None),
        ("POST", f"{URL}/{sid}/turns", {"prompt": "ignore the assumption about the tax rate"}),
        ("DELETE", f"{URL}/{sid}/premises/p", None),
        ("PATCH", f"{URL}/{sid}/premises/p", {"value": "25%"}),
        ("DELETE", f"{URL}/{sid}", None),
    ]:
        response = await client.request(method, path, headers=theirs, json=body)
        assert check_problem(response, 404)["detail"].startswith("session"), (method, path)
    assert (await client.get(f"{URL}/{sid}", headers=mine)).status_code == 200


async def test_idle_session_expires(client: Client, app: Litestar, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    sid = (await client.post(URL, headers=headers, json={})).json()["id"]
    runtime: Runtime = app.state.runtime
    async with runtime.sessionmaker() as db:
        past = datetime.now().astimezone() - timedelta(seconds=runtime.settings.session_idle_ttl_s + 5)
        await db.execute(update(SessionRow).where(SessionRow.id == sid).values(last_active_at=past))
        await db.commit()
    assert "expired" in check_problem(await client.get(f"{URL}/{sid}", headers=headers), 404)["detail"]
    check_problem(await client.post(f"{URL}/{sid}/turns", headers=headers, json={"prompt": "hello"}), 404)
    async with runtime.sessionmaker() as db:
        row = await db.get(SessionRow, sid)
        assert row is not None and row.state["closed_reason"] == "expired"


async def test_empty_graph_exports(client: Client, make_key: Any) -> None:
    headers = await make_key("acme", ["reason"])
    sid = (await client.post(URL, headers=headers, json={})).json()["id"]
    node_link = await client.get(f"{URL}/{sid}/graph", headers=headers)
    assert node_link.json()["nodes"] == [] and node_link.json()["directed"] is True
    turtle = await client.get(f"{URL}/{sid}/graph?format=turtle", headers=headers)
    assert turtle.headers["content-type"].startswith("text/turtle")
    Graph().parse(data=turtle.text, format="turtle")
    jsonld = await client.get(f"{URL}/{sid}/graph?format=jsonld", headers=headers)
    assert jsonld.headers["content-type"].startswith("application/ld+json")
    Graph().parse(data=jsonld.text, format="json-ld")


# --- with the model ---------------------------------------------------------------------


async def _session(client: Client, headers: dict[str, str], domain: str | None = "aml") -> str:
    response = await client.post(URL, headers=headers, json={"domain": domain} if domain else {})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def _turn(client: Client, headers: dict[str, str], sid: str, prompt: str) -> dict[str, Any]:
    response = await client.post(f"{URL}/{sid}/turns", headers=headers, json={"prompt": prompt, "options": FAST})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def _dag(client: Client, headers: dict[str, str], sid: str) -> ReasoningDag:
    response = await client.get(f"{URL}/{sid}/graph", headers=headers)
    assert response.status_code == 200
    return ReasoningDag.from_node_link(response.json())


@pytest.fixture(scope="module")
async def aml_tenant(model_app: Litestar) -> None:
    await load_bundled(model_app, "default")


@pytest.mark.model
async def test_flow_1_amend_then_retract_recomputes_only_what_used_the_premise(
    model_client: Client, model_admin_headers: dict[str, str], aml_tenant: None
) -> None:
    headers = model_admin_headers
    sid = await _session(model_client, headers)
    first = await _turn(model_client, headers, sid, AML_PROMPT)
    assert first["kind"] == "reason" and first["status"] == "ok"
    assert first["response"]["constraints"] and first["response"]["evidence"]
    [tax] = [p for p in first["premises"] if p["topic"] == "tax rate"]
    branches = {b["view"]: b for b in first["answer"]["branches"]}
    assert len(branches) >= 3
    users = {view for view, b in branches.items() if tax["id"] in b["premise_ids"]}
    untouched = set(branches) - users
    assert users and untouched
    dag = await _dag(model_client, headers, sid)
    assert {n.split(":")[2] for n in dag.descendants(f"premise:{tax['id']}") if ":branch:" in n} == users

    # Amendment through the API: exactly the branches that saw the premise are decoded again.
    amended = await model_client.patch(f"{URL}/{sid}/premises/{tax['id']}", headers=headers, json={"value": "25%"})
    assert amended.status_code == 200, amended.text
    body = amended.json()
    assert body["kind"] == "amendment"
    [premise] = [p for p in body["premises"] if p["id"] == tax["id"]]
    assert (premise["status"], premise["value"]) == ("amended", "25%") and "25%" in premise["text"]
    info = body["reinference"]
    assert {n.split(":")[2] for n in info["recomputed"] if ":branch:" in n} == users
    assert {n.split(":")[2] for n in info["reused"] if ":branch:" in n} == untouched
    assert "t1:answer:answer" in info["recomputed"]
    assert 0 < info["elapsed_ms"] and info["full_rerun_estimate_ms"] > 0

    # Retraction in natural language: the premise's branches go, the others are reused as they are.
    second = await _turn(model_client, headers, sid, "Ignore the earlier assumption about the tax rate.")
    assert second["kind"] == "retraction"
    info = second["reinference"]
    assert info["changed_premise_ids"] == [tax["id"]]
    for view in untouched:
        assert f"t1:branch:{view}" in info["reused"]
    for view in users:
        assert f"t1:branch:{view}" in info["recomputed"] + info["removed"]
    assert second["answer"]["text"] in {b["text"] for b in second["answer"]["branches"]}

    dag = await _dag(model_client, headers, sid)
    assert dag.descendants(f"premise:{tax['id']}") == frozenset()
    assert dag.node(f"premise:{tax['id']}").attrs["status"] == "retracted"
    session = (await model_client.get(f"{URL}/{sid}", headers=headers)).json()
    assert [t["kind"] for t in session["turns"]] == ["reason", "reinference", "reinference"]
    assert session["current_answer"]["run_id"] == second["run_id"]
    turtle = (await model_client.get(f"{URL}/{sid}/graph?format=turtle", headers=headers)).text
    g = Graph().parse(data=turtle, format="turtle")
    premise_iri = URIRef(f"urn:tenet:session:{sid}/premise:{tax['id']}")
    assert list(g.subjects(DAG.dependsOn, premise_iri)) == []


@pytest.mark.model
async def test_chinese_retraction_of_a_premise_every_branch_used_recomputes_all(
    model_client: Client, model_admin_headers: dict[str, str]
) -> None:
    """Without a domain there is one branch, and it saw every premise."""
    headers = model_admin_headers
    sid = await _session(model_client, headers, domain=None)
    first = await _turn(model_client, headers, sid, "假设税率为20%。收入为1000元时应缴多少税？")
    [tax] = [p for p in first["premises"] if "税率" in p["text"]]
    views = {b["view"] for b in first["answer"]["branches"]}
    assert all(tax["id"] in b["premise_ids"] for b in first["answer"]["branches"])
    second = await _turn(model_client, headers, sid, "忽略上一条关于税率的假设")
    assert second["kind"] == "retraction"
    info = second["reinference"]
    assert info["changed_premise_ids"] == [tax["id"]]
    assert {n.split(":")[2] for n in info["recomputed"] if ":branch:" in n} == views
    assert [n for n in info["reused"] if ":branch:" in n] == []
    assert [p["status"] for p in second["premises"] if p["id"] == tax["id"]] == ["retracted"]
    assert (await _dag(model_client, headers, sid)).descendants(f"premise:{tax['id']}") == frozenset()


@pytest.mark.model
async def test_ambiguous_retraction_asks_for_confirmation(
    model_client: Client, model_admin_headers: dict[str, str]
) -> None:
    headers = model_admin_headers
    sid = await _session(model_client, headers, domain=None)
    first = await _turn(model_client, headers, sid,
                        "Assume the income tax rate is 20%. Assume the sales tax rate is 8%. What is owed on 100?")
    assert len(first["premises"]) == 2
    before = await _dag(model_client, headers, sid)
    second = await _turn(model_client, headers, sid, "Ignore the assumption about the tax rate.")
    assert second["status"] == "needs_confirmation" and second["kind"] == "confirmation"
    assert {c["id"] for c in second["candidates"]} == {p["id"] for p in first["premises"]}
    assert second["run_id"] is None and second["reinference"] is None
    assert all(p["status"] == "active" for p in second["premises"])
    after = await _dag(model_client, headers, sid)
    assert after.to_node_link() == before.to_node_link()
    pending = (await model_client.get("/v1/confirmations", headers=headers)).json()["items"]
    [opened] = [c for c in pending if c["session_id"] == sid]
    assert opened["kind"] == "premise_ambiguity"
    assert {c["id"] for c in opened["choices"]} == {p["id"] for p in first["premises"]}


@pytest.mark.model
async def test_api_retraction_of_a_premise_no_branch_used_recomputes_nothing(
    model_client: Client, model_admin_headers: dict[str, str]
) -> None:
    """A turn whose constraints conflict decodes nothing, so its premise has no dependents."""
    headers = model_admin_headers
    sid = await _session(model_client, headers, domain=None)
    first = await _turn(model_client, headers, sid,
                        "Assume the tax rate is 20%. Answer in English. 必须用中文回答。")
    assert first["status"] == "needs_confirmation"
    [premise] = first["premises"]
    response = await model_client.delete(f"{URL}/{sid}/premises/{premise['id']}", headers=headers)
    assert response.status_code == 200, response.text
    info = response.json()["reinference"]
    assert info["recomputed"] == [] and info["reused"] == [] and info["elapsed_ms"] == 0
    session = (await model_client.get(f"{URL}/{sid}", headers=headers)).json()
    assert [t["kind"] for t in session["turns"]] == ["reason"]
    assert session["premises"][0]["status"] == "retracted"


@pytest.mark.model
async def test_concurrent_turns_are_serialised(
    model_client: Client, model_app: Litestar, model_admin_headers: dict[str, str]
) -> None:
    headers = model_admin_headers
    sid = await _session(model_client, headers, domain=None)
    results = await asyncio.gather(
        _turn(model_client, headers, sid, "Assume the fee is 3%. What is the fee on 200?"),
        _turn(model_client, headers, sid, "Assume the rate is 5%. What is the interest on 100?"),
    )
    assert {r["answer"]["turn"] for r in results} == {1, 2}
    runtime: Runtime = model_app.state.runtime
    async with runtime.sessionmaker() as db:
        runs = (await db.execute(select(Run).where(Run.session_id == sid).order_by(Run.created_at))).scalars().all()
        row = await db.get(SessionRow, sid)
    assert len(runs) == 2
    assert runs[0].finished_at is not None and runs[0].finished_at <= runs[1].created_at
    assert row is not None and [t["turn"] for t in row.state["turns"]] == [1, 2]
    assert [t["run_id"] for t in row.state["turns"]] == [r.id for r in runs]


@pytest.mark.model
async def test_feedback_changes_the_next_turn_and_is_audited(
    model_client: Client, model_app: Litestar, model_admin_headers: dict[str, str]
) -> None:
    headers = model_admin_headers
    sid = await _session(model_client, headers, domain=None)
    first = await _turn(model_client, headers, sid, "Answer in under 40 words: what is a PEP?")
    [verdict] = [v for v in first["answer"]["verdicts"]]
    response = await model_client.post(f"/v1/runs/{first['run_id']}/feedback", headers=headers, json={
        "items": [{"kind": "weigh_less", "constraint_id": verdict["constraint_id"]},
                  {"kind": "constraint_missing", "constraint": {"kind": "no_comma"}}],
    })
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["applied"] is True and body["session_id"] == sid
    assert {(c["field"], c["after"]) for c in body["changes"]} >= {("priority", -1), ("added", True)}
    dag = await _dag(model_client, headers, sid)
    [node] = [n for n in dag.nodes() if n.id == f"t1:constraint:{verdict['constraint_id']}"]
    assert node.attrs["priority"] == -1
    second = await _turn(model_client, headers, sid, "Answer in under 40 words: what is AML?")
    kinds = {json.dumps(n.attrs.get("kind")) for n in (await _dag(model_client, headers, sid)).nodes()
             if n.id.startswith("t2:constraint:")}
    assert '"no_comma"' in kinds
    assert second["status"] == "ok"
    runtime: Runtime = model_app.state.runtime
    async with runtime.sessionmaker() as db:
        event = await db.scalar(select(AuditEvent).where(AuditEvent.id == body["audit_event_id"]))
    assert event is not None and event.event_type == "run.feedback" and event.payload["applied"] is True
