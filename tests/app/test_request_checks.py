"""Hostile input never reaches a decoder or the database: nesting, NUL, control characters,
media types (``app/request_checks.py``), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.exceptions import ValidationException

from app.request_checks import MAX_JSON_DEPTH, check_json_body, json_depth
from app.settings import Settings
from reasoning.errors import InvalidInput
from tests.inloop import serve, settings_on

Client = httpx.AsyncClient
Problem = Callable[[Any, int], dict[str, Any]]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def both_settings(
    request: pytest.FixtureRequest, tmp_path: Path, migrated_sqlite_template: Path
) -> Settings:
    """Settings on a migrated SQLite or PostgreSQL database; no model loading."""
    return settings_on(request.param, request, tmp_path, migrated_sqlite_template)


@pytest.fixture
async def hostile(
    both_settings: Settings,
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """A client of the real app and an admin key, on ``both_settings``."""
    async with serve(both_settings) as served:
        yield served.client, served.admin


def _nested(depth: int) -> str:
    return '{"prompt": "hi", "profile": ' + "[" * depth + "]" * depth + "}"


JSON_ROUTES = [
    "/v1/keys",
    "/v1/constraints",
    "/v1/evidence/query",
    "/v1/reason",
    "/v1/chat/completions",
    "/v1/sessions",
    "/v1/sessions/s1/turns",
    "/v1/sessions/s1/premises/p1",
    "/v1/runs/r1/feedback",
    "/v1/confirmations/c1",
]


@pytest.mark.parametrize("path", JSON_ROUTES)
async def test_deep_nesting_is_400_on_every_json_route(
    hostile: tuple[Client, dict[str, str]], assert_problem: Problem, path: str
) -> None:
    client, headers = hostile
    method = client.patch if path.endswith("/p1") else client.post
    response = await method(
        path, content=_nested(1000), headers={**headers, "content-type": "application/json"}
    )
    body = assert_problem(response, 400)
    assert "1001 levels" in body["detail"] and body["limit"] == "max_json_depth"


async def test_nesting_at_the_limit_reaches_validation(
    hostile: tuple[Client, dict[str, str]], assert_problem: Problem
) -> None:
    client, headers = hostile
    response = await client.post(
        "/v1/constraints",
        content=_nested(MAX_JSON_DEPTH - 1),
        headers={**headers, "content-type": "application/json"},
    )
    body = assert_problem(response, 400)
    assert "levels" not in body["detail"]  # refused by the schema, not by the depth check


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/v1/sessions/a%00b", None),
        ("GET", "/v1/ontologies?domain=a%00b", None),
        ("GET", "/v1/keys?tenant=a%01b", None),
        ("GET", "/v1/runs/x%1fy", None),
        ("POST", "/v1/keys", '{"tenant": "t\\u0000x", "scopes": ["reason"]}'),
        ("POST", "/v1/keys", '{"name": "a\\\\\\u0000", "scopes": ["reason"]}'),
        ("POST", "/v1/constraints", '{"prompt": "hi \\u0000 there"}'),
        ("POST", "/v1/sessions", '{"domain": "aml\\u0000"}'),
    ],
)
async def test_nul_and_control_characters_are_400(
    hostile: tuple[Client, dict[str, str]],
    assert_problem: Problem,
    method: str,
    path: str,
    body: str | None,
) -> None:
    client, headers = hostile
    response = await client.request(
        method, path, content=body, headers={**headers, "content-type": "application/json"}
    )
    detail = assert_problem(response, 400)["detail"]
    assert "NUL" in detail or "control character" in detail


async def test_an_escaped_backslash_before_u0000_is_text(
    hostile: tuple[Client, dict[str, str]],
) -> None:
    client, headers = hostile
    response = await client.post(
        "/v1/keys",
        content='{"name": "a\\\\u0000", "scopes": ["reason"]}',
        headers={**headers, "content-type": "application/json"},
    )
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "a\\u0000"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
async def test_json_routes_refuse_other_media_types(
    hostile: tuple[Client, dict[str, str]], assert_problem: Problem, content_type: str
) -> None:
    client, headers = hostile
    response = await client.post(
        "/v1/keys",
        content=json.dumps({"scopes": ["reason"]}),
        headers={**headers, "content-type": content_type},
    )
    assert "application/json" in assert_problem(response, 415)["detail"]


@pytest.mark.parametrize(
    "content_type", ["application/json; charset=utf-8", "application/merge-patch+json"]
)
async def test_json_media_types_are_accepted(
    hostile: tuple[Client, dict[str, str]], content_type: str
) -> None:
    client, headers = hostile
    response = await client.post(
        "/v1/keys",
        content=json.dumps({"scopes": ["reason"]}),
        headers={**headers, "content-type": content_type},
    )
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("body", "depth"),
    [
        (b"{}", 1),
        (b'{"a": "[[[[", "b": [[{}]]}', 4),
        (b'["\\"[[", ["\\\\"], [[]]]', 3),
        (b'"unterminated [[[[', 0),
        (b"1", 0),
    ],
)
def test_json_depth_ignores_brackets_in_strings(body: bytes, depth: int) -> None:
    assert json_depth(body) == depth


def test_json_depth_is_linear_on_hostile_strings() -> None:
    # Escaped quotes with no closing quote: a backtracking scan would be quadratic here.
    body = b'"' + b'\\"' * 500_000
    assert json_depth(body) == 0
    check_json_body(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
    with pytest.raises(InvalidInput):
        check_json_body(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/reason", {"prompt": "hi", "options": {"max_new_tokens": "8"}}, "max_new_tokens"),
        ("/v1/keys", {"tenant": "acme", "scopes": "reason"}, "scopes"),
        ("/v1/evidence/query", {"domain": "aml", "text": "x", "hops": "2"}, "hops"),
    ],
)
async def test_a_wrong_json_type_is_a_400_not_coerced(
    hostile: tuple[Client, dict[str, str]], assert_problem: Problem, path: str,
    body: dict[str, Any], field: str,
) -> None:
    client, headers = hostile
    problem = assert_problem(await client.post(path, json=body, headers=headers), 400)
    assert field in problem["detail"] and "Expected" in problem["detail"]
    [error] = problem["errors"]
    assert error["key"].endswith(field) and error["source"] == "body"


def test_the_strict_check_leaves_malformed_json_and_right_types_to_the_decoder() -> None:
    from app.request_checks import check_json_types
    from app.schemas.reason import ReasonRequest

    check_json_types(b'{"prompt": "hi", "options": {"max_new_tokens": 8}}', ReasonRequest)
    check_json_types(b'{"prompt": ', ReasonRequest)
    check_json_types(b"", ReasonRequest)
    with pytest.raises(ValidationException):
        check_json_types(b'{"prompt": 1}', ReasonRequest)
