"""Sessions, their premises and their persisted reasoning DAG.

Every function takes the caller's ``tenant_id`` and filters by it: a session
of another tenant, a soft-deleted one and one idle longer than the TTL are
all the same :class:`NotFound` (404), so a caller learns nothing about
sessions that are not theirs. An expired session is soft-deleted the first
time it is looked up (``state["closed_reason"] == "expired"``); its runs and
audit events stay.

Concurrency: :func:`save_session` is a compare-and-swap on
``last_active_at``. A writer passes the value it read when it started its
turn; if another writer (another replica) committed a turn in between, the
update matches no row and :class:`ConflictError` (409) is raised, so two
turns are never interleaved. :func:`get_session` with ``for_update=True``
additionally takes a row lock on PostgreSQL (``SELECT ... FOR UPDATE``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from reasoning.constraints.model import Premise, Span
from reasoning.dag import ReasoningDag
from reasoning.errors import ConflictError, InvalidInput, NotFound
from store.models import PREMISE_STATUSES, Run, new_id, utcnow
from store.models import Premise as PremiseRow
from store.models import Session as SessionRow

__all__ = [
    "DEFAULT_IDLE_TTL_S",
    "SessionExpired",
    "add_premises",
    "amended_text",
    "create_session",
    "delete_session",
    "expire_idle_sessions",
    "get_premise",
    "get_session",
    "list_premises",
    "list_session_runs",
    "load_dag",
    "premise_from_row",
    "save_session",
    "set_premise_status",
]

DEFAULT_IDLE_TTL_S = 3600.0


class SessionExpired(NotFound):
    """The session exists but was idle longer than the TTL (answered like any 404)."""


def _expired(row: SessionRow, idle_ttl_s: float, now: datetime) -> bool:
    return row.last_active_at + timedelta(seconds=idle_ttl_s) < now


async def create_session(
    db: AsyncSession, tenant_id: str, *, domain: str | None = None, profile: str | None = None
) -> SessionRow:
    """A new, empty session (no turns, no premises, an empty DAG)."""
    now = utcnow()
    row = SessionRow(
        id=new_id(),
        tenant_id=tenant_id,
        domain=domain,
        created_at=now,
        last_active_at=now,
        dag=ReasoningDag().to_node_link(),
        state={"profile": profile, "turns": [], "policy": {}},
    )
    db.add(row)
    await db.flush()
    return row


async def get_session(
    db: AsyncSession,
    tenant_id: str,
    session_id: str,
    *,
    idle_ttl_s: float = DEFAULT_IDLE_TTL_S,
    now: datetime | None = None,
    for_update: bool = False,
) -> SessionRow:
    """The live session ``session_id`` of ``tenant_id``, or NotFound.

    An idle session past ``idle_ttl_s`` raises :class:`SessionExpired` (a
    NotFound) and is left as it is: the caller's transaction rolls back on
    that error, so closing it is :func:`expire_idle_sessions`'s job.
    """
    query = select(SessionRow).where(SessionRow.id == session_id, SessionRow.tenant_id == tenant_id)
    if for_update:
        query = query.with_for_update()
    row = (await db.execute(query)).scalar_one_or_none()
    if row is None or row.deleted_at is not None:
        raise NotFound(f"session {session_id!r} not found")
    if _expired(row, idle_ttl_s, now or utcnow()):
        raise SessionExpired(f"session {session_id!r} not found (expired after {idle_ttl_s:g} s idle)")
    return row


async def delete_session(
    db: AsyncSession, tenant_id: str, session_id: str, *, idle_ttl_s: float = DEFAULT_IDLE_TTL_S
) -> SessionRow:
    """Soft-delete: the row, its premises, runs and audit events stay for audit."""
    row = await get_session(db, tenant_id, session_id, idle_ttl_s=idle_ttl_s)
    row.deleted_at = utcnow()
    row.state = {**row.state, "closed_reason": "deleted"}
    await db.flush()
    return row


async def expire_idle_sessions(
    db: AsyncSession,
    *,
    idle_ttl_s: float = DEFAULT_IDLE_TTL_S,
    now: datetime | None = None,
    tenant_id: str | None = None,
) -> int:
    """Soft-delete every live session idle longer than ``idle_ttl_s``
    (``closed_reason: expired``), of one tenant or of all; return how many."""
    moment = now or utcnow()
    cutoff = moment - timedelta(seconds=idle_ttl_s)
    query = select(SessionRow).where(SessionRow.deleted_at.is_(None), SessionRow.last_active_at < cutoff)
    if tenant_id is not None:
        query = query.where(SessionRow.tenant_id == tenant_id)
    rows = (await db.execute(query)).scalars().all()
    for row in rows:
        row.deleted_at = moment
        row.state = {**row.state, "closed_reason": "expired"}
    await db.flush()
    return len(rows)


def load_dag(row: SessionRow) -> ReasoningDag:
    """The session's reasoning DAG as stored after its last turn."""
    return ReasoningDag.from_node_link(row.dag or {})


