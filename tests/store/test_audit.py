"""The hash-chained audit log on real databases (SQLite and, when it answers, PostgreSQL).

Tampering is done the way an intruder with database access would do it: raw
SQL against the table, bypassing the repository.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import migrations
from reasoning.errors import InvalidInput
from reasoning.provenance import GENESIS_HASH, canonical_json, sha256_hex
from store import audit
from store.db import create_engine, create_sessionmaker, transaction
from store.models import AuditEvent, Tenant, new_id, utcnow

Factory = async_sessionmaker[AsyncSession]


@pytest.fixture
async def factory(db_url: str) -> AsyncIterator[Factory]:
    engine = create_engine(db_url)
    await migrations.upgrade_engine(engine)
    yield create_sessionmaker(engine)
    await engine.dispose()


async def _append(factory: Factory, tenant: str, n: int, start: int = 0) -> list[AuditEvent]:
    events = []
    for i in range(start, start + n):
        async with transaction(factory) as db:
            events.append(
                await audit.append_event(
                    db,
                    tenant_id=tenant,
                    event_type="run.recorded",
                    subject_type="run",
                    subject_id=f"run-{i}",
                    payload={"i": i, "note": "ü €", "nested": {"b": [1, 2.5, None], "a": True}},
                )
            )
    return events


async def _interleaved(factory: Factory, n: int = 5) -> tuple[list[AuditEvent], list[AuditEvent]]:
    """``n`` events of tenant A interleaved with ``n`` of tenant B (seqs not contiguous)."""
    mine: list[AuditEvent] = []
    other: list[AuditEvent] = []
    for i in range(n):
        mine += await _append(factory, "tenant-a", 1, i)
        other += await _append(factory, "tenant-b", 1, i)
    return mine, other


async def _verify(factory: Factory, tenant: str) -> audit.ChainReport:
    async with factory() as db:
        return await audit.verify_chain(db, tenant, batch=2)


async def _raw(factory: Factory, sql: str, **params: object) -> None:
    async with transaction(factory) as db:
        await db.execute(text(sql), params)


async def test_events_chain_by_tenant_and_hash_their_canonical_json(factory: Factory) -> None:
    mine, other = await _interleaved(factory)
    assert [e.chain_seq for e in mine] == [1, 2, 3, 4, 5]
    assert [e.chain_seq for e in other] == [1, 2, 3, 4, 5]
    assert mine[0].prev_hash == GENESIS_HASH
    assert all(later.prev_hash == earlier.hash for earlier, later in itertools.pairwise(mine))
    first = mine[0]
    expected = sha256_hex(
        canonical_json(
            {
                "id": first.id,
                "tenant_id": "tenant-a",
                "chain_seq": 1,
                "event_type": "run.recorded",
                "subject_type": "run",
                "subject_id": "run-0",
                "payload": {"i": 0, "note": "ü €", "nested": {"a": True, "b": [1, 2.5, None]}},
                "created_at": first.created_at.isoformat(timespec="microseconds"),
                "prev_hash": GENESIS_HASH,
            }
        )
    )
    assert first.hash == expected
    for tenant in ("tenant-a", "tenant-b"):
        report = await _verify(factory, tenant)
        assert report.intact and report.checked == 5 and report.first_broken is None
        assert report.head_chain_seq == 5
    assert (await _verify(factory, "tenant-a")).head_hash == mine[-1].hash
    empty = await _verify(factory, "nobody")
    assert empty.intact and empty.checked == 0 and empty.head_hash == GENESIS_HASH


def _json_param(factory: Factory) -> str:
    dialect = factory.kw["bind"].dialect.name
    return "CAST(:payload AS JSON)" if dialect == "postgresql" else ":payload"


async def test_changed_payload_is_a_hash_mismatch_at_that_event(factory: Factory) -> None:
    mine, _ = await _interleaved(factory)
    target = mine[2]
    await _raw(
        factory,
        f"UPDATE audit_events SET payload = {_json_param(factory)} WHERE seq = :seq",
        payload=json.dumps({"i": 99}),
        seq=target.seq,
    )
    report = await _verify(factory, "tenant-a")
    assert not report.intact and report.checked == 3
    assert report.first_broken == audit.ChainBreak(target.seq, target.id, 3, "hash mismatch")
    assert (await _verify(factory, "tenant-b")).intact


@pytest.mark.parametrize("column, value", [("created_at", None), ("subject_id", "run-x"), ("prev_hash", "f" * 64)])
async def test_any_altered_field_breaks_the_hash(factory: Factory, column: str, value: object) -> None:
    mine = await _append(factory, "tenant-a", 4)
    target = mine[1]
    if column == "created_at":
        value = target.created_at - timedelta(days=1)
    await _raw(factory, f"UPDATE audit_events SET {column} = :v WHERE seq = :seq", v=value, seq=target.seq)
    report = await _verify(factory, "tenant-a")
    assert report.first_broken == audit.ChainBreak(target.seq, target.id, 2, "hash mismatch")


async def test_deleted_event_is_a_gap_at_its_successor(factory: Factory) -> None:
    mine, _ = await _interleaved(factory)
    await _raw(factory, "DELETE FROM audit_events WHERE seq = :seq", seq=mine[2].seq)
    report = await _verify(factory, "tenant-a")
    assert not report.intact and report.checked == 3
    assert report.first_broken == audit.ChainBreak(mine[3].seq, mine[3].id, 4, "gap")
    assert report.head_chain_seq == 2 and report.head_hash == mine[1].hash


async def test_reordered_rows_break_the_link_where_the_order_changes(factory: Factory) -> None:
    mine, _ = await _interleaved(factory)
    second, third = mine[1], mine[2]
    await _raw(factory, "UPDATE audit_events SET seq = -1 WHERE seq = :a", a=second.seq)
    await _raw(factory, "UPDATE audit_events SET seq = :a WHERE seq = :b", a=second.seq, b=third.seq)
    await _raw(factory, "UPDATE audit_events SET seq = :b WHERE seq = -1", b=third.seq)
    report = await _verify(factory, "tenant-a")
    # In chain order the third event now sits below the second in storage order.
    assert not report.intact and report.checked == 3
    assert report.first_broken == audit.ChainBreak(second.seq, third.id, 3, "prev_hash mismatch")
    assert report.head_chain_seq == 2 and report.head_hash == second.hash


async def test_a_crash_inside_the_transaction_leaves_neither_event_nor_data(factory: Factory) -> None:
    await _append(factory, "tenant-a", 2)
    with pytest.raises(RuntimeError, match="crash"):
        async with transaction(factory) as db:
            db.add(Tenant(id="t-crash", name="written with its event"))
            await audit.append_event(
                db, tenant_id="tenant-a", event_type="tenant.created",
                subject_type="tenant", subject_id="t-crash",
            )
            raise RuntimeError("crash between event and commit")
    async with factory() as db:
        assert await db.get(Tenant, "t-crash") is None
        count = await db.scalar(select(func.count()).select_from(AuditEvent))
        assert count == 2
    report = await _verify(factory, "tenant-a")
    assert report.intact and report.checked == 2
    following = await _append(factory, "tenant-a", 1, 2)
    assert following[0].chain_seq == 3
    assert (await _verify(factory, "tenant-a")).intact


async def test_concurrent_appends_serialise_into_one_chain(factory: Factory) -> None:
    async def one(i: int) -> None:
        async with transaction(factory) as db:
            await audit.append_event(
                db, tenant_id="tenant-a", event_type="x", subject_type="y", subject_id=str(i)
            )

    await asyncio.gather(*(one(i) for i in range(12)))
    async with factory() as db:
        positions = list(
            await db.scalars(
                select(AuditEvent.chain_seq).where(AuditEvent.tenant_id == "tenant-a").order_by(AuditEvent.seq)
            )
        )
    assert positions == list(range(1, 13))
    report = await _verify(factory, "tenant-a")
    assert report.intact and report.checked == 12


async def test_a_second_event_at_the_same_position_is_refused(factory: Factory) -> None:
    [event] = await _append(factory, "tenant-a", 1)
    with pytest.raises(IntegrityError):
        async with transaction(factory) as db:
            db.add(
                AuditEvent(
                    id=new_id(), tenant_id="tenant-a", chain_seq=1, event_type="forged",
                    subject_type="run", subject_id="r", payload={}, created_at=utcnow(),
                    prev_hash=GENESIS_HASH, hash=event.hash,
                )
            )


async def test_list_events_pages_by_seq_within_the_tenant(factory: Factory) -> None:
    mine, _ = await _interleaved(factory)
    async with factory() as db:
        page, after = await audit.list_events(db, "tenant-a", limit=2)
        assert [e.event.id for e in page] == [e.id for e in mine[:2]] and after == mine[1].seq
        page, after = await audit.list_events(db, "tenant-a", after_seq=after, limit=2)
        assert [e.event.id for e in page] == [e.id for e in mine[2:4]]
        page, after = await audit.list_events(db, "tenant-a", after_seq=after or 0, limit=2)
        assert [e.event.id for e in page] == [mine[4].id] and after is None
        streamed = [e.id async for e in audit.iter_events(db, "tenant-b", batch=2)]
    assert len(streamed) == 5 and not set(streamed) & {e.id for e in mine}


@pytest.mark.parametrize(
    "payload, message",
    [({"x": float("nan")}, "JSON spelling"), ({"x": {1, 2}}, "not a JSON value"), ({"x": {1: 2}}, "not a string")],
)
async def test_payloads_that_cannot_be_hashed_are_refused(factory: Factory, payload: dict[str, object], message: str) -> None:
    async with factory() as db:
        with pytest.raises(InvalidInput, match=message):
            await audit.append_event(db, tenant_id="t", event_type="x", subject_type="y", subject_id="z", payload=payload)


async def test_purge_keeps_events_younger_than_the_retention_and_the_chain_verifiable(factory: Factory) -> None:
    now = utcnow()
    ages_days = [400, 300, 200, 100, 10]
    for i, age in enumerate(ages_days):
        async with transaction(factory) as db:
            await audit.append_event(
                db, tenant_id="tenant-a", event_type="x", subject_type="run", subject_id=str(i),
                created_at=now - timedelta(days=age),
            )
    async with transaction(factory) as db:
        removed = await audit.purge_expired(
            db, "tenant-a", retention_days=180, before=now, now=now
        )
    assert removed == 3
    async with factory() as db:
        left = list(await db.scalars(select(AuditEvent).where(AuditEvent.tenant_id == "tenant-a").order_by(AuditEvent.seq)))
    assert [e.subject_id for e in left] == ["3", "4", "tenant-a"]
    assert left[-1].event_type == audit.PURGED_EVENT and left[-1].payload["through_chain_seq"] == 3
    report = await _verify(factory, "tenant-a")
    assert report.intact and report.checked == 3 and report.head_chain_seq == 6
    async with transaction(factory) as db:
        assert await audit.purge_expired(db, "tenant-a", retention_days=180, now=now) == 0
    with pytest.raises(InvalidInput):
        async with transaction(factory) as db:
            await audit.purge_expired(db, "tenant-a", retention_days=0, now=now)


async def test_deleting_the_oldest_events_without_a_purge_record_is_a_gap(factory: Factory) -> None:
    mine = await _append(factory, "tenant-a", 3)
    await _raw(factory, "DELETE FROM audit_events WHERE seq = :seq", seq=mine[0].seq)
    report = await _verify(factory, "tenant-a")
    assert report.first_broken == audit.ChainBreak(mine[1].seq, mine[1].id, 2, "gap")


async def test_swapped_contents_between_two_rows_are_detected(factory: Factory) -> None:
    mine = await _append(factory, "tenant-a", 4)
    a, b = mine[1], mine[2]
    columns = "id, chain_seq, event_type, subject_type, subject_id, payload, created_at, prev_hash, hash"
    await _raw(factory, "UPDATE audit_events SET id = 'tmp-a', chain_seq = -2 WHERE seq = :s", s=a.seq)
    await _raw(factory, "UPDATE audit_events SET id = 'tmp-b', chain_seq = -3 WHERE seq = :s", s=b.seq)
    async with transaction(factory) as db:
        for target, source in ((a, b), (b, a)):
            await db.execute(
                text(
                    f"UPDATE audit_events SET ({columns}) = (:id, :chain_seq, :event_type, :subject_type, "
                    ":subject_id, " + _json_param(factory) + ", :created_at, :prev_hash, :hash) WHERE seq = :seq"
                ),
                {
                    "id": source.id, "chain_seq": source.chain_seq, "event_type": source.event_type,
                    "subject_type": source.subject_type, "subject_id": source.subject_id,
                    "payload": json.dumps(source.payload), "created_at": source.created_at,
                    "prev_hash": source.prev_hash, "hash": source.hash, "seq": target.seq,
                },
            )
    report = await _verify(factory, "tenant-a")
    assert report.first_broken == audit.ChainBreak(a.seq, b.id, 3, "prev_hash mismatch")
