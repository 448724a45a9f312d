"""OpenAI chat completions on Tenet's pipeline: messages in, a reasoned completion out.

How a request maps onto a run (see ``docs/openai.md``):

- The prompt is the last ``user`` message, preceded by the ``system`` /
  ``developer`` messages (their instructions are read as constraints like the
  user's own). Earlier ``user`` / ``assistant`` turns are not re-read: their
  instructions would come back as constraints the user has moved past.
  Multi-turn context is what Tenet sessions keep (premises, the reasoning
  DAG): pass ``session_id`` and the message becomes a turn of that session.
- ``max_completion_tokens`` (or the older ``max_tokens``) bounds new tokens;
  ``temperature == 0`` decodes greedily (one beam); any other temperature is
  accepted and the budget's deterministic beam search decodes (no sampling).
  ``seed`` is passed on. ``stop`` cuts the answer at the first stop sequence.
- Refused with 400, because ignoring them would change the answer's meaning:
  ``n`` other than 1, tools / functions, ``logprobs``, a ``response_format``
  other than text, non-text content parts, and messages after the last user
  message.
- A run stopped in ``needs_confirmation`` answers a normal completion whose
  content explains the conflict (``finish_reason`` ``stop``), with
  ``tenet.status`` ``needs_confirmation`` and ``tenet.confirmation_id``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext
from app.schemas.chat import (
    ChatChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChunkChoice,
    Delta,
    ResponseMessage,
    TenetExtension,
    Usage,
)
from app.schemas.reason import ReasonResponse
from app.schemas.sessions import TurnCreate, TurnResult
from app.services.runs import RunRequest, RunService, check_prompt
from app.services.sessions import SessionService
from app.settings import Settings
from app.tracing import trace_run
from inference.loader import LoadedModel
from inference.pipeline import ReasonOptions
from inference.scheduler import JobHints
from reasoning.errors import InvalidInput
from reasoning.provenance import RunKind

__all__ = ["ChatRequest", "answer", "chunks", "completion", "read_request"]

_INSTRUCTION_ROLES = ("system", "developer")
_PIECE = re.compile(r"\S+\s*|\s+")


class ChatRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A chat request read into what the pipeline takes."""

    prompt: str
    options: ReasonOptions
    stop: tuple[str, ...]


def _text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if part.type != "text" or part.text is None:
            raise InvalidInput(f"{where}: only text content parts are supported, not {part.type!r}", field=where)
        parts.append(part.text)
    return "".join(parts)


def read_request(data: ChatCompletionRequest, settings: Settings) -> ChatRequest:
    """Validate ``data`` and derive the prompt, the options and the stop sequences.

    Raises:
        InvalidInput: anything the module docstring lists as refused, or bad options.
    """
    if data.n not in (None, 1):
        raise InvalidInput("n must be 1: Tenet returns one reasoned answer per request", field="n")
    if not data.messages:
        raise InvalidInput("messages must not be empty", field="messages")
    if data.tools or data.functions:
        raise InvalidInput("tools and function calling are not supported", field="tools")
    if data.logprobs:
        raise InvalidInput("logprobs are not supported", field="logprobs")
    if data.response_format and data.response_format.get("type", "text") != "text":
        raise InvalidInput(
            "response_format must be text; ask for JSON in the prompt (a JSON format constraint is steered)",
            field="response_format",
        )
    if data.session_id is not None and (data.domain is not None or data.profile is not None):
        raise InvalidInput("a session's domain and profile are set when the session is created", field="session_id")
    if data.temperature is not None and not 0 <= data.temperature <= 2:
        raise InvalidInput("temperature must be between 0 and 2", field="temperature")
    users = [i for i, m in enumerate(data.messages) if m.role == "user"]
    if not users:
        raise InvalidInput("messages need at least one user message", field="messages")
    last = users[-1]
    if last != len(data.messages) - 1:
        raise InvalidInput("the last message must be the user's: continuing an assistant message is not supported",
                           field="messages")
    for i, m in enumerate(data.messages):
        if m.role in ("tool", "function"):
            raise InvalidInput(f"messages[{i}]: role {m.role!r} is not supported", field=f"messages[{i}].role")
    instructions = [
        _text(m.content, f"messages[{i}].content")
        for i, m in enumerate(data.messages) if m.role in _INSTRUCTION_ROLES
    ]
    question = _text(data.messages[last].content, f"messages[{last}].content")
    prompt = "\n\n".join(t.strip() for t in (*instructions, question) if t.strip())
    check_prompt(prompt, settings.max_prompt_chars)
    stop = (data.stop,) if isinstance(data.stop, str) else tuple(data.stop or ())
    if len(stop) > 4 or any(not s for s in stop):
        raise InvalidInput("stop takes up to 4 non-empty sequences", field="stop")
    return ChatRequest(prompt=prompt, options=_options(data), stop=stop)


