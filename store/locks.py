"""Named, transaction-scoped locks that serialise work across replicas sharing one database.

On PostgreSQL, :func:`hold` takes ``pg_advisory_xact_lock`` on a 64-bit key
derived from the name: a second replica's transaction asking for the same
name waits until the first commits or rolls back (a killed replica's
connection ends its transaction, so the lock cannot be left behind). On
SQLite it does nothing: a SQLite deployment is one process, and SQLite admits
one writer at a time anyway.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["hold", "lock_key"]


def lock_key(name: str) -> int:
    """The signed 64-bit advisory-lock key of ``name`` (stable across processes and versions)."""
    digest = hashlib.sha256(b"tenet.lock:" + name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def hold(session: AsyncSession, name: str) -> None:
    """Serialise the rest of the caller's transaction with every other one holding ``name``."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": lock_key(name)})
