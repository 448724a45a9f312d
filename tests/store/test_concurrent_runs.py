"""Many runs recorded at once (as cross-request batching will finish several decodes together).

Each run is recorded through the real store (``record_run``: run, steps, PROV
bundle, audit event) in its own transaction, all started concurrently on the
same database (SQLite, and PostgreSQL when it answers). Afterwards every run
is there, the tenant's hash chain is one unbroken line (no two events link to
the same predecessor) and every bundle still hashes as its event says.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from reasoning.constraints.model import Constraint, Kind, Verdict
from reasoning.evidence.model import EvidenceFact
from reasoning.provenance import ActivitySpan, ModelAgent, RunKind, RunRecord, StepTrace
from store import audit, runs
from store.db import transaction
from store.models import AuditEvent, Run

Factory = async_sessionmaker[AsyncSession]
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
CONCURRENT = 16


def _record(tenant: str, n: int) -> RunRecord:
    at = T0 + timedelta(seconds=n)
    ms = timedelta(milliseconds=1)
    facts = tuple(
        EvidenceFact(
            id=f"E{i}", subject=f"aml:Entity{i}", predicate="aml:relatedTo",
            object=f"aml:Entity{i + 1}", text=f"Entity {i} relates to entity {i + 1} (run {n})",
            view="fund_flow", score=0.9, hops=1, ontology_version="aml-v1",
        )
        for i in range(1, 4)
    )
    return RunRecord(
        tenant_id=tenant, key_id=None, kind=RunKind.REASON, status="ok",
        prompt=f"Should transfer {n} be escalated?", started_at=at, finished_at=at + 90 * ms,
        result={"answer": f"Escalate transfer {n} [E1]."},
        model=ModelAgent(name="SmolLM2-135M-Instruct", sha256="cd" * 32, dtype="float32"),
        activities=(ActivitySpan(name="decode", started_at=at, ended_at=at + 80 * ms),),
        constraints=(Constraint(id="C1", kind=Kind.CITE_SOURCES, params={"min": 1}),),
        evidence=facts,
        steps=tuple(
            StepTrace(id=f"S{i}", text=f"Step {i} of run {n} [E{i}].", started_at=at + 10 * i * ms,
                      ended_at=at + 10 * i * ms + 5 * ms, confidence=0.8, view="fund_flow",
                      evidence_ids=(f"E{i}",))
            for i in range(1, 4)
        ),
        answer=f"Escalate transfer {n} [E1].",
        verdicts=(Verdict(constraint_id="C1", satisfied=True),),
    )


async def _record_one(factory: Factory, tenant: str, n: int) -> str:
    async with transaction(factory) as db:
        return (await runs.record_run(db, _record(tenant, n))).id


async def test_concurrent_runs_extend_one_unbroken_chain(
    factory: Factory, tenants: tuple[str, str]
) -> None:
    mine, other = tenants
    jobs = [_record_one(factory, mine, n) for n in range(CONCURRENT)]
    jobs += [_record_one(factory, other, n) for n in range(CONCURRENT // 4)]
    ids = await asyncio.gather(*jobs)
    assert len(set(ids)) == len(jobs)
    async with factory() as db:
        stored = await db.scalar(select(func.count()).select_from(Run).where(Run.tenant_id == mine))
        events = list(
            await db.scalars(
                select(AuditEvent).where(AuditEvent.tenant_id == mine).order_by(AuditEvent.chain_seq)
            )
        )
        report = await audit.verify_chain(db, mine)
        other_report = await audit.verify_chain(db, other)
        bundles = await runs.verify_bundles(db, mine)
    assert stored == CONCURRENT
    assert [e.chain_seq for e in events] == list(range(1, CONCURRENT + 1))
    links = Counter(e.prev_hash for e in events)
    assert links.most_common(1)[0][1] == 1, "two events link to the same predecessor"
    assert {e.subject_id for e in events} == set(ids[:CONCURRENT])
    assert report.intact and report.checked == CONCURRENT
    assert report.head_hash == events[-1].hash
    assert other_report.intact and other_report.checked == CONCURRENT // 4
    assert bundles.checked == CONCURRENT and bundles.first_mismatch is None