async def save_session(
    db: AsyncSession,
    row: SessionRow,
    *,
    expected_active_at: datetime,
    dag: ReasoningDag,
    state: Mapping[str, Any],
    now: datetime | None = None,
) -> datetime:
    """Store the DAG and state of a finished turn; return the new ``last_active_at``.

    Raises ConflictError when the session changed since ``expected_active_at``
    was read (another turn committed first) or was deleted meanwhile.
    """
    moment = now or utcnow()
    if moment <= expected_active_at:
        moment = expected_active_at + timedelta(microseconds=1)
    dag_doc = dag.to_node_link()
    result = await db.execute(
        update(SessionRow)
        .where(
            SessionRow.id == row.id,
            SessionRow.tenant_id == row.tenant_id,
            SessionRow.deleted_at.is_(None),
            SessionRow.last_active_at == expected_active_at,
        )
        .values(dag=dag_doc, state=dict(state), last_active_at=moment)
        .execution_options(synchronize_session=False)
    )
    if getattr(result, "rowcount", 0) != 1:
        raise ConflictError(
            f"session {row.id!r} changed while this turn ran (another turn or a delete "
            "committed first); reload the session and retry"
        )
    row.dag, row.state, row.last_active_at = dag_doc, dict(state), moment
    return moment


def premise_from_row(row: PremiseRow) -> Premise:
    """The reasoning value object of a stored premise; its id is the row id."""
    data = row.data or {}
    span = data.get("source")
    return Premise(
        id=row.id,
        text=row.text,
        topic=row.topic,
        value=row.value,
        negated=bool(data.get("negated", False)),
        source=Span(**span) if isinstance(span, dict) else None,
        language=str(data.get("language", "en")),
    )


async def add_premises(
    db: AsyncSession,
    session: SessionRow,
    premises: Sequence[Premise],
    *,
    run_id: str | None,
    turn: int,
) -> dict[str, PremiseRow]:
    """Store a turn's premises; return ``{run-level premise id: row}``.

    The run-level id (``P1``) is kept in ``data["run_premise_id"]`` so a later
    re-inference of that turn can name it to the pipeline.
    """
    out: dict[str, PremiseRow] = {}
    for p in premises:
        row = PremiseRow(
            id=new_id(),
            session_id=session.id,
            tenant_id=session.tenant_id,
            run_id=run_id,
            text=p.text,
            topic=p.topic,
            value=p.value,
            status="active",
            data={
                "run_premise_id": p.id,
                "turn": turn,
                "negated": p.negated,
                "language": p.language,
                "source": {"start": p.source.start, "end": p.source.end, "text": p.source.text}
                if p.source
                else None,
                "history": [],
            },
        )
        db.add(row)
        out[p.id] = row
    await db.flush()
    return out


async def list_premises(
    db: AsyncSession, tenant_id: str, session_id: str, *, statuses: Iterable[str] | None = None
) -> list[PremiseRow]:
    """The session's premises, oldest first (optionally only some statuses)."""
    query = select(PremiseRow).where(
        PremiseRow.session_id == session_id, PremiseRow.tenant_id == tenant_id
    )
    if statuses is not None:
        query = query.where(PremiseRow.status.in_(list(statuses)))
    rows = (await db.execute(query.order_by(PremiseRow.created_at, PremiseRow.id))).scalars().all()
    return list(rows)


async def get_premise(
    db: AsyncSession, tenant_id: str, session_id: str, premise_id: str
) -> PremiseRow:
    row = (
        await db.execute(
            select(PremiseRow).where(
                PremiseRow.id == premise_id,
                PremiseRow.session_id == session_id,
                PremiseRow.tenant_id == tenant_id,
            )
        )
    ).scalar_one_or_none()
    if row is None:
        raise NotFound(f"premise {premise_id!r} not found in session {session_id!r}")
    return row


def amended_text(text: str, old_value: str | None, new_value: str | None) -> str:
    """The premise text after its value changes: the old value replaced where the
    text states it, else the text unchanged (the caller then supplies a text)."""
    if new_value is not None and old_value and old_value in text:
        return text.replace(old_value, new_value)
    return text


async def set_premise_status(
    db: AsyncSession,
    row: PremiseRow,
    status: str,
    *,
    value: str | None = None,
    text: str | None = None,
    reason: str = "",
) -> PremiseRow:
    """Retract or amend a premise, keeping its earlier text and value in ``data["history"]``.

    A retracted premise cannot be changed again (ConflictError): a retraction
    is final, an amendment of it would resurrect it silently. An amendment that
    gives only a new value rewrites the value where the text states it
    ("tax rate is 20%" -> "tax rate is 25%"), so the re-run reads the new value.
    """
    if status not in PREMISE_STATUSES or status == "active":
        raise InvalidInput(f"premise status must be 'retracted' or 'amended', not {status!r}")
    if row.status == "retracted":
        raise ConflictError(f"premise {row.id!r} is already retracted")
    if status == "amended" and value is None and text is None:
        raise InvalidInput("an amendment needs a new value or a new text")
    data = dict(row.data or {})
    history = list(data.get("history", []))
    history.append(
        {"status": row.status, "text": row.text, "value": row.value, "at": utcnow().isoformat(),
         "reason": reason}
    )
    data["history"] = history
    if status == "amended" and text is None:
        text = amended_text(row.text, row.value, value)
    row.status = status
    if text is not None:
        row.text = text
    if value is not None:
        row.value = value
    row.data = data
    row.updated_at = utcnow()
    await db.flush()
    return row


async def list_session_runs(db: AsyncSession, tenant_id: str, session_id: str) -> list[Run]:
    """The runs (turns and re-inferences) of a session, oldest first."""
    rows = (
        await db.execute(
            select(Run)
            .where(Run.session_id == session_id, Run.tenant_id == tenant_id)
            .order_by(Run.created_at, Run.id)
        )
    ).scalars().all()
    return list(rows)
