"""Liveness and readiness responses."""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Health", "Readiness"]


class Health(msgspec.Struct, frozen=True):
    status: str


class Readiness(msgspec.Struct, frozen=True):
    ready: bool
    model: dict[str, Any]
    database: str
    #: off, local (counted per process), ok (Redis answers) or unreachable (Redis configured, down).
    rate_limits: str = "off"
    #: local (SQLite: one process), listening (revocations through other replicas reach this
    #: one at once) or deaf (its listening connection is down: every request verifies its key
    #: against the database meanwhile; slower, never stale). Does not make the replica unready.
    key_revocations: str = "local"
    #: local (decoded in this process), ok (a Ray model worker answers), starting, or why not.
    workers: str = "local"
