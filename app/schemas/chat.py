"""Schemas of ``POST /v1/chat/completions``: OpenAI's Chat Completions shapes plus Tenet's extensions.

Requests accept every field of OpenAI's API (fields Tenet does not act on are
ignored or, where ignoring them would change the meaning, refused with 400 by
the service). Tenet's request extensions are ``domain``, ``session_id``,
``profile`` and ``tenet_options``; its response extension is the ``tenet``
object. Clients that do not know them see a plain OpenAI completion.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from app.schemas.constraints import Profile
from app.schemas.reason import ConflictSpan, ConstraintOut, DecisionOut, StepOut
from inference.decoder.endings import End

__all__ = [
    "ChatChoice",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChatCompletionRequest",
    "ChatMessage",
    "ChunkChoice",
    "ContentPart",
    "Delta",
    "ResponseMessage",
    "StreamOptions",
    "TenetExtension",
    "Usage",
]


class ContentPart(msgspec.Struct, frozen=True, kw_only=True):
    """One part of a message's content; only ``text`` parts are understood."""

    type: str
    text: str | None = None


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None


class StreamOptions(msgspec.Struct, frozen=True, kw_only=True):
    include_usage: bool = False


class ChatCompletionRequest(msgspec.Struct, frozen=True, kw_only=True):
    """An OpenAI chat completion request.

    Tenet extensions: ``domain`` (ontology whose evidence grounds the answer),
    ``session_id`` (the turn goes into that Tenet session), ``profile``
    (default constraints) and ``tenet_options`` (``POST /v1/reason``'s
    ``options``; ``max_tokens``, ``temperature`` and ``seed`` take precedence).
    """

    messages: list[ChatMessage]
    model: str = ""
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    n: int | None = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    seed: int | None = None
    stop: str | list[str] | None = None
    logprobs: bool | None = None
    tools: list[dict[str, Any]] | None = None
    functions: list[dict[str, Any]] | None = None
    response_format: dict[str, Any] | None = None
    user: str | None = None
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    session_id: str | None = None
    profile: Profile | None = None
    tenet_options: dict[str, Any] | None = None


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class TenetExtension(msgspec.Struct, frozen=True, kw_only=True):
    """What Tenet adds to a completion (``completion.model_extra["tenet"]`` in the openai client).

    ``status`` is ``ok`` or ``needs_confirmation`` (``confirmation_id`` names
    the pending confirmation; resolve it at ``POST /v1/confirmations/{id}``).
    ``evidence_ids`` are the evidence facts the answer's branches were shown.
    """

    run_id: str | None
    status: str
    constraints: list[ConstraintOut]
    conflicts: list[ConflictSpan]
    reasoning_path: list[str]
    confidence_by_step: dict[str, float]
    steps: list[StepOut]
    evidence_ids: list[str]
    violations: list[str]
    confirmation_id: str | None = None
    session_id: str | None = None
    detail: str | None = None
    #: What the domain's decision rules give (``POST /v1/reason``'s ``decision``).
    decision: DecisionOut | None = None
    #: How the answer ended (``POST /v1/reason``'s ``end``: model | landed | budget_cut); the
    #: choice's ``finish_reason`` is ``length`` only for ``budget_cut``.
    end: End | None = None


class ResponseMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: Literal["assistant"]
    content: str
    refusal: None = None


class ChatChoice(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    message: ResponseMessage
    finish_reason: Literal["stop", "length"]
    logprobs: None = None


class ChatCompletion(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    system_fingerprint: str
    tenet: TenetExtension


class Delta(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(msgspec.Struct, frozen=True, kw_only=True):
    index: int
    delta: Delta
    finish_reason: Literal["stop", "length"] | None = None
    logprobs: None = None


class ChatCompletionChunk(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One server-sent event of a streamed completion; ``tenet`` rides on the last content chunk."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    system_fingerprint: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    tenet: TenetExtension | None = None
