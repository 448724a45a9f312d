"""The real service, end to end: ``tenet serve`` in a subprocess, driven over loopback HTTP.

Covers what a new user meets after ``make run``: migrations and the bootstrap
admin key on first start, liveness at once, readiness once the model is
loaded, the model identity with the printed key, and request limits enforced
by the real server (a chunked body with no Content-Length).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

MODEL_CACHE = Path(
    os.environ.get("TENET_TEST_MODEL_CACHE", Path(__file__).resolve().parents[2] / "var" / "models")
)
TOKEN = re.compile(r"tnt_[0-9a-f]{12}_\S+")

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    def __init__(
        self, process: subprocess.Popen[str], base: str, token: str, data_dir: Path
    ) -> None:
        self.process, self.base, self.token, self.data_dir = process, base, token, data_dir

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir = tmp_path_factory.mktemp("e2e")
    port = _free_port()
    env = {
        **os.environ,
        "TENET_DATA_DIR": str(data_dir),
        "TENET_MODEL_CACHE_DIR": str(MODEL_CACHE),
        "TENET_DEVICE": "cpu",
        # A named format: the weights probe (tested in tests/inference/weights) would build and
        # time every format at a first start on a fresh cache.
        "TENET_WEIGHTS": "float32",
        "TENET_MAX_BODY_BYTES": "65536",
        "TENET_LOG_JSON": "true",
    }
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    token = ""
    while not token:
        line = process.stdout.readline()
        assert line or process.poll() is None, "tenet serve exited before printing the admin key"
        if match := TOKEN.search(line):
            token = match.group(0)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server never answered /healthz"
            time.sleep(0.1)
        server = Server(process, base, token, data_dir)
        server.healthy_after_s = time.monotonic() - started  # type: ignore[attr-defined]
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.model
def test_first_start_prints_a_working_admin_key(server: Server) -> None:
    assert (server.data_dir / "admin-key.txt").read_text().strip() == server.token
    assert oct((server.data_dir / "admin-key.txt").stat().st_mode & 0o777) == "0o600"
    keys = httpx.get(f"{server.base}/v1/keys", headers=server.headers, timeout=10)
    assert keys.status_code == 200
    assert [k["tenant"] for k in keys.json()["data"]] == ["default"]


@pytest.mark.model
def test_ready_once_the_model_is_loaded_then_models_answers(server: Server) -> None:
    deadline = time.monotonic() + 300
    while True:
        try:
            ready = httpx.get(f"{server.base}/readyz", timeout=10)
        except httpx.TimeoutException:
            # Loading the model competes with the event loop for two CPU cores; a slow
            # probe answer while loading is "not ready yet", not a failure.
            assert time.monotonic() < deadline, "/readyz never answered in time"
            continue
        if ready.status_code == 200:
            break
        assert ready.status_code == 503 and ready.headers["content-type"].startswith(
            "application/problem+json"
        )
        assert time.monotonic() < deadline, ready.text
        time.sleep(0.25)
    models = httpx.get(f"{server.base}/v1/models", headers=server.headers, timeout=10)
    assert models.status_code == 200
    (model,) = models.json()["data"]
    assert model["id"] == "SmolLM2-135M-Instruct" and len(model["sha256"]) == 64
    rss = _rss_mib(server.process.pid)
    print(
        f"\nserve: healthy after {server.healthy_after_s:.1f} s, RSS with model loaded {rss:.0f} MiB"
    )  # type: ignore[attr-defined]
    assert rss < 4096


@pytest.mark.model
def test_chunked_body_over_the_limit_is_413(server: Server) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"scopes": ["reason"], "name": "'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"}'

    response = httpx.post(
        f"{server.base}/v1/keys",
        content=chunks(),
        headers={**server.headers, "content-type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 413
    assert response.json()["request_id"] == response.headers["x-request-id"]


@pytest.mark.model
def test_problem_bodies_over_real_http(server: Server) -> None:
    missing = httpx.get(f"{server.base}/v1/models", timeout=5)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    malformed = httpx.post(
        f"{server.base}/v1/keys",
        content=b"{not json",
        headers={**server.headers, "content-type": "application/json", "X-Request-ID": "e2e-1"},
        timeout=5,
    )
    assert malformed.status_code == 400
    assert malformed.json()["request_id"] == "e2e-1" == malformed.headers["x-request-id"]


def _readme_reason_body() -> dict[str, object]:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    match = re.search(
        r"curl -s http://127\.0\.0\.1:8000/v1/reason.*?-d '(\{.*?\})'", readme, re.DOTALL
    )
    assert match, "README lost its POST /v1/reason curl example"
    body: dict[str, object] = json.loads(match.group(1))
    return body


@pytest.mark.model
def test_the_readme_curl_example_gets_a_real_answer(server: Server) -> None:
    deadline = time.monotonic() + 300
    while httpx.get(f"{server.base}/readyz", timeout=5).status_code != 200:
        assert time.monotonic() < deadline
        time.sleep(0.25)
    started = time.monotonic()
    response = httpx.post(
        f"{server.base}/v1/reason", json=_readme_reason_body(), headers=server.headers, timeout=600
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "ok" and body["answer"].strip()
    kinds = {c["kind"]: c for c in body["constraints"]}
    assert kinds.keys() >= {"bullet_count", "keyword_frequency"}
    # Both are controlled, as the README says: the three bullets and "risk" twice.
    assert all(c["verdict"]["satisfied"] for c in kinds.values()), body["constraints"]
    assert (
        body["model"]["sha256"]
        == httpx.get(f"{server.base}/v1/models", headers=server.headers).json()["data"][0]["sha256"]
    )
    print(f"\nREADME example answered in {time.monotonic() - started:.1f} s")
