"""Scheduling hints of a request: ``X-Tenet-Priority`` and ``X-Tenet-Deadline-S``.

The authentication middleware reads them once per request, within the key's
allowance (:func:`hints_from_headers`), and keeps them on the connection
state; handlers receive them as the ``hints`` dependency
(:func:`hints_of`) and pass them to the run service, which hands them to
the decode scheduler (:mod:`inference.scheduler`). A key with the ``reason``
scope (or ``admin``) runs ``interactive`` by default; any request may lower
itself to ``batch``; a key without ``reason`` cannot raise itself to
``interactive``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from litestar.connection import ASGIConnection

from inference.scheduler import JobHints, Priority
from reasoning.errors import InvalidInput

__all__ = ["DEADLINE_HEADER", "PRIORITY_HEADER", "hints_from_headers", "hints_of", "keep_hints"]

PRIORITY_HEADER = "x-tenet-priority"
DEADLINE_HEADER = "x-tenet-deadline-s"
_STATE_KEY = "tenet_scheduling_hints"


def hints_from_headers(headers: Mapping[str, str], scopes: frozenset[str]) -> JobHints:
    """Read ``X-Tenet-Priority`` / ``X-Tenet-Deadline-S`` within the key's allowance.

    Keys holding ``reason`` or ``admin`` default to ``interactive`` and may ask
    for ``batch``; other keys always run ``batch``. An unknown priority or a
    deadline that is not a positive number is :class:`InvalidInput`.
    """
    allowed = "reason" in scopes or "admin" in scopes
    raw = (headers.get(PRIORITY_HEADER) or "").strip().lower()
    if raw:
        try:
            asked = Priority(raw)
        except ValueError:
            raise InvalidInput(
                f"X-Tenet-Priority={raw!r}: use {Priority.INTERACTIVE.value} or {Priority.BATCH.value}",
                header="X-Tenet-Priority",
            ) from None
    else:
        asked = Priority.INTERACTIVE
    priority = asked if allowed else Priority.BATCH
    deadline: float | None = None
    raw_deadline = (headers.get(DEADLINE_HEADER) or "").strip()
    if raw_deadline:
        try:
            deadline = float(raw_deadline)
        except ValueError:
            deadline = -1.0
        if not math.isfinite(deadline) or deadline <= 0:
            raise InvalidInput(
                f"X-Tenet-Deadline-S={raw_deadline!r} is not a positive number of seconds",
                header="X-Tenet-Deadline-S",
            )
    return JobHints(priority=priority, deadline_s=deadline)


def keep_hints(connection: ASGIConnection[Any, Any, Any, Any], hints: JobHints) -> None:
    """Keep the request's hints on its connection state (the authentication middleware's job)."""
    connection.scope.setdefault("state", {})[_STATE_KEY] = hints


def hints_of(connection: ASGIConnection[Any, Any, Any, Any]) -> JobHints:
    """The hints :func:`keep_hints` kept; the defaults (``interactive``, the default deadline)
    for a connection that kept none."""
    hints = connection.scope.get("state", {}).get(_STATE_KEY)
    return hints if isinstance(hints, JobHints) else JobHints()
