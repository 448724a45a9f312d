"""One exception hierarchy for the whole product.

The reasoning core and the inference package raise these; the HTTP layer maps
each class to one RFC 9457 problem response (status and title), so a new error
never needs a new handler.
"""

from __future__ import annotations

__all__ = [
    "ConflictError",
    "Forbidden",
    "InvalidInput",
    "LimitExceeded",
    "NotFound",
    "Overloaded",
    "TenetError",
    "Unavailable",
    "UnsafeContent",
]


class TenetError(Exception):
    """Base of every error a user can meet. ``detail`` is safe to show."""

    status_code: int = 500
    title: str = "Internal error"

    def __init__(self, detail: str, **extra: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class InvalidInput(TenetError):
    status_code = 400
    title = "Invalid input"


class NotFound(TenetError):
    status_code = 404
    title = "Not found"


class Forbidden(TenetError):
    status_code = 403
    title = "Forbidden"


class ConflictError(TenetError):
    status_code = 409
    title = "Conflict"


class LimitExceeded(TenetError):
    status_code = 413
    title = "Limit exceeded"


class UnsafeContent(TenetError):
    """A file was refused because parsing it could harm the service."""

    status_code = 422
    title = "Unsafe content"


class Unavailable(TenetError):
    status_code = 503
    title = "Unavailable"


class Overloaded(TenetError):
    status_code = 429
    title = "Too many requests"

    def __init__(self, detail: str, retry_after_s: float = 1.0, **extra: object) -> None:
        super().__init__(detail, **extra)
        self.retry_after_s = retry_after_s
