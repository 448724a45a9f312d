"""Server-level statements on PostgreSQL: creating and dropping whole databases.

``CREATE DATABASE`` and ``DROP DATABASE`` cannot run inside a transaction, so they
go over one plain asyncpg connection rather than the application's engine. Used by
the benchmarks and tests that give each run a database of its own.
"""

from __future__ import annotations

import asyncpg

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
