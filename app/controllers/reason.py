"""``POST /v1/reason``: the whole pipeline, answered at once or streamed as server-sent events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import msgspec
from litestar import Controller, Response, post
from litestar.di import Provide
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.controllers.sessions import provide_session_service
from app.runtime import Runtime
from app.schemas.constraints import EntropyOut
from app.schemas.reason import ReasonRequest, ReasonResponse, constraint_out
from app.schemas.sessions import TurnCreate
from app.services import reasoning as service
from app.services.confirmations import with_confirmation
from app.services.sessions import SessionService
from app.settings import Settings
from app.tracing import trace_run
from inference.decoder.stream import StepEvent
from inference.pipeline import Plan
from reasoning.errors import InvalidInput, TenetError
from store.db import transaction

__all__ = ["ReasonController"]


class ReasonController(Controller):
    path = "/v1/reason"
    tags = ["reason"]
    guards = [requires_scope("reason")]
    dependencies = {"sessions": Provide(provide_session_service, sync_to_thread=False)}

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
        sessions: SessionService,
    ) -> Response[ReasonResponse] | ServerSentEvent:
        """Run stages 1-7. With ``options.stream`` the response is ``text/event-stream``:
        a ``plan`` event (run id, constraints, entropy, budget, evidence) once planning is
        done, ``step`` events (``{id, branch, text}``): per branch exactly the ``steps`` of
        that branch in the result, in order, each as soon as the beam search has decided it
        and the rest before ``result``, which carries the full response body (confidences,
        hints; ``reasoning_path`` names the answer's steps).

        With ``session_id`` the prompt is a new question turn of that session
        (``_answer_in_session``)."""
        service.check_prompt(data.prompt, settings.max_prompt_chars)
        runtime.require_model()
        if data.session_id is not None:
            return Response(await _answer_in_session(data, data.session_id, sessions))
        index = await service.lookup_domain_index(runtime, auth.tenant_id, data.domain)
        started = datetime.now(UTC)
        if data.options.stream:
            return ServerSentEvent(_stream(data, auth, runtime, index, started))
        return Response(await _answer(data, auth, runtime, db_session, index, started))


async def _answer_in_session(data: ReasonRequest, session_id: str, sessions: SessionService) -> ReasonResponse:
    """The prompt as a new question turn of the caller's session, as ``POST /v1/sessions/{id}/turns``
    runs one (the session's domain, profile and feedback policy; its premises join the session).

    An unknown, deleted, expired or another tenant's session is 404; a ``domain`` or ``profile``
    other than the session's is 409. Not streamed: a session turn reports once it is stored.
    """
    if data.options.stream:
        raise InvalidInput(
            "options.stream is not supported with session_id: a session turn answers once it is "
            "stored; leave stream out",
            field="options.stream",
        )
    started = datetime.now(UTC)
    turn = TurnCreate(prompt=data.prompt, options=data.options)
    response = await sessions.question(session_id, turn, domain=data.domain, profile=data.profile)
    trace_run(response, started=started, prompt=data.prompt)
    return response


async def _answer(
    data: ReasonRequest,
    auth: AuthContext,
    runtime: Runtime,
    db_session: AsyncSession,
    index: object,
    started: datetime,
    *,
    run_id: str | None = None,
    on_plan: Callable[[Plan], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
) -> ReasonResponse:
    plan, result = await service.plan_and_run(
        runtime, auth, data.prompt, options=data.options, index=index,  # type: ignore[arg-type]
        defaults=service.profile_defaults(data.profile), on_plan=on_plan, on_step=on_step,
    )
    run_id = run_id or service.new_run_id()
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
    """Events as the run produces them: the decode thread hands each over to the loop."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[ServerSentEventMessage] = asyncio.Queue()
    run_id = service.new_run_id()

    def emit(event: str, payload: object) -> None:
        message = ServerSentEventMessage(event=event, data=msgspec.json.encode(payload).decode())
        loop.call_soon_threadsafe(events.put_nowait, message)

    def on_plan(plan: Plan) -> None:
        emit("plan", {
            "run_id": run_id,
            "constraints": [constraint_out(c, None) for c in plan.analysis.constraints],
            "entropy": EntropyOut.of(plan.analysis.entropy),
            "budget": plan.budget,
            "evidence": plan.subgraphs,
        })

    def on_step(step: StepEvent) -> None:
        emit("step", {"id": step.id, "branch": step.branch, "text": step.text})

    async def work() -> ReasonResponse:
        async with transaction(runtime.sessionmaker) as db_session:
            return await _answer(
                data, auth, runtime, db_session, index, started, run_id=run_id, on_plan=on_plan, on_step=on_step
            )

    task = asyncio.ensure_future(work())
    while not (task.done() and events.empty()):
        getter = asyncio.ensure_future(events.get())
        await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        if getter.done():
            yield getter.result()
        else:
            getter.cancel()
    try:
        response = task.result()
    except TenetError as exc:
        problem = {"title": exc.title, "status": exc.status_code, "detail": exc.detail}
        yield ServerSentEventMessage(event="error", data=msgspec.json.encode(problem).decode())
        return
    yield ServerSentEventMessage(event="result", data=msgspec.json.encode(response).decode())
