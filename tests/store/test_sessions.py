"""The session repository on real databases (SQLite and, when it answers, PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from reasoning.constraints.model import Premise, Span
from reasoning.dag import BranchTrace, DagStep, record_turn
from reasoning.errors import ConflictError, InvalidInput, NotFound
from store import sessions as repo
from store.db import transaction
from store.models import Run, new_id, utcnow

PREMISE = Premise(id="P1", text="Assume the tax rate is 20%.", topic="tax rate", value="20%",
                  source=Span(start=0, end=27, text="Assume the tax rate is 20%."))


async def test_create_read_and_tenant_isolation(factory: async_sessionmaker[AsyncSession],
                                                tenants: tuple[str, str]) -> None:
    mine, other = tenants
    async with transaction(factory) as db:
        created = await repo.create_session(db, mine, domain="aml", profile="strict")
    async with transaction(factory) as db:
        row = await repo.get_session(db, mine, created.id)
        assert row.domain == "aml" and row.state["profile"] == "strict"
        assert len(repo.load_dag(row)) == 0
        with pytest.raises(NotFound):
            await repo.get_session(db, other, created.id)
        with pytest.raises(NotFound):
            await repo.delete_session(db, other, created.id)
        with pytest.raises(NotFound):
            await repo.get_premise(db, other, created.id, "whatever")


async def test_premises_round_trip_and_amend_rewrites_the_value(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str]
) -> None:
    mine, other = tenants
    async with transaction(factory) as db:
        session = await repo.create_session(db, mine)
        rows = await repo.add_premises(db, session, [PREMISE], run_id=None, turn=1)
    stored = rows["P1"]
    async with transaction(factory) as db:
        row = await repo.get_premise(db, mine, session.id, stored.id)
        back = repo.premise_from_row(row)
        assert (back.id, back.text, back.topic, back.value, back.source) == (
            stored.id, PREMISE.text, "tax rate", "20%", PREMISE.source)
        assert row.data["run_premise_id"] == "P1"
        await repo.set_premise_status(db, row, "amended", value="25%", reason="api")
    async with transaction(factory) as db:
        row = await repo.get_premise(db, mine, session.id, stored.id)
        assert (row.status, row.text, row.value) == ("amended", "Assume the tax rate is 25%.", "25%")
        assert row.data["history"][0]["value"] == "20%"
        await repo.set_premise_status(db, row, "retracted")
        with pytest.raises(ConflictError):
            await repo.set_premise_status(db, row, "amended", value="30%")
        assert await repo.list_premises(db, other, session.id) == []
        assert [p.id for p in await repo.list_premises(db, mine, session.id, statuses=["active"])] == []


@pytest.mark.parametrize(("status", "kwargs"), [("active", {}), ("amended", {}), ("gone", {})])
async def test_bad_status_changes_are_refused(factory: async_sessionmaker[AsyncSession],
                                              tenants: tuple[str, str], status: str,
                                              kwargs: dict[str, str]) -> None:
    async with transaction(factory) as db:
        session = await repo.create_session(db, tenants[0])
        row = (await repo.add_premises(db, session, [PREMISE], run_id=None, turn=1))["P1"]
        with pytest.raises(InvalidInput):
            await repo.set_premise_status(db, row, status, **kwargs)


async def test_save_is_compare_and_swap(factory: async_sessionmaker[AsyncSession],
                                        tenants: tuple[str, str]) -> None:
    async with transaction(factory) as db:
        session = await repo.create_session(db, tenants[0])
    start = session.last_active_at
    dag = repo.load_dag(session)
    record_turn(dag, turn=1, premises=[PREMISE], constraints=[], evidence=[],
                branches=[BranchTrace(view="assumptions", premise_ids=("P1",), evidence_ids=(),
                                      steps=(DagStep(id="a.1", text="x", confidence=0.5),))],
                answer="ok")
    async with transaction(factory) as db:
        row = await repo.get_session(db, tenants[0], session.id, for_update=True)
        await repo.save_session(db, row, expected_active_at=start, dag=dag, state={"turns": [1]})
    with pytest.raises(ConflictError):
        async with transaction(factory) as db:
            row = await repo.get_session(db, tenants[0], session.id)
            await repo.save_session(db, row, expected_active_at=start, dag=dag, state={"turns": [2]})
    async with transaction(factory) as db:
        row = await repo.get_session(db, tenants[0], session.id)
        assert row.state == {"turns": [1]}
        assert repo.load_dag(row).descendants("premise:P1") == {
            "t1:step:a.1", "t1:branch:assumptions", "t1:answer:answer"}


async def test_idle_sessions_expire_and_deleted_ones_vanish(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str]
) -> None:
    mine = tenants[0]
    async with transaction(factory) as db:
        old = await repo.create_session(db, mine)
        fresh = await repo.create_session(db, mine)
        gone = await repo.create_session(db, mine)
        db.add(Run(id=new_id(), tenant_id=mine, session_id=gone.id, kind="reason", status="ok"))
    later = utcnow() + timedelta(seconds=120)
    async with transaction(factory) as db:
        with pytest.raises(repo.SessionExpired, match="expired"):
            await repo.get_session(db, mine, old.id, idle_ttl_s=60, now=later)
        assert (await repo.get_session(db, mine, fresh.id, idle_ttl_s=600, now=later)).id == fresh.id
        await repo.delete_session(db, mine, gone.id)
    async with transaction(factory) as db:
        assert await repo.expire_idle_sessions(db, idle_ttl_s=60, now=later, tenant_id=tenants[1]) == 0
        assert await repo.expire_idle_sessions(db, idle_ttl_s=60, now=later, tenant_id=mine) == 2
    async with transaction(factory) as db:
        for sid in (old.id, fresh.id, gone.id):
            with pytest.raises(NotFound):
                await repo.get_session(db, mine, sid)
        assert len(await repo.list_session_runs(db, mine, gone.id)) == 1
        assert await repo.expire_idle_sessions(db, idle_ttl_s=60, now=later) == 0
