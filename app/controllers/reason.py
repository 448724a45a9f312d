"""``POST /v1/reason``: the whole pipeline, answered at once or streamed as server-sent events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import msgspec
from litestar import Controller, post
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.runtime import Runtime
from app.schemas.reason import ReasonRequest, ReasonResponse
from app.services import reasoning as service
from app.services.confirmations import with_confirmation
from app.settings import Settings
from app.tracing import trace_run
from store.db import transaction

__all__ = ["ReasonController"]


class ReasonController(Controller):
    path = "/v1/reason"
    tags = ["reason"]
    guards = [requires_scope("reason")]

    @post(
        operation_id="create_reasoning",
        summary="Answer a prompt under its constraints, grounded in the domain's evidence",
        status_code=HTTP_200_OK,
        responses=None,
    )
    async def create_reasoning(
        self,
        data: ReasonRequest,
        auth: AuthContext,
        runtime: Runtime,
        settings: Settings,
        db_session: AsyncSession,
    ) -> ReasonResponse | ServerSentEvent:
        """Run stages 1-7. With ``options.stream`` the response is ``text/event-stream``:
        a ``plan`` event (constraints, entropy, budget, evidence), one ``step`` event
        per step of the answer, then ``result`` with the full response body."""
        service.check_prompt(data.prompt, settings.max_prompt_chars)
        runtime.require_model()
        index = await service.domain_index(runtime, db_session, auth, data.domain)
        started = datetime.now(UTC)
        if data.options.stream:
            return ServerSentEvent(_stream(data, auth, runtime, index, started))
        return await _answer(data, auth, runtime, db_session, index, started)


async def _answer(
    data: ReasonRequest,
    auth: AuthContext,
    runtime: Runtime,
    db_session: AsyncSession,
    index: object,
    started: datetime,
) -> ReasonResponse:
    plan, result = await service.plan_and_run(
        runtime, auth, data.prompt, options=data.options, index=index,  # type: ignore[arg-type]
        defaults=service.profile_defaults(data.profile),
    )
    run_id = service.new_run_id()
    model = msgspec.to_builtins(runtime.require_model().identity.__dict__)
    response = service.build_response(run_id, plan, result, model)
    record = service.run_record(
        auth, plan, result, response, msgspec.to_builtins(data), runtime, started=started, domain=data.domain
    )
    record_ms = await service.record_reason_run(db_session, record, run_id)
    response = msgspec.structs.replace(response, timings={**response.timings, "record": record_ms})
    response = await with_confirmation(db_session, runtime, auth, response, msgspec.to_builtins(data), origin="reason")
    trace_run(response, started=started, prompt=data.prompt)
    return response


async def _stream(
    data: ReasonRequest,
    auth: AuthContext,
    runtime: Runtime,
    index: object,
    started: datetime,
) -> AsyncIterator[ServerSentEventMessage]:
    async with transaction(runtime.sessionmaker) as db_session:
        response = await _answer(data, auth, runtime, db_session, index, started)
    yield ServerSentEventMessage(
        event="plan",
        data=msgspec.json.encode(
            {
                "run_id": response.run_id,
                "constraints": response.constraints,
                "entropy": response.entropy,
                "budget": response.budget,
                "evidence": response.evidence,
            }
        ).decode(),
    )
    for step in response.steps:
        yield ServerSentEventMessage(event="step", data=msgspec.json.encode(step).decode())
    yield ServerSentEventMessage(event="result", data=msgspec.json.encode(response).decode())
