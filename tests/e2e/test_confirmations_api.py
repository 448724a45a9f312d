"""The confirmation workflow end to end: a conflict from /v1/reason is listed, resolved, announced."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from app.runtime import Runtime
from app.services.container import Services
from app.webhooks import WebhookNotifier
from reasoning.constraints.model import Premise
from store import keys as key_store
from store.db import transaction
from tests.conftest import REGIMES_TTL

pytestmark = pytest.mark.model

CONFLICT = "Answer in English. 必须用中文回答。What is a bond?"
OPTIONS = {"max_new_tokens": 16, "num_beams": 1}


class Receiver:
    """A loopback HTTP server standing in for an incoming webhook; fails the first ``failures`` posts."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.bodies: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.bodies.append(json.loads(body))
                status = 503 if len(receiver.bodies) <= receiver.failures else 200
                receiver.statuses.append(status)
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(failures=2)
    yield r
    r.close()


async def _conflict(client: Any, headers: dict[str, str]) -> dict[str, Any]:
    response = await client.post("/v1/reason", json={"prompt": CONFLICT, "options": OPTIONS}, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["status"] == "needs_confirmation"
    assert body["confirmation_id"]
    return body


async def test_conflict_is_listed_resolved_and_continues(
    model_client: Any, model_admin_headers: dict[str, str], assert_problem: Any
) -> None:
    body = await _conflict(model_client, model_admin_headers)
    cid = body["confirmation_id"]

    listed = await model_client.get("/v1/confirmations", headers=model_admin_headers)
    assert listed.status_code == 200, listed.text
    item = next(i for i in listed.json()["items"] if i["id"] == cid)
    assert item["status"] == "pending" and item["kind"] == "constraint_conflict" and item["origin"] == "reason"
    assert item["run_id"] == body["run_id"]
    choices = {c["params"].get("language"): c for c in item["choices"]}
    assert {"en", "zh"} <= choices.keys()
    english, chinese = choices["en"], choices["zh"]
    for choice in (english, chinese):
        span = choice["source"]
        assert CONFLICT[span["start"]:span["end"]] == span["text"] == choice["text"]
    assert english["conflicts_with"] == [chinese["id"]]

    wrong = await model_client.post(f"/v1/confirmations/{cid}", json={"choose": "nope"}, headers=model_admin_headers)
    assert "nope" in assert_problem(wrong, 400)["detail"]

    resolved = await model_client.post(
        f"/v1/confirmations/{cid}", json={"choose": english["id"]}, headers=model_admin_headers
    )
    assert resolved.status_code == 200, resolved.text
    run = resolved.json()
    assert run["status"] == "ok" and run["answer"].strip()
    verdicts = {c["id"]: c["verdict"] for c in run["constraints"]}
    assert verdicts[english["id"]] is not None and verdicts[english["id"]]["satisfied"] is True
    assert verdicts[chinese["id"]] is None  # dropped: neither steered nor verified
    assert run["run_id"] != body["run_id"] and run["confirmation_id"] is None

    again = await model_client.post(
        f"/v1/confirmations/{cid}", json={"choose": english["id"]}, headers=model_admin_headers
    )
    assert_problem(again, 409)
    after = (await model_client.get(f"/v1/confirmations/{cid}", headers=model_admin_headers)).json()
    assert after["status"] == "resolved" and after["chosen"] == english["id"]
    assert after["resolution_run_id"] == run["run_id"]
    stored = await model_client.get(f"/v1/runs/{run['run_id']}", headers=model_admin_headers)
    assert stored.status_code == 200, stored.text
    pending = (await model_client.get("/v1/confirmations", headers=model_admin_headers)).json()["items"]
    assert cid not in {i["id"] for i in pending}


async def test_other_tenants_confirmation_is_not_found(
    model_client: Any, model_admin_headers: dict[str, str], model_app: Any, assert_problem: Any
) -> None:
    body = await _conflict(model_client, model_admin_headers)
    runtime: Runtime = model_app.state.runtime
    async with transaction(runtime.sessionmaker) as session:
        tenant = await key_store.get_or_create_tenant(session, "other-confirmations")
        created = await key_store.create_key(session, tenant.id, "other", ["reason"])
    other = {"Authorization": f"Bearer {created.token}"}
    cid = body["confirmation_id"]
    assert_problem(await model_client.get(f"/v1/confirmations/{cid}", headers=other), 404)
    choose = {"choose": body["conflicts"][0]["a"]}
    assert_problem(await model_client.post(f"/v1/confirmations/{cid}", json=choose, headers=other), 404)
    assert (await model_client.get("/v1/confirmations", headers=other)).json()["items"] == []


async def test_new_confirmation_is_announced_with_retries(
    model_client: Any, model_admin_headers: dict[str, str], model_app: Any, receiver: Receiver
) -> None:
    services: Services = model_app.state.services
    notifier = WebhookNotifier(receiver.url, "slack", attempts=4, base_delay_s=0.05)
    services.pending.notifier = notifier
    try:
        response = await asyncio.wait_for(_conflict(model_client, model_admin_headers), timeout=120)
        deliveries = await notifier.drain(timeout=10)
    finally:
        services.pending.notifier = None
    assert [d.delivered for d in deliveries] == [True]
    assert deliveries[0].attempts == 3
    assert receiver.statuses == [503, 503, 200]
    message = receiver.bodies[-1]
    assert response["confirmation_id"] in message["text"]
    assert message["blocks"][0]["type"] == "header"
    assert all(receiver.bodies[0] == b for b in receiver.bodies)
    assert CONFLICT not in json.dumps(message, ensure_ascii=False)  # spans only, never the whole prompt


async def test_ambiguous_premise_is_resolved_by_retracting_the_chosen_one(
    model_client: Any, model_admin_headers: dict[str, str], model_app: Any, assert_problem: Any
) -> None:
    headers = model_admin_headers
    created = await model_client.post("/v1/sessions", json={}, headers=headers)
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    first = await model_client.post(
        f"/v1/sessions/{sid}/turns", headers=headers,
        json={"prompt": "Assume the income tax rate is 20%. Assume the sales tax rate is 8%. What is owed on 100?",
              "options": OPTIONS},
    )
    assert first.status_code == 200, first.text
    ambiguous = (await model_client.post(
        f"/v1/sessions/{sid}/turns", headers=headers, json={"prompt": "Ignore the assumption about the tax rate."}
    )).json()
    assert ambiguous["kind"] == "confirmation" and len(ambiguous["candidates"]) == 2
    # Opened as the session service does where it answers kind "confirmation".
    services: Services = model_app.state.services
    async with transaction(services.runtime.sessionmaker) as db:
        tenant = await key_store.get_or_create_tenant(db, key_store.DEFAULT_TENANT)
        row = await services.pending.open_premise(
            db, tenant_id=tenant.id, key_id=None, session_id=sid,
            prompt="Ignore the assumption about the tax rate.", match_kind="retract", new_value=None,
            candidates=[Premise(id=c["id"], text=c["text"], topic=c["topic"], value=c["value"])
                        for c in ambiguous["candidates"]],
        )
    listed = (await model_client.get(f"/v1/confirmations/{row.id}", headers=headers)).json()
    assert listed["kind"] == "premise_ambiguity" and listed["session_id"] == sid
    assert {c["id"] for c in listed["choices"]} == {c["id"] for c in ambiguous["candidates"]}
    income = next(c for c in ambiguous["candidates"] if "income" in c["text"])

    resolved = await model_client.post(f"/v1/confirmations/{row.id}", json={"choose": income["id"]}, headers=headers)
    assert resolved.status_code == 200, resolved.text
    turn = resolved.json()
    assert turn["kind"] == "retraction" and turn["session_id"] == sid
    statuses = {p["id"]: p["status"] for p in turn["premises"]}
    assert statuses[income["id"]] == "retracted"
    assert [s for pid, s in statuses.items() if pid != income["id"]] == ["active"]
    assert_problem(await model_client.post(f"/v1/confirmations/{row.id}", json={"choose": income["id"]},
                                           headers=headers), 409)


#: A rule conflict (the language) and an ontology one (EU and US rules are disjoint regimes).
TWO_CONFLICTS = "Answer in English. 必须用中文回答。请依据欧盟的法律并根据美国的法规回答。"


async def _resolve(client: Any, headers: dict[str, str], cid: str, choose: str) -> dict[str, Any]:
    response = await client.post(f"/v1/confirmations/{cid}", json={"choose": choose}, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_choice_keeps_the_ontology_conflict_it_did_not_settle(
    model_client: Any, model_admin_headers: dict[str, str]
) -> None:
    headers = model_admin_headers
    uploaded = await model_client.post("/v1/ontologies?domain=regimes", content=REGIMES_TTL,
                                       headers={**headers, "Content-Type": "text/turtle"})
    assert uploaded.status_code in (200, 201), uploaded.text
    first = await model_client.post(
        "/v1/reason", json={"prompt": TWO_CONFLICTS, "domain": "regimes", "options": OPTIONS}, headers=headers
    )
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["status"] == "needs_confirmation" and len(body["conflicts"]) == 2
    item = (await model_client.get(f"/v1/confirmations/{body['confirmation_id']}", headers=headers)).json()
    by_value = {c["params"].get("language") or c["params"].get("code"): c["id"] for c in item["choices"]}
    english, chinese, eu, us = by_value["en"], by_value["zh"], by_value["EU"], by_value["US"]

    # Choosing the language leaves the ontology's exclusion in the graph: the run stops again.
    run = await _resolve(model_client, headers, body["confirmation_id"], english)
    assert run["status"] == "needs_confirmation" and run["answer"] == ""
    [conflict] = run["conflicts"]
    assert {conflict["a"], conflict["b"]} == {eu, us} and "owl:disjointWith" in conflict["reason"]
    assert run["confirmation_id"] and run["confirmation_id"] != body["confirmation_id"]
    second = (await model_client.get(f"/v1/confirmations/{run['confirmation_id']}", headers=headers)).json()
    assert {c["id"] for c in second["choices"]} == {eu, us}

    # Settling that one too continues with both choices applied (the first is not asked again).
    final = await _resolve(model_client, headers, run["confirmation_id"], eu)
    assert final["status"] == "ok" and final["answer"].strip() and final["confirmation_id"] is None
    verdicts = {c["id"]: c["verdict"] for c in final["constraints"]}
    assert verdicts[chinese] is None and verdicts[us] is None  # set aside: neither steered nor verified
    assert verdicts[english] is not None and verdicts[eu] is not None, final  # both stand and are checked
