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
    #: local (decoded in this process), ok (a Ray model worker answers), starting, or why not.
    workers: str = "local"
