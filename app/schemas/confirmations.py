"""Schemas of ``/v1/confirmations``: pending choices and how a person resolves one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from reasoning.constraints.model import Span

__all__ = ["ChoiceOut", "ConfirmationList", "ConfirmationOut", "ConfirmationResolve"]


class ChoiceOut(msgspec.Struct, frozen=True, kw_only=True):
    """One candidate that may stand.

    ``type`` is ``constraint`` (its ``kind``, ``params`` and ``source`` span in
    the prompt; ``conflicts_with`` names the constraints that are dropped when
    this one is chosen) or ``premise`` (a session premise the turn may mean).
    """

    id: str
    type: Literal["constraint", "premise"]
    text: str
    source: Span | None = None
    kind: str | None = None
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    origin: str | None = None
    conflicts_with: list[str] = msgspec.field(default_factory=list)


class ConfirmationOut(msgspec.Struct, frozen=True, kw_only=True):
    """A confirmation: what is undecided, the candidates, and how it was resolved.

    ``status``: ``pending`` (waiting), ``resolving`` (a resolution is running)
    or ``resolved`` (``chosen`` stood; ``resolution_run_id`` continued the run).
    ``resolved_at`` is when the resolution started while ``resolving``, when
    it finished once ``resolved``; a ``resolving`` claim older than 15 minutes
    (its process died) may be taken over.
    ``origin`` is the endpoint that stopped: ``reason``, ``chat`` or ``session``.
    """

    id: str
    kind: Literal["constraint_conflict", "premise_ambiguity"]
    status: Literal["pending", "resolving", "resolved"]
    origin: str
    prompt: str
    detail: str
    choices: list[ChoiceOut]
    run_id: str | None
    session_id: str | None
    created_at: datetime
    resolved_at: datetime | None = None
    chosen: str | None = None
    resolution_run_id: str | None = None


class ConfirmationList(msgspec.Struct, frozen=True, kw_only=True):
    items: list[ConfirmationOut]


class ConfirmationResolve(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The choice that stands: a constraint id (conflicts) or a premise id (ambiguous turns)."""

    choose: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
