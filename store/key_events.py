"""Key revocations announced to every replica through PostgreSQL ``LISTEN/NOTIFY``.

Each replica caches verified keys for a few seconds (``app.auth.KeyCache``)
so that a busy key costs no database round trip per request. With several
replicas on one PostgreSQL database, a key revoked through one replica must
stop working on all of them at once, not when their cache entries expire.

- :func:`announce_revoked` runs in the revoking transaction and sends
  ``NOTIFY tenet_key_revoked, '<key id>'``. PostgreSQL delivers a
  notification only when its transaction commits, so a revocation that rolls
  back announces nothing, and one that commits reaches every listener
  (typically within milliseconds).
- :class:`RevocationListener` holds one dedicated connection per replica that
  ``LISTEN``\\ s on the channel and hands each key id to a callback (the key
  cache's eviction). While that connection is down the listener cannot hear
  revocations, so it tells its owner (``on_deaf`` / ``on_listening``): the
  key cache then trusts nothing it holds and every request verifies its key
  against the database, which sees every committed revocation. A closed
  connection is noticed at once, a silently dropped one by a ping every
  :data:`KEEPALIVE_S` seconds; it reconnects with back-off.

SQLite has no notifications: :func:`announce_revoked` does nothing there, and a
SQLite deployment is one process, whose own revocations evict at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Any, Final

from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["KEEPALIVE_S", "REVOKED_CHANNEL", "RevocationListener", "announce_revoked", "listen_dsn"]

log = logging.getLogger("tenet.store.key_events")

#: The notification channel revocations are sent on.
REVOKED_CHANNEL: Final = "tenet_key_revoked"
#: Seconds between the listener's checks that its connection still answers.
KEEPALIVE_S: Final = 5.0
_CONNECT_TIMEOUT_S: Final = 5.0
_MAX_BACKOFF_S: Final = 10.0


async def announce_revoked(session: AsyncSession, key_id: str) -> None:
    """Tell every replica, when the caller's transaction commits, that ``key_id`` is revoked."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(
            text("SELECT pg_notify(:channel, :key_id)"),
            {"channel": REVOKED_CHANNEL, "key_id": key_id},
        )


def listen_dsn(database_url: str) -> str | None:
    """The plain ``postgresql://`` DSN asyncpg connects to for ``database_url``; None for SQLite."""
    url = make_url(database_url)
    if not url.drivername.startswith("postgresql"):
        return None
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _set_on_close(event: asyncio.Event, _conn: Any) -> None:
    event.set()


class RevocationListener:
    """One replica's ``LISTEN`` connection on :data:`REVOKED_CHANNEL`.

    ``on_revoked(key_id)`` is called on the event loop for each announced
    revocation. ``on_deaf()`` is called once when the listener starts and
    each time a listening connection is lost; ``on_listening()`` once each
    time it (re)connects. The two alternate, beginning with ``on_deaf``, and
    :meth:`stop` ends a deaf spell with ``on_listening`` so that the owner's
    count of deaf listeners returns to where it was.
    """

    def __init__(
        self,
        dsn: str,
        on_revoked: Callable[[str], object],
        on_deaf: Callable[[], object],
        on_listening: Callable[[], object],
    ) -> None:
        self._dsn = dsn
        self._on_revoked = on_revoked
        self._on_deaf = on_deaf
        self._on_listening = on_listening
        self._task: asyncio.Task[None] | None = None
        self._listening = False
        self._deaf = False
        self._connected = asyncio.Event()

    @property
    def listening(self) -> bool:
        """True while a connection is subscribed to the channel."""
        return self._listening

    def start(self) -> None:
        """Start listening in a background task of the running loop (idempotent)."""
        if self._task is None:
            self._become_deaf()
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="tenet-key-revocations"
            )

    async def wait_listening(self, timeout_s: float) -> bool:
        """Wait until the first connection listens; False when it does not within ``timeout_s``."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), timeout_s)
        return self._listening

    async def stop(self) -> None:
        """Close the connection and end the task."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._deaf:
            self._deaf = False
            self._on_listening()

    def _become_deaf(self) -> None:
        self._listening = False
        if not self._deaf:
            self._deaf = True
            self._on_deaf()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        self._on_revoked(payload)

    async def _run(self) -> None:
        import asyncpg

        backoff = 0.5
        while True:
            conn: Any = None
            try:
                conn = await asyncpg.connect(self._dsn, timeout=_CONNECT_TIMEOUT_S)
                lost = asyncio.Event()
                conn.add_termination_listener(functools.partial(_set_on_close, lost))
                await conn.add_listener(REVOKED_CHANNEL, self._notified)
                self._listening, self._deaf = True, False
                self._connected.set()
                self._on_listening()
                backoff = 0.5
                while not conn.is_closed():
                    try:  # a closed connection wakes this at once; a silent one fails the ping
                        await asyncio.wait_for(lost.wait(), KEEPALIVE_S)
                    except TimeoutError:
                        await asyncio.wait_for(conn.fetchval("SELECT 1"), _CONNECT_TIMEOUT_S)
                log.warning("key revocation listener: the connection closed")
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever ends the connection, deaf until a new one listens
                log.warning("key revocation listener: %s: %s", type(exc).__name__, exc)
            finally:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.terminate()
            self._become_deaf()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _MAX_BACKOFF_S)
