from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Litestar
from litestar.testing import AsyncTestClient

from app.settings import Settings
from tests.inloop import serve, settings_on

Client = AsyncTestClient[Litestar]
Problem = Callable[[Any, int], dict[str, Any]]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_created_secret_is_shown_once_and_works(
    client: Client, admin_headers: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/keys",
        headers=admin_headers,
        json={"tenant": "acme", "name": "ci", "scopes": ["reason", "admin"]},
    )
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["key"].startswith(f"tnt_{created['prefix']}_")
    assert (created["tenant"], created["name"], created["scopes"]) == (
        "acme",
        "ci",
        ["admin", "reason"],
    )
    listing = (await client.get("/v1/keys", headers=admin_headers)).json()["data"]
    assert {k["prefix"] for k in listing} >= {created["prefix"]}
    assert all("key" not in k and created["key"] not in str(k) for k in listing)
    own = (await client.get("/v1/keys", headers=bearer(created["key"]))).json()["data"]
    assert [k["tenant"] for k in own] == ["acme"]


@pytest.mark.parametrize(
    "body",
    [
        {"scopes": ["root"]},
        {"scopes": []},
        {"tenant": "", "scopes": ["reason"]},
        {"scopes": ["reason"], "unknown": 1},
        {"name": "no scopes"},
    ],
)
async def test_invalid_key_requests_are_400(
    client: Client, admin_headers: dict[str, str], assert_problem: Problem, body: dict[str, Any]
) -> None:
    assert_problem(await client.post("/v1/keys", headers=admin_headers, json=body), 400)


async def test_tenant_admin_is_confined_to_its_tenant(
    client: Client, admin_headers: dict[str, str], make_key: Any, assert_problem: Problem
) -> None:
    acme_admin = await make_key("acme", ["admin"])
    globex_admin = await make_key("globex", ["admin"])
    globex_key = (
        await client.post("/v1/keys", headers=globex_admin, json={"scopes": ["reason"]})
    ).json()
    assert globex_key["tenant"] == "globex"

    body = assert_problem(
        await client.delete(f"/v1/keys/{globex_key['id']}", headers=acme_admin), 404
    )
    assert globex_key["id"] in body["detail"]
    assert_problem(
        await client.post(
            "/v1/keys", headers=acme_admin, json={"tenant": "globex", "scopes": ["admin"]}
        ),
        403,
    )
    acme_view = (await client.get("/v1/keys", headers=acme_admin)).json()["data"]
    assert {k["tenant"] for k in acme_view} == {"acme"}
    assert globex_key["id"] not in {k["id"] for k in acme_view}
    # the key still works: the failed revocation changed nothing
    assert (await client.get("/v1/keys", headers=bearer(globex_key["key"]))).status_code == 403


async def test_operator_sees_and_revokes_across_tenants(
    client: Client, admin_headers: dict[str, str], make_key: Any
) -> None:
    await make_key("acme", ["reason"])
    globex = (
        await client.post(
            "/v1/keys", headers=admin_headers, json={"tenant": "globex", "scopes": ["reason"]}
        )
    ).json()
    everything = (await client.get("/v1/keys", headers=admin_headers)).json()["data"]
    assert {k["tenant"] for k in everything} == {"default", "acme", "globex"}
    only_globex = (
        await client.get("/v1/keys", params={"tenant": "globex"}, headers=admin_headers)
    ).json()["data"]
    assert [k["id"] for k in only_globex] == [globex["id"]]
    assert (
        await client.get("/v1/keys", params={"tenant": "nobody"}, headers=admin_headers)
    ).json()["data"] == []
    revoked = await client.delete(f"/v1/keys/{globex['id']}", headers=admin_headers)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert (await client.get("/v1/keys", headers=bearer(globex["key"]))).status_code == 401


async def test_unknown_key_id_is_404(
    client: Client, admin_headers: dict[str, str], assert_problem: Problem
) -> None:
    assert_problem(
        await client.delete("/v1/keys/00000000-0000-0000-0000-000000000000", headers=admin_headers),
        404,
    )


async def test_openapi_documents_the_key_routes(client: Client) -> None:
    schema = (await client.get("/schema/openapi.json")).json()
    operations = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    assert {
        "create_key",
        "list_keys",
        "revoke_key",
        "list_models",
        "get_health",
        "get_readiness",
    } <= operations
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def both_settings(
    request: pytest.FixtureRequest, tmp_path: Path, migrated_sqlite_template: Path
) -> Settings:
    return settings_on(request.param, request, tmp_path, migrated_sqlite_template)


