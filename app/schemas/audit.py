"""Schemas of the run, provenance and audit endpoints (``audit:read``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

__all__ = [
    "AuditEventOut",
    "AuditEventPage",
    "BundleVerification",
    "ChainBreakOut",
    "ChainVerification",
    "HeadCheckOut",
    "PurgeResult",
    "RunDetail",
    "RunPage",
    "RunStepOut",
    "RunSummary",
]


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: str
    status: str
    session_id: str | None
    key_id: str | None
    created_at: datetime
    finished_at: datetime | None
    duration_ms: float | None
    prompt: str


class RunStepOut(msgspec.Struct, frozen=True, kw_only=True):
    branch: str
    idx: int
    text: str
    confidence: float
    data: dict[str, Any]


class RunDetail(RunSummary, frozen=True, kw_only=True):
    request: dict[str, Any]
    result: dict[str, Any]
    model: dict[str, Any] | None
    steps: list[RunStepOut]
    provenance_url: str


class RunPage(msgspec.Struct, frozen=True, kw_only=True):
    data: list[RunSummary]
    next_cursor: str | None


class AuditEventOut(msgspec.Struct, frozen=True, kw_only=True):
    """An audit event with every hashed field, so a client can recompute ``hash``."""

    seq: int
    id: str
    tenant_id: str
    chain_seq: int
    event_type: str
    subject_type: str
    subject_id: str
    payload: dict[str, Any]
    created_at: str
    prev_hash: str
    hash: str
    damaged: list[str] = msgspec.field(default_factory=list)
    """Stored fields that no longer decode (``payload``, ``created_at``: tampered rows);
    ``payload`` is then ``{}`` and ``created_at`` the stored text."""


class AuditEventPage(msgspec.Struct, frozen=True, kw_only=True):
    data: list[AuditEventOut]
    next_cursor: str | None


class ChainBreakOut(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    id: str
    chain_seq: int
    reason: str


class BundleVerification(msgspec.Struct, frozen=True, kw_only=True):
    """Provenance bundles checked against the hashes their audit events recorded."""

    checked: int
    first_mismatch: str | None
    reason: str | None


class HeadCheckOut(msgspec.Struct, frozen=True, kw_only=True):
    """A signed head given to ``GET /v1/audit/verify?head=`` checked against the chain now.

    ``reason``: ``present``, ``purged`` (both: ``holds``), ``replaced`` or
    ``missing`` (events at or after that position were deleted).
    """

    chain_seq: int
    hash: str
    holds: bool
    reason: str
    current_chain_seq: int


class ChainVerification(msgspec.Struct, frozen=True, kw_only=True):
    """The result of walking the caller's tenant chain.

    ``head_chain_seq`` / ``head_hash`` name the last verified event;
    ``signed_head`` (present when the chain is intact) is a token signing
    them: keep it outside the service and pass it back as ``?head=`` to detect
    a later truncation of the chain (``head_check``).
    """

    intact: bool
    checked: int
    first_broken: ChainBreakOut | None
    head_chain_seq: int
    head_hash: str
    bundles: BundleVerification | None = None
    signed_head: str | None = None
    head_check: HeadCheckOut | None = None


class PurgeResult(msgspec.Struct, frozen=True, kw_only=True):
    removed: int
    retention_days: int
