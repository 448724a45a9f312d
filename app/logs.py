"""Structured logs and request ids.

Every HTTP request gets an id: the client's ``X-Request-ID`` when it sends a
sane one, else a new random one. The id is echoed in the ``X-Request-ID``
response header, in problem bodies and in every log line written while the
request is handled. One access line per request records method, path,
status and duration.

The id is memoised in the ASGI scope, so the middleware (matched routes), the
exception handler (also unmatched routes: 404, 405) and the ``before_send``
hook (every response) all agree on it.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from litestar.datastructures import MutableScopeHeaders
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from app.metrics import record_response
from app.settings import Settings

__all__ = [
    "REQUEST_ID_HEADER",
    "JsonFormatter",
    "RequestContextMiddleware",
    "before_send",
    "configure_logging",
    "request_id_of",
]

REQUEST_ID_HEADER = "x-request-id"
_STATE_KEY = "tenet.request"
_VALID_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_current_request_id: ContextVar[str | None] = ContextVar("tenet_request_id", default=None)
access_log = logging.getLogger("tenet.access")


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = _current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id and extras."""

    _RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in self._RESERVED and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(settings: Settings) -> None:
    """Install one stderr handler on the ``tenet`` logger tree (idempotent)."""
    root = logging.getLogger("tenet")
    root.setLevel(settings.log_level)
    root.propagate = False
    for handler in list(root.handlers):
        if getattr(handler, "_tenet", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._tenet = True  # type: ignore[attr-defined]
    handler.addFilter(_RequestIdFilter())
    handler.setFormatter(
        JsonFormatter()
        if settings.log_json
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s")
    )
    root.addHandler(handler)


def _context(scope: Scope) -> dict[str, Any]:
    state = scope.setdefault("state", {})
    ctx: dict[str, Any] | None = state.get(_STATE_KEY)
    if ctx is None:
        sent = None
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                sent = value.decode("latin-1").strip()
                break
        ctx = {
            "id": sent if sent and _VALID_ID.match(sent) else uuid.uuid4().hex,
            "start": time.perf_counter(),
        }
        state[_STATE_KEY] = ctx
    return ctx


def request_id_of(scope: Scope) -> str:
    """The request id of this connection (created on first use)."""
    return str(_context(scope)["id"])


class RequestContextMiddleware:
    """Starts the request clock and binds the request id to this task's log records."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        token = _current_request_id.set(request_id_of(scope))
        try:
            await self.app(scope, receive, send)
        finally:
            _current_request_id.reset(token)


async def before_send(message: Message, scope: Scope) -> None:
    """Add ``X-Request-ID`` to every HTTP response, write its access log line, time it."""
    if scope["type"] != ScopeType.HTTP or message["type"] != "http.response.start":
        return
    method = str(scope.get("method", ""))
    ctx = _context(scope)
    headers = MutableScopeHeaders.from_message(message)
    headers[REQUEST_ID_HEADER] = ctx["id"]
    status = message["status"]
    elapsed = time.perf_counter() - ctx["start"]
    record_response(message, scope, elapsed)
    duration_ms = round(elapsed * 1000, 2)
    access_log.log(
        logging.WARNING if status >= 500 else logging.INFO,
        "%s %s %d %.1fms",
        method,
        scope["path"],
        status,
        duration_ms,
        extra={
            "request_id": ctx["id"],
            "method": method,
            "path": scope["path"],
            "status": status,
            "duration_ms": duration_ms,
        },
    )
