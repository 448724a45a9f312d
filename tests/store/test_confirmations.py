"""The confirmations repository on real databases (SQLite and, when it answers, PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from reasoning.errors import ConflictError, InvalidInput, NotFound
from store import confirmations as repo
from store.db import transaction

CHOICES = [
    {"id": "c1", "type": "constraint", "text": "Answer in English", "conflicts_with": ["c2"]},
    {"id": "c2", "type": "constraint", "text": "必须用中文回答", "conflicts_with": ["c1"]},
]


async def _open(factory: async_sessionmaker[AsyncSession], tenant: str, **overrides: Any) -> str:
    fields: dict[str, Any] = {
        "tenant_id": tenant, "key_id": None, "kind": "constraint_conflict", "origin": "reason",
        "prompt": "Answer in English. 必须用中文回答。", "detail": "c1 vs c2", "request": {"prompt": "p"},
        "choices": CHOICES, **overrides,
    }
    async with transaction(factory) as db:
        row = await repo.create_confirmation(db, **fields)
    return row.id


async def test_listing_and_reading_are_tenant_scoped(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str]
) -> None:
    mine, other = tenants
    first = await _open(factory, mine)
    second = await _open(factory, mine)
    async with transaction(factory) as db:
        assert {r.id for r in await repo.list_confirmations(db, mine)} == {first, second}
        assert await repo.list_confirmations(db, other) == []
        row = await repo.get_confirmation(db, mine, first)
        assert row.choices == CHOICES and row.status == "pending" and row.created_at.tzinfo is not None
        with pytest.raises(NotFound):
            await repo.get_confirmation(db, other, first)
        with pytest.raises(NotFound):
            await repo.claim_confirmation(db, other, first, key_id="k", chosen="c1")


async def test_claim_is_exclusive_release_reopens_finish_closes(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str]
) -> None:
    mine, _ = tenants
    cid = await _open(factory, mine)
    async with transaction(factory) as db:
        claimed = await repo.claim_confirmation(db, mine, cid, key_id="k1", chosen="c1")
        assert claimed.status == "resolving" and claimed.chosen == "c1"
    with pytest.raises(ConflictError):
        async with transaction(factory) as db:
            await repo.claim_confirmation(db, mine, cid, key_id="k2", chosen="c2")
    async with transaction(factory) as db:
        await repo.release_confirmation(db, mine, cid)
    async with transaction(factory) as db:
        assert [r.id for r in await repo.list_confirmations(db, mine)] == [cid]
        await repo.claim_confirmation(db, mine, cid, key_id="k2", chosen="c2")
        done = await repo.finish_confirmation(db, mine, cid, resolution_run_id="run-1")
        assert done.status == "resolved" and done.resolved_at is not None
    async with transaction(factory) as db:
        assert await repo.list_confirmations(db, mine) == []
        [row] = await repo.list_confirmations(db, mine, status=None)
        assert (row.chosen, row.resolved_by_key_id, row.resolution_run_id) == ("c2", "k2", "run-1")
    with pytest.raises(ConflictError):
        async with transaction(factory) as db:
            await repo.claim_confirmation(db, mine, cid, key_id="k3", chosen="c1")


async def test_a_stale_claim_can_be_taken_over(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str]
) -> None:
    mine, _ = tenants
    cid = await _open(factory, mine)
    async with transaction(factory) as db:
        await repo.claim_confirmation(db, mine, cid, key_id="crashed", chosen="c1")
    with pytest.raises(ConflictError):
        async with transaction(factory) as db:
            await repo.claim_confirmation(db, mine, cid, key_id="k2", chosen="c2")
    async with transaction(factory) as db:
        taken = await repo.claim_confirmation(db, mine, cid, key_id="k2", chosen="c2", stale_after=timedelta(0))
        assert (taken.status, taken.chosen, taken.resolved_by_key_id) == ("resolving", "c2", "k2")


async def test_concurrent_claims_let_exactly_one_win(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str]
) -> None:
    mine, _ = tenants
    cid = await _open(factory, mine)

    async def claim(key: str) -> bool:
        try:
            async with transaction(factory) as db:
                await repo.claim_confirmation(db, mine, cid, key_id=key, chosen="c1")
            return True
        except ConflictError:
            return False

    outcomes = await asyncio.gather(*(claim(f"k{i}") for i in range(4)), return_exceptions=True)
    assert [o for o in outcomes if o is True] == [True]


@pytest.mark.parametrize(
    "overrides",
    [{"kind": "guess"}, {"choices": CHOICES[:1]}],
)
async def test_invalid_confirmations_are_refused(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str], overrides: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput):
        await _open(factory, tenants[0], **overrides)
    async with transaction(factory) as db:
        with pytest.raises(InvalidInput):
            await repo.list_confirmations(db, tenants[0], status="maybe")
