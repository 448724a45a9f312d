"""POST /v1/reason end to end: the real app, the bundled model, real constraints and evidence."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.bootstrap import bootstrap_domains
from app.metrics import STAGES
from app.runtime import Runtime
from store import keys as key_store
from store.db import transaction
from tests.conftest import bearer, check_problem

pytestmark = pytest.mark.model


@pytest.fixture
async def bundled_domains(model_app: Any, model_admin_headers: dict[str, str]) -> None:
    """The sample domains of the default tenant, loaded as on first start."""
    await bootstrap_domains(model_app.state.runtime.sessionmaker)


async def _reason(client: Any, headers: dict[str, str], **body: Any) -> Any:
    return await client.post("/v1/reason", json=body, headers=headers)


async def test_answer_satisfies_controlled_constraints(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    prompt = (
        "Describe the city of Paris in one short paragraph. Your answer must be in all lowercase letters"
        " and must not contain any commas. The word river must appear at least twice."
    )
    response = await _reason(
        model_client, model_admin_headers, prompt=prompt, options={"max_new_tokens": 40, "num_beams": 2}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    answer = body["answer"]
    assert answer.strip()
    assert answer == answer.lower()
    assert "," not in answer
    assert answer.count("river") >= 2
    kinds = {c["kind"]: c for c in body["constraints"]}
    assert {"all_lowercase", "no_comma", "keyword_frequency"} <= kinds.keys()
    assert all(c["verdict"]["satisfied"] is True for c in kinds.values()), body["constraints"]
    assert body["reasoning_path"], body
    answering = [b for b in body["branches"] if b["text"] == answer]
    assert answering and body["reasoning_path"] == answering[0]["step_ids"]
    assert set(body["confidence_by_step"]) == set(body["reasoning_path"])
    assert all(0.0 <= v <= 1.0 for v in body["confidence_by_step"].values())
    assert set(body["timings"]) == {"parse", "extract", "graph", "evidence", "rules", "prefill", "decode", "verify", "record"}
    assert body["timings"]["decode"] > 0
    assert body["model"]["sha256"]


async def test_steering_off_runs_the_same_model_plain(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await _reason(
        model_client, model_admin_headers, prompt="Name one colour of the sky.",
        options={"max_new_tokens": 12, "num_beams": 1, "steering": False},
    )
    assert response.status_code == 200, response.text
    assert response.json()["answer"].strip()


async def test_run_is_stored_and_readable(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await _reason(
        model_client, model_admin_headers, prompt="Say hello in five words or fewer.",
        options={"max_new_tokens": 12, "num_beams": 1},
    )
    run_id = response.json()["run_id"]
    stored = await model_client.get(f"/v1/runs/{run_id}", headers=model_admin_headers)
    assert stored.status_code == 200, stored.text
    assert stored.json()["id"] == run_id


async def test_conflicting_constraints_need_confirmation(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await _reason(
        model_client, model_admin_headers,
        prompt="Answer in English. 必须用中文回答。What is a bond?", options={"max_new_tokens": 16},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "needs_confirmation"
    assert body["answer"] == ""
    assert body["conflicts"] and all(len(c["spans"]) == 2 for c in body["conflicts"])


async def test_impossible_constraints_need_confirmation(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await _reason(
        model_client, model_admin_headers,
        prompt="Write about tea. Your entire response must be in all lowercase letters. Your entire response must be in all capital letters.",
        options={"max_new_tokens": 16},
    )
    body = response.json()
    assert response.status_code == 200, response.text
    assert body["status"] == "needs_confirmation"
    assert body["answer"] == ""


async def test_chinese_prompt_gets_chinese_answer(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await _reason(
        model_client, model_admin_headers, prompt="必须用中文回答。什么是洗钱？",
        options={"max_new_tokens": 16, "num_beams": 1},
    )
    body = response.json()
    assert response.status_code == 200, response.text
    assert body["status"] == "ok"
    han = sum(1 for ch in body["answer"] if "\u4e00" <= ch <= "\u9fff")
    assert han >= 3, body["answer"]
    lang = next(c for c in body["constraints"] if c["kind"] == "response_language")
    assert lang["params"]["language"] == "zh" and lang["verdict"]["satisfied"] is True


async def test_aml_domain_grounds_the_answer(
    model_client: Any, model_admin_headers: dict[str, str], bundled_domains: None
) -> None:
    prompt = (
        "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. "
        "Should this be escalated? Answer in under 80 words, cite the rules you rely on, "
        "and do not cite rules in force before 2020."
    )
    response = await _reason(
        model_client, model_admin_headers, prompt=prompt, domain="aml",
        options={"max_new_tokens": 48, "num_beams": 2},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok"
    assert len(body["answer"].split()) < 80
    views = {b["view"] for b in body["branches"]}
    assert len(views) >= 2, views
    assert body["evidence"] and all(g["facts"] for g in body["evidence"])
    for graph in body["evidence"]:
        for fact in graph["facts"]:
            if fact.get("effective"):
                assert fact["effective"] >= "2020-01-01", fact
    assert any(p["topic"] for p in body["premises"])


async def test_stream_sends_plan_steps_and_result(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    response = await _reason(
        model_client, model_admin_headers, prompt="Name two fruits.",
        options={"max_new_tokens": 16, "num_beams": 1, "stream": True},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line.removeprefix("event: ").strip() for line in response.text.splitlines() if line.startswith("event:")]
    assert events[0] == "plan" and events[-1] == "result"
    data = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data:")]
    assert json.loads(data[-1])["answer"].strip()


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"prompt": ""}, 400),
        ({"prompt": "hi", "options": {"num_beams": 0}}, 400),
        ({"prompt": "hi", "options": {"max_new_tokens": "many"}}, 400),
        ({"prompt": "hi", "options": {"unknown": 1}}, 400),
        ({"prompt": "hi", "domain": "no-such-domain"}, 404),
        ({"prompt": "x" * 100_000}, 413),
    ],
)
async def test_bad_requests_get_problems(
    model_client: Any, model_admin_headers: dict[str, str], assert_problem: Any, body: dict[str, Any], status: int
) -> None:
    response = await model_client.post("/v1/reason", json=body, headers=model_admin_headers)
    assert_problem(response, status)


async def test_needs_key(model_client: Any, assert_problem: Any) -> None:
    assert_problem(await model_client.post("/v1/reason", json={"prompt": "hi"}), 401)


# --- session_id: the prompt as a question turn of the caller's session --------------------------

FAST = {"max_new_tokens": 12, "num_beams": 1}


async def _new_session(client: Any, headers: dict[str, str], **body: Any) -> str:
    response = await client.post("/v1/sessions", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


async def _other_tenant_headers(app: Any, tenant: str) -> dict[str, str]:
    runtime: Runtime = app.state.runtime
    async with transaction(runtime.sessionmaker) as db:
        row = await key_store.get_or_create_tenant(db, tenant)
        created = await key_store.create_key(db, row.id, f"test {tenant}", ["reason"])
    return bearer(created.token)


async def test_session_id_runs_a_question_turn_of_that_session(
    model_client: Any, model_admin_headers: dict[str, str]
) -> None:
    headers = model_admin_headers
    sid = await _new_session(model_client, headers)
    first = await _reason(model_client, headers, prompt="Assume the fee is 3%. What is the fee on 200?",
                          session_id=sid, options=FAST)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["session_id"] == sid and body["status"] == "ok" and body["answer"].strip()
    assert body["recomputed"] == [b["view"] for b in body["branches"]] and body["reused"] == []
    assert body["timings"]["decode"] > 0 and body["timings"]["record"] > 0
    second = await _reason(model_client, headers, prompt="What is the fee on 500?", session_id=sid, options=FAST)
    assert second.status_code == 200, second.text
    session = (await model_client.get(f"/v1/sessions/{sid}", headers=headers)).json()
    assert [t["run_id"] for t in session["turns"]] == [body["run_id"], second.json()["run_id"]]
    assert [t["kind"] for t in session["turns"]] == ["reason", "reason"]
    assert session["current_answer"]["turn"] == 2
    assert session["current_answer"]["run_id"] == second.json()["run_id"]
    [fee] = [p for p in session["premises"] if "fee" in p["text"]]
    assert (fee["run_id"], fee["turn"], fee["status"]) == (body["run_id"], 1, "active")
    graph = (await model_client.get(f"/v1/sessions/{sid}/graph", headers=headers)).json()
    assert {"t1:answer:answer", "t2:answer:answer"} <= {n["id"] for n in graph["nodes"]}


async def test_session_id_must_name_a_live_session_of_the_caller(
    model_client: Any, model_app: Any, model_admin_headers: dict[str, str]
) -> None:
    """Unknown, another tenant's and deleted sessions answer the same 404; nothing is run."""
    headers = model_admin_headers
    unknown = check_problem(
        await _reason(model_client, headers, prompt="What is a bond?", session_id="no-such-session"), 404
    )
    assert unknown["detail"] == "session 'no-such-session' not found"
    theirs = await _new_session(model_client, await _other_tenant_headers(model_app, "h5-other-tenant"))
    foreign = check_problem(await _reason(model_client, headers, prompt="What is a bond?", session_id=theirs), 404)
    assert foreign["detail"] == f"session {theirs!r} not found"
    sid = await _new_session(model_client, headers)
    assert (await model_client.delete(f"/v1/sessions/{sid}", headers=headers)).status_code == 200
    deleted = check_problem(await _reason(model_client, headers, prompt="What is a bond?", session_id=sid), 404)
    assert deleted["detail"] == f"session {sid!r} not found"


