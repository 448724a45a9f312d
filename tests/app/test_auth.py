from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from litestar import Litestar, get
from litestar.testing import AsyncTestClient
from litestar.utils.sync import AsyncCallable
from sqlalchemy import event

from app.auth import KEY_CACHE, AuthContext, requires_scope
from reasoning.errors import InvalidInput

Client = AsyncTestClient[Litestar]
Problem = Callable[[Any, int], dict[str, Any]]


@pytest.mark.parametrize(
    ("authorization", "detail"),
    [
        (None, "missing Authorization header"),
        ("Basic dXNlcjpwYXNz", "malformed Authorization header"),
        ("Bearer", "malformed Authorization header"),
        ("Bearer not-a-tenet-key", "invalid API key"),
        ("Bearer tnt_0123456789ab_" + "x" * 43, "invalid API key"),
        ("Bearer tnt_ZZZZ_" + "x" * 43, "invalid API key"),
    ],
)
async def test_missing_or_bad_keys_get_401(
    assert_problem: Problem, client: Client, authorization: str | None, detail: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = await client.get("/v1/models", headers=headers)
    body = assert_problem(response, 401)
    assert detail in body["detail"]
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_wrong_secret_for_a_real_prefix_gets_401(
    assert_problem: Problem, client: Client, admin_headers: dict[str, str]
) -> None:
    token = admin_headers["Authorization"].removeprefix("Bearer ")
    prefix = token.split("_")[1]
    forged = f"tnt_{prefix}_{'A' * 43}"
    response = await client.get("/v1/keys", headers={"Authorization": f"Bearer {forged}"})
    assert assert_problem(response, 401)["detail"] == "invalid API key"


async def test_revoked_key_gets_401(
    assert_problem: Problem, client: Client, admin_headers: dict[str, str]
) -> None:
    created = (
        await client.post("/v1/keys", headers=admin_headers, json={"scopes": ["reason"]})
    ).json()
    own = {"Authorization": f"Bearer {created['key']}"}
    assert (
        await client.get("/v1/models", headers=own)
    ).status_code == 503  # authenticated, no model
    assert (
        await client.delete(f"/v1/keys/{created['id']}", headers=admin_headers)
    ).status_code == 200
    body = assert_problem(await client.get("/v1/models", headers=own), 401)
    assert "revoked" in body["detail"]


async def test_lacking_scope_gets_403(
    assert_problem: Problem, client: Client, make_key: Any
) -> None:
    headers = await make_key("acme", ["reason", "audit:read"])
    body = assert_problem(await client.get("/v1/keys", headers=headers), 403)
    assert body["required_scope"] == "admin"


async def test_admin_implies_every_scope(
    assert_problem: Problem, app: Litestar, client: Client, make_key: Any
) -> None:
    @get("/test/scoped", guards=[requires_scope("ontology:write")], sync_to_thread=False)
    def scoped(auth: AuthContext) -> dict[str, Any]:
        return {"tenant_id": auth.tenant_id, "scopes": sorted(auth.scopes)}

    app.register(scoped)
    admin = await make_key("acme", ["admin"])
    reader = await make_key("acme", ["ontology:read"])
    writer = await make_key("acme", ["ontology:write"])
    assert (await client.get("/test/scoped", headers=admin)).json()["scopes"] == ["admin"]
    assert (await client.get("/test/scoped", headers=writer)).status_code == 200
    assert_problem(await client.get("/test/scoped", headers=reader), 403)


async def test_last_use_is_recorded(client: Client, admin_headers: dict[str, str]) -> None:
    listed = (await client.get("/v1/keys", headers=admin_headers)).json()["data"]
    assert listed[0]["last_used_at"] is not None


def test_unknown_scope_in_a_guard_is_a_programming_error() -> None:
    with pytest.raises(InvalidInput):
        requires_scope("everything")


@pytest.mark.parametrize(
    ("path", "status"), [("/healthz", 200), ("/readyz", 503), ("/schema/openapi.json", 200)]
)
async def test_public_routes_need_no_key(client: Client, path: str, status: int) -> None:
    assert (await client.get(path)).status_code == status


@contextmanager
def key_lookups(app: Litestar) -> Iterator[list[str]]:
    """The SQL statements that look an API key up by prefix, while the block runs."""
    seen: list[str] = []

    def on_execute(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM api_keys" in statement and "prefix" in statement:
            seen.append(statement)

    engine = app.state.runtime.engine.sync_engine
    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)


async def concurrently(app: Litestar, headers: dict[str, str], n: int) -> list[int]:
    """``n`` overlapping GET /v1/runs (httpx's ASGI transport runs them on this event loop)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        responses = await asyncio.gather(*(http.get("/v1/runs", headers=headers) for _ in range(n)))
    return [r.status_code for r in responses]


async def test_concurrent_requests_with_an_uncached_key_verify_it_once(
    app: Litestar, make_key: Any
) -> None:
    headers = await make_key("acme", ["audit:read"])
    KEY_CACHE.clear()
    with key_lookups(app) as lookups:
        statuses = await concurrently(app, headers, 16)
    assert statuses == [200] * 16
    assert len(lookups) == 1
    with key_lookups(app) as lookups:
        assert await concurrently(app, headers, 4) == [200] * 4
    assert lookups == []  # cached now


async def test_concurrent_requests_with_a_wrong_secret_all_fail(app: Litestar, make_key: Any) -> None:
    headers = await make_key("acme", ["audit:read"])
    wrong = {"Authorization": headers["Authorization"][:-4] + "AAAA"}
    assert wrong != headers
    with key_lookups(app) as lookups:
        statuses = await concurrently(app, wrong, 8)
    assert statuses == [401] * 8
    assert len(lookups) == 1
    # Failures are not cached: the next attempt asks the database again.
    with key_lookups(app) as lookups:
        assert await concurrently(app, wrong, 1) == [401]
    assert len(lookups) == 1


def test_no_route_runs_its_guards_on_a_worker_thread(app: Litestar) -> None:
    """Litestar wraps a plain-function guard to run on a thread pool: one hand-over per request."""
    checked = 0
    for route in app.routes:
        for handler in getattr(route, "route_handlers", ()):
            for guard in handler.resolve_guards():
                assert inspect.iscoroutinefunction(guard) or inspect.iscoroutinefunction(
                    type(guard).__call__
                ), f"{route.path}: guard {guard!r} is not async"
                assert not isinstance(guard, AsyncCallable), f"{route.path}: guard {guard!r} runs on a thread"
                checked += 1
    assert checked > 20
