"""The exception-to-status table: every error of the core maps to its problem status and title."""

from __future__ import annotations

import pytest

from app.errors import PROBLEM_STATUS, Unauthorized, problem_status, problem_title
from inference.scheduler import ShuttingDown
from reasoning import errors
from reasoning.errors import TenetError
from reasoning.evidence.safe_parse import UnsupportedFormat
from store.sessions import SessionExpired


@pytest.mark.parametrize(
    ("error", "status", "title"),
    [
        (errors.InvalidInput("x"), 400, "Invalid input"),
        (UnsupportedFormat("x"), 415, "Unsupported media type"),
        (Unauthorized("x"), 401, "Unauthorized"),
        (errors.Forbidden("x"), 403, "Forbidden"),
        (errors.NotFound("x"), 404, "Not found"),
        (SessionExpired("x"), 404, "Not found"),
        (errors.ConflictError("x"), 409, "Conflict"),
        (errors.LimitExceeded("x"), 413, "Limit exceeded"),
        (errors.UnsafeContent("x"), 422, "Unsafe content"),
        (errors.Overloaded("x"), 429, "Too many requests"),
        (ShuttingDown("x"), 503, "Unavailable"),
        (errors.Unavailable("x"), 503, "Unavailable"),
        (TenetError("x"), 500, "Internal error"),
    ],
)
def test_each_error_answers_its_status_and_title(error: TenetError, status: int, title: str) -> None:
    assert (problem_status(error), problem_title(error)) == (status, title)


def test_every_core_error_class_has_its_own_row_and_carries_no_status() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    assert all(cls in PROBLEM_STATUS for cls in classes)
    assert not any(hasattr(cls, "status_code") for cls in classes)


def test_an_unlisted_subclass_takes_its_nearest_base() -> None:
    class Stale(errors.ConflictError):
        pass

    assert problem_status(Stale("x")) == 409
