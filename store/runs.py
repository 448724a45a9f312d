"""Runs, their steps and provenance bundles: written together with their audit event.

``record_run`` is the one entry point every run-producing endpoint calls
(reason, constraints, re-inference, ontology upload, chat). Within the
caller's transaction it inserts the run, its steps, its PROV bundle (stored
as PROV-JSON) and a ``run.recorded`` audit event whose payload carries the
SHA-256 of the prompt, the result and the provenance bundle, tying the
bundle into the tamper-evident chain. It never commits: the caller's unit of
work commits all four or none.

Usage::

    from store.runs import RunRecord, record_run

    async with transaction(runtime.sessionmaker) as session:   # or the db_session dependency
        run = await record_run(session, RunRecord(tenant_id=auth.tenant_id, ...))

Deletion: ``runs.session_id`` is ``ON DELETE SET NULL`` and sessions are
soft-deleted, so deleting a session keeps its runs and their bundles; runs
do not reference ontology versions by foreign key (the bundle names the
version), so deleting an ontology version leaves its runs' provenance as it
was; audit events reference nothing by foreign key.

Reads are tenant-scoped: another tenant's run id answers ``NotFound``.
Time-range exports page with an opaque cursor over ``(created_at, id)``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import msgspec
from anyio import to_thread
from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from reasoning.errors import InvalidInput, NotFound
from reasoning.provenance import (
    ProvFormat,
    RunRecord,
    build_run_document,
    iso_utc,
    normalise_json,
    serialize,
    sha256_hex,
)
from store.audit import append_event, iter_events
from store.models import RUN_STATUSES, ProvenanceBundle, Run, RunStep, new_id

__all__ = [
    "RUN_RECORDED",
    "BundleCheck",
    "ExportCursor",
    "RunRecord",
    "get_provenance_json",
    "get_run",
    "get_run_steps",
    "iter_bundles",
    "list_runs",
    "next_export_cursor",
    "record_run",
    "service_version",
    "verify_bundles",
]

RUN_RECORDED = "run.recorded"
_EXPORT_BATCH = 100


@cache
def service_version() -> str:
    """The installed Tenet version, as provenance names the service agent (read once)."""
    try:
        return version("tenet")
    except PackageNotFoundError:
        return "0+unknown"


def _steps(run_id: str, record: RunRecord) -> list[RunStep]:
    counters: dict[str, int] = {}
    rows: list[RunStep] = []
    for step in record.steps:
        branch = step.view or ""
        index = counters.get(branch, 0)
        counters[branch] = index + 1
        data = {
            "step_id": step.id,
            "evidence_ids": list(step.evidence_ids),
            "premise_ids": list(step.premise_ids),
            "depends_on": list(step.depends_on),
            "verdicts": msgspec.to_builtins(step.verdicts),
            "calibration_hint": step.calibration_hint,
            "started_at": iso_utc(step.started_at),
            "ended_at": iso_utc(step.ended_at),
        }
        rows.append(
            RunStep(
                run_id=run_id,
                idx=index,
                branch=branch,
                text=step.text,
                confidence=step.confidence if step.confidence is not None else 0.0,
                data=normalise_json(data),
            )
        )
    return rows


def _bundle_json(run_id: str, record: RunRecord, service: str) -> str:
    return serialize(build_run_document(run_id, record, service_version=service), ProvFormat.JSON)


async def record_run(
    session: AsyncSession,
    record: RunRecord,
    *,
    run_id: str | None = None,
    service: str | None = None,
) -> Run:
    """Persist a finished run with its steps, PROV bundle and audit event.

    Runs in the caller's transaction and flushes (so constraint violations
    surface here) but does not commit. ``run_id`` may be chosen by the caller
    (e.g. to return it before recording); by default a new UUID. The PROV
    bundle (a few milliseconds of CPU) is built in a worker thread before the
    first write, so runs recorded together do not stall the event loop, and a
    transaction that holds the database's write lock does not wait behind other
    runs' bundles being built on it.
    """
    identifier = run_id or new_id()
    if record.finished_at < record.started_at:
        raise InvalidInput("a run cannot finish before it starts")
    if record.status not in RUN_STATUSES:
        raise InvalidInput(f"unknown run status {record.status!r}; use one of {list(RUN_STATUSES)}")
    prov_json = await to_thread.run_sync(
        _bundle_json, identifier, record, service or service_version()
    )
    result = normalise_json(record.result)
    run = Run(
        id=identifier,
        tenant_id=record.tenant_id,
        key_id=record.key_id,
        session_id=record.session_id,
        kind=str(record.kind),
        status=record.status,
        prompt=record.prompt,
        request=normalise_json(record.request),
        result=result,
        model=msgspec.to_builtins(record.model) if record.model is not None else None,
        created_at=record.started_at,
        finished_at=record.finished_at,
        duration_ms=(record.finished_at - record.started_at).total_seconds() * 1000.0,
    )
    session.add(run)
    await session.flush()
    session.add_all(_steps(identifier, record))
    session.add(
        ProvenanceBundle(
            run_id=identifier,
            tenant_id=record.tenant_id,
            created_at=record.finished_at,
            prov_json=prov_json,
        )
    )
    await session.flush()
    await append_event(
        session,
        tenant_id=record.tenant_id,
        event_type=RUN_RECORDED,
        subject_type="run",
        subject_id=identifier,
        payload={
            "kind": str(record.kind),
            "status": record.status,
            "key_id": record.key_id,
            "session_id": record.session_id,
            "model_sha256": record.model.sha256 if record.model is not None else None,
            "ontology_versions": sorted({o.version for o in record.ontologies}),
            "prompt_sha256": sha256_hex(record.prompt.encode("utf-8")),
            "result_sha256": sha256_hex(json.dumps(result, sort_keys=True).encode("utf-8")),
            "provenance_sha256": sha256_hex(prov_json.encode("utf-8")),
        },
        created_at=record.finished_at,
    )
    return run


async def get_run(session: AsyncSession, tenant_id: str, run_id: str) -> Run:
    """The tenant's run; another tenant's or an unknown id is ``NotFound``."""
    run = (
        await session.execute(select(Run).where(Run.id == run_id, Run.tenant_id == tenant_id))
    ).scalar_one_or_none()
    if run is None:
        raise NotFound(f"run {run_id!r} not found")
    return run


async def get_run_steps(session: AsyncSession, tenant_id: str, run_id: str) -> list[RunStep]:
    """The run's steps by branch and position (``NotFound`` as ``get_run``)."""
    await get_run(session, tenant_id, run_id)
    rows = await session.execute(
        select(RunStep).where(RunStep.run_id == run_id).order_by(RunStep.branch, RunStep.idx)
    )
    return list(rows.scalars())


