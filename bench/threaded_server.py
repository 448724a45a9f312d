"""The app served by uvicorn on a loopback port in a background thread, and its admin key.

For benchmarks and tests that need real sockets (slow bodies, the HTTP
contract) in the same process as the app; ``bench.service`` starts a
separate ``tenet serve`` process instead. :func:`serve_in_thread` returns
only once uvicorn has started, and :meth:`ThreadedServer.close` stops it
and frees the port.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import uvicorn

from app.bootstrap import bootstrap_admin_key
from app.http_protocol import header_deadline_protocol
from app.settings import Settings
from store.db import create_engine, create_sessionmaker

__all__ = ["ThreadedServer", "admin_key", "serve_in_thread", "served_protocol"]

START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ThreadedServer:
    """A running uvicorn server, its thread and its listening socket."""

    server: uvicorn.Server
    thread: threading.Thread
    sock: socket.socket

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)
        self.sock.close()


def served_protocol(settings: Settings) -> Any:
    """The HTTP protocol ``tenet serve`` uses: uvicorn's, with the header and body deadlines."""
    return header_deadline_protocol(settings.header_timeout_s, settings.body_timeout_s)


def serve_in_thread(app: Any, *, http: Any = "auto", log_level: str = "critical") -> ThreadedServer:
    """``app`` served on a free loopback port (lifespan on), started before this returns."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on", http=http))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            server.should_exit = True
            sock.close()
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    return ThreadedServer(server, thread, sock)


async def admin_key(database_url: str) -> str:
    """The default tenant's first admin key, made in the key-less database at ``database_url``."""
    engine = create_engine(database_url)
    try:
        token = await bootstrap_admin_key(create_sessionmaker(engine), None)
    finally:
        await engine.dispose()
    if token is None:
        raise RuntimeError("the database already holds keys: no admin key was made")
    return token
