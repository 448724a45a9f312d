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


class ChainVerification(msgspec.Struct, frozen=True, kw_only=True):
    """The result of walking the caller's tenant chain.

    ``head_chain_seq`` / ``head_hash`` name the last verified event: keep them
    outside the service to detect later truncation of the chain.
    """

    intact: bool
    checked: int
    first_broken: ChainBreakOut | None
    head_chain_seq: int
    head_hash: str
    bundles: BundleVerification | None = None


class PurgeResult(msgspec.Struct, frozen=True, kw_only=True):
    removed: int
    retention_days: int
