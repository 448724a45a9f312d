"""The async engine and session factory.

One engine per app. SQLite gets foreign keys switched on and WAL journaling
on every connection (SQLite leaves both off by default, and without foreign
keys a cascade in the schema would silently do nothing).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, make_url, text
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

__all__ = [
    "MIN_FREE_BYTES",
    "create_engine",
    "create_sessionmaker",
    "ping",
    "sqlite_disk_state",
    "sqlite_unwritable",
    "storage_failure",
    "transaction",
]

#: Below this much free space on a SQLite database's file system, readiness reports the disk full.
MIN_FREE_BYTES = 1024 * 1024

_DISK_FULL = ("database or disk is full", "no space left on device", "disk full",
              "could not extend file")
#: Another writer holds the database past SQLite's busy timeout, or a PostgreSQL lock wait ran out.
_BUSY = ("database is locked", "database table is locked", "lock timeout",
         "deadlock detected")
_GONE = ("connection was closed", "connection is closed", "terminating connection",
         "connection refused", "connection reset", "server closed the connection")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    cursor.close()


def _private_sqlite_file(url: str) -> None:
    """Create the SQLite file of ``url`` readable by its owner only (0600), or tighten it to that.

    SQLite creates a database (and its ``-wal`` / ``-shm`` files, which copy the
    database file's mode) with the process umask, typically world-readable;
    the database holds key hashes, prompts and answers.
    """
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    if not path.parent.is_dir():
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
    except OSError:
        return  # a read-only directory or a file owned by another user: SQLite reports it


def create_engine(url: str, *, echo: bool = False) -> AsyncEngine:
    """Create the async engine for ``url`` (sqlite+aiosqlite or postgresql+asyncpg).

    A SQLite database file is made private to its owner (mode 0600).
    """
    kwargs: dict[str, Any] = {"echo": echo}
    if url.startswith("postgresql"):
        kwargs.update(pool_pre_ping=True, pool_size=10, max_overflow=10)
    engine = create_async_engine(url, **kwargs)
    if url.startswith("sqlite"):
        _private_sqlite_file(url)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


def create_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    """Sessions that keep loaded attributes after commit (handlers read them after)."""
    return async_sessionmaker(engine, expire_on_commit=False)


@asynccontextmanager
async def transaction(factory: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One unit of work: committed when the block succeeds, rolled back when it raises."""
    async with factory() as session:
        try:
            yield session
            await session.commit()
        except BaseException:
            await session.rollback()
            raise


def storage_failure(exc: BaseException) -> str | None:
    """``"disk full"``, ``"database unreachable"`` or ``"database busy"`` (locked by another
    writer past the wait) when ``exc`` (or what caused it) is that storage failure, else None:
    failures a client should meet as 503, not as a bug."""
    seen: BaseException | None = exc
    while seen is not None:
        text_ = str(seen).lower()
        if type(seen).__name__ == "DiskFullError" or any(m in text_ for m in _DISK_FULL):
            return "disk full"
        if type(seen).__name__ in {"ConnectionDoesNotExistError", "InterfaceError",
                                   "AdminShutdownError", "CannotConnectNowError"} or any(
            m in text_ for m in _GONE
        ):
            return "database unreachable"
        if type(seen).__name__ in {"LockNotAvailableError", "DeadlockDetectedError"} or any(
            m in text_ for m in _BUSY
        ):
            return "database busy"
        seen = seen.__cause__ or seen.__context__
    return None


def sqlite_disk_state(url: str) -> str | None:
    """``"disk full"`` when a SQLite database's file system has under :data:`MIN_FREE_BYTES`
    free (a write would fail while reads still answer); None otherwise or for other engines."""
    if not url.startswith("sqlite"):
        return None
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    try:
        free = shutil.disk_usage(Path(database).parent).free
    except OSError:
        return None
    return "disk full" if free < MIN_FREE_BYTES else None


def sqlite_unwritable(url: str) -> str | None:
    """Why a SQLite database of ``url`` cannot be written, or None (also for other engines).

    SQLite in WAL mode writes the database, its ``-wal`` log and its ``-shm`` index, and
    maps the ``-shm`` file into memory: an ``-shm`` it cannot write refuses every write,
    and one it maps but cannot extend has stopped the process with SIGBUS, no log line. So
    before serving, each of the three that exists must open for writing, and the
    directory must take new files (SQLite creates the missing ones there). Nothing is
    changed: existing files are opened and closed, the directory probe is removed.
    """
    if not url.startswith("sqlite"):
        return None
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database)
    directory = path.parent
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if not candidate.exists():
            continue
        try:
            os.close(os.open(candidate, os.O_RDWR))
        except OSError as exc:
            return f"the SQLite file {candidate} is not writable ({exc.strerror or exc})"
    probe = directory / f".{path.name}-write-check-{os.getpid()}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        probe.unlink()
    except FileNotFoundError:
        return f"the directory {directory} of the SQLite database does not exist"
    except OSError as exc:
        return (f"the directory {directory} of the SQLite database does not take new files "
                f"({exc.strerror or exc}); SQLite creates its -wal and -shm files there")
    return None


async def ping(engine: AsyncEngine) -> None:
    """Raise unless the database answers ``SELECT 1``."""
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