async def get_provenance_json(session: AsyncSession, tenant_id: str, run_id: str) -> str:
    """The run's stored PROV-JSON document."""
    prov_json = (
        await session.execute(
            select(ProvenanceBundle.prov_json).where(
                ProvenanceBundle.run_id == run_id, ProvenanceBundle.tenant_id == tenant_id
            )
        )
    ).scalar_one_or_none()
    if prov_json is None:
        raise NotFound(f"no provenance for run {run_id!r}")
    return str(prov_json)


@dataclass(frozen=True)
class ExportCursor:
    """Where a paged run listing or export resumes: after ``(created_at, run_id)``.

    Clients see it only as an opaque URL-safe token.
    """

    created_at: datetime
    run_id: str

    def encode(self) -> str:
        raw = json.dumps([iso_utc(self.created_at), self.run_id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, token: str) -> ExportCursor:
        try:
            padded = token + "=" * (-len(token) % 4)
            moment, run_id = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
            return cls(datetime.fromisoformat(moment), str(run_id))
        except (ValueError, TypeError, binascii.Error, UnicodeError):
            raise InvalidInput("the cursor is not one this service issued") from None


def _window(
    tenant_id: str,
    since: datetime | None,
    until: datetime | None,
    after: ExportCursor | None,
    kind: str | None = None,
) -> list[Any]:
    conditions: list[Any] = [Run.tenant_id == tenant_id]
    if since is not None:
        conditions.append(Run.created_at >= since)
    if until is not None:
        conditions.append(Run.created_at < until)
    if kind is not None:
        conditions.append(Run.kind == kind)
    if after is not None:
        conditions.append(
            or_(
                Run.created_at > after.created_at,
                and_(Run.created_at == after.created_at, Run.id > after.run_id),
            )
        )
    return conditions


async def list_runs(
    session: AsyncSession,
    tenant_id: str,
    *,
    limit: int = 50,
    after: ExportCursor | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    kind: str | None = None,
) -> tuple[list[Run], ExportCursor | None]:
    """One page of the tenant's runs, oldest first, and the cursor of the next page."""
    rows = list(
        (
            await session.execute(
                select(Run)
                .where(*_window(tenant_id, since, until, after, kind))
                .order_by(Run.created_at, Run.id)
                .limit(limit + 1)
            )
        ).scalars()
    )
    if len(rows) > limit:
        last = rows[limit - 1]
        return rows[:limit], ExportCursor(last.created_at, last.id)
    return rows, None


async def next_export_cursor(
    session: AsyncSession,
    tenant_id: str,
    *,
    limit: int,
    after: ExportCursor | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> ExportCursor | None:
    """The cursor after the page of ``limit`` runs, or None when that page is the last.

    Reads two index rows, not the page, so an export can send the cursor in
    its response headers before it streams the body.
    """
    rows = (
        await session.execute(
            select(Run.created_at, Run.id)
            .where(*_window(tenant_id, since, until, after))
            .order_by(Run.created_at, Run.id)
            .offset(limit - 1)
            .limit(2)
        )
    ).all()
    if len(rows) < 2:
        return None
    return ExportCursor(rows[0][0], str(rows[0][1]))


async def iter_bundles(
    session: AsyncSession,
    tenant_id: str,
    *,
    limit: int,
    after: ExportCursor | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    batch: int = _EXPORT_BATCH,
) -> AsyncIterator[tuple[ExportCursor, str]]:
    """Up to ``limit`` runs' ``(cursor, PROV-JSON)`` in time order, ``batch`` per query.

    Each batch is a keyset query continuing after the last run yielded, so
    memory holds one batch however long the range is.
    """
    remaining = limit
    position = after
    while remaining > 0:
        size = min(batch, remaining)
        rows = (
            await session.execute(
                select(Run.created_at, Run.id, ProvenanceBundle.prov_json)
                .join(ProvenanceBundle, ProvenanceBundle.run_id == Run.id)
                .where(*_window(tenant_id, since, until, position))
                .order_by(Run.created_at, Run.id)
                .limit(size)
            )
        ).all()
        for created_at, run_id, prov_json in rows:
            position = ExportCursor(created_at, str(run_id))
            yield position, str(prov_json)
        remaining -= len(rows)
        if len(rows) < size:
            return


@dataclass(frozen=True)
class BundleCheck:
    """Whether each recorded run's stored bundle still hashes as its audit event says.

    ``first_mismatch`` names the first run (in audit order) whose bundle was
    altered or removed; the event itself is covered by the hash chain.
    """

    checked: int
    first_mismatch: str | None
    reason: str | None


async def verify_bundles(session: AsyncSession, tenant_id: str, *, batch: int = 200) -> BundleCheck:
    """Compare every ``run.recorded`` event's ``provenance_sha256`` with the stored bundle.

    Events are read in batches and each bundle is fetched on its own, so
    memory holds one batch of events and one bundle.
    """
    checked = 0
    async for event in iter_events(session, tenant_id, batch=batch):
        if event.event_type != RUN_RECORDED:
            continue
        checked += 1
        prov_json = (
            await session.execute(
                select(ProvenanceBundle.prov_json).where(
                    ProvenanceBundle.run_id == event.subject_id,
                    ProvenanceBundle.tenant_id == tenant_id,
                )
            )
        ).scalar_one_or_none()
        if prov_json is None:
            return BundleCheck(checked, event.subject_id, "bundle missing")
        if sha256_hex(str(prov_json).encode("utf-8")) != event.payload.get("provenance_sha256"):
            return BundleCheck(checked, event.subject_id, "bundle hash mismatch")
    return BundleCheck(checked, None, None)
