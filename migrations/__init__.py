"""Alembic migrations, runnable from any working directory.

``script_location`` is this package's own directory, so ``tenet db upgrade``
works wherever the service is installed. The runner functions take the
database URL (or an open async connection) explicitly; nothing is read from an
``alembic.ini``.

Several replicas may start at once against one PostgreSQL database: every
upgrade and downgrade takes a transaction-scoped advisory lock
(:data:`MIGRATION_LOCK_KEY`) before Alembic reads the current revision, so
exactly one replica applies the revisions and the others wait, then find the
database at head and apply nothing. The revisions run in that same
transaction (PostgreSQL has transactional DDL), so the lock is released when
they commit or roll back, and a replica killed mid-migration leaves nothing
half-applied. SQLite needs no lock: it admits one writer at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from store.db import create_engine

__all__ = [
    "MIGRATION_LOCK_KEY",
    "alembic_config",
    "current_revision",
    "downgrade",
    "upgrade",
    "upgrade_engine",
]

_HERE = Path(__file__).resolve().parent
T = TypeVar("T")

#: The PostgreSQL advisory lock every migration run holds (a fixed 64-bit key, the bytes "tenetmig").
MIGRATION_LOCK_KEY = int.from_bytes(b"tenetmig", "big") & 0x7FFF_FFFF_FFFF_FFFF


async def _lock_migrations(conn: AsyncConnection) -> None:
    """On PostgreSQL, wait for any other replica's migration run to end (lock held until commit)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})


def alembic_config(url: str, connection: Connection | None = None) -> Config:
    """An Alembic config for ``url``; with ``connection``, migrations run on it."""
    cfg = Config()
    cfg.set_main_option("script_location", str(_HERE))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


async def upgrade_engine(engine: AsyncEngine, revision: str = "head") -> None:
    """Upgrade the database behind ``engine`` inside the running event loop."""
    url = engine.url.render_as_string(hide_password=False)
    async with engine.begin() as conn:
        await _lock_migrations(conn)
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(url, sync), revision))


async def _downgrade_engine(engine: AsyncEngine, revision: str) -> None:
    url = engine.url.render_as_string(hide_password=False)
    async with engine.begin() as conn:
        await _lock_migrations(conn)
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(url, sync), revision))


async def _current(engine: AsyncEngine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    async with engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )


def _with_engine(url: str, work: Callable[[AsyncEngine], Awaitable[T]]) -> T:
    async def main() -> T:
        engine = create_engine(url)
        try:
            return await work(engine)
        finally:
            await engine.dispose()

    return asyncio.run(main())


def upgrade(url: str, revision: str = "head") -> None:
    """Upgrade ``url`` to ``revision`` (blocking; not from inside an event loop)."""
    _with_engine(url, lambda engine: upgrade_engine(engine, revision))


def downgrade(url: str, revision: str) -> None:
    """Downgrade ``url`` to ``revision`` (``base`` removes every table)."""
    _with_engine(url, lambda engine: _downgrade_engine(engine, revision))


def current_revision(url: str) -> str | None:
    """The revision the database at ``url`` is at, or None when unmigrated."""
    return _with_engine(url, _current)


def head_revision() -> str:
    """The newest revision in ``migrations/versions`` (what ``upgrade`` reaches)."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None, "migrations/versions holds no revision"
    return head