async def test_concurrent_key_creation_for_new_tenants(both_settings: Settings) -> None:
    """30 creations over 3 new tenants, 15 at a time: all 201, one tenant row per name."""
    async with serve(both_settings) as served:
        limit = asyncio.Semaphore(15)

        async def create(i: int) -> httpx.Response:
            async with limit:
                return await served.client.post(
                    "/v1/keys",
                    headers=served.admin,
                    json={"tenant": f"new-{i % 3}", "scopes": ["reason"]},
                )

        responses = await asyncio.gather(*(create(i) for i in range(30)))
        assert [r.status_code for r in responses] == [201] * 30, [
            r.text for r in responses if r.status_code != 201
        ]
        tenant_ids: dict[str, set[str]] = {}
        for r in responses:
            tenant_ids.setdefault(r.json()["tenant"], set()).add(r.json()["tenant_id"])
        assert {name: len(ids) for name, ids in tenant_ids.items()} == {
            "new-0": 1,
            "new-1": 1,
            "new-2": 1,
        }


@pytest.mark.parametrize("tenant", ["t\u0000x", "zero\u200bwidth", "a\u202eb", "x\u0007"])
async def test_tenant_names_with_hidden_characters_are_400(
    client: Client, admin_headers: dict[str, str], assert_problem: Problem, tenant: str
) -> None:
    response = await client.post(
        "/v1/keys", headers=admin_headers, json={"tenant": tenant, "scopes": ["reason"]}
    )
    assert_problem(response, 400)
    listing = (await client.get("/v1/keys", headers=admin_headers)).json()["data"]
    assert {k["tenant"] for k in listing} == {"default"}


async def test_key_creation_and_revocation_are_audited_in_the_keys_tenant(
    client: Client, admin_headers: dict[str, str], make_key: Any
) -> None:
    created = (
        await client.post(
            "/v1/keys", headers=admin_headers, json={"tenant": "acme", "name": "ci", "scopes": ["reason"]}
        )
    ).json()
    assert (await client.delete(f"/v1/keys/{created['id']}", headers=admin_headers)).status_code == 200
    auditor = await make_key("acme", ["audit:read"])
    events = (await client.get("/v1/audit/events", headers=auditor)).json()["data"]
    assert [(e["event_type"], e["subject_id"]) for e in events] == [
        ("key.created", created["id"]),
        ("key.revoked", created["id"]),
    ]
    assert events[0]["payload"]["prefix"] == created["prefix"]
    assert "key" not in events[0]["payload"] and created["key"] not in str(events)
    default_events = (await client.get("/v1/audit/events", headers=admin_headers)).json()["data"]
    assert default_events == []  # the operator's own chain holds no other tenant's events


async def test_keys_are_listed_in_pages(client: Client, admin_headers: dict[str, str], make_key: Any) -> None:
    for _ in range(5):
        await make_key("acme", ["reason"])
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params = {"limit": "2", **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/v1/keys", headers=admin_headers, params=params)).json()
        assert len(page["data"]) <= 2
        seen += [k["id"] for k in page["data"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    everything = (await client.get("/v1/keys", headers=admin_headers)).json()
    assert seen == [k["id"] for k in everything["data"]] and len(seen) == 6 and pages == 3
    assert everything["next_cursor"] is None


async def test_a_bad_key_cursor_is_400(
    client: Client, admin_headers: dict[str, str], assert_problem: Problem
) -> None:
    assert_problem(await client.get("/v1/keys", headers=admin_headers, params={"cursor": "nope"}), 400)


async def test_a_tenant_admin_asking_for_another_tenants_keys_is_refused(
    client: Client, admin_headers: dict[str, str], make_key: Any, assert_problem: Problem
) -> None:
    acme_admin = await make_key("acme", ["admin"])
    assert_problem(await client.get("/v1/keys", headers=acme_admin, params={"tenant": "default"}), 403)
    own = await client.get("/v1/keys", headers=acme_admin, params={"tenant": "acme"})
    assert own.status_code == 200 and {k["tenant"] for k in own.json()["data"]} == {"acme"}
