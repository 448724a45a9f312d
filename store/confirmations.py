"""Pending confirmations: create, list, read, claim for resolution, finish, release.

Every query filters by tenant; another tenant's confirmation is ``NotFound``.
Resolution is a claim (``pending`` -> ``resolving``) by a conditional UPDATE,
so two concurrent resolutions of one confirmation cannot both run: the loser
gets ``ConflictError`` (409). The claim is committed before the pipeline runs
(no write lock is held during a decode) and either finished (``resolved``)
or released (back to ``pending``) afterwards. A claim whose process died
(still ``resolving`` after ``STALE_CLAIM``; ``resolved_at`` holds the claim
time until the resolution finishes) may be claimed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from reasoning.errors import ConflictError, InvalidInput, NotFound
from store.models import CONFIRMATION_KINDS, CONFIRMATION_STATUSES, Confirmation, new_id, utcnow

__all__ = [
    "STALE_CLAIM",
    "claim_confirmation",
    "create_confirmation",
    "finish_confirmation",
    "get_confirmation",
    "list_confirmations",
    "release_confirmation",
]

#: How long a resolution may hold its claim before another may take it over
#: (far longer than any decode the budget allows).
STALE_CLAIM = timedelta(minutes=15)


async def create_confirmation(
    session: AsyncSession,
    *,
    tenant_id: str,
    key_id: str | None,
    kind: str,
    origin: str,
    prompt: str,
    detail: str,
    request: dict[str, Any],
    choices: Sequence[dict[str, Any]],
    run_id: str | None = None,
    session_id: str | None = None,
) -> Confirmation:
    """Add a pending confirmation to ``session`` (flushed, so its id and times are set)."""
    if kind not in CONFIRMATION_KINDS:
        raise InvalidInput(f"unknown confirmation kind {kind!r}")
    if len(choices) < 2:
        raise InvalidInput("a confirmation needs at least two choices")
    row = Confirmation(
        id=new_id(),
        tenant_id=tenant_id,
        key_id=key_id,
        kind=kind,
        status="pending",
        origin=origin,
        run_id=run_id,
        session_id=session_id,
        prompt=prompt,
        detail=detail,
        request=request,
        choices=list(choices),
        created_at=utcnow(),
    )
    session.add(row)
    await session.flush()
    return row


async def get_confirmation(session: AsyncSession, tenant_id: str, confirmation_id: str) -> Confirmation:
    """The tenant's confirmation; NotFound for an unknown id or another tenant's."""
    row = await session.scalar(
        select(Confirmation).where(Confirmation.id == confirmation_id, Confirmation.tenant_id == tenant_id)
    )
    if row is None:
        raise NotFound(f"no confirmation {confirmation_id!r}")
    return row


async def list_confirmations(
    session: AsyncSession, tenant_id: str, *, status: str | None = "pending", limit: int = 100
) -> list[Confirmation]:
    """The tenant's confirmations, newest first; ``status=None`` lists every status."""
    if status is not None and status not in CONFIRMATION_STATUSES:
        raise InvalidInput(f"status must be one of {list(CONFIRMATION_STATUSES)}", field="status")
    query = select(Confirmation).where(Confirmation.tenant_id == tenant_id)
    if status is not None:
        query = query.where(Confirmation.status == status)
    query = query.order_by(Confirmation.created_at.desc(), Confirmation.id).limit(limit)
    return list((await session.scalars(query)).all())


async def claim_confirmation(
    session: AsyncSession,
    tenant_id: str,
    confirmation_id: str,
    *,
    key_id: str,
    chosen: str,
    stale_after: timedelta = STALE_CLAIM,
) -> Confirmation:
    """Move a pending confirmation (or one whose claim went stale) to ``resolving`` for ``chosen``.

    Raises:
        NotFound: unknown id or another tenant's.
        ConflictError: it is already resolved or being resolved.
    """
    row = await get_confirmation(session, tenant_id, confirmation_id)
    now = utcnow()
    claimable = or_(
        Confirmation.status == "pending",
        and_(Confirmation.status == "resolving", Confirmation.resolved_at < now - stale_after),
    )
    result = await session.execute(
        update(Confirmation)
        .where(Confirmation.id == confirmation_id, Confirmation.tenant_id == tenant_id, claimable)
        .values(status="resolving", chosen=chosen, resolved_by_key_id=key_id, resolved_at=now)
        .execution_options(synchronize_session=False)
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]
        raise ConflictError(
            f"confirmation {confirmation_id!r} is already {row.status}", status=row.status
        )
    await session.refresh(row)
    return row


async def finish_confirmation(
    session: AsyncSession, tenant_id: str, confirmation_id: str, *, resolution_run_id: str | None
) -> Confirmation:
    """Mark a claimed confirmation resolved, naming the run that continued it."""
    row = await get_confirmation(session, tenant_id, confirmation_id)
    row.status = "resolved"
    row.resolved_at = utcnow()
    row.resolution_run_id = resolution_run_id
    await session.flush()
    return row


async def release_confirmation(session: AsyncSession, tenant_id: str, confirmation_id: str) -> None:
    """Return a claimed confirmation to ``pending`` (its resolution failed)."""
    await session.execute(
        update(Confirmation)
        .where(
            Confirmation.id == confirmation_id,
            Confirmation.tenant_id == tenant_id,
            Confirmation.status == "resolving",
        )
        .values(status="pending", chosen=None, resolved_by_key_id=None, resolved_at=None)
        .execution_options(synchronize_session=False)
    )
