"""The append-only, hash-chained audit log.

Chains
    There is one chain per tenant. Each event stores ``chain_seq`` (its
    position in the tenant's chain, 1, 2, ...), ``prev_hash`` (the ``hash`` of
    the tenant's previous event, ``GENESIS_HASH`` for the first) and ``hash``,
    the SHA-256 of its canonical JSON (``reasoning.provenance.event_digest``:
    id, tenant, position, type, subject, payload, ISO UTC time and
    ``prev_hash``). Per-tenant chains let a tenant verify its own history
    without reading, or being able to infer anything about, other tenants'
    events; the global ``seq`` only orders rows in storage.

Appending
    ``append_event`` runs inside the caller's transaction, so an event and the
    data it describes commit or roll back together. Appends to one chain are
    serialised: on PostgreSQL a transaction-scoped advisory lock keyed by the
    tenant is taken before the chain head is read (held until commit or
    rollback); SQLite allows one writer at a time, and the append takes that
    write lock before it reads the head. The unique constraint on
    ``(tenant_id, chain_seq)`` is the last line of defence: two appends that
    read the same head cannot both commit, so the chain never forks.

Verifying
    ``verify_chain`` walks a tenant's events in ``seq`` order in fixed-size
    batches over the per-tenant ``(tenant_id, chain_seq)`` index (memory does
    not grow with the log) and reports the first broken link: ``hash
    mismatch`` (the event was altered), ``gap`` (events before it are
    missing) or ``prev_hash mismatch`` (it does not follow the event before
    it: reordered or spliced rows), or ``unreadable payload`` /
    ``unreadable created_at`` (the stored field no longer decodes: it was
    overwritten outside the service). Rows are read with those two fields as
    raw text, so no tampering can make the walk itself fail. Deleting the
    newest events is not visible to the chain alone; keep a signed head
    (``store.audit_head``) outside the database and check it with
    ``head_status`` to detect that.

Retention
    Audit events are never updated. ``purge_expired`` is the only delete: it
    removes a prefix of a tenant's chain older than the retention period
    (``TENET_AUDIT_RETENTION_DAYS``, at least ``MIN_RETENTION_DAYS``) and
    appends an ``audit.purged`` event naming the last removed position and
    hash, which ``verify_chain`` accepts as the new start of the chain. No
    table has a foreign key to ``audit_events``, and ``audit_events`` has none
    to other tables, so deleting a session, a run's session or an ontology
    version leaves the events that describe it in place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Select, Text, cast, delete, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from reasoning.errors import InvalidInput
from reasoning.provenance.canonical import GENESIS_HASH, event_digest, iso_utc, normalise_json
from store.models import AuditEvent, new_id, utcnow

__all__ = [
    "MIN_RETENTION_DAYS",
    "PURGED_EVENT",
    "ChainBreak",
    "ChainReport",
    "HeadStatus",
    "StoredEvent",
    "append_event",
    "chain_head",
    "event_document",
    "head_status",
    "iter_events",
    "list_events",
    "purge_expired",
    "verify_chain",
]

MIN_RETENTION_DAYS = 1
PURGED_EVENT = "audit.purged"
_BATCH = 500


@dataclass(frozen=True)
class ChainBreak:
    """The first event at which a chain stops verifying."""

    seq: int
    id: str
    chain_seq: int
    reason: str


@dataclass(frozen=True)
class ChainReport:
    """The outcome of walking one tenant's chain."""

    intact: bool
    checked: int
    first_broken: ChainBreak | None
    head_chain_seq: int
    head_hash: str


@dataclass(frozen=True)
class StoredEvent:
    """An event as stored, read so that tampered fields cannot make the read fail.

    ``event`` is a detached row; a field named in ``damaged`` (``payload``,
    ``created_at``) did not decode and holds a placeholder (``{}``, the epoch),
    ``created_text`` is the stored time as text.
    """

    event: AuditEvent
    created_text: str
    damaged: tuple[str, ...] = field(default=())


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _raw_select() -> Select[*tuple[Any, ...]]:
    return select(
        AuditEvent.seq,
        AuditEvent.id,
        AuditEvent.tenant_id,
        AuditEvent.chain_seq,
        AuditEvent.event_type,
        AuditEvent.subject_type,
        AuditEvent.subject_id,
        cast(AuditEvent.payload, Text),
        cast(AuditEvent.created_at, Text),
        AuditEvent.prev_hash,
        AuditEvent.hash,
    )


