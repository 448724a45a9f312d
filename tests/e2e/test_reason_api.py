"""POST /v1/reason end to end: the real app, the bundled model, real constraints and evidence."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.bootstrap import bootstrap_domains

pytestmark = pytest.mark.model


@pytest.fixture
async def bundled_domains(model_app: Any, model_admin_headers: dict[str, str]) -> None:
    """The sample domains of the default tenant, loaded as on first start."""
    await bootstrap_domains(model_app.state.runtime.sessionmaker)


async def _reason(client: Any, headers: dict[str, str], **body: Any) -> Any:
    return await client.post("/v1/reason", json=body, headers=headers)


async def test_answer_satisfies_controlled_constraints(model_client: Any, model_admin_headers: dict[str, str]) -> None:
    prompt = "Describe the city of Paris in one short paragraph. Your answer must be in all lowercase letters and must not contain any commas."
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
    kinds = {c["kind"]: c for c in body["constraints"]}
    assert {"all_lowercase", "no_comma"} <= kinds.keys()
    assert kinds["all_lowercase"]["verdict"]["satisfied"] is True
    assert kinds["no_comma"]["verdict"]["satisfied"] is True
    assert body["reasoning_path"], body
    answering = [b for b in body["branches"] if b["text"] == answer]
    assert answering and body["reasoning_path"] == answering[0]["step_ids"]
    assert set(body["confidence_by_step"]) == set(body["reasoning_path"])
    assert all(0.0 <= v <= 1.0 for v in body["confidence_by_step"].values())
    assert set(body["timings"]) == {"parse", "extract", "graph", "evidence", "prefill", "decode", "verify", "record"}
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