def _options(data: ChatCompletionRequest) -> ReasonOptions:
    given = dict(data.tenet_options or {})
    if given.pop("stream", False):
        raise InvalidInput("stream the completion with the top-level stream field", field="tenet_options.stream")
    name = "max_completion_tokens" if data.max_completion_tokens is not None else "max_tokens"
    max_new = data.max_completion_tokens if data.max_completion_tokens is not None else data.max_tokens
    if max_new is not None:
        if not 1 <= max_new <= 4096:
            raise InvalidInput(f"{name} must be between 1 and 4096", field=name)
        given["max_new_tokens"] = max_new
    if data.temperature == 0:
        given["num_beams"] = 1
    if data.seed is not None:
        given["seed"] = data.seed
    try:
        return msgspec.convert(given, ReasonOptions)
    except (msgspec.ValidationError, InvalidInput) as exc:
        raise InvalidInput(f"tenet_options: {exc}", field="tenet_options") from None


def _cut(text: str, stop: tuple[str, ...]) -> tuple[str, bool]:
    cuts = [i for s in stop if (i := text.find(s)) >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)


async def answer(
    data: ChatCompletionRequest,
    request: ChatRequest,
    *,
    auth: AuthContext,
    hints: JobHints,
    runs: RunService,
    sessions: SessionService,
    db_session: AsyncSession,
    model: LoadedModel,
) -> ReasonResponse | TurnResult:
    """Run the request: a session turn with ``session_id``, otherwise a chat run recorded as kind ``chat``.

    ``model`` is the loaded model the caller looked up (once per request).

    A session turn that decoded nothing (an ambiguous premise, a change no
    branch depended on) answers its :class:`TurnResult`.
    """
    if data.session_id is None:
        stored = {
            "prompt": request.prompt,
            "domain": data.domain,
            "profile": msgspec.to_builtins(data.profile) if data.profile else None,
            "options": msgspec.to_builtins(request.options),
            "chat": msgspec.to_builtins(data),
        }
        run = RunRequest(
            prompt=request.prompt, options=request.options, stored=stored, domain=data.domain,
            profile=data.profile, kind=RunKind.CHAT, origin="chat", temperature=data.temperature,
        )
        return await runs.answer(run, auth=auth, hints=hints, db_session=db_session, model=model)
    started = datetime.now(UTC)
    turn = await sessions.turn(data.session_id, TurnCreate(prompt=request.prompt, options=request.options),
                               model=model)
    if turn.response is None:
        return turn
    trace_run(turn.response, started=started, prompt=request.prompt, temperature=data.temperature)
    return turn.response


def _content(response: ReasonResponse) -> str:
    if response.status == "ok":
        return response.answer
    by_id = {c.id: c for c in response.constraints}
    lines = ["I need a confirmation before answering: the instructions conflict."]
    for c in response.conflicts:
        a, b = by_id.get(c.a), by_id.get(c.b)
        said_a = a.source.text if a is not None and a.source is not None else c.a
        said_b = b.source.text if b is not None and b.source is not None else c.b
        lines.append(f"- \u201c{said_a}\u201d ({c.a}) vs \u201c{said_b}\u201d ({c.b}): {c.reason}")
    if response.confirmation_id:
        lines.append(
            f"Choose the one that stands: POST /v1/confirmations/{response.confirmation_id} "
            '{"choose": "<constraint id>"}.'
        )
    elif response.detail:
        lines.append(response.detail)
    return "\n".join(lines)


