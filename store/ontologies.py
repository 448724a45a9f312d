"""Ontology versions: tenant-scoped rows and bytes, the current version per domain.

Rules every function keeps:

- every query filters by ``tenant_id``; another tenant's version is
  :class:`~reasoning.errors.NotFound`, exactly like a missing one;
- a version is immutable; re-uploading the same bytes to the same domain
  returns the existing row; a soft-deleted one is put back in service only by
  :func:`restore_version` (the caller records it as ``ontology.restored``),
  and its ``created_at`` is never rewritten;
- the *current* version of a domain is its newest row that is not deleted,
  so deleting a version puts the previous one back in service;
- rows and bytes only: parsing, materialising and decoding an index are the
  reasoning core's work, run by :mod:`app.services.ontologies` (which also
  loads the bundled domains). Callers ingest *before* they write, so a
  refused file leaves no row behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import msgspec
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from reasoning.errors import ConflictError, NotFound
from store.models import OntologyVersion, utcnow

if TYPE_CHECKING:  # the ingest result's type only: the store runs no ingestion
    from reasoning.evidence.ingest import IngestResult

__all__ = [
    "current_version",
    "delete_version",
    "find_by_hash",
    "get_version",
    "list_versions",
    "materialised_index",
    "restore_version",
    "save_version",
]

_LIGHT = (defer(OntologyVersion.content), defer(OntologyVersion.materialised))


async def save_version(
    session: AsyncSession,
    tenant_id: str,
    domain: str,
    data: bytes,
    result: IngestResult,
    *,
    filename: str | None = None,
) -> tuple[OntologyVersion, bool]:
    """Store an ingested upload; ``(row, created)``, ``created`` False for a re-upload.

    A re-upload of a soft-deleted version returns that row still deleted: the
    caller decides to :func:`restore_version` it (and records that), nothing
    is revived silently. Concurrent uploads of the same bytes race on the
    unique constraint; the loser gets the winner's row.
    """
    existing = await find_by_hash(session, tenant_id, domain, result.content_hash)
    if existing is not None:
        return existing, False
    row = OntologyVersion(
        tenant_id=tenant_id,
        domain=domain,
        content_hash=result.content_hash,
        media_type=result.media_type,
        filename=filename,
        size_bytes=len(data),
        triples_asserted=result.triples_asserted,
        triples_materialised=result.triples_materialised,
        report=msgspec.to_builtins(result.report),
        views={"views": [v.summary() for v in result.views]},
        content=data,
        materialised=result.index_blob,
    )
    try:
        async with session.begin_nested():
            session.add(row)
            await session.flush()
    except IntegrityError:
        winner = await find_by_hash(session, tenant_id, domain, result.content_hash)
        if winner is None:
            raise
        return winner, False
    return row, True


async def find_by_hash(session: AsyncSession, tenant_id: str, domain: str, digest: str
                       ) -> OntologyVersion | None:
    """The domain's version with these bytes (by SHA-256), deleted or not; None when there is none."""
    found = await session.scalars(
        select(OntologyVersion).options(*_LIGHT).where(
            OntologyVersion.tenant_id == tenant_id,
            OntologyVersion.domain == domain,
            OntologyVersion.content_hash == digest,
        )
    )
    return found.first()


async def get_version(session: AsyncSession, tenant_id: str, version_id: str,
                      *, include_deleted: bool = False) -> OntologyVersion:
    """One version of this tenant (without its large columns); NotFound otherwise."""
    found = await session.scalars(
        select(OntologyVersion).options(*_LIGHT).where(
            OntologyVersion.id == version_id, OntologyVersion.tenant_id == tenant_id
        )
    )
    row = found.first()
    if row is None or (row.deleted_at is not None and not include_deleted):
        raise NotFound(f"no ontology version {version_id!r}", resource="ontology")
    return row


async def list_versions(session: AsyncSession, tenant_id: str, *, domain: str | None = None,
                        include_deleted: bool = False) -> Sequence[OntologyVersion]:
    """This tenant's versions, newest first (without their large columns)."""
    query = select(OntologyVersion).options(*_LIGHT).where(OntologyVersion.tenant_id == tenant_id)
    if domain is not None:
        query = query.where(OntologyVersion.domain == domain)
    if not include_deleted:
        query = query.where(OntologyVersion.deleted_at.is_(None))
    query = query.order_by(OntologyVersion.created_at.desc(), OntologyVersion.id)
    return (await session.scalars(query)).all()


async def delete_version(session: AsyncSession, tenant_id: str, version_id: str
                         ) -> OntologyVersion:
    """Soft-delete one version; the domain's previous version is current again."""
    row = await get_version(session, tenant_id, version_id)
    row.deleted_at = utcnow()
    await session.flush()
    return row


async def restore_version(session: AsyncSession, row: OntologyVersion) -> datetime:
    """Put a soft-deleted version back in service; returns when it had been deleted.

    ``created_at`` keeps the first upload's time, so the version is current
    again only when no newer version of its domain is in service.
    """
    deleted_at = row.deleted_at
    if deleted_at is None:
        raise ConflictError(f"ontology version {row.id} is not deleted", resource="ontology")
    row.deleted_at = None
    await session.flush()
    return deleted_at


async def current_version(session: AsyncSession, tenant_id: str, domain: str
                          ) -> OntologyVersion | None:
    """The domain's newest version that is not deleted, or None."""
    rows = await list_versions(session, tenant_id, domain=domain)
    return rows[0] if rows else None


async def materialised_index(session: AsyncSession, version_id: str) -> bytes | None:
    """The stored index blob of one version (the caller has checked the tenant), None without one."""
    blob: bytes | None = await session.scalar(
        select(OntologyVersion.materialised).where(OntologyVersion.id == version_id)
    )
    return blob
