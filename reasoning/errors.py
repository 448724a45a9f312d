"""One exception hierarchy for the whole product.

The reasoning core and the inference package raise these; they say what went
wrong, never how a transport reports it. The HTTP layer maps each class to
one RFC 9457 problem response (status and title: the table in
``app/errors.py``), so a new error never needs a new handler.
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
    """Base of every error a user can meet. ``detail`` and ``extra`` are safe to show."""

    def __init__(self, detail: str, **extra: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class InvalidInput(TenetError):
    """The request is malformed or names something that cannot be used as given."""


class NotFound(TenetError):
    """The named thing does not exist for the caller (another tenant's included)."""


class Forbidden(TenetError):
    """The caller may not do this."""


class ConflictError(TenetError):
    """The request contradicts the current state (already resolved, changed meanwhile)."""


class LimitExceeded(TenetError):
    """An input is larger than a configured limit (``limit`` in ``extra``)."""


class UnsafeContent(TenetError):
    """A file was refused because parsing it could harm the service."""


class Unavailable(TenetError):
    """A resource the request needs is not available yet (the model loading, say).

    ``retry_after_s``, when set, says when trying again is likely to succeed
    (a lost model worker, an unreachable cluster); None leaves it unsaid.
    """

    def __init__(self, detail: str, retry_after_s: float | None = None, **extra: object) -> None:
        super().__init__(detail, **extra)
        self.retry_after_s = retry_after_s


class Overloaded(TenetError):
    """The service refuses more work now; ``retry_after_s`` says when to try again."""

    def __init__(self, detail: str, retry_after_s: float = 1.0, **extra: object) -> None:
        super().__init__(detail, **extra)
        self.retry_after_s = retry_after_s
