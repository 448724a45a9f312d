"""``POST /v1/chat/completions``: OpenAI's Chat Completions API on Tenet's pipeline (scope ``reason``).

The official ``openai`` client works unchanged (``base_url=<tenet>/v1``,
``api_key=<Tenet API key>``); Tenet's extras travel in extension fields
(see :mod:`app.schemas.chat` and ``docs/openai.md``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import msgspec
from litestar import Controller, Response, post
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage
from litestar.status_codes import HTTP_200_OK
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.schemas.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionRequest
from app.services import chat as service
from app.services.runs import RunService
from app.services.sessions import SessionService
from app.settings import Settings
from inference.scheduler import JobHints

__all__ = ["ChatController"]


class ChatController(Controller):
    path = "/v1/chat/completions"
    tags = ["openai"]
    guards = [requires_scope("reason")]

    @post(
        operation_id="create_chat_completion",
        summary="OpenAI-compatible chat completion, reasoned under the prompt's constraints",
        status_code=HTTP_200_OK,
    )
    async def create_chat_completion(
        self,
        data: ChatCompletionRequest,
        auth: AuthContext,
        hints: JobHints,
        settings: Settings,
        db_session: AsyncSession,
        runs: RunService,
        sessions: SessionService,
    ) -> Response[ChatCompletion] | ServerSentEvent:
        """Answer at once, or with ``stream`` as server-sent chunks ending with ``data: [DONE]``.

        (Both are ``Response`` objects so that each keeps its own media type.)
        The run completes before the first chunk is sent (beam search settles
        the text only at the end), so a failing request still answers a
        problem response rather than a broken stream.
        """
        request = service.read_request(data, settings)
        loaded = runs.runtime.require_model()
        response = await service.answer(
            data, request, auth=auth, hints=hints, runs=runs, sessions=sessions, db_session=db_session,
            model=loaded,
        )
        model = msgspec.to_builtins(loaded.identity.__dict__)
        if not data.stream:
            return Response(service.completion(response, request, model))
        include_usage = bool(data.stream_options and data.stream_options.include_usage)
        return ServerSentEvent(_events(service.chunks(response, request, model, include_usage=include_usage)))


async def _events(chunks: Iterable[ChatCompletionChunk]) -> AsyncIterator[ServerSentEventMessage]:
    for chunk in chunks:
        yield ServerSentEventMessage(data=msgspec.json.encode(chunk).decode())
    yield ServerSentEventMessage(data="[DONE]")
