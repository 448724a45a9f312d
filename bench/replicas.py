"""What sharing state across API replicas costs: revocation delivery, limit checks, chain appends.

``python -m bench.replicas [--quick]`` measures, on a fresh PostgreSQL database (and the
Redis at ``--redis``):

- ``revocation_ms``: from the start of the commit of a key revocation (``store.keys.revoke_key``)
  to the eviction of that key by another connection's listener (``store.key_events``), the
  path by which every replica stops accepting a revoked key; p50 and max;
- ``limit_check_ms``: one per-key limit check (``app.ratelimits.KeyLimits.admit``) counted in
  this process and in Redis; p50 each (what every keyed request pays when limits are on);
- ``audit_append``: events appended to one tenant's chain from two engines at once (two
  replicas' connection pools, 4 writers each), as appends per second, and whether the
  chain verifies afterwards (``chain_intact``, with ``events`` the count it holds).

The last stdout line is one JSON object with those keys. No model is needed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from typing import Any

import migrations
from app.ratelimits import KeyLimits
from store import keys as key_store
from store.admin import execute_on_server
from store.audit import append_event, verify_chain
from store.db import create_engine, create_sessionmaker, transaction
from store.key_events import RevocationListener, listen_dsn

DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def _ms(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values) * 1000, 3), "max": round(max(values) * 1000, 3)}


async def revocations(url: str, count: int) -> dict[str, float]:
    evicted: dict[str, float] = {}
    arrived = asyncio.Event()

    def on_revoked(key_id: str) -> None:
        evicted[key_id] = time.perf_counter()
        arrived.set()

    dsn = listen_dsn(url)
    assert dsn is not None
    listener = RevocationListener(dsn, on_revoked, lambda: None, lambda: None)
    engine = create_engine(url)
    factory = create_sessionmaker(engine)
    seconds: list[float] = []
    try:
        listener.start()
        if not await listener.wait_listening(10):
            raise SystemExit("the revocation listener did not connect")
        async with transaction(factory) as session:
            tenant = await key_store.get_or_create_tenant(session, "bench-revocations")
            made = [
                await key_store.create_key(session, tenant.id, f"k{i}", ["reason"])
                for i in range(count)
            ]
        for created in made:
            arrived.clear()
            async with factory() as session:
                await key_store.revoke_key(session, created.key.id, tenant.id)
                started = time.perf_counter()
                await session.commit()
            while created.key.id not in evicted:
                await asyncio.wait_for(arrived.wait(), 10)
                arrived.clear()
            seconds.append(evicted[created.key.id] - started)
    finally:
        await listener.stop()
        await engine.dispose()
    return _ms(seconds)


async def limit_checks(redis_url: str, count: int) -> dict[str, float]:
    result: dict[str, float] = {}
    for name, limits in (
        ("memory", KeyLimits("1000000/minute")),
        ("redis", KeyLimits("1000000/minute", redis_url)),
    ):
        key = uuid.uuid4().hex
        seconds = []
        try:
            for _ in range(count):
                started = time.perf_counter()
                await limits.admit(key)
                seconds.append(time.perf_counter() - started)
        finally:
            await limits.close()
        result[name] = _ms(seconds)["p50"]
    return result


async def chain_appends(url: str, per_writer: int) -> dict[str, Any]:
    engines = [create_engine(url), create_engine(url)]
    factories = [create_sessionmaker(e) for e in engines]
    try:
        async with transaction(factories[0]) as session:
            tenant = (await key_store.get_or_create_tenant(session, "bench-chain")).id

        async def writer(n: int) -> None:
            for i in range(per_writer):
                async with transaction(factories[n % 2]) as session:
                    await append_event(
                        session,
                        tenant_id=tenant,
                        event_type="bench.append",
                        subject_type="bench",
                        subject_id=f"{n}-{i}",
                        payload={"writer": n, "i": i},
                    )

        started = time.perf_counter()
        await asyncio.gather(*(writer(n) for n in range(8)))
        elapsed = time.perf_counter() - started
        async with factories[1]() as session:
            report = await verify_chain(session, tenant)
    finally:
        for engine in engines:
            await engine.dispose()
    return {
        "appends_per_s": round(8 * per_writer / elapsed, 1),
        "chain_intact": report.intact,
        "events": report.checked,
    }


async def main_async(postgres: str, redis_url: str, quick: bool) -> dict[str, Any]:
    name = f"tenet_bench_replicas_{uuid.uuid4().hex[:8]}"
    await execute_on_server(postgres, f'CREATE DATABASE "{name}"')
    url = f"{postgres.rsplit('/', 1)[0]}/{name}"
    try:
        engine = create_engine(url)
        await migrations.upgrade_engine(engine)
        await engine.dispose()
        count = 20 if quick else 200
        return {
            "revocation_ms": await revocations(url, count),
            "limit_check_ms": await limit_checks(redis_url, count * 5),
            "audit_append": await chain_appends(url, count // 4 if quick else count // 8),
        }
    finally:
        await execute_on_server(postgres, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 revocations instead of 200")
    parser.add_argument(
        "--postgres",
        default=DEFAULT_POSTGRES,
        help="PostgreSQL server (a database is made and dropped)",
    )
    parser.add_argument("--redis", default=DEFAULT_REDIS, help="Redis for the shared limit check")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args.postgres, args.redis, args.quick))))


if __name__ == "__main__":
    main()
