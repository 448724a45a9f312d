"""Key revocations over PostgreSQL LISTEN/NOTIFY, and the key cache while the listener is deaf.

Real PostgreSQL: a revocation committed in one connection reaches a listener; a rolled-back
one does not; the listener's connection killed by the server makes it deaf (the key cache
then answers nothing) until it reconnects (the cache is emptied then, since revocations may
have been missed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

import migrations
from app.auth import AuthContext, KeyCache
from store import keys as key_store
from store.db import create_engine, create_sessionmaker, transaction
from store.key_events import REVOKED_CHANNEL, RevocationListener, listen_dsn

pytestmark = pytest.mark.postgres


class Recorder:
    """What the listener told its owner, in order."""

    def __init__(self, cache: KeyCache) -> None:
        self.cache = cache
        self.revoked: list[str] = []
        self.events: list[str] = []
        self.changed = asyncio.Event()

    def on_revoked(self, key_id: str) -> None:
        self.revoked.append(key_id)
        self.cache.invalidate_key(key_id)
        self.changed.set()

    def on_deaf(self) -> None:
        self.events.append("deaf")
        self.cache.deafen()
        self.changed.set()

    def on_listening(self) -> None:
        self.events.append("listening")
        self.cache.hear()
        self.changed.set()

    async def until(self, condition: object, timeout_s: float = 10.0) -> None:
        async def wait() -> None:
            while not condition():  # type: ignore[operator]
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(wait(), timeout_s)


@pytest.fixture
async def database(postgres_url: str) -> AsyncIterator[str]:
    await migrations.upgrade_engine(engine := create_engine(postgres_url))
    await engine.dispose()
    yield postgres_url


def test_listen_dsn_is_plain_postgresql_and_none_for_sqlite() -> None:
    assert listen_dsn("postgresql+asyncpg://u:p@h:5/db") == "postgresql://u:p@h:5/db"
    assert listen_dsn("sqlite+aiosqlite:///x.db") is None


async def test_committed_revocations_reach_the_listener_and_rolled_back_ones_do_not(
    database: str,
) -> None:
    cache = KeyCache(ttl_s=60)
    seen = Recorder(cache)
    dsn = listen_dsn(database)
    assert dsn is not None
    listener = RevocationListener(dsn, seen.on_revoked, seen.on_deaf, seen.on_listening)
    engine = create_engine(database)
    factory = create_sessionmaker(engine)
    try:
        listener.start()
        assert await listener.wait_listening(10)
        assert seen.events == ["deaf", "listening"] and cache.trusted
        async with transaction(factory) as session:
            tenant = await key_store.get_or_create_tenant(session, "events")
            kept = await key_store.create_key(session, tenant.id, "kept", ["reason"])
            gone = await key_store.create_key(session, tenant.id, "gone", ["reason"])
        cache.put(gone.token, AuthContext(tenant.id, gone.key.id, frozenset({"reason"})))
        assert cache.get(gone.token) is not None
        with pytest.raises(RuntimeError):  # revoked, then rolled back: nothing announced
            async with transaction(factory) as session:
                await key_store.revoke_key(session, kept.key.id, tenant.id)
                raise RuntimeError("roll back")
        async with transaction(factory) as session:
            await key_store.revoke_key(session, gone.key.id, tenant.id)
        await seen.until(lambda: gone.key.id in seen.revoked)
        assert seen.revoked == [gone.key.id]
        assert cache.get(gone.token) is None
    finally:
        await listener.stop()
        await engine.dispose()


async def test_a_killed_listening_connection_makes_the_cache_untrusted_until_it_reconnects(
    database: str,
) -> None:
    cache = KeyCache(ttl_s=60)
    seen = Recorder(cache)
    dsn = listen_dsn(database)
    assert dsn is not None
    listener = RevocationListener(dsn, seen.on_revoked, seen.on_deaf, seen.on_listening)
    context = AuthContext("tenant", "key", frozenset({"reason"}))
    admin = await asyncpg.connect(dsn)
    try:
        listener.start()
        assert await listener.wait_listening(10)
        cache.put("tnt_token", context)
        assert cache.get("tnt_token") == context
        # The server ends the listening backend (as a failover or an idle kill would).
        killed = await admin.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query ILIKE $1 AND pid <> pg_backend_pid()",
            f"%LISTEN%{REVOKED_CHANNEL}%",
        )
        assert killed == 1
        await seen.until(lambda: seen.events[-1] == "deaf")
        assert not cache.trusted and cache.get("tnt_token") is None  # every request verifies
        await seen.until(lambda: seen.events[-1] == "listening")
        assert seen.events == ["deaf", "listening", "deaf", "listening"]
        assert cache.trusted and cache.get("tnt_token") is None  # emptied: it may be revoked
        # Listening again: a notification sent now arrives.
        await admin.execute(f"NOTIFY {REVOKED_CHANNEL}, 'after-reconnect'")
        await seen.until(lambda: "after-reconnect" in seen.revoked)
    finally:
        await listener.stop()
        await admin.close()
    assert cache.trusted


async def test_stopping_a_deaf_listener_leaves_the_cache_trusted() -> None:
    cache = KeyCache()
    seen = Recorder(cache)
    listener = RevocationListener(
        "postgresql://nobody@127.0.0.1:1/none", seen.on_revoked, seen.on_deaf, seen.on_listening
    )
    listener.start()
    assert not await listener.wait_listening(0.5)
    assert not cache.trusted
    await listener.stop()
    assert cache.trusted and seen.events == ["deaf", "listening"]


def test_a_verification_that_started_before_the_cache_was_emptied_is_not_stored() -> None:
    cache = KeyCache(ttl_s=60)
    context = AuthContext("tenant", "key", frozenset({"reason"}))
    cache.deafen()
    started = cache.generation  # a verification reads the key while the listener is deaf...
    cache.hear()  # ...the listener reconnects (the key may have been revoked meanwhile)...
    cache.put("tnt_token", context, started)  # ...so its result is not kept
    assert cache.get("tnt_token") is None
    cache.put("tnt_token", context, cache.generation)
    assert cache.get("tnt_token") == context
