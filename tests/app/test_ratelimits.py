"""Per-key request limits in one process (no Redis): the default single-process deployment.

The limits shared across replicas through Redis are tested with two real processes in
``tests/e2e/test_replicas.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from app.factory import create_app
from app.settings import Settings
from reasoning.errors import InvalidInput
from store import keys as key_store
from store.db import transaction
from tests.conftest import bearer

Problem = Callable[[Any, int], dict[str, Any]]


async def test_each_key_gets_its_own_limit_and_429_with_retry_after_past_it(
    settings: Settings, assert_problem: Problem
) -> None:
    app = create_app(replace(settings, key_rate_limits="3/minute;100/day"))
    async with AsyncTestClient(app=app) as client:

        async def key(tenant: str) -> dict[str, str]:
            async with transaction(app.state.runtime.sessionmaker) as session:
                row = await key_store.get_or_create_tenant(session, tenant)
                created = await key_store.create_key(session, row.id, "limited", ["audit:read"])
            return bearer(created.token)

        first, second = await key("limits-a"), await key("limits-a")
        for _ in range(3):
            assert (await client.get("/v1/audit/events", headers=first)).status_code == 200
        body = assert_problem(await client.get("/v1/audit/events", headers=first), 429)
        assert body["limit"] == "3 per 1 minute"
        refused = await client.get("/v1/audit/events", headers=first)
        assert int(refused.headers["Retry-After"]) >= 1
        # Another key of the same tenant has its own count.
        assert (await client.get("/v1/audit/events", headers=second)).status_code == 200
        ready = (await client.get("/readyz")).json()
        assert ready["rate_limits"] == "local"  # counted in this process
    await app.state.runtime.close()


async def test_without_limits_nothing_is_counted(
    client: Any, admin_headers: dict[str, str]
) -> None:
    for _ in range(30):
        assert (await client.get("/v1/keys", headers=admin_headers)).status_code == 200
    ready = (await client.get("/readyz")).json()
    assert ready["rate_limits"] == "off"
    assert ready["key_revocations"] == "local"  # SQLite: one process, nothing to listen to


@pytest.mark.parametrize(
    ("field", "value", "variable"),
    [
        ("key_rate_limits", "lots per minute", "TENET_KEY_RATE_LIMITS"),
        ("key_rate_limits", "10/fortnight", "TENET_KEY_RATE_LIMITS"),
        ("redis_url", "http://127.0.0.1:6379", "TENET_REDIS_URL"),
    ],
)
def test_invalid_limit_settings_stop_start_up(field: str, value: str, variable: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        Settings(**{field: value})  # type: ignore[arg-type]
    assert raised.value.extra["variable"] == variable
