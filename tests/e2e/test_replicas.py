"""Two ``tenet serve`` processes on one PostgreSQL database answer as one service.

One module-scoped pair (no model: these are the shared-state paths, not the decode),
started at the same moment on an empty database, so that both run the migrations and the
first-start bootstrap concurrently. They share a data directory (as replicas share the
mounted audit-head key) and a private Redis started for the module, which holds the
per-key request counts (``TENET_KEY_RATE_LIMITS``).

- both started: one admin key was bootstrapped, the schema is at head;
- a key revoked through one replica is refused by the other within 1 s, although the
  other had it in its key cache (whose entries live 10 s);
- keys created concurrently through both replicas for one tenant leave that tenant's
  audit chain unbroken, with every event in it, and both replicas verify it alike;
- one key's requests, spread over both replicas, are counted once: the limit is reached
  at its number across the pair, not per replica;
- Redis stopped: a keyed request is refused with a 503 problem naming the rate-limit
  store, and ``/readyz`` reports ``rate_limits: unreachable``; Redis back: both count again.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

import migrations
from tests.conftest import POSTGRES_URL, _postgres_admin, postgres_available

REPO = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.postgres, pytest.mark.slow]

#: Per key, across both replicas; the tests below stay under it except the one that spends it.
LIMIT_PER_MINUTE = 60


@dataclass(frozen=True)
class Pair:
    urls: tuple[str, str]
    admin: str
    database_url: str
    redis: subprocess.Popen[bytes]
    redis_port: int
    data_dir: Path

    def client(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 180  # a busy 2-core machine imports slowly
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(
        f"tenet serve at {url} did not start: {log.read_text(errors='replace')[-3000:]}"
    )


def _start_redis(port: int, log: Path) -> subprocess.Popen[bytes]:
    redis = subprocess.Popen(
        [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return redis
        except OSError:
            time.sleep(0.05)
    redis.kill()
    raise AssertionError("redis-server did not start")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    if not postgres_available():
        pytest.skip(f"PostgreSQL does not answer at {POSTGRES_URL}")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    root = tmp_path_factory.mktemp("replicas")
    name = f"tenet_replicas_{uuid.uuid4().hex[:10]}"
    _postgres_admin(f'CREATE DATABASE "{name}"')
    database_url = f"{POSTGRES_URL.rsplit('/', 1)[0]}/{name}"
    redis_port = _free_port()
    redis = _start_redis(redis_port, root / "redis.log")
    data_dir = root / "data"
    env = {
        **os.environ,
        "TENET_DATA_DIR": str(data_dir),
        "TENET_DATABASE_URL": database_url,
        "TENET_LOAD_MODEL": "false",
        "TENET_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "TENET_KEY_RATE_LIMITS": f"{LIMIT_PER_MINUTE}/minute",
    }
    ports = (_free_port(), _free_port())
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for n, port in enumerate(ports):  # both at once: migrations and bootstrap race
            log = root / f"serve-{n}.log"
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
                    env=env,
                    cwd=REPO,
                    stdout=log.open("ab"),
                    stderr=subprocess.STDOUT,
                )
            )
        urls = (f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}")
        for n, (process, url) in enumerate(zip(processes, urls, strict=True)):
            _wait_healthy(process, url, root / f"serve-{n}.log")
        admin = (data_dir / "admin-key.txt").read_text().strip()
        yield Pair(urls, admin, database_url, redis, redis_port, data_dir)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        redis.kill()
        redis.wait(timeout=10)
        _postgres_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _create_key(
    pair: Pair, via: int, tenant: str, scopes: list[str], name: str = ""
) -> dict[str, Any]:
    made = httpx.post(
        f"{pair.urls[via]}/v1/keys",
        headers=pair.client(pair.admin),
        timeout=30,
        json={"tenant": tenant, "name": name or f"key-{uuid.uuid4().hex[:6]}", "scopes": scopes},
    )
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


def _scalar(database_url: str, query: str) -> Any:
    from sqlalchemy import text

    from store.db import create_engine

    async def run() -> Any:
        engine = create_engine(database_url)
        try:
            async with engine.connect() as conn:
                return (await conn.execute(text(query))).scalar_one()
        finally:
            await engine.dispose()

    return asyncio.run(run())


def test_started_together_they_migrated_and_bootstrapped_once(pair: Pair) -> None:
    assert migrations.current_revision(pair.database_url) == migrations.head_revision()
    assert (
        _scalar(pair.database_url, "SELECT count(*) FROM api_keys WHERE name = 'bootstrap admin'")
        == 1
    )
    assert _scalar(pair.database_url, "SELECT count(*) FROM tenants") == 1


def test_a_key_revoked_through_one_replica_is_refused_by_the_other_within_a_second(
    pair: Pair,
) -> None:
    for url in pair.urls:  # each replica listens for revocations made through the others
        assert httpx.get(f"{url}/readyz", timeout=30).json()["key_revocations"] == "listening"
    made = _create_key(pair, 0, "revocations", ["audit:read"])
    token, key_id = made["key"], made["id"]
    for url in pair.urls:  # both replicas verify the key and keep it in their caches
        for _ in range(2):
            answer = httpx.get(
                f"{url}/v1/audit/events?limit=1", headers=pair.client(token), timeout=30
            )
            assert answer.status_code == 200, answer.text
    revoked = httpx.delete(
        f"{pair.urls[0]}/v1/keys/{key_id}", headers=pair.client(pair.admin), timeout=30
    )
    assert revoked.status_code == 200 and revoked.json()["revoked_at"], revoked.text
    since = time.monotonic()
    while True:
        # Timed by when each request is sent: a slow answer on a loaded machine is not a late
        # eviction; any request sent 1 s after the revocation must be refused.
        sent = time.monotonic() - since
        answer = httpx.get(
            f"{pair.urls[1]}/v1/audit/events?limit=1", headers=pair.client(token), timeout=30
        )
        if answer.status_code == 401:
            break
        assert answer.status_code == 200, answer.text
        assert sent < 1.0, "the other replica still accepts the revoked key 1 s after revocation"
        time.sleep(0.02)
    assert sent < 1.0
    assert "revoked" in answer.json()["detail"]


def test_concurrent_writes_through_both_replicas_keep_one_unbroken_chain(pair: Pair) -> None:
    tenant = "chain"
    reader = _create_key(pair, 1, tenant, ["audit:read"], "reader")["key"]
    reasoner = _create_key(pair, 0, tenant, ["reason"], "reasoner")["key"]
    rounds = 12

    def write(i: int) -> list[int]:
        """A key and a session created through one replica, the session deleted through the other."""
        via, other = pair.urls[i % 2], pair.urls[(i + 1) % 2]
        key = httpx.post(
            f"{via}/v1/keys",
            headers=pair.client(pair.admin),
            timeout=60,
            json={"tenant": tenant, "name": f"concurrent-{i}", "scopes": ["reason"]},
        )
        session = httpx.post(
            f"{via}/v1/sessions", headers=pair.client(reasoner), timeout=60, json={}
        )
        deleted = httpx.delete(
            f"{other}/v1/sessions/{session.json()['id']}", headers=pair.client(reasoner), timeout=60
        )
        return [key.status_code, session.status_code, deleted.status_code]

    with ThreadPoolExecutor(max_workers=8) as pool:
        statuses = list(pool.map(write, range(rounds)))
    assert statuses == [[201, 201, 200]] * rounds
    writes = 2 + 3 * rounds  # the reader's and the reasoner's key.created, then every write
    reports = [
        httpx.get(f"{url}/v1/audit/verify", headers=pair.client(reader), timeout=60).json()
        for url in pair.urls
    ]
    for report in reports:
        assert report["intact"] is True, report
        assert report["checked"] == writes
        assert report["head_chain_seq"] == writes
    assert reports[0]["head_hash"] == reports[1]["head_hash"]
    # A head signed by one replica is checked by the other (they share the head key).
    held = httpx.get(
        f"{pair.urls[1]}/v1/audit/verify",
        headers=pair.client(reader),
        timeout=60,
        params={"head": reports[0]["signed_head"]},
    )
    assert held.status_code == 200 and held.json()["head_check"]["holds"] is True, held.text


def test_a_keys_rate_limit_is_counted_across_both_replicas(pair: Pair) -> None:
    token = _create_key(pair, 0, "limited", ["audit:read"])["key"]

    def call(i: int) -> httpx.Response:
        return httpx.get(
            f"{pair.urls[i % 2]}/v1/audit/events?limit=1", headers=pair.client(token), timeout=30
        )

    answers = [call(i) for i in range(LIMIT_PER_MINUTE)]
    assert [a.status_code for a in answers] == [200] * LIMIT_PER_MINUTE
    # Each replica has seen only half the limit; together they have spent all of it.
    for via in (0, 1):
        refused = call(via)
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["Retry-After"]) >= 1
        assert refused.json()["limit"] == f"{LIMIT_PER_MINUTE} per 1 minute"
    # Another key's requests are counted apart.
    other = _create_key(pair, 1, "limited", ["audit:read"])["key"]
    assert (
        httpx.get(
            f"{pair.urls[0]}/v1/audit/events?limit=1", headers=pair.client(other), timeout=30
        ).status_code
        == 200
    )


def test_redis_down_refuses_keyed_requests_with_a_clear_problem_and_readiness_says_so(
    pair: Pair,
) -> None:
    token = _create_key(pair, 0, "redis-down", ["audit:read"])["key"]
    for url in pair.urls:
        assert httpx.get(f"{url}/readyz", timeout=30).json()["rate_limits"] == "ok"
    pair.redis.kill()
    pair.redis.wait(timeout=10)
    for url in pair.urls:
        answer = httpx.get(f"{url}/v1/audit/events?limit=1", headers=pair.client(token), timeout=30)
        assert answer.status_code == 503, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        body = answer.json()
        assert body["rate_limits"] == "unreachable" and "TENET_REDIS_URL" in body["detail"]
        assert int(answer.headers["Retry-After"]) >= 1
        ready = httpx.get(f"{url}/readyz", timeout=30)
        assert ready.status_code == 503 and ready.json()["rate_limits"] == "unreachable"
        assert "rate_limits" in ready.json()["detail"]
        # Liveness is unaffected: the process answers, it only cannot count.
        assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200
    # Redis back (empty: its counts are gone with it): both replicas count again.
    restarted = _start_redis(pair.redis_port, pair.data_dir.parent / "redis.log")
    try:
        for url in pair.urls:
            deadline = time.monotonic() + 10
            while (
                status := httpx.get(
                    f"{url}/v1/audit/events?limit=1", headers=pair.client(token), timeout=30
                ).status_code
            ) == 503:
                assert time.monotonic() < deadline, (
                    "the replica does not count again after Redis is back"
                )
                time.sleep(0.2)
            assert status == 200
            assert httpx.get(f"{url}/readyz", timeout=30).json()["rate_limits"] == "ok"
    finally:
        restarted.kill()
        restarted.wait(timeout=10)
