"""Repository fixtures: a migrated database per test (SQLite, and PostgreSQL when it answers)
and two tenants to check isolation with."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import migrations
from store.db import create_engine, create_sessionmaker, transaction
from store.models import Tenant, new_id


@pytest.fixture
async def factory(db_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(db_url)
    await migrations.upgrade_engine(engine)
    yield create_sessionmaker(engine)
    await engine.dispose()


@pytest.fixture
async def tenants(factory: async_sessionmaker[AsyncSession]) -> tuple[str, str]:
    async with transaction(factory) as db:
        a, b = Tenant(id=new_id(), name=f"a-{new_id()}"), Tenant(id=new_id(), name=f"b-{new_id()}")
        db.add_all([a, b])
    return a.id, b.id
