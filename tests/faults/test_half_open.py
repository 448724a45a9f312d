"""Half-open connections against ``tenet serve``: real sockets, the real server.

A connection that sends no request head, or only part of one, within TENET_HEADER_TIMEOUT_S
is closed by the server; complete requests on the same kind of connection are answered.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import MODEL_CACHE

REPO = Path(__file__).resolve().parents[2]
HEADER_TIMEOUT_S = 1.0
HALF_OPEN = 300


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """One ``tenet serve`` for the module: each test opens connections of its own, and a
    server start costs more than every test here together."""
    port = _free_port()
    data_dir = tmp_path_factory.mktemp("half-open") / "data"
    env = {**os.environ, "TENET_DATA_DIR": str(data_dir), "TENET_LOAD_MODEL": "false",
           "TENET_MODEL_CACHE_DIR": str(MODEL_CACHE),
           "TENET_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S)}
    process = subprocess.Popen([sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
                               env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError("tenet serve did not start") from None
                time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=60)


def _closed_by_peer(sock: socket.socket, within_s: float) -> bool:
    """True when the server closes the connection (EOF or reset) within the bound."""
    deadline = time.monotonic() + within_s
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if readable:
            try:
                data = sock.recv(4096)
            except ConnectionResetError:
                return True
            if data == b"":
                return True
    return False


def test_half_open_connections_are_closed_within_the_header_timeout(served: int) -> None:
    sockets: list[socket.socket] = []
    try:
        for i in range(HALF_OPEN):
            sock = socket.create_connection(("127.0.0.1", served), timeout=10)
            if i % 3 == 1:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # a head never finished
            elif i % 3 == 2:
                sock.sendall(b"GE")
            sockets.append(sock)
        opened = time.monotonic()
        bound = HEADER_TIMEOUT_S + 10.0  # the deadline plus scheduling slack on a busy machine
        still_open = [s for s in sockets if not _closed_by_peer(s, bound - (time.monotonic() - opened))]
        assert still_open == [], f"{len(still_open)} of {HALF_OPEN} half-open connections held"
        # The server is not worn out: a complete request is answered at once.
        assert httpx.get(f"http://127.0.0.1:{served}/healthz", timeout=10).status_code == 200
    finally:
        for sock in sockets:
            sock.close()


def test_a_complete_head_is_answered_and_keep_alive_is_bounded_again(served: int) -> None:
    with socket.create_connection(("127.0.0.1", served), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        time.sleep(HEADER_TIMEOUT_S / 4)  # slow, but within the deadline
        sock.sendall(b"Host: x\r\n\r\n")
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            assert chunk, "the server closed a connection whose head came in time"
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /heal")  # the next request's head starts and stalls
        assert _closed_by_peer(sock, HEADER_TIMEOUT_S + 10.0)
