"""``tenet serve`` killed (SIGKILL) while it creates keys and while it records runs, then restarted.

The kill lands while many writes are in flight, at whatever moment that is; the assertions
hold for every moment: each written row has every row that belongs with it (a key its
tenant and ``key.created`` event, a run its steps, PROV bundle and ``run.recorded`` event),
no event names a row that is missing, each tenant's audit chain verifies after the restart,
and the restarted service writes again.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import MODEL_CACHE, TEST_DEVICE

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(data_dir: Path, port: int, *, model: bool) -> subprocess.Popen[bytes]:
    log = (data_dir.parent / "serve.log").open("ab")
    env = {**os.environ, "TENET_DATA_DIR": str(data_dir), "TENET_MODEL_CACHE_DIR": str(MODEL_CACHE),
           "TENET_LOAD_MODEL": "true" if model else "false", "TENET_DEVICE": TEST_DEVICE,
           # Named, so no start pays the weights probe (tested in tests/inference/weights).
           "TENET_WEIGHTS": "float32"}
    process = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
                               env=env, cwd=REPO, stdout=log, stderr=log)
    probe = "/readyz" if model else "/healthz"
    deadline = time.monotonic() + (600 if model else 120)  # a busy machine loads slowly
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}{probe}", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    tail = (data_dir.parent / "serve.log").read_text(errors="replace")[-2000:]
    raise AssertionError(f"tenet serve did not become ready: {tail}")


def _hammer(work: Any, until: threading.Event, threads: int) -> tuple[list[threading.Thread], list[Any]]:
    """Run ``work(i)`` in a loop on ``threads`` threads until ``until``; collect what it returns."""
    results: list[Any] = []
    lock = threading.Lock()

    def loop(worker: int) -> None:
        i = 0
        while not until.is_set():
            try:
                value = work(worker * 100_000 + i)
            except httpx.HTTPError:
                return  # the server died under the request
            with lock:
                results.append(value)
            i += 1

    started = [threading.Thread(target=loop, args=(w,), daemon=True) for w in range(threads)]
    for thread in started:
        thread.start()
    return started, results


def _kill_when(process: subprocess.Popen[bytes], results: list[Any], successes: int,
               is_success: Any, stop: threading.Event, threads: list[threading.Thread]) -> None:
    deadline = time.monotonic() + 300
    while sum(1 for r in results if is_success(r)) < successes:
        assert time.monotonic() < deadline, f"too few successes before the kill: {results[-5:]}"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)


def _verify(port: int, token: str) -> dict[str, Any]:
    answer = httpx.get(f"http://127.0.0.1:{port}/v1/audit/verify",
                       headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    report: dict[str, Any] = answer.json()
    return report


def test_sigkill_during_key_creation_leaves_nothing_half_written(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", _free_port()
    first = _start(data_dir, port, model=False)
    admin = (data_dir / "admin-key.txt").read_text().strip()
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {admin}"}
    tenant_tokens: dict[str, str] = {}
    for k in range(3):  # tenants with an audit reader each, to verify their chains afterwards
        made = httpx.post(f"{base}/v1/keys", headers=auth, timeout=30,
                          json={"tenant": f"kill-{k}", "scopes": ["audit:read"]})
        assert made.status_code == 201, made.text
        tenant_tokens[f"kill-{k}"] = made.json()["key"]

    def create(i: int) -> tuple[int, str]:
        tenant = f"kill-{i % 3}" if i % 2 else f"new-{i}"  # new tenants are written with their key
        made = httpx.post(f"{base}/v1/keys", headers=auth, timeout=30,
                          json={"tenant": tenant, "name": f"k{i}", "scopes": ["reason"]})
        return made.status_code, made.text

    stop = threading.Event()
    threads, results = _hammer(create, stop, threads=6)
    _kill_when(first, results, 30, lambda r: r[0] == 201, stop, threads)
    assert all(status == 201 for status, _ in results), [r for r in results if r[0] != 201][:3]

    with sqlite3.connect(data_dir / "tenet.db") as db:
        keys = {row[0] for row in db.execute("SELECT id FROM api_keys")}
        bootstrap = {row[0] for row in db.execute(
            "SELECT id FROM api_keys WHERE name = 'bootstrap admin'")}
        created = {row[0] for row in db.execute(
            "SELECT subject_id FROM audit_events WHERE event_type = 'key.created'")}
        keyless = [row[0] for row in db.execute(
            "SELECT name FROM tenants WHERE id NOT IN (SELECT tenant_id FROM api_keys)")]
        event_tenants = {row[0] for row in db.execute(
            "SELECT DISTINCT t.name FROM audit_events e JOIN tenants t ON t.id = e.tenant_id")}
    assert created == keys - bootstrap  # each key has its event, each event its key
    assert len(keys) >= 3 + 30 + len(bootstrap)
    assert keyless == []  # no tenant row was left without the key it was created for

    second = _start(data_dir, port, model=False)
    try:
        assert _verify(port, admin)["intact"] is True
        for tenant, token in tenant_tokens.items():
            assert tenant in event_tenants
            assert _verify(port, token)["intact"] is True, tenant
        again = httpx.post(f"{base}/v1/keys", headers=auth, timeout=30,
                           json={"tenant": "kill-0", "scopes": ["reason"]})
        assert again.status_code == 201, again.text
        assert _verify(port, tenant_tokens["kill-0"])["intact"] is True
    finally:
        second.terminate()
        second.wait(timeout=60)


@pytest.mark.model
def test_sigkill_during_run_records_leaves_nothing_half_written(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", _free_port()
    first = _start(data_dir, port, model=True)
    admin = (data_dir / "admin-key.txt").read_text().strip()
    base = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {admin}"}

    def reason(i: int) -> tuple[int, str]:
        answer = httpx.post(f"{base}/v1/reason", headers=auth, timeout=120, json={
            "prompt": f"Name a colour, then a number above {i}.",
            "options": {"max_new_tokens": 8, "num_beams": 1}})
        return answer.status_code, answer.json().get("run_id", "") if answer.status_code == 200 else ""

    stop = threading.Event()
    threads, results = _hammer(reason, stop, threads=3)
    _kill_when(first, results, 3, lambda r: r[0] == 200, stop, threads)
    answered = {run_id for status, run_id in results if status == 200}
    assert all(status == 200 for status, _ in results), results[:3]

    with sqlite3.connect(data_dir / "tenet.db") as db:
        runs = {row[0] for row in db.execute("SELECT id FROM runs")}
        bundles = {row[0] for row in db.execute("SELECT run_id FROM provenance_bundles")}
        recorded = {row[0] for row in db.execute(
            "SELECT subject_id FROM audit_events WHERE event_type = 'run.recorded'")}
        stepped = {row[0] for row in db.execute("SELECT DISTINCT run_id FROM run_steps")}
    assert answered <= runs  # every answered run was recorded before its answer
    assert runs == bundles == recorded  # and each record is whole
    assert stepped <= runs  # no steps of a run that was not recorded

    second = _start(data_dir, port, model=False)
    try:
        report = _verify(port, admin)
        assert report["intact"] is True, report
        for run_id in runs:
            fetched = httpx.get(f"{base}/v1/runs/{run_id}", headers=auth, timeout=30)
            assert fetched.status_code == 200, fetched.text
    finally:
        second.terminate()
        second.wait(timeout=60)
