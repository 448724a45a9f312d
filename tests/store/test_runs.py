"""Run persistence with steps, provenance bundle and audit event, on real databases."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import migrations
from reasoning.constraints.model import Constraint, Kind, Verdict
from reasoning.errors import InvalidInput, NotFound
from reasoning.evidence.model import EvidenceFact
from reasoning.provenance import (
    ActivitySpan,
    ModelAgent,
    ProvFormat,
    RunKind,
    RunRecord,
    StepTrace,
    from_prov_json,
    parse,
    serialize,
    sha256_hex,
)
from store import audit, runs
from store.db import create_engine, create_sessionmaker, transaction
from store.models import AuditEvent, ProvenanceBundle, Run, RunStep, Session, Tenant, new_id

Factory = async_sessionmaker[AsyncSession]
T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


@pytest.fixture
async def factory(db_url: str) -> AsyncIterator[Factory]:
    engine = create_engine(db_url)
    await migrations.upgrade_engine(engine)
    yield create_sessionmaker(engine)
    await engine.dispose()


@pytest.fixture
async def tenants(factory: Factory) -> tuple[str, str]:
    async with transaction(factory) as db:
        a, b = Tenant(id=new_id(), name=f"a-{new_id()}"), Tenant(id=new_id(), name=f"b-{new_id()}")
        db.add_all([a, b])
    return a.id, b.id


def record(tenant: str, at: datetime = T0, session_id: str | None = None, n: int = 0) -> RunRecord:
    fact = EvidenceFact(
        id="E1", subject="aml:JonDoe", predicate="aml:onList", object="aml:PEPList",
        text="Jon Doe is on the PEP list", view="entity_relations", score=0.9, hops=1,
        ontology_version="aml-v7",
    )
    return RunRecord(
        tenant_id=tenant,
        key_id=None,
        kind=RunKind.REASON,
        status="ok",
        prompt=f"Is Jon Doe a PEP? ({n})",
        started_at=at,
        finished_at=at + timedelta(milliseconds=120),
        request={"prompt": f"Is Jon Doe a PEP? ({n})"},
        result={"answer": "Yes [E1]."},
        session_id=session_id,
        model=ModelAgent(name="SmolLM2-135M-Instruct", sha256="ab" * 32, dtype="float32"),
        activities=(
            ActivitySpan(name="parse", started_at=at, ended_at=at + timedelta(milliseconds=5)),
            ActivitySpan(name="evidence", started_at=at + timedelta(milliseconds=5), ended_at=at + timedelta(milliseconds=30)),
        ),
        constraints=(Constraint(id="C1", kind=Kind.CITE_SOURCES, params={"min": 1}),),
        evidence=(fact,),
        steps=(
            StepTrace(id="S1", text="Jon Doe is a PEP [E1].", started_at=at + timedelta(milliseconds=40),
                      ended_at=at + timedelta(milliseconds=90), confidence=0.8, view="entity_relations",
                      evidence_ids=("E1",)),
            StepTrace(id="S2", text="So yes.", started_at=at + timedelta(milliseconds=90),
                      ended_at=at + timedelta(milliseconds=110), confidence=0.7, view="entity_relations",
                      depends_on=("S1",)),
        ),
        answer="Yes [E1].",
        verdicts=(Verdict(constraint_id="C1", satisfied=True),),
    )


async def test_record_run_writes_run_steps_bundle_and_event_together(factory: Factory, tenants: tuple[str, str]) -> None:
    mine, _ = tenants
    async with transaction(factory) as db:
        run = await runs.record_run(db, record(mine), service="9.9.9")
    async with factory() as db:
        stored = await runs.get_run(db, mine, run.id)
        assert stored.kind == "reason" and stored.status == "ok" and stored.duration_ms == pytest.approx(120.0)
        assert stored.model is not None and stored.model["sha256"] == "ab" * 32
        steps = await runs.get_run_steps(db, mine, run.id)
        assert [(s.branch, s.idx, s.data["step_id"]) for s in steps] == [
            ("entity_relations", 0, "S1"), ("entity_relations", 1, "S2")
        ]
        prov_json = await runs.get_provenance_json(db, mine, run.id)
        [event] = list(await db.scalars(select(AuditEvent).where(AuditEvent.tenant_id == mine)))
    assert event.event_type == runs.RUN_RECORDED and event.subject_id == run.id
    assert event.payload["provenance_sha256"] == sha256_hex(prov_json.encode("utf-8"))
    assert event.payload["ontology_versions"] == []
    document = from_prov_json(prov_json)
    [bundle] = document.bundles
    ids = {str(r.identifier) for r in bundle.get_records() if r.identifier is not None}
    assert {"run:run", "run:answer", "run:step/S1", "run:fact/E1", "onto:aml-v7"} <= ids
    assert "agent:service/tenet/9.9.9" in ids
    assert parse(serialize(document, ProvFormat.PROVN), ProvFormat.PROVN) == document


async def test_a_failure_after_the_event_leaves_nothing(factory: Factory, tenants: tuple[str, str]) -> None:
    mine, _ = tenants
    with pytest.raises(RuntimeError):
        async with transaction(factory) as db:
            await runs.record_run(db, record(mine))
            raise RuntimeError("the response could not be built")
    broken = record("no-such-tenant")
    with pytest.raises(IntegrityError):
        async with transaction(factory) as db:
            await runs.record_run(db, broken)
    async with factory() as db:
        for table in (Run, RunStep, ProvenanceBundle, AuditEvent):
            assert await db.scalar(select(func.count()).select_from(table)) == 0


async def test_other_tenants_cannot_read_a_run(factory: Factory, tenants: tuple[str, str]) -> None:
    mine, other = tenants
    async with transaction(factory) as db:
        run = await runs.record_run(db, record(mine))
    async with factory() as db:
        with pytest.raises(NotFound):
            await runs.get_run(db, other, run.id)
        with pytest.raises(NotFound):
            await runs.get_provenance_json(db, other, run.id)
        with pytest.raises(NotFound):
            await runs.get_run_steps(db, other, run.id)
        page, cursor = await runs.list_runs(db, other)
        assert page == [] and cursor is None
        assert [x async for x in runs.iter_bundles(db, other, limit=10)] == []


async def test_paging_and_export_resume_from_the_cursor(factory: Factory, tenants: tuple[str, str]) -> None:
    mine, other = tenants
    async with transaction(factory) as db:
        ids = [
            (await runs.record_run(db, record(mine, T0 + timedelta(minutes=i % 4), n=i))).id
            for i in range(9)
        ]
        await runs.record_run(db, record(other, T0))
    async with factory() as db:
        expected = [
            r.id for r in await db.scalars(
                select(Run).where(Run.tenant_id == mine).order_by(Run.created_at, Run.id)
            )
        ]
        assert sorted(expected) == sorted(ids)
        seen: list[str] = []
        cursor: runs.ExportCursor | None = None
        while True:
            token = cursor.encode() if cursor else None
            after = runs.ExportCursor.decode(token) if token else None
            announced = await runs.next_export_cursor(db, mine, limit=4, after=after)
            page = [x async for x in runs.iter_bundles(db, mine, limit=4, after=after, batch=3)]
            seen += [c.run_id for c, _ in page]
            assert announced == (page[-1][0] if announced else None)
            cursor = announced
            if cursor is None:
                break
        assert seen == expected
        listed, next_cursor = await runs.list_runs(db, mine, limit=5)
        assert [r.id for r in listed] == expected[:5] and next_cursor is not None
        listed, next_cursor = await runs.list_runs(db, mine, limit=5, after=next_cursor)
        assert [r.id for r in listed] == expected[5:] and next_cursor is None
        window = [
            c.run_id async for c, _ in runs.iter_bundles(
                db, mine, limit=100, since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=3)
            )
        ]
        assert window == [i for i in expected if i in window] and len(window) == 4


@pytest.mark.parametrize("token", ["", "not-base64!", "W10", "eyJhIjoxfQ"])
def test_foreign_cursors_are_invalid_input(token: str) -> None:
    with pytest.raises(InvalidInput):
        runs.ExportCursor.decode(token)


async def test_deleting_a_session_keeps_runs_provenance_and_events(factory: Factory, tenants: tuple[str, str]) -> None:
    mine, _ = tenants
    async with transaction(factory) as db:
        session_row = Session(id=new_id(), tenant_id=mine)
        db.add(session_row)
        await db.flush()
        run = await runs.record_run(db, record(mine, session_id=session_row.id))
    async with transaction(factory) as db:
        await db.delete(await db.get(Session, session_row.id))
    async with factory() as db:
        stored = await runs.get_run(db, mine, run.id)
        assert stored.session_id is None
        document = json.loads(await runs.get_provenance_json(db, mine, run.id))
        bundle = next(iter(document["bundle"].values()))
        assert bundle["activity"]["run:run"]["tenet:sessionId"] == session_row.id
        report = await audit.verify_chain(db, mine)
    assert report.intact and report.checked == 1


@pytest.mark.parametrize(
    "change, message",
    [({"finished_at": T0 - timedelta(seconds=1)}, "finish before"), ({"status": "completed"}, "unknown run status")],
)
async def test_inconsistent_records_are_refused(
    factory: Factory, tenants: tuple[str, str], change: dict[str, object], message: str
) -> None:
    bad = msgspec.structs.replace(record(tenants[0]), **change)
    async with factory() as db:
        with pytest.raises(InvalidInput, match=message):
            await runs.record_run(db, bad)


async def test_altered_or_removed_bundles_are_named_by_verify_bundles(
    factory: Factory, tenants: tuple[str, str]
) -> None:
    mine, other = tenants
    async with transaction(factory) as db:
        ids = [(await runs.record_run(db, record(mine, T0 + timedelta(minutes=i), n=i))).id for i in range(3)]
        await runs.record_run(db, record(other))
    async with factory() as db:
        assert await runs.verify_bundles(db, mine, batch=2) == runs.BundleCheck(3, None, None)
    async with transaction(factory) as db:
        await db.execute(
            text("UPDATE provenance_bundles SET prov_json = REPLACE(prov_json, 'Yes [E1].', 'No.') WHERE run_id = :r"),
            {"r": ids[1]},
        )
    async with factory() as db:
        assert await runs.verify_bundles(db, mine) == runs.BundleCheck(2, ids[1], "bundle hash mismatch")
        assert (await runs.verify_bundles(db, other)).first_mismatch is None
        assert (await audit.verify_chain(db, mine)).intact
    async with transaction(factory) as db:
        await db.execute(text("DELETE FROM provenance_bundles WHERE run_id = :r"), {"r": ids[0]})
    async with factory() as db:
        assert await runs.verify_bundles(db, mine) == runs.BundleCheck(1, ids[0], "bundle missing")
