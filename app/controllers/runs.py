"""Runs and their provenance (``audit:read``).

Every query filters by the caller's tenant: another tenant's run id answers
404 exactly like an unknown one.
"""

from __future__ import annotations

from datetime import UTC, datetime

from anyio import to_thread
from litestar import Controller, Response, get
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.media_types import response_media_type
from app.schemas.audit import RunDetail, RunPage, RunStepOut, RunSummary
from reasoning.errors import InvalidInput
from reasoning.provenance import MEDIA_TYPES, ProvFormat, from_prov_json, serialize
from store import runs as run_store
from store.models import Run

__all__ = ["RunsController", "as_utc", "check_window"]

_EXTENSIONS = {
    ProvFormat.PROVN: "provn",
    ProvFormat.JSON: "json",
    ProvFormat.XML: "xml",
    ProvFormat.TURTLE: "ttl",
    ProvFormat.JSONLD: "jsonld",
}


def as_utc(moment: datetime | None) -> datetime | None:
    """Query times without a zone are read as UTC."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def check_window(since: datetime | None, until: datetime | None) -> None:
    """Refuse a time range that ends before it starts."""
    if since is not None and until is not None and until < since:
        raise InvalidInput("'to' must not be earlier than 'from'")


def format_of(value: str) -> ProvFormat:
    """The provenance format named by a ``format`` query parameter."""
    try:
        return ProvFormat(value)
    except ValueError:
        allowed = ", ".join(f.value for f in ProvFormat)
        raise InvalidInput(f"unknown format {value!r}; use one of {allowed}") from None


def file_extension(fmt: ProvFormat) -> str:
    return _EXTENSIONS[fmt]


def _summary(run: Run) -> RunSummary:
    return RunSummary(
        id=run.id,
        kind=run.kind,
        status=run.status,
        session_id=run.session_id,
        key_id=run.key_id,
        created_at=run.created_at,
        finished_at=run.finished_at,
        duration_ms=run.duration_ms,
        prompt=run.prompt,
    )


class RunsController(Controller):
    path = "/v1/runs"
    tags = ["runs"]
    guards = [requires_scope("audit:read")]

    @get(operation_id="list_runs", summary="List the tenant's runs, oldest first, by cursor")
    async def list_runs(
        self,
        auth: AuthContext,
        db_session: AsyncSession,
        limit: int = Parameter(default=50, ge=1, le=500),
        cursor: str | None = Parameter(default=None, description="next_cursor of the previous page"),
        kind: str | None = Parameter(default=None, description="reason, constraints, reinference, ..."),
        since: datetime | None = Parameter(query="from", default=None),
        until: datetime | None = Parameter(query="to", default=None),
    ) -> RunPage:
        since, until = as_utc(since), as_utc(until)
        check_window(since, until)
        after = run_store.ExportCursor.decode(cursor) if cursor else None
        rows, following = await run_store.list_runs(
            db_session, auth.tenant_id, limit=limit, after=after, since=since, until=until, kind=kind
        )
        return RunPage(
            data=[_summary(r) for r in rows],
            next_cursor=following.encode() if following else None,
        )

    @get("/{run_id:str}", operation_id="get_run", summary="One run with its steps")
    async def get_run(self, run_id: str, auth: AuthContext, db_session: AsyncSession) -> RunDetail:
        run = await run_store.get_run(db_session, auth.tenant_id, run_id)
        steps = await run_store.get_run_steps(db_session, auth.tenant_id, run_id)
        summary = _summary(run)
        return RunDetail(
            **{name: getattr(summary, name) for name in summary.__struct_fields__},
            request=run.request,
            result=run.result,
            model=run.model,
            steps=[
                RunStepOut(branch=s.branch, idx=s.idx, text=s.text, confidence=s.confidence, data=s.data)
                for s in steps
            ],
            provenance_url=f"/v1/runs/{run.id}/provenance",
        )

    @get(
        "/{run_id:str}/provenance",
        operation_id="get_run_provenance",
        summary="The run's PROV bundle as PROV-N, PROV-JSON, PROV-XML or PROV-O (Turtle, JSON-LD)",
    )
    async def get_run_provenance(
        self,
        run_id: str,
        auth: AuthContext,
        db_session: AsyncSession,
        format: str = Parameter(default="json", description="provn | json | xml | ttl | jsonld"),
    ) -> Response[str]:
        fmt = format_of(format)
        prov_json = await run_store.get_provenance_json(db_session, auth.tenant_id, run_id)
        if fmt is ProvFormat.JSON:
            body = prov_json
        else:
            body = await to_thread.run_sync(lambda: serialize(from_prov_json(prov_json), fmt))
        return Response(
            content=body,
            media_type=response_media_type(MEDIA_TYPES[fmt]),
            headers={
                "Content-Disposition": f'inline; filename="run-{run_id}.{file_extension(fmt)}"'
            },
        )
