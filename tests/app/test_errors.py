from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from litestar import Litestar, get, post
from litestar.testing import AsyncTestClient

from reasoning.errors import Overloaded

Client = AsyncTestClient[Litestar]
Problem = Callable[[Any, int], dict[str, Any]]


class Echo(msgspec.Struct):
    text: str
    count: int


@post("/test/echo", opt={"public": True}, sync_to_thread=False)
def echo(data: Echo) -> dict[str, Any]:
    return {"text": data.text, "count": data.count}


@get("/test/boom", opt={"public": True}, sync_to_thread=False)
def boom() -> None:
    raise RuntimeError("secret internal state: password=hunter2")


@get("/test/busy", opt={"public": True}, sync_to_thread=False)
def busy() -> None:
    raise Overloaded("the decoder queue is full", retry_after_s=2.4, queue=8)


@pytest.fixture
def routes_app(app: Litestar) -> Litestar:
    for handler in (echo, boom, busy):
        app.register(handler)
    return app


async def test_unknown_route_is_a_404_problem(assert_problem: Problem, client: Client) -> None:
    body = assert_problem(await client.get("/v1/nothing-here"), 404)
    assert body["instance"] == "/v1/nothing-here"
    assert body["title"] == "Not found"


async def test_wrong_method_is_a_405_problem(assert_problem: Problem, client: Client) -> None:
    assert_problem(await client.delete("/healthz"), 405)


async def test_oversized_body_is_a_413_problem(
    assert_problem: Problem, routes_app: Litestar, client: Client
) -> None:
    limit = routes_app.state.runtime.settings.max_body_bytes
    payload = json.dumps({"text": "x" * limit, "count": 1})
    response = await client.post(
        "/test/echo", content=payload, headers={"content-type": "application/json"}
    )
    assert_problem(response, 413)


async def test_malformed_json_is_a_400_problem(
    assert_problem: Problem, routes_app: Litestar, client: Client
) -> None:
    response = await client.post(
        "/test/echo",
        content=b'{"text": "unterminated',
        headers={"content-type": "application/json"},
    )
    body = assert_problem(response, 400)
    assert "JSON" in body["detail"]


async def test_invalid_fields_are_a_400_problem_naming_them(
    assert_problem: Problem, routes_app: Litestar, client: Client
) -> None:
    response = await client.post("/test/echo", json={"text": "hi", "count": "three"})
    body = assert_problem(response, 400)
    assert any("count" in str(error) for error in body["errors"])


async def test_valid_request_passes(routes_app: Litestar, client: Client) -> None:
    response = await client.post("/test/echo", json={"text": "hi", "count": 3})
    assert response.status_code == 201
    assert response.json() == {"text": "hi", "count": 3}


async def test_unhandled_error_is_a_500_without_internals(
    assert_problem: Problem, routes_app: Litestar, client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("tenet")
    logger.addHandler(caplog.handler)
    try:
        response = await client.get("/test/boom", headers={"X-Request-ID": "req-boom-1"})
    finally:
        logger.removeHandler(caplog.handler)
    body = assert_problem(response, 500)
    assert body["request_id"] == "req-boom-1"
    assert "hunter2" not in response.text and "RuntimeError" not in response.text
    logged = [r for r in caplog.records if r.name == "tenet.errors"]
    assert logged and logged[0].exc_info is not None
    assert getattr(logged[0], "request_id", None) == "req-boom-1"


async def test_overloaded_sets_retry_after(
    assert_problem: Problem, routes_app: Litestar, client: Client
) -> None:
    response = await client.get("/test/busy")
    body = assert_problem(response, 429)
    assert response.headers["retry-after"] == "2"
    assert body["queue"] == 8


async def test_request_id_is_echoed_or_generated(client: Client) -> None:
    sent = await client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert sent.headers["x-request-id"] == "abc-123"
    generated = await client.get("/healthz")
    other = await client.get("/healthz")
    assert len(generated.headers["x-request-id"]) == 32
    assert generated.headers["x-request-id"] != other.headers["x-request-id"]


async def test_unsafe_request_id_is_replaced(client: Client) -> None:
    response = await client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert response.headers["x-request-id"] != "bad id\twith spaces"
    assert len(response.headers["x-request-id"]) == 32
