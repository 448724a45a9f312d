"""Serving under load through real HTTP: admission control, priorities, shutdown, key cache.

Each test builds its own app on a fresh SQLite database around the session's
loaded model, so changing its scheduler (a small queue, a paused worker)
touches no other test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import sqlite3
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar

from app.auth import KEY_CACHE
from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from bench.service import free_port, start_server, stop_server, wait_ready
from inference.loader import LoadedModel
from tests.conftest import bearer

REASON = {"prompt": "Name one benefit of customer due diligence. Use at most 20 words.",
          "options": {"max_new_tokens": 8, "num_beams": 1}}


@asynccontextmanager
async def serving(
    settings: Settings, loaded_model: LoadedModel, **overrides: Any
) -> AsyncIterator[tuple[Any, Runtime, dict[str, str]]]:
    """A client of an app on ``settings`` with ``overrides``, the model loaded, and an admin key.

    httpx's ASGI transport runs the app on the test's own event loop, so
    concurrent requests really overlap (Litestar's test client answers one
    request at a time through a blocking portal). On exit every accepted
    decode has finished.
    """
    runtime = Runtime(dataclasses.replace(settings, **overrides))
    runtime.set_model(loaded_model)
    app: Litestar = create_app(runtime.settings, runtime=runtime)
    token = await bootstrap_admin_key(runtime.sessionmaker, None)
    assert token is not None
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", timeout=600) as client:
        yield client, runtime, bearer(token)
    runtime.scheduler.resume()
    assert await runtime.scheduler.drain(600)
    await runtime.close()


@pytest.fixture
async def small_queue(settings: Settings, loaded_model: LoadedModel) -> AsyncIterator[tuple[Any, Runtime, dict[str, str]]]:
    """An app whose scheduler runs one decode at a time and admits one waiting job (so the
    queue fills and orders as these tests need)."""
    async with serving(settings, loaded_model, queue_max=1, max_batch=1) as served:
        yield served


async def wait_for(predicate: Any, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < end, "condition never held"
        await asyncio.sleep(0.01)


def queued(runtime: Runtime) -> int:
    stats = runtime.scheduler.stats()
    return stats.queued_interactive + stats.queued_batch


@pytest.mark.model
async def test_overload_is_refused_at_once_and_the_accepted_request_completes(
    small_queue: tuple[Any, Runtime, dict[str, str]], assert_problem: Any
) -> None:
    client, runtime, admin = small_queue
    runtime.scheduler.pause()
    accepted = asyncio.create_task(client.post("/v1/reason", json=REASON, headers=admin))
    await wait_for(lambda: queued(runtime) == 1)
    t0 = time.perf_counter()
    refused = await client.post("/v1/reason", json=REASON, headers=admin)
    assert time.perf_counter() - t0 < 2.0
    body = assert_problem(refused, 429)
    assert int(refused.headers["retry-after"]) >= 1
    assert body["reason"] == "queue_full"
    runtime.scheduler.resume()
    response = await accepted
    assert response.status_code == 200, response.text
    run_id = response.json()["run_id"]
    assert (await client.get(f"/v1/runs/{run_id}", headers=admin)).status_code == 200
    # Now the estimate knows a decode's duration: a deadline shorter than one decode is refused.
    runtime.scheduler.pause()
    waiting = asyncio.create_task(
        client.post("/v1/reason", json=REASON, headers={**admin, "X-Tenet-Deadline-S": "3600"})
    )
    await wait_for(lambda: queued(runtime) == 1)
    runtime.scheduler.max_queue = 5
    late = await client.post("/v1/reason", json=REASON, headers={**admin, "X-Tenet-Deadline-S": "0.001"})
    assert assert_problem(late, 429)["reason"] == "deadline"
    assert "retry-after" in late.headers
    runtime.scheduler.resume()
    assert (await waiting).status_code == 200
    metrics = (await client.get("/metrics")).text
    assert 'tenet_admission_refused_total{reason="queue_full"}' in metrics
    assert "tenet_queue_wait_seconds_count" in metrics


@pytest.mark.model
async def test_session_turns_are_refused_by_admission_like_reason(
    small_queue: tuple[Any, Runtime, dict[str, str]], assert_problem: Any
) -> None:
    client, runtime, admin = small_queue
    sid = (await client.post("/v1/sessions", json={}, headers=admin)).json()["id"]
    turn = {"prompt": "Assume the tax rate is 20%. What is owed on 100?", "options": REASON["options"]}
    first = await client.post(f"/v1/sessions/{sid}/turns", json=turn, headers=admin)
    assert first.status_code == 200, first.text
    runtime.scheduler.pause()
    accepted = asyncio.create_task(client.post("/v1/reason", json=REASON, headers=admin))
    await wait_for(lambda: queued(runtime) == 1)
    unseen = "Assume the fee is 3%. What is charged on 200?"  # refused before planning: never extracted
    refusals = [
        await client.post(f"/v1/sessions/{sid}/turns", json={**turn, "prompt": unseen}, headers=admin),
        await client.post("/v1/reason", json={**REASON, "prompt": unseen, "session_id": sid}, headers=admin),
        await client.post("/v1/chat/completions", headers=admin, json={
            "model": "tenet", "session_id": sid, "max_tokens": 8,
            "messages": [{"role": "user", "content": unseen}],
        }),
    ]
    for refused in refusals:
        assert assert_problem(refused, 429)["reason"] == "queue_full"
        assert int(refused.headers["retry-after"]) >= 1
    assert queued(runtime) == 1  # none of the refused turns reached the queue
    session = (await client.get(f"/v1/sessions/{sid}", headers=admin)).json()
    assert len(session["turns"]) == 1  # and none of them changed the session
    checked = await client.post("/v1/constraints", json={"prompt": unseen}, headers=admin)
    assert checked.status_code == 200, checked.text
    assert checked.json()["cached"] is False  # no refused turn spent a plan on it
    runtime.scheduler.resume()
    assert (await accepted).status_code == 200
    again = await client.post(f"/v1/sessions/{sid}/turns", json=turn, headers=admin)
    assert again.status_code == 200, again.text
    assert runtime.scheduler.stats().refused["queue_full"] == len(refusals)


@pytest.mark.model
async def test_concurrent_requests_are_decoded_together_in_shared_forward_passes(
    settings: Settings, loaded_model: LoadedModel
) -> None:
    prompts = (
        "Name one benefit of customer due diligence. Use at most 20 words.",
        "Name one risk of weak onboarding checks. Do not use commas.",
        "Say why audit trails matter. Answer in lowercase letters only.",
        "Name one sign of money laundering in under 15 words.",
    )
    async with serving(settings, loaded_model, max_batch=4, batch_wait_ms=200) as (client, _, admin):
        responses = await asyncio.gather(*(
            client.post(
                "/v1/reason",
                json={"prompt": p, "options": {"max_new_tokens": 8, "num_beams": 1}},
                headers=admin,
            )
            for p in prompts
        ))
        assert [r.status_code for r in responses] == [200] * 4, [r.text for r in responses]
        assert len({r.json()["run_id"] for r in responses}) == 4
        diagnostics = (await client.get("/v1/diagnostics", headers=admin)).json()
    batching = diagnostics["batching"]
    assert batching["cross_request_batching"] is True and batching["max_batch"] == 4
    assert batching["forwards"]["merged"] > 0


@pytest.mark.model
async def test_interactive_request_overtakes_a_queued_batch_request(
    small_queue: tuple[Any, Runtime, dict[str, str]],
) -> None:
    client, runtime, admin = small_queue
    runtime.scheduler.max_queue = 4
    runtime.scheduler.pause()
    finished: list[str] = []

    async def ask(priority: str) -> int:
        response = await client.post("/v1/reason", json=REASON, headers={**admin, "X-Tenet-Priority": priority})
        finished.append(priority)
        return response.status_code

    batch = asyncio.create_task(ask("batch"))
    await wait_for(lambda: runtime.scheduler.stats().queued_batch == 1)
    interactive = asyncio.create_task(ask("interactive"))
    await wait_for(lambda: runtime.scheduler.stats().queued_interactive == 1)
    runtime.scheduler.resume()
    assert await asyncio.gather(batch, interactive) == [200, 200]
    assert finished == ["interactive", "batch"]


@pytest.mark.model
async def test_shutdown_during_a_request_completes_it_and_refuses_new_ones_with_503(
    small_queue: tuple[Any, Runtime, dict[str, str]], assert_problem: Any
) -> None:
    client, runtime, admin = small_queue
    runtime.scheduler.pause()
    in_flight = asyncio.create_task(client.post("/v1/reason", json=REASON, headers=admin))
    await wait_for(lambda: queued(runtime) == 1)
    draining = asyncio.create_task(runtime.scheduler.drain(120))  # what the lifespan's shutdown does
    await wait_for(lambda: runtime.scheduler.stats().closing)
    refused = await client.post("/v1/reason", json=REASON, headers=admin)
    assert_problem(refused, 503)
    assert int(refused.headers["retry-after"]) >= 1
    response = await in_flight
    assert response.status_code == 200, response.text
    assert await draining is True
    runtime.scheduler.open()


@pytest.mark.model
@pytest.mark.slow
def test_sigterm_lets_the_real_server_finish_an_accepted_request(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(tmp_path, port, tmp_path / "server.log")
    try:
        wait_ready(base, process, timeout_s=180)
        key = (tmp_path / "admin-key.txt").read_text(encoding="utf-8").strip()

        async def scenario() -> httpx.Response:
            async with httpx.AsyncClient(base_url=base, headers=bearer(key), timeout=120) as http:
                request = asyncio.create_task(http.post("/v1/reason", json=REASON))
                await asyncio.sleep(1.0)
                process.terminate()
                return await request

        response = asyncio.run(scenario())
    finally:
        status = stop_server(process)
    assert response.status_code == 200, response.text
    # uvicorn re-raises the captured SIGTERM after its graceful shutdown: -SIGTERM is a clean exit.
    assert status in (0, -signal.SIGTERM), (tmp_path / "server.log").read_text()
    with sqlite3.connect(tmp_path / "tenet.db") as db:
        stored = db.execute("SELECT status FROM runs WHERE id = ?", (response.json()["run_id"],)).fetchall()
    assert len(stored) == 1


async def test_key_cache_honours_revocation_at_once(
    client: Any, admin_headers: dict[str, str], assert_problem: Any
) -> None:
    created = (await client.post("/v1/keys", headers=admin_headers, json={"scopes": ["audit:read"]})).json()
    token = created["key"]
    own = bearer(token)
    assert (await client.get("/v1/runs", headers=own)).status_code == 200
    assert token in KEY_CACHE
    assert (await client.get("/v1/runs", headers=own)).status_code == 200
    assert (await client.delete(f"/v1/keys/{created['id']}", headers=admin_headers)).status_code == 200
    assert token not in KEY_CACHE
    assert "revoked" in assert_problem(await client.get("/v1/runs", headers=own), 401)["detail"]


async def test_cached_key_writes_last_used_at_at_most_once_a_minute(client: Any, make_key: Any) -> None:
    headers = await make_key("acme", ["audit:read"])
    operator = await make_key("default", ["admin"])
    prefix = headers["Authorization"].split("_")[1]

    async def last_used() -> str | None:
        keys = (await client.get("/v1/keys", headers=operator)).json()["data"]
        (used,) = [k["last_used_at"] for k in keys if k["prefix"] == prefix]
        return used

    assert await last_used() is None
    assert (await client.get("/v1/runs", headers=headers)).status_code == 200
    first = await last_used()
    assert first is not None
    for _ in range(3):
        KEY_CACHE.clear()  # as if the TTL ran out: each request verifies against the database again
        assert (await client.get("/v1/runs", headers=headers)).status_code == 200
    assert await last_used() == first
