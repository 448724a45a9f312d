"""One mapper from every exception to an RFC 9457 ``application/problem+json`` response.

- :class:`reasoning.errors.TenetError` subclasses map to a status and title
  through :data:`PROBLEM_STATUS` (the nearest class in the exception's MRO
  decides); their ``detail`` and ``extra`` members are safe to show.
- Litestar's ``HTTPException`` family (404 unknown route, 405, 413 body too
  large, 400 malformed JSON and validation errors with their field errors).
- Anything else is a bug: logged with its traceback under the request id,
  answered 500 with a generic message and never the traceback.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, SerializationException, ValidationException

from app.disconnects import CLIENT_CLOSED_REQUEST, client_disconnected
from app.logs import request_id_of
from inference.scheduler import ShuttingDown
from reasoning.errors import (
    ConflictError,
    Forbidden,
    InvalidInput,
    LimitExceeded,
    NotFound,
    Overloaded,
    TenetError,
    Unavailable,
    UnsafeContent,
)
from reasoning.evidence.safe_parse import UnsupportedFormat
from store.db import storage_failure

__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "PROBLEM_STATUS",
    "Unauthorized",
    "handle_exception",
    "problem_response",
    "problem_status",
    "problem_title",
    "problem_type",
]

PROBLEM_MEDIA_TYPE = "application/problem+json"
_STANDARD = ("type", "title", "status", "detail", "instance", "request_id")
log = logging.getLogger("tenet.errors")


class Unauthorized(TenetError):
    """No usable credentials: missing, malformed, unknown or revoked API key."""


#: Each error class's HTTP status and problem title; a subclass not listed takes its nearest base's.
PROBLEM_STATUS: dict[type[TenetError], tuple[int, str]] = {
    TenetError: (500, "Internal error"),
    InvalidInput: (400, "Invalid input"),
    UnsupportedFormat: (415, "Unsupported media type"),
    Unauthorized: (401, "Unauthorized"),
    Forbidden: (403, "Forbidden"),
    NotFound: (404, "Not found"),
    ConflictError: (409, "Conflict"),
    LimitExceeded: (413, "Limit exceeded"),
    UnsafeContent: (422, "Unsafe content"),
    Overloaded: (429, "Too many requests"),
    Unavailable: (503, "Unavailable"),
    ShuttingDown: (503, "Unavailable"),
}


def _problem_of(exc: TenetError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in PROBLEM_STATUS:
            return PROBLEM_STATUS[cls]
    return PROBLEM_STATUS[TenetError]


def problem_status(exc: TenetError) -> int:
    """The HTTP status ``exc`` answers with."""
    return _problem_of(exc)[0]


def problem_title(exc: TenetError) -> str:
    """The problem title ``exc`` answers with."""
    return _problem_of(exc)[1]


def problem_type(title: str) -> str:
    """A stable problem type URI derived from the title (``urn:tenet:problem:not-found``)."""
    return "urn:tenet:problem:" + re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def problem_response(
    request: Request[Any, Any, Any],
    status: int,
    title: str,
    detail: str,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Response[dict[str, Any]]:
    """Build the problem response; extension members never shadow the standard ones."""
    body: dict[str, Any] = {
        "type": problem_type(title),
        "title": title,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        "request_id": request_id_of(request.scope),
    }
    for key, value in (extra or {}).items():
        if key not in _STANDARD:
            body[key] = value
    return Response(
        content=body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers
    )


def _from_tenet(request: Request[Any, Any, Any], exc: TenetError) -> Response[dict[str, Any]]:
    headers: dict[str, str] = {}
    if isinstance(exc, Overloaded | Unavailable) and exc.retry_after_s is not None:
        headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
    if isinstance(exc, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer realm="tenet"'
    status, title = _problem_of(exc)
    return problem_response(request, status, title, exc.detail, exc.extra, headers)


def _from_http(request: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    status = exc.status_code
    title = _TITLES.get(status, "Bad request" if status < 500 else "Internal error")
    detail = exc.detail if status < 500 else "the service failed to handle the request"
    extra: dict[str, Any] = {}
    if isinstance(exc, ValidationException) and exc.extra:
        extra["errors"] = exc.extra
        title = "Invalid input"
    elif status == 400 and isinstance(exc.__cause__, SerializationException):
        detail = f"the request body is not valid JSON: {detail}"
    headers = dict(exc.headers or {})
    if status == 401:
        headers.setdefault("WWW-Authenticate", 'Bearer realm="tenet"')
    return problem_response(request, status, title, detail, extra, headers)


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Request body too large",
    415: "Unsupported media type",
    429: "Too many requests",
    503: "Unavailable",
}


def handle_exception(request: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    """The app's only exception handler (registered for ``Exception``).

    A failure after the client went away (``app.disconnects``) is not the
    service's: it answers 499, logged at INFO and counted as a 499.
    """
    if client_disconnected(request.scope):
        log.info("client disconnected before the request was handled: %s %s (%s)",
                 request.method, request.url.path, type(exc).__name__,
                 extra={"request_id": request_id_of(request.scope)})
        return problem_response(request, CLIENT_CLOSED_REQUEST, "Client closed request",
                                "the client disconnected before the request was handled")
    if isinstance(exc, TenetError):
        if problem_status(exc) >= 500:
            log.warning(
                "%s: %s", problem_title(exc), exc.detail, extra={"request_id": request_id_of(request.scope)}
            )
        return _from_tenet(request, exc)
    if isinstance(exc, HTTPException):
        if exc.status_code >= 500:
            log.error(
                "HTTP %d",
                exc.status_code,
                exc_info=exc,
                extra={"request_id": request_id_of(request.scope)},
            )
        return _from_http(request, exc)
    failure = storage_failure(exc)
    if failure is not None:
        log.error("storage failure (%s) on %s %s", failure, request.method, request.url.path,
                  extra={"request_id": request_id_of(request.scope)})
        return problem_response(
            request, 503, "Unavailable",
            f"the service cannot store or read data now ({failure}); nothing was half-written, "
            "retry later", {"storage": failure}, {"Retry-After": "30"},
        )
    log.error(
        "unhandled %s on %s %s",
        type(exc).__name__,
        request.method,
        request.url.path,
        exc_info=exc,
        extra={"request_id": request_id_of(request.scope)},
    )
    return problem_response(
        request,
        500,
        "Internal error",
        "the service failed to handle the request; quote the request id",
    )