async def test_session_id_keeps_the_sessions_domain_and_profile(
    model_client: Any, model_admin_headers: dict[str, str], bundled_domains: None
) -> None:
    headers = model_admin_headers
    profile = {"defaults": [{"kind": "no_comma", "params": {}}]}
    sid = await _new_session(model_client, headers, domain="aml", profile=profile)
    plain = await _new_session(model_client, headers)
    other = check_problem(
        await _reason(model_client, headers, prompt="What is a bond?", session_id=sid, domain="clinical"), 409
    )
    assert "aml" in other["detail"] and other["field"] == "domain"
    unset = check_problem(
        await _reason(model_client, headers, prompt="What is a bond?", session_id=plain, domain="aml"), 409
    )
    assert "no domain" in unset["detail"]
    changed = check_problem(await _reason(
        model_client, headers, prompt="What is a bond?", session_id=sid,
        profile={"defaults": [{"kind": "all_lowercase", "params": {}}]},
    ), 409)
    assert changed["field"] == "profile"
    stream = check_problem(await _reason(
        model_client, headers, prompt="What is a bond?", session_id=sid, options={**FAST, "stream": True}
    ), 400)
    assert stream["field"] == "options.stream"
    session = (await model_client.get(f"/v1/sessions/{sid}", headers=headers)).json()
    assert session["turns"] == [] and session["premises"] == []

    same = await _reason(model_client, headers, prompt="What is a bond?", session_id=sid, domain="AML",
                         profile=profile, options=FAST)
    assert same.status_code == 200, same.text
    body = same.json()
    assert body["session_id"] == sid
    assert [c["origin"] for c in body["constraints"] if c["kind"] == "no_comma"] == ["profile"]
    runs = (await model_client.get(f"/v1/sessions/{sid}", headers=headers)).json()["turns"]
    assert [r["run_id"] for r in runs] == [body["run_id"]]


