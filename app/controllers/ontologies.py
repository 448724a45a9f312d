"""``/v1/ontologies``: upload, list, inspect and retire ontology versions.

An upload is parsed, materialised, validated and indexed in a worker thread
*before* anything is written, so a refused file leaves no row; the same
bytes uploaded again to the same domain answer 200 with the existing
version. Every query is scoped to the caller's tenant: another tenant's
version answers 404. Upload limits are the ``TENET_ONTOLOGY_*`` settings
(``runtime.ontology_limits``); the request body is capped at the file limit
plus :data:`MULTIPART_ALLOWANCE_BYTES` while it is received. OWL/XML is
refused with 415 (see ``docs/ontologies.md``). A new version, a retired one
and a retired one uploaded again (put back in service, ``created_at`` kept)
are audit events (``ontology.uploaded``, ``ontology.deleted``,
``ontology.restored``) in the request's transaction.
"""

from __future__ import annotations

import re
from typing import Any, Final

from litestar import Controller, Request, Response, delete, get, post
from litestar.connection import ASGIConnection
from litestar.datastructures import UploadFile
from litestar.handlers.base import BaseRouteHandler
from litestar.params import Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED
from litestar.types import Guard
from litestar.utils.scope.state import ScopeState
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, Unauthorized, requires_scope
from app.runtime import Runtime
from app.schemas.ontologies import OntologyList, OntologyReportOut, OntologyVersionOut
from app.services.ontologies import ingest_upload
from reasoning.errors import Forbidden, InvalidInput, LimitExceeded
from reasoning.evidence.safe_parse import media_type_for
from store import ontologies as ontology_store
from store.audit import append_event
from store.models import OntologyVersion

__all__ = ["MULTIPART_ALLOWANCE_BYTES", "OntologiesController", "requires_any_scope"]

MULTIPART_ALLOWANCE_BYTES: Final = 1024 * 1024
"""How far an upload request's body may exceed the file limit (``TENET_ONTOLOGY_MAX_BYTES``):
room for multipart framing and form fields. The file itself is checked against the limit."""

_DOMAIN_RE: Final = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")

def requires_any_scope(*scopes: str) -> Guard:
    """A guard admitting keys that hold any of ``scopes`` (or ``admin``); 403 otherwise."""

    async def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        user = connection.scope.get("user")
        if not isinstance(user, AuthContext):
            raise Unauthorized("this route needs an API key")
        if not any(user.has(scope) for scope in scopes):
            raise Forbidden(f"this API key lacks one of the scopes {list(scopes)}",
                            required_scope=list(scopes))

    guard.__name__ = "requires_any_scope_" + "_".join(s.replace(":", "_") for s in scopes)
    return guard


_READERS: Final = requires_any_scope("ontology:read", "ontology:write", "reason")
"""The read routes' guard: a key that may upload versions or reason over them may read them."""


def _out(row: OntologyVersion, current_id: str | None) -> OntologyVersionOut:
    return OntologyVersionOut(
        id=row.id,
        domain=row.domain,
        content_hash=row.content_hash,
        media_type=row.media_type,
        filename=row.filename,
        size_bytes=row.size_bytes,
        triples_asserted=row.triples_asserted,
        triples_materialised=row.triples_materialised,
        views=list(row.views.get("views", [])),
        report=dict(row.report),
        created_at=row.created_at,
        deleted_at=row.deleted_at,
        current=row.id == current_id,
    )


async def _version_out(
    db_session: AsyncSession, tenant_id: str, row: OntologyVersion
) -> OntologyVersionOut:
    """``row`` as the API shows it, ``current`` when it is the version of its domain in service."""
    current = await ontology_store.current_version(db_session, tenant_id, row.domain)
    return _out(row, current.id if current else None)


def _domain(value: str | None) -> str:
    if value is None or not value.strip():
        raise InvalidInput("the query or form field 'domain' is required (e.g. ?domain=clinical)",
                           field="domain")
    domain = value.strip().lower()
    if not _DOMAIN_RE.match(domain):
        raise InvalidInput("domain must be 1-64 characters of a-z, 0-9, '_', '.', '-', "
                           "starting with a letter or digit", field="domain")
    return domain


async def _read_body(request: Request[Any, Any, Any], limit: int) -> None:
    """Receive the whole body, refusing (413) once it passes ``limit`` bytes.

    The route has no fixed Litestar body limit because the limit is a setting;
    this is where it is enforced, before anything is parsed. The body is left
    in the request's cache, where ``request.body()`` and ``request.form()`` read it.
    """
    announced = request.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > limit:
        raise LimitExceeded(f"the request body is {announced} bytes; the limit is {limit} bytes",
                            limit="max_body_bytes")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise LimitExceeded(f"the request body is over the limit of {limit} bytes",
                                limit="max_body_bytes")
        chunks.append(chunk)
    ScopeState.from_scope(request.scope).body = b"".join(chunks)
    await request.body()


async def _read_upload(request: Request[Any, Any, Any], domain: str | None, limit: int
                       ) -> tuple[str, bytes, str, str | None]:
    """``(domain, bytes, media type, filename)`` from a raw body or a multipart form."""
    await _read_body(request, limit)
    content_type = request.headers.get("content-type", "")
    if content_type.lower().startswith("multipart/form-data"):
        form = await request.form()
        files = [v for v in form.values() if isinstance(v, UploadFile)]
        if len(files) != 1:
            raise InvalidInput(f"a multipart upload must carry exactly one file; got {len(files)}",
                               field="file")
        upload = files[0]
        field_domain = form.get("domain")
        data = await upload.read()
        name = upload.filename or None
        media = media_type_for(upload.content_type, name)
        chosen = domain if domain is not None else (
            field_domain if isinstance(field_domain, str) else None)
        return _domain(chosen), data, media, name
    data = await request.body()
    return _domain(domain), data, media_type_for(content_type, None), None


