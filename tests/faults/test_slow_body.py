"""Slow bodies and clients that go away, against the app served as ``tenet serve`` serves it
(uvicorn with ``app.http_protocol``) on real sockets.

A body dripped slower than TENET_BODY_TIMEOUT_S allows is cut off; a client that leaves
before its request is read is a 499 in the metrics and the log, never a 5xx.
"""

from __future__ import annotations

import asyncio
import logging
import select
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.factory import create_app
from app.settings import Settings
from bench.threaded_server import admin_key, serve_in_thread, served_protocol
from tests.conftest import MODEL_CACHE

BODY_TIMEOUT_S = 1.0
DRIPPING = 20


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_template: Path
           ) -> Iterator[tuple[int, str]]:
    data_dir = tmp_path_factory.mktemp("slow-body")
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    settings = Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE,
                        header_timeout_s=5.0, body_timeout_s=BODY_TIMEOUT_S)
    token = asyncio.run(admin_key(settings.database_url))
    served_app = serve_in_thread(create_app(settings), http=served_protocol(settings))
    yield served_app.port, token
    served_app.close()


def _closed_by_peer(sock: socket.socket, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if readable:
            try:
                if sock.recv(4096) == b"":
                    return True
            except ConnectionResetError:
                return True
    return False


def _statuses(port: int) -> dict[str, float]:
    """``status -> count`` of POST /v1/keys answers, from the served /metrics."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    counts: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("tenet_http_request_seconds_count{") and 'route="/v1/keys"' in line \
                and 'method="POST"' in line:
            status = line.split('status="', 1)[1].split('"', 1)[0]
            counts[status] = counts.get(status, 0.0) + float(line.rsplit(" ", 1)[1])
    return counts


def test_a_dripped_body_is_cut_off_and_counted_as_a_499(
    served: tuple[int, str], caplog: pytest.LogCaptureFixture
) -> None:
    port, token = served
    before = _statuses(port)
    head = (f"POST /v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"tenant\"").encode()
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(DRIPPING)]
    try:
        with caplog.at_level(logging.INFO, logger="tenet.errors"):
            for sock in sockets:
                sock.sendall(head)
            opened = time.monotonic()
            bound = BODY_TIMEOUT_S + 10.0  # the deadline plus scheduling slack
            still_open = [s for s in sockets
                          if not _closed_by_peer(s, bound - (time.monotonic() - opened))]
            assert still_open == [], f"{len(still_open)} of {DRIPPING} dripping bodies held"
            time.sleep(0.5)  # the handlers see the disconnect and answer
        after = _statuses(port)
        assert after.get("499", 0) - before.get("499", 0) == DRIPPING
        assert not any(s.startswith("5") and after[s] > before.get(s, 0) for s in after)
        assert all(r.levelno < logging.WARNING for r in caplog.records
                   if "disconnected" in r.getMessage())
    finally:
        for sock in sockets:
            sock.close()
    # The server is not worn out: a complete request is answered at once.
    assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200


def test_a_body_sent_in_time_is_answered(served: tuple[int, str]) -> None:
    port, token = served
    answer = httpx.post(f"http://127.0.0.1:{port}/v1/keys", timeout=10,
                        headers={"Authorization": f"Bearer {token}"},
                        json={"tenant": "in-time", "scopes": ["reason"]})
    assert answer.status_code == 201, answer.text