# --- tenet_stage_seconds -----------------------------------------------------------------------


async def _stage_counts(client: Any) -> dict[str, float]:
    text = (await client.get("/metrics")).text
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "tenet_stage_seconds"]
    return {s.labels["stage"]: s.value for s in family.samples if s.name == "tenet_stage_seconds_count"}


async def test_each_run_records_its_stage_times(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    """One observation per stage that took time, for a plain run and for a session turn alike."""
    plain, in_session = ("Name one colour of a ripe lemon.", None), ("Name one colour of a ripe plum.", True)
    for prompt, session in (plain, in_session):
        session_id = await _new_session(model_client, model_admin_headers) if session else None
        before = await _stage_counts(model_client)
        response = await _reason(model_client, model_admin_headers, prompt=prompt, session_id=session_id,
                                 options=FAST)
        assert response.status_code == 200, response.text
        timings = response.json()["timings"]
        after = await _stage_counts(model_client)
        assert set(after) == set(STAGES)
        assert timings["decode"] > 0 and timings["record"] > 0
        ran = {stage for stage in STAGES if timings[stage] > 0}
        assert {"graph", "prefill", "decode", "verify", "record"} <= ran
        assert {stage: after[stage] - before[stage] for stage in STAGES} == {
            stage: 1.0 if stage in ran else 0.0 for stage in STAGES
        }
