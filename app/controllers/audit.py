"""The audit trail: events, chain verification and provenance export (``audit:read``).

- ``GET /v1/audit/events``: the caller's tenant events, paged by cursor.
- ``GET /v1/audit/verify``: walks the tenant's hash chain (in batches, not
  loaded whole) and names the first broken link (tampered rows included);
  with ``bundles=true`` it also checks every run's stored provenance bundle
  against the SHA-256 its ``run.recorded`` event sealed. An intact chain comes
  with a ``signed_head`` (``store.audit_head``); ``head=<token>`` checks an
  earlier one, so a deleted tail of the chain is seen.
- ``GET /v1/audit/export``: the PROV bundles of the runs in a time range
  (``from`` inclusive, ``to`` exclusive, on the run's start time; zone-less
  times are UTC) as one document, streamed run by run. A page holds at most ``limit`` runs; the
  cursor of the next page is sent before the body in ``X-Next-Cursor`` and a
  ``Link: rel="next"`` header (absent on the last page). An interrupted
  download resumes with ``after_run=<id of the last complete bundle>``.
  ``X-Tenet-Audit-Head`` carries the signed head of the tenant's chain at the
  start of the export.
- ``POST /v1/audit/purge`` (``admin``): removes events older than
  ``TENET_AUDIT_RETENTION_DAYS``, never younger ones.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator
from datetime import datetime
from urllib.parse import urlencode

from anyio import to_thread
from litestar import Controller, get, post
from litestar.params import Parameter
from litestar.response import Stream
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.controllers.runs import as_utc, check_window, file_extension, format_of
from app.media_types import response_media_type
from app.runtime import Runtime
from app.schemas.audit import (
    AuditEventOut,
    AuditEventPage,
    BundleVerification,
    ChainBreakOut,
    ChainVerification,
    HeadCheckOut,
    PurgeResult,
)
from app.settings import Settings
from reasoning.errors import InvalidInput
from reasoning.provenance import MEDIA_TYPES, ExportWriter, ProvFormat
from store import audit as audit_store
from store import runs as run_store
from store.audit_head import head_key, read_head, sign_head

__all__ = ["AuditController"]

MAX_EXPORT_RUNS = 10_000


def _encode_seq(seq: int) -> str:
    return base64.urlsafe_b64encode(f"seq:{seq}".encode()).decode("ascii").rstrip("=")


def _decode_seq(token: str) -> int:
    try:
        raw = base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode("ascii")).decode()
        prefix, _, number = raw.partition(":")
        if prefix != "seq" or not number.isdigit():
            raise ValueError(raw)
        return int(number)
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidInput("the cursor is not one this service issued") from None


async def _export_body(
    runtime: Runtime,
    tenant_id: str,
    fmt: ProvFormat,
    *,
    limit: int,
    after: run_store.ExportCursor | None,
    since: datetime | None,
    until: datetime | None,
) -> AsyncIterator[bytes]:
    """The export document, one run at a time, from a session of its own.

    The request's session may be closed while the body streams, so the body
    reads through its own; the conversion of each bundle runs in a worker
    thread so a long export does not stall the event loop.
    """
    writer = ExportWriter(fmt)
    yield writer.header().encode("utf-8")
    async with runtime.sessionmaker() as session:
        bundles = run_store.iter_bundles(
            session, tenant_id, limit=limit, after=after, since=since, until=until
        )
        async for _, prov_json in bundles:
            chunk = await to_thread.run_sync(writer.chunk_from_prov_json, prov_json)
            yield chunk.encode("utf-8")
    yield writer.footer().encode("utf-8")


class AuditController(Controller):
    path = "/v1/audit"
    tags = ["audit"]
    guards = [requires_scope("audit:read")]

    @get("/events", operation_id="list_audit_events", summary="The tenant's audit events, by cursor")
    async def list_audit_events(
        self,
        auth: AuthContext,
        db_session: AsyncSession,
        limit: int = Parameter(default=100, ge=1, le=1000),
        cursor: str | None = Parameter(default=None, description="next_cursor of the previous page"),
        event_type: str | None = Parameter(default=None),
        since: datetime | None = Parameter(query="from", default=None),
        until: datetime | None = Parameter(query="to", default=None),
    ) -> AuditEventPage:
        since, until = as_utc(since), as_utc(until)
        check_window(since, until)
        rows, after = await audit_store.list_events(
            db_session,
            auth.tenant_id,
            after_seq=_decode_seq(cursor) if cursor else 0,
            limit=limit,
            event_type=event_type,
            since=since,
            until=until,
        )
        return AuditEventPage(
            data=[AuditEventOut(**audit_store.event_document(r)) for r in rows],
            next_cursor=_encode_seq(after) if after is not None else None,
        )

    @get("/verify", operation_id="verify_audit_chain", summary="Verify the tenant's hash chain")
    async def verify_audit_chain(
        self,
        auth: AuthContext,
        db_session: AsyncSession,
        settings: Settings,
        bundles: bool = Parameter(
            default=False, description="also check each run's provenance bundle against its event"
        ),
        head: str | None = Parameter(
            default=None, description="a signed_head kept earlier: does the chain still hold it?"
        ),
    ) -> ChainVerification:
        key = head_key(settings.data_dir)
        earlier = read_head(key, head) if head else None
        if earlier is not None and earlier.tenant_id != auth.tenant_id:
            raise InvalidInput("the signed head is of another tenant's chain", field="head")
        report = await audit_store.verify_chain(db_session, auth.tenant_id)
        head_check = None
        if earlier is not None:
            status = await audit_store.head_status(
                db_session, auth.tenant_id, earlier.chain_seq, earlier.hash
            )
            head_check = HeadCheckOut(
                chain_seq=earlier.chain_seq, hash=earlier.hash, holds=status.holds,
                reason=status.reason, current_chain_seq=status.current_chain_seq,
            )
        bundle_check = None
        if bundles:
            found = await run_store.verify_bundles(db_session, auth.tenant_id)
            bundle_check = BundleVerification(
                checked=found.checked, first_mismatch=found.first_mismatch, reason=found.reason
            )
        broken = report.first_broken
        return ChainVerification(
            intact=report.intact,
            checked=report.checked,
            first_broken=(
                ChainBreakOut(seq=broken.seq, id=broken.id, chain_seq=broken.chain_seq, reason=broken.reason)
                if broken is not None
                else None
            ),
            head_chain_seq=report.head_chain_seq,
            head_hash=report.head_hash,
            bundles=bundle_check,
            signed_head=(
                sign_head(key, auth.tenant_id, report.head_chain_seq, report.head_hash).token
                if report.intact
                else None
            ),
            head_check=head_check,
        )

    @get(
        "/export",
        operation_id="export_provenance",
        summary="Stream the PROV bundles of a time range as one document",
    )
    async def export_provenance(
        self,
        auth: AuthContext,
        db_session: AsyncSession,
        runtime: Runtime,
        settings: Settings,
        format: str = Parameter(default="json", description="provn | json | xml | ttl | jsonld"),
        since: datetime | None = Parameter(query="from", default=None),
        until: datetime | None = Parameter(query="to", default=None),
        cursor: str | None = Parameter(default=None, description="X-Next-Cursor of the previous page"),
        after_run: str | None = Parameter(default=None, description="resume after this run's bundle"),
        limit: int = Parameter(default=1000, ge=1, le=MAX_EXPORT_RUNS),
    ) -> Stream:
        fmt = format_of(format)
        since, until = as_utc(since), as_utc(until)
        check_window(since, until)
        if cursor and after_run:
            raise InvalidInput("give either cursor or after_run, not both")
        after = run_store.ExportCursor.decode(cursor) if cursor else None
        if after_run:
            run = await run_store.get_run(db_session, auth.tenant_id, after_run)
            after = run_store.ExportCursor(run.created_at, run.id)
        following = await run_store.next_export_cursor(
            db_session, auth.tenant_id, limit=limit, after=after, since=since, until=until
        )
        position, last_hash = await audit_store.chain_head(db_session, auth.tenant_id)
        headers = {
            "Content-Disposition": f'attachment; filename="tenet-provenance.{file_extension(fmt)}"',
            "X-Tenet-Audit-Head": sign_head(
                head_key(settings.data_dir), auth.tenant_id, position, last_hash
            ).token,
        }
        if following is not None:
            token = following.encode()
            query = {"format": fmt.value, "limit": str(limit), "cursor": token}
            if since is not None:
                query["from"] = since.isoformat()
            if until is not None:
                query["to"] = until.isoformat()
            headers["X-Next-Cursor"] = token
            headers["Link"] = f'</v1/audit/export?{urlencode(query)}>; rel="next"'
        body = _export_body(
            runtime, auth.tenant_id, fmt, limit=limit, after=after, since=since, until=until
        )
        return Stream(body, media_type=response_media_type(MEDIA_TYPES[fmt]), headers=headers)

    @post(
        "/purge",
        operation_id="purge_audit_events",
        summary="Remove the tenant's audit events older than the retention period",
        guards=[requires_scope("admin")],
        status_code=200,
    )
    async def purge_audit_events(
        self,
        auth: AuthContext,
        db_session: AsyncSession,
        settings: Settings,
        before: datetime | None = Parameter(default=None, description="purge only events older than this"),
    ) -> PurgeResult:
        removed = await audit_store.purge_expired(
            db_session,
            auth.tenant_id,
            retention_days=settings.audit_retention_days,
            before=as_utc(before),
        )
        return PurgeResult(removed=removed, retention_days=settings.audit_retention_days)
