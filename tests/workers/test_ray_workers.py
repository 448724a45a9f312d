"""Decodes on Ray Serve model workers (TENET_WORKERS=ray) through the real app over HTTP.

One local Ray cluster (2 CPUs, two worker replicas of the bundled model, the
consistent-hash router) is started by the module fixture and shut down at
its end. Against it: the same answers as the in-process decode, a prefix
cache that hits because one prefix goes to one replica, back-pressure
answered 429 with Retry-After and nothing recorded for a refused run, and a
replica killed mid-decode (the run is retried on the other replica, or
fails with a clear 503; never hangs; never half-recorded). Without a
cluster: workers that never started make /readyz and the runs answer 503
with Retry-After.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy import func, select

from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.runtime import Runtime
from app.settings import Settings
from inference.loader import LoadedModel
from inference.workers.ray_serve import RayWorkers
from store.db import transaction
from store.models import Run
from tests.conftest import MODEL_CACHE, TEST_DEVICE, bearer, check_problem
from tests.inloop import serve

ray = pytest.importorskip("ray")

Client = httpx.AsyncClient
PROMPT = "Explain in two sentences why banks check the identity of new customers. Do not use the word 'money'."
FAST = {"max_new_tokens": 10, "num_beams": 1}
#: A decode that keeps a replica busy for seconds (a long list does not end early): 64 tokens
#: take several seconds on one CPU thread, long enough to fill a replica while a burst is
#: refused and to be killed midway; a longer one only made the runs that wait for it slower.
LONG = {
    "prompt": "Write a detailed numbered list of twenty steps a bank follows when it onboards a new customer.",
    "options": {"max_new_tokens": 64, "num_beams": 1},
}
READY_WITHIN_S = 150.0


async def _ready(client: Client, within_s: float = READY_WITHIN_S) -> dict[str, Any]:
    deadline = time.monotonic() + within_s
    while True:
        response = await client.get("/readyz")
        if response.status_code == 200:
            body: dict[str, Any] = response.json()
            return body
        assert time.monotonic() < deadline, f"the workers did not become ready: {response.text}"
        await asyncio.sleep(0.5)


async def _headers(app: Litestar) -> dict[str, str]:
    runtime: Runtime = app.state.runtime
    token = await bootstrap_admin_key(runtime.sessionmaker, None)
    assert token is not None
    return bearer(token)


async def _runs(app: Litestar) -> int:
    runtime: Runtime = app.state.runtime
    async with transaction(runtime.sessionmaker) as db:
        return int((await db.execute(select(func.count()).select_from(Run))).scalar_one())


def _ray_settings(data_dir: Path, template: Path, **overrides: Any) -> Settings:
    shutil.copy(template, data_dir / "tenet.db")
    return Settings(
        data_dir=data_dir,
        load_model=False,
        model_cache_dir=MODEL_CACHE,
        device=TEST_DEVICE,
        workers="ray",
        ray_num_cpus=2,
        ray_replicas=2,
        ray_replica_cpus=1.0,
        ray_timeout_s=90.0,
        **overrides,
    )


@pytest.fixture(scope="module")
async def ray_app(
    tmp_path_factory: pytest.TempPathFactory,
    migrated_sqlite_template: Path,
    loaded_model: LoadedModel,
) -> AsyncIterator[tuple[Litestar, Client, dict[str, str]]]:
    """The app on a local Ray cluster of two worker replicas (one decode at a time each and two
    waiting in this process, so a burst of runs meets back-pressure), served in the test's loop
    so that concurrent requests are concurrent."""
    settings = _ray_settings(
        tmp_path_factory.mktemp("ray-app"),
        migrated_sqlite_template,
        ray_max_ongoing=1,
        ray_max_queued=2,
    )
    runtime = Runtime(settings)
    runtime.set_model(loaded_model)
    async with serve(settings, create_app(settings, runtime=runtime)) as served:
        await _ready(served.client)
        yield served.app, served.client, served.admin
    assert not ray.is_initialized(), "the app's close stops the cluster it started"


pytestmark = [pytest.mark.model]


@pytest.mark.ray
@pytest.mark.slow
async def test_ray_workers_answer_as_the_local_decode_and_reuse_their_prefix_cache(
    ray_app: tuple[Litestar, Client, dict[str, str]],
    model_client: AsyncTestClient[Litestar],
    model_admin_headers: dict[str, str],
) -> None:
    _, client, headers = ray_app
    ready = (await client.get("/readyz")).json()
    assert ready["workers"] == "ok" and ready["ready"] is True
    body = {"prompt": PROMPT, "options": FAST}
    local = await model_client.post("/v1/reason", json=body, headers=model_admin_headers)
    assert local.status_code == 200, local.text
    remote = [await client.post("/v1/reason", json=body, headers=headers) for _ in range(3)]
    for response in remote:
        assert response.status_code == 200, response.text
    first = remote[0].json()
    expected = local.json()
    assert first["answer"] and first["answer"] == expected["answer"]
    assert [s["text"] for s in first["steps"]] == [s["text"] for s in expected["steps"]]
    assert [b["text"] for b in first["branches"]] == [b["text"] for b in expected["branches"]]
    assert (
        first["constraints"] == expected["constraints"]
        and first["violations"] == expected["violations"]
    )
    assert first["usage"] == expected["usage"] and first["model"] == expected["model"]
    # One prefix, one replica: the repeats hit the prefix the first run filled there.
    hits = [r.json()["pruning"]["prefix_cache_hit"] for r in remote]
    assert hits == [False, True, True]
    # The run is recorded by the API as a local run is, and its hop is exported.
    run = await client.get(f"/v1/runs/{first['run_id']}", headers=headers)
    assert run.status_code == 200
    assert run.json()["result"]["answer"] == first["answer"]
    metrics = (await client.get("/metrics", headers=headers)).text
    assert "tenet_worker_hop_seconds_count 3.0" in metrics


@pytest.mark.ray
@pytest.mark.slow
async def test_a_stream_relays_the_replicas_steps_as_they_settle(
    ray_app: tuple[Litestar, Client, dict[str, str]],
) -> None:
    _, client, headers = ray_app
    body = {
        "prompt": "List three colours, one per line.",
        "options": {"max_new_tokens": 20, "num_beams": 1, "stream": True},
    }
    response = await client.post("/v1/reason", json=body, headers=headers)
    assert response.status_code == 200, response.text
    events = _events(response.text)
    kinds = [event for event, _ in events]
    assert kinds[0] == "plan" and kinds[-1] == "result" and "step" in kinds, kinds
    result = events[-1][1]
    streamed = [(d["id"], d["branch"], d["text"]) for event, d in events if event == "step"]
    assert streamed == [(s["id"], s["branch"], s["text"]) for s in result["steps"]]


def _events(text: str) -> list[tuple[str, Any]]:
    """(event, data) pairs of a server-sent event body."""
    out: list[tuple[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = block.splitlines()
        event = next(
            (ln.removeprefix("event:").strip() for ln in lines if ln.startswith("event:")), None
        )
        data = "\n".join(ln.removeprefix("data:").strip() for ln in lines if ln.startswith("data:"))
        if event is not None:
            out.append((event, json.loads(data)))
    return out


@pytest.mark.ray
@pytest.mark.slow
async def test_session_turns_and_partial_reruns_decode_on_the_workers(
    ray_app: tuple[Litestar, Client, dict[str, str]],
) -> None:
    _, client, headers = ray_app
    created = await client.post("/v1/sessions", json={}, headers=headers)
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    prompt = "Assume the fee is 2%. Should a customer pay the fee on a transfer of 500 euros? Answer briefly."
    turn = await client.post(
        f"/v1/sessions/{sid}/turns", json={"prompt": prompt, "options": FAST}, headers=headers
    )
    assert turn.status_code == 200, turn.text
    [premise] = turn.json()["premises"]
    amended = await client.patch(
        f"/v1/sessions/{sid}/premises/{premise['id']}", json={"value": "3%"}, headers=headers
    )
    assert amended.status_code == 200, amended.text
    assert amended.json()["kind"] == "amendment"
    assert amended.json()["reinference"]["recomputed"]


@pytest.mark.ray
@pytest.mark.slow
async def test_a_full_cluster_answers_429_with_retry_after_and_records_nothing_refused(
    ray_app: tuple[Litestar, Client, dict[str, str]],
) -> None:
    app, client, headers = ray_app
    before = await _runs(app)
    # Capacity: 2 replicas x 1 ongoing decode + 2 waiting in this process (a request counts as
    # waiting until it is routed). Two long decodes of one prefix: the first occupies its
    # replica, the second waits for it (affinity) or runs on the other; of a burst of six sent
    # meanwhile at most two more wait, the others are refused.
    workers = _workers(app)
    hogs = [
        asyncio.create_task(client.post("/v1/reason", json=LONG, headers=headers)) for _ in range(2)
    ]
    await _until(lambda: workers.in_flight >= 2, within_s=60.0)
    short = {"prompt": PROMPT, "options": FAST}
    burst = await asyncio.gather(
        *(client.post("/v1/reason", json=short, headers=headers) for _ in range(6))
    )
    responses = [*burst, *await asyncio.gather(*hogs)]
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) <= {200, 429}, statuses
    refused = [r for r in burst if r.status_code == 429]
    assert refused and statuses.count(200) >= 2, statuses
    for response in refused:
        problem = check_problem(response, 429)
        assert "capacity" in problem["detail"]
        assert int(response.headers["retry-after"]) >= 1
    assert await _runs(app) - before == statuses.count(200)


@pytest.mark.ray
@pytest.mark.slow
async def test_a_replica_killed_mid_decode_is_retried_on_the_other_or_fails_clearly(
    ray_app: tuple[Litestar, Client, dict[str, str]],
) -> None:
    app, client, headers = ray_app
    workers = _workers(app)
    created = await client.post("/v1/sessions", json={}, headers=headers)
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    # The session's jobs go to the replica its id hashes to: that one is killed mid-decode.
    victim = _replica_actor((await workers.describe(10.0, affinity=f"session:{sid}"))["worker"])
    before = await _runs(app)
    request = asyncio.create_task(
        client.post(f"/v1/sessions/{sid}/turns", json=LONG, headers=headers)
    )
    await _until(lambda: workers.in_flight >= 1, within_s=60.0)
    await asyncio.sleep(1.0)  # the decode of 64 tokens takes several seconds: kill it midway
    ray.kill(victim, no_restart=True)
    started = time.monotonic()
    response = await asyncio.wait_for(request, timeout=120.0)
    assert time.monotonic() - started < 120.0
    # With two replicas the job is retried on the survivor; only if that one failed too is the
    # answer a 503 (both are clear answers, neither leaves half a run behind).
    if response.status_code == 200:
        # Retried once on the surviving replica: one run, complete, recorded once.
        assert await _runs(app) - before == 1
        run = await client.get(f"/v1/runs/{response.json()['run_id']}", headers=headers)
        assert run.status_code == 200
    else:
        problem = check_problem(response, 503)
        assert response.headers["retry-after"]
        assert "nothing was recorded" in problem["detail"]
        assert await _runs(app) == before
    verify = (await client.get("/v1/audit/verify", headers=headers)).json()
    assert verify["intact"] is True and verify["checked"] > 0, verify


def _workers(app: Litestar) -> RayWorkers:
    workers = app.state.runtime.workers
    assert isinstance(workers, RayWorkers)
    return workers


async def _until(condition: Callable[[], bool], within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.05)


def _replica_actor(unique_id: str) -> Any:
    """The Serve replica actor whose replica id ends in ``unique_id``."""
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["name"].startswith("SERVE_REPLICA::") and entry["name"].endswith(f"#{unique_id}"):
            return ray.get_actor(entry["name"], namespace=entry["namespace"])
    raise AssertionError(f"no replica actor {unique_id}")


async def test_an_unreachable_ray_head_makes_readyz_and_runs_answer_503_with_retry_after(
    tmp_path: Path, migrated_sqlite_template: Path, loaded_model: LoadedModel
) -> None:
    """TENET_WORKERS=ray on a head nothing listens at: not ready, and no local fallback."""
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    settings = _ray_settings(tmp_path, migrated_sqlite_template, ray_address=address)
    runtime = Runtime(settings)
    runtime.set_model(loaded_model)
    app = create_app(settings, runtime=runtime)
    async with AsyncTestClient(app=app) as client:
        deadline = time.monotonic() + 30
        while "unreachable" not in (runtime.workers.state if runtime.workers else ""):
            assert time.monotonic() < deadline, "the start did not fail"
            await asyncio.sleep(0.1)
        readiness = check_problem(await client.get("/readyz"), 503)
        assert "unreachable" in readiness["workers"] and "workers" in readiness["detail"]
        headers = await _headers(app)
        response = await client.post(
            "/v1/reason", json={"prompt": PROMPT, "options": FAST}, headers=headers
        )
        problem = check_problem(response, 503)
        assert "model workers" in problem["detail"]
        assert int(response.headers["retry-after"]) >= 1
        assert await _runs(app) == 0