def _extension(response: ReasonResponse) -> TenetExtension:
    return TenetExtension(
        run_id=response.run_id,
        status=response.status,
        constraints=response.constraints,
        conflicts=response.conflicts,
        reasoning_path=response.reasoning_path,
        confidence_by_step=response.confidence_by_step,
        steps=response.steps,
        evidence_ids=list(dict.fromkeys(i for b in response.branches for i in b.evidence_ids)),
        violations=response.violations,
        confirmation_id=response.confirmation_id,
        session_id=response.session_id,
        detail=response.detail,
        decision=response.decision,
        end=response.end,
    )


def _finish(response: ReasonResponse, cut: bool) -> str:
    if cut or response.status != "ok":
        return "stop"
    if response.end is not None:
        return "length" if response.end == "budget_cut" else "stop"
    limit = response.budget.max_new_tokens
    return "length" if response.usage.get("completion_tokens", 0) >= limit else "stop"


def _usage(response: ReasonResponse) -> Usage:
    prompt = response.usage.get("prompt_tokens", 0)
    done = response.usage.get("completion_tokens", 0)
    return Usage(prompt_tokens=prompt, completion_tokens=done, total_tokens=prompt + done)


def _fingerprint(response: ReasonResponse) -> str:
    return f"tenet-{str(response.model.get('sha256', ''))[:12]}"


def _turn_completion(turn: TurnResult, model: dict[str, Any]) -> ChatCompletion:
    """A session turn that decoded nothing: its message (and candidates) as the content."""
    lines = [turn.message] if turn.message else []
    lines += [f"- {c.id}: {c.text}" for c in turn.candidates]
    if turn.answer is not None:
        lines.append(turn.answer.text)
    extension = TenetExtension(
        run_id=turn.run_id, status=turn.status, constraints=[], conflicts=[], reasoning_path=[],
        confidence_by_step={}, steps=[], evidence_ids=[], violations=[], session_id=turn.session_id,
        detail=turn.message or None,
    )
    return ChatCompletion(
        id=f"chatcmpl-{turn.run_id or turn.session_id}",
        object="chat.completion",
        created=int(time.time()),
        model=str(model.get("name", "")),
        choices=[ChatChoice(index=0, message=ResponseMessage(role="assistant", content="\n".join(lines)),
                            finish_reason="stop")],
        usage=Usage(prompt_tokens=0, completion_tokens=0, total_tokens=0),
        system_fingerprint=f"tenet-{str(model.get('sha256', ''))[:12]}",
        tenet=extension,
    )


def completion(
    response: ReasonResponse | TurnResult, request: ChatRequest, model: dict[str, Any]
) -> ChatCompletion:
    """The OpenAI completion of a finished run (``model``: the loaded model's identity)."""
    if isinstance(response, TurnResult):
        return _turn_completion(response, model)
    content, cut = _cut(_content(response), request.stop)
    return ChatCompletion(
        id=f"chatcmpl-{response.run_id}",
        object="chat.completion",
        created=int(time.time()),
        model=str(response.model.get("name", "")),
        choices=[
            ChatChoice(
                index=0,
                message=ResponseMessage(role="assistant", content=content),
                finish_reason=_finish(response, cut),  # type: ignore[arg-type]
            )
        ],
        usage=_usage(response),
        system_fingerprint=_fingerprint(response),
        tenet=_extension(response),
    )


def chunks(
    response: ReasonResponse | TurnResult, request: ChatRequest, model: dict[str, Any], *, include_usage: bool
) -> Iterator[ChatCompletionChunk]:
    """The completion as OpenAI stream chunks: the role, the content word by word, the finish.

    The ``tenet`` extension rides on the finishing chunk; with
    ``include_usage`` a last chunk with empty ``choices`` carries the usage.
    """
    full = completion(response, request, model)

    def chunk(choices: list[ChunkChoice], **extra: Any) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=full.id, object="chat.completion.chunk", created=full.created, model=full.model,
            system_fingerprint=full.system_fingerprint, choices=choices, **extra,
        )

    yield chunk([ChunkChoice(index=0, delta=Delta(role="assistant", content=""))])
    for piece in _PIECE.findall(full.choices[0].message.content):
        yield chunk([ChunkChoice(index=0, delta=Delta(content=piece))])
    yield chunk([ChunkChoice(index=0, delta=Delta(), finish_reason=full.choices[0].finish_reason)], tenet=full.tenet)
    if include_usage:
        yield chunk([], usage=full.usage)
