"""Alembic migrations, runnable from any working directory.

``script_location`` is this package's own directory, so ``tenet db upgrade``
works wherever the service is installed. The runner functions take the
database URL (or an open async connection) explicitly; nothing is read from an
``alembic.ini``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from store.db import create_engine

__all__ = ["alembic_config", "current_revision", "downgrade", "upgrade", "upgrade_engine"]

_HERE = Path(__file__).resolve().parent
T = TypeVar("T")


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
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(url, sync), revision))


async def _downgrade_engine(engine: AsyncEngine, revision: str) -> None:
    url = engine.url.render_as_string(hide_password=False)
    async with engine.begin() as conn:
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
