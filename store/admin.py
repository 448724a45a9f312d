"""Server-level statements on PostgreSQL: creating and dropping whole databases.

``CREATE DATABASE`` and ``DROP DATABASE`` cannot run inside a transaction, so they
go over one plain asyncpg connection rather than the application's engine. Used by
the benchmarks and tests that give each run a database of its own.
"""

from __future__ import annotations

import socket

import asyncpg
from sqlalchemy.engine import make_url

from store.key_events import listen_dsn


async def execute_on_server(database_url: str, statement: str) -> None:
    """Run ``statement`` outside any transaction on the PostgreSQL server of ``database_url``.

    Raises ``ValueError`` for a URL that is not PostgreSQL; the connection is closed
    whether the statement succeeds or not.
    """
    dsn = listen_dsn(database_url)
    if dsn is None:
        raise ValueError("server statements need a PostgreSQL URL")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


def accepts_connections(database_url: str, timeout_s: float = 0.5) -> bool:
    """True when something accepts TCP connections at the URL's host and port.

    A cheap probe for benchmarks and tests that skip without PostgreSQL; it proves
    nothing about credentials or the database itself.
    """
    url = make_url(database_url)
    try:
        with socket.create_connection(
            (url.host or "127.0.0.1", url.port or 5432), timeout=timeout_s
        ):
            return True
    except OSError:
        return False