def _decoded(row: Any) -> StoredEvent:
    """A raw row as an event; undecodable fields named, never raised."""
    damaged: list[str] = []
    try:
        payload = json.loads(row[7]) if row[7] is not None else None
    except (TypeError, ValueError):
        payload = None
    if not isinstance(payload, dict):
        damaged.append("payload")
        payload = {}
    created_text = str(row[8])
    try:
        moment = datetime.fromisoformat(created_text)
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (TypeError, ValueError):
        damaged.append("created_at")
        moment = _EPOCH
    event = AuditEvent(
        seq=row[0], id=row[1], tenant_id=row[2], chain_seq=row[3], event_type=row[4],
        subject_type=row[5], subject_id=row[6], payload=payload, created_at=moment,
        prev_hash=row[9], hash=row[10],
    )
    return StoredEvent(event, created_text, tuple(damaged))


def _lock_key(tenant_id: str) -> int:
    digest = hashlib.sha256(b"tenet.audit.chain:" + tenant_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def _lock_chain(session: AsyncSession, tenant_id: str) -> None:
    """Serialise appends to one tenant's chain until the transaction ends."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        await session.execute(
            text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(tenant_id)}
        )
    elif dialect == "sqlite":
        # A write statement takes SQLite's database write lock (a no-op UPDATE
        # suffices), so no other writer can extend the chain between our read
        # of the head and our insert.
        await session.execute(text("UPDATE audit_events SET seq = seq WHERE 1 = 0"))


async def chain_head(session: AsyncSession, tenant_id: str) -> tuple[int, str]:
    """The tenant's last ``(chain_seq, hash)``; ``(0, GENESIS_HASH)`` when empty."""
    row = (
        await session.execute(
            select(AuditEvent.chain_seq, AuditEvent.hash)
            .where(AuditEvent.tenant_id == tenant_id)
            .order_by(AuditEvent.chain_seq.desc())
            .limit(1)
        )
    ).first()
    if row is None:
        return 0, GENESIS_HASH
    return int(row[0]), str(row[1])


async def append_event(
    session: AsyncSession,
    *,
    tenant_id: str,
    event_type: str,
    subject_type: str,
    subject_id: str,
    payload: dict[str, Any] | None = None,
    created_at: datetime | None = None,
) -> AuditEvent:
    """Append one event to the tenant's chain, in the caller's transaction.

    Nothing is committed here: the caller's unit of work commits the event
    together with the data it describes, or rolls both back. The payload must
    be JSON-native; it is stored exactly as it was hashed.

    Example::

        async with transaction(sessionmaker) as session:
            session.add(row)
            await append_event(session, tenant_id=t, event_type="ontology.deleted",
                               subject_type="ontology_version", subject_id=row.id)
    """
    if not event_type or not subject_type:
        raise InvalidInput("an audit event needs an event_type and a subject_type")
    body = normalise_json(payload or {})
    if not isinstance(body, dict):
        raise InvalidInput("an audit event payload must be a JSON object")
    moment = created_at or utcnow()
    if moment.tzinfo is None:
        raise InvalidInput("audit event times must be timezone-aware")
    await _lock_chain(session, tenant_id)
    position, prev_hash = await chain_head(session, tenant_id)
    event = AuditEvent(
        id=new_id(),
        tenant_id=tenant_id,
        chain_seq=position + 1,
        event_type=event_type,
        subject_type=subject_type,
        subject_id=subject_id,
        payload=body,
        created_at=moment,
        prev_hash=prev_hash,
    )
    event.hash = _digest_of(event)
    session.add(event)
    await session.flush()
    return event


def _digest_of(event: AuditEvent) -> str:
    """The hash ``event`` must carry; appending and verifying both use it, so they cannot drift."""
    return event_digest(
        event_id=event.id,
        tenant_id=event.tenant_id,
        chain_seq=event.chain_seq,
        event_type=event.event_type,
        subject_type=event.subject_type,
        subject_id=event.subject_id,
        payload=event.payload,
        created_at=event.created_at,
        prev_hash=event.prev_hash,
    )


async def iter_events(
    session: AsyncSession,
    tenant_id: str,
    *,
    after_seq: int = 0,
    since: datetime | None = None,
    until: datetime | None = None,
    batch: int = _BATCH,
) -> AsyncIterator[AuditEvent]:
    """A tenant's events in ``seq`` order, fetched ``batch`` rows at a time.

    Each batch is a keyset query (``seq > last``), so no server-side cursor
    stays open and memory holds one batch. Rows are detached (never in the
    session's identity map); a tampered field reads as a placeholder
    (``StoredEvent``), never as an error.
    """
    last = after_seq
    while True:
        query = (
            _raw_select()
            .where(AuditEvent.tenant_id == tenant_id, AuditEvent.seq > last)
            .order_by(AuditEvent.seq)
            .limit(batch)
        )
        if since is not None:
            query = query.where(AuditEvent.created_at >= since)
        if until is not None:
            query = query.where(AuditEvent.created_at < until)
        rows = (await session.execute(query)).all()
        for row in rows:
            yield _decoded(row).event
        if len(rows) < batch:
            return
        last = int(rows[-1][0])


async def list_events(
    session: AsyncSession,
    tenant_id: str,
    *,
    after_seq: int = 0,
    limit: int = 100,
    event_type: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> tuple[list[StoredEvent], int | None]:
    """One page of a tenant's events and the ``seq`` to continue after (None at the end).

    Tampered rows are listed too, their undecodable fields named (``StoredEvent``).
    """
    query = (
        _raw_select()
        .where(AuditEvent.tenant_id == tenant_id, AuditEvent.seq > after_seq)
        .order_by(AuditEvent.seq)
        .limit(limit + 1)
    )
    if event_type is not None:
        query = query.where(AuditEvent.event_type == event_type)
    if since is not None:
        query = query.where(AuditEvent.created_at >= since)
    if until is not None:
        query = query.where(AuditEvent.created_at < until)
    rows = [_decoded(row) for row in (await session.execute(query)).all()]
    if len(rows) > limit:
        return rows[:limit], rows[limit - 1].event.seq
    return rows, None


def event_document(event: AuditEvent | StoredEvent) -> dict[str, Any]:
    """An event as a JSON object: every hashed field, its hash and its ``seq``.

    A :class:`StoredEvent` with damaged fields shows its stored time as text and
    names the damaged fields in ``damaged``.
    """
    if isinstance(event, StoredEvent):
        document = event_document(event.event)
        if event.damaged:
            document["damaged"] = list(event.damaged)
            if "created_at" in event.damaged:
                document["created_at"] = event.created_text
        return document
    return {
        "seq": event.seq,
        "id": event.id,
        "tenant_id": event.tenant_id,
        "chain_seq": event.chain_seq,
        "event_type": event.event_type,
        "subject_type": event.subject_type,
        "subject_id": event.subject_id,
        "payload": event.payload,
        "created_at": iso_utc(event.created_at),
        "prev_hash": event.prev_hash,
        "hash": event.hash,
    }


async def _purges(session: AsyncSession, tenant_id: str) -> list[dict[str, Any]]:
    """The payloads of the tenant's purge events that decode (a tampered one vouches for nothing)."""
    rows = await session.execute(
        select(cast(AuditEvent.payload, Text)).where(
            AuditEvent.tenant_id == tenant_id, AuditEvent.event_type == PURGED_EVENT
        )
    )
    found: list[dict[str, Any]] = []
    for (raw,) in rows:
        try:
            payload = json.loads(raw)
        except (TypeError, ValueError):
            continue
        if isinstance(payload, dict):
            found.append(payload)
    return found


async def _anchor(session: AsyncSession, tenant_id: str, first: AuditEvent) -> str | None:
    """The trusted start of a purged chain: the ``prev_hash`` a purge event vouches for."""
    for payload in await _purges(session, tenant_id):
        if payload.get("through_chain_seq") == first.chain_seq - 1:
            return str(payload.get("through_hash"))
    return None


@dataclass(frozen=True)
class HeadStatus:
    """Whether the chain still holds a head recorded earlier (see ``store.audit_head``).

    ``reason``: ``present`` (the event at that position carries that hash),
    ``purged`` (a purge event covers that position), ``replaced`` (another hash
    is stored there) or ``missing`` (the chain ends before it: newest events
    were deleted).
    """

    holds: bool
    reason: str
    current_chain_seq: int


async def head_status(session: AsyncSession, tenant_id: str, chain_seq: int, head_hash: str) -> HeadStatus:
    """Check a recorded head ``(chain_seq, head_hash)`` against the tenant's chain now."""
    current, _ = await chain_head(session, tenant_id)
    if chain_seq == 0:
        return HeadStatus(head_hash == GENESIS_HASH, "present" if head_hash == GENESIS_HASH else "replaced", current)
    stored = (
        await session.execute(
            select(AuditEvent.hash).where(
                AuditEvent.tenant_id == tenant_id, AuditEvent.chain_seq == chain_seq
            )
        )
    ).scalar_one_or_none()
    if stored is not None:
        same = stored == head_hash
        return HeadStatus(same, "present" if same else "replaced", current)
    for payload in await _purges(session, tenant_id):
        through = payload.get("through_chain_seq")
        if isinstance(through, int) and through >= chain_seq:
            return HeadStatus(True, "purged", current)
    return HeadStatus(False, "missing", current)


async def _iter_chain(session: AsyncSession, tenant_id: str, batch: int) -> AsyncIterator[StoredEvent]:
    """A tenant's events in chain order, ``batch`` at a time over the (tenant, position) index."""
    last = 0
    while True:
        rows = (
            await session.execute(
                _raw_select()
                .where(AuditEvent.tenant_id == tenant_id, AuditEvent.chain_seq > last)
                .order_by(AuditEvent.chain_seq)
                .limit(batch)
            )
        ).all()
        for row in rows:
            yield _decoded(row)
        if len(rows) < batch:
            return
        last = int(rows[-1][3])


async def verify_chain(session: AsyncSession, tenant_id: str, *, batch: int = _BATCH) -> ChainReport:
    """Walk the tenant's chain and report the first broken link, if any.

    Events are read in chain order (``chain_seq``, indexed per tenant) in
    batches. At each event: its recomputed digest must equal ``hash`` (else
    ``hash mismatch``); its position must follow the previous one (else
    ``gap``: events are missing); its ``prev_hash`` must be the previous
    event's hash and its storage ``seq`` must be above the previous one's
    (else ``prev_hash mismatch``: rows were reordered or spliced).

    Purges are vouched for by the chain itself: after ``purge_expired`` the
    first remaining event is accepted when an ``audit.purged`` event of the
    same chain names its predecessor's position and hash.
    """
    checked = 0
    expected_seq, prev_hash, prev_row = 1, GENESIS_HASH, 0
    async for stored in _iter_chain(session, tenant_id, batch):
        event = stored.event
        if checked == 0 and event.chain_seq > 1:
            anchor = await _anchor(session, tenant_id, event)
            if anchor is not None:
                expected_seq, prev_hash = event.chain_seq, anchor
        checked += 1
        reason: str | None = None
        if stored.damaged:
            reason = f"unreadable {stored.damaged[0]}"
        elif _digest_of(event) != event.hash:
            reason = "hash mismatch"
        elif event.chain_seq != expected_seq:
            reason = "gap"
        elif event.prev_hash != prev_hash or event.seq <= prev_row:
            reason = "prev_hash mismatch"
        if reason is not None:
            broken = ChainBreak(event.seq, event.id, event.chain_seq, reason)
            return ChainReport(False, checked, broken, expected_seq - 1, prev_hash)
        expected_seq, prev_hash, prev_row = event.chain_seq + 1, event.hash, event.seq
    return ChainReport(True, checked, None, expected_seq - 1, prev_hash)


async def purge_expired(
    session: AsyncSession,
    tenant_id: str,
    *,
    retention_days: int,
    before: datetime | None = None,
    now: datetime | None = None,
) -> int:
    """Delete the tenant's events older than the retention period; return how many.

    Only a prefix of the chain is removed, never an event younger than
    ``retention_days`` (whatever ``before`` says), and the removal is itself
    recorded as an ``audit.purged`` event that anchors the remaining chain.
    """
    if retention_days < MIN_RETENTION_DAYS:
        raise InvalidInput(f"audit retention must be at least {MIN_RETENTION_DAYS} day(s)")
    moment = now or utcnow()
    cutoff = moment - timedelta(days=retention_days)
    if before is not None and before < cutoff:
        cutoff = before
    await _lock_chain(session, tenant_id)
    young = (
        await session.execute(
            select(func.min(AuditEvent.chain_seq)).where(
                AuditEvent.tenant_id == tenant_id, AuditEvent.created_at >= cutoff
            )
        )
    ).scalar_one_or_none()
    query = (
        select(AuditEvent.chain_seq, AuditEvent.hash)
        .where(AuditEvent.tenant_id == tenant_id, AuditEvent.created_at < cutoff)
        .order_by(AuditEvent.chain_seq.desc())
        .limit(1)
    )
    if young is not None:
        query = query.where(AuditEvent.chain_seq < young)
    last_old = (await session.execute(query)).first()
    if last_old is None:
        return 0
    through_seq, through_hash = int(last_old[0]), str(last_old[1])
    removed = await session.execute(
        delete(AuditEvent).where(
            AuditEvent.tenant_id == tenant_id, AuditEvent.chain_seq <= through_seq
        )
    )
    count = int(getattr(removed, "rowcount", 0) or 0)
    await append_event(
        session,
        tenant_id=tenant_id,
        event_type=PURGED_EVENT,
        subject_type="audit_chain",
        subject_id=tenant_id,
        payload={
            "through_chain_seq": through_seq,
            "through_hash": through_hash,
            "removed": count,
            "cutoff": iso_utc(cutoff),
            "retention_days": retention_days,
        },
        created_at=moment,
    )
    return count
