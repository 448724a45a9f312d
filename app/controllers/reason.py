"""``POST /v1/reason``: the whole pipeline, answered at once or streamed as server-sent events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import msgspec
from litestar import Controller, Response, post
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.errors import problem_status, problem_title
from app.schemas.constraints import EntropyOut
from app.schemas.reason import ReasonRequest, ReasonResponse, constraint_out
from app.schemas.sessions import TurnCreate
from app.services.runs import RunRequest, RunService, check_prompt, new_run_id
from app.services.sessions import SessionService
from app.settings import Settings
from app.tracing import trace_run
from inference.decoder.stream import StepEvent
from inference.loader import LoadedModel
from inference.pipeline import Plan
from inference.scheduler import JobHints
from reasoning.errors import InvalidInput, TenetError
from reasoning.evidence.index import OntologyIndex

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
        hints: JobHints,
        settings: Settings,
        db_session: AsyncSession,
        runs: RunService,
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
        check_prompt(data.prompt, settings.max_prompt_chars)
        model = runs.runtime.require_model()
        if data.session_id is not None:
            return Response(await _answer_in_session(data, data.session_id, sessions, model))
        request = _run_request(data)
        if data.options.stream:
            index = await runs.index_for(auth, data.domain)
            return ServerSentEvent(_stream(request, runs, auth, hints, index, model))
        return Response(await runs.answer(request, auth=auth, hints=hints, db_session=db_session, model=model))


def _run_request(data: ReasonRequest) -> RunRequest:
    return RunRequest(
        prompt=data.prompt, options=data.options, stored=msgspec.to_builtins(data),
        domain=data.domain, profile=data.profile,
    )


async def _answer_in_session(
    data: ReasonRequest, session_id: str, sessions: SessionService, model: LoadedModel
) -> ReasonResponse:
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
    response = await sessions.question(session_id, turn, domain=data.domain, profile=data.profile, model=model)
    trace_run(response, started=started, prompt=data.prompt)
    return response


async def _stream(
    request: RunRequest, runs: RunService, auth: AuthContext, hints: JobHints, index: OntologyIndex | None,
    model: LoadedModel,
) -> AsyncIterator[ServerSentEventMessage]:
    """Events as the run produces them: the decode thread hands each over to the loop.

    The run is recorded in a transaction of its own (the request's has
    ended when the stream starts); a failure ends the stream with an
    ``error`` event carrying the problem's title, status and detail.
    """
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[ServerSentEventMessage] = asyncio.Queue()
    run_id = new_run_id()

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
        return await runs.answer(
            request, auth=auth, hints=hints, model=model, index=index, run_id=run_id, on_plan=on_plan,
            on_step=on_step,
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
        problem = {"title": problem_title(exc), "status": problem_status(exc), "detail": exc.detail}
        yield ServerSentEventMessage(event="error", data=msgspec.json.encode(problem).decode())
        return
    yield ServerSentEventMessage(event="result", data=msgspec.json.encode(response).decode())
