"""Scheduling hints from request headers, within the key's allowance."""

from __future__ import annotations

import pytest

from app.hints import hints_from_headers
from inference.scheduler import JobHints, Priority
from reasoning.errors import InvalidInput


@pytest.mark.parametrize(
    ("headers", "scopes", "expected"),
    [
        ({}, {"reason"}, JobHints(Priority.INTERACTIVE)),
        ({"x-tenet-priority": "batch"}, {"reason"}, JobHints(Priority.BATCH)),
        ({"x-tenet-priority": "Interactive"}, {"admin"}, JobHints(Priority.INTERACTIVE)),
        ({"x-tenet-priority": "interactive"}, {"ontology:read"}, JobHints(Priority.BATCH)),
        ({"x-tenet-deadline-s": "2.5"}, {"reason"}, JobHints(Priority.INTERACTIVE, 2.5)),
    ],
)
def test_hints_from_headers_stay_within_the_keys_allowance(
    headers: dict[str, str], scopes: set[str], expected: JobHints
) -> None:
    assert hints_from_headers(headers, frozenset(scopes)) == expected


@pytest.mark.parametrize(
    "headers",
    [{"x-tenet-priority": "urgent"}, {"x-tenet-deadline-s": "0"}, {"x-tenet-deadline-s": "soon"},
     {"x-tenet-deadline-s": "nan"}],
)
def test_bad_hints_are_invalid_input(headers: dict[str, str]) -> None:
    with pytest.raises(InvalidInput):
        hints_from_headers(headers, frozenset({"reason"}))