class OntologiesController(Controller):
    path = "/v1/ontologies"
    tags = ["ontologies"]

    @post(
        operation_id="create_ontology",
        summary="Upload an ontology version (Turtle, RDF/XML, JSON-LD, N-Triples)",
        guards=[requires_scope("ontology:write")],
        request_max_body_size=None,
        status_code=HTTP_201_CREATED,
    )
    async def create_ontology(
        self,
        request: Request[Any, Any, Any],
        auth: AuthContext,
        db_session: AsyncSession,
        runtime: Runtime,
        domain: str | None = Parameter(query="domain", default=None, description="Domain name"),
    ) -> Response[OntologyVersionOut]:
        """201 with the new version, or 200 with the existing one for identical bytes.

        Identical bytes of a deleted version restore it (200, an ``ontology.restored``
        audit event, ``created_at`` unchanged).
        """
        limits = runtime.ontology_limits
        chosen, data, media, filename = await _read_upload(
            request, domain, limits.parse.max_bytes + MULTIPART_ALLOWANCE_BYTES)
        if len(data) > limits.parse.max_bytes:
            raise LimitExceeded(f"the file is {len(data)} bytes; the limit is "
                                f"{limits.parse.max_bytes} bytes", limit="max_bytes")
        result = await ingest_upload(data, media, limits)
        row, created = await ontology_store.save_version(
            db_session, auth.tenant_id, chosen, data, result, filename=filename)
        if created:
            await append_event(
                db_session, tenant_id=auth.tenant_id, event_type="ontology.uploaded",
                subject_type="ontology_version", subject_id=row.id,
                payload={"domain": row.domain, "content_hash": row.content_hash,
                         "size_bytes": row.size_bytes, "by_key": auth.key_id},
            )
            runtime.ontology_indexes.put(result.index.with_version(row.id))
        elif row.deleted_at is not None:
            deleted_at = await ontology_store.restore_version(db_session, row)
            await append_event(
                db_session, tenant_id=auth.tenant_id, event_type="ontology.restored",
                subject_type="ontology_version", subject_id=row.id,
                payload={"domain": row.domain, "content_hash": row.content_hash,
                         "deleted_at": deleted_at.isoformat(),
                         "created_at": row.created_at.isoformat(), "by_key": auth.key_id},
            )
        return Response(await _version_out(db_session, auth.tenant_id, row),
                        status_code=HTTP_201_CREATED if created else HTTP_200_OK)

    @get(
        operation_id="list_ontologies",
        summary="List this tenant's ontology versions, newest first",
        guards=[_READERS],
    )
    async def list_ontologies(
        self,
        auth: AuthContext,
        db_session: AsyncSession,
        domain: str | None = Parameter(query="domain", default=None),
        include_deleted: bool = Parameter(query="include_deleted", default=False),
    ) -> OntologyList:
        rows = await ontology_store.list_versions(
            db_session, auth.tenant_id, domain=domain, include_deleted=include_deleted)
        current: dict[str, str] = {}
        for row in rows:
            if row.deleted_at is None:
                current.setdefault(row.domain, row.id)
        return OntologyList(data=[_out(r, current.get(r.domain)) for r in rows])

    @get(
        "/{version_id:str}",
        operation_id="get_ontology",
        summary="One ontology version",
        guards=[_READERS],
    )
    async def get_ontology(self, version_id: str, auth: AuthContext,
                           db_session: AsyncSession) -> OntologyVersionOut:
        row = await ontology_store.get_version(db_session, auth.tenant_id, version_id)
        return await _version_out(db_session, auth.tenant_id, row)

    @get(
        "/{version_id:str}/report",
        operation_id="get_ontology_report",
        summary="The validation report of one ontology version",
        guards=[_READERS],
    )
    async def get_ontology_report(self, version_id: str, auth: AuthContext,
                                  db_session: AsyncSession) -> OntologyReportOut:
        row = await ontology_store.get_version(db_session, auth.tenant_id, version_id)
        return OntologyReportOut(id=row.id, domain=row.domain, content_hash=row.content_hash,
                                 report=dict(row.report))

    @delete(
        "/{version_id:str}",
        operation_id="delete_ontology",
        summary="Retire a version (soft delete); the previous version is back in service",
        guards=[requires_scope("ontology:write")],
        status_code=HTTP_200_OK,
    )
    async def delete_ontology(self, version_id: str, auth: AuthContext, db_session: AsyncSession,
                              runtime: Runtime) -> OntologyVersionOut:
        row = await ontology_store.delete_version(db_session, auth.tenant_id, version_id)
        await append_event(
            db_session, tenant_id=auth.tenant_id, event_type="ontology.deleted",
            subject_type="ontology_version", subject_id=row.id,
            payload={"domain": row.domain, "content_hash": row.content_hash, "by_key": auth.key_id},
        )
        runtime.ontology_indexes.discard(row.id)
        return await _version_out(db_session, auth.tenant_id, row)
