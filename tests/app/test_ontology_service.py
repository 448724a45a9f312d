"""The ontology service on a real database: the bundled domains are ingested once and stored, and
a domain's index is decoded from the stored blob once per cache, for its own tenant only."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import migrations
from app.services.ontologies import load_bundled_ontologies, load_index
from reasoning.errors import NotFound
from reasoning.evidence.cache import IndexCache
from store import ontologies as ontology_store
from store.db import create_engine, create_sessionmaker, transaction
from store.models import Tenant, new_id


@pytest.fixture
async def factory(db_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(db_url)
    await migrations.upgrade_engine(engine)
    yield create_sessionmaker(engine)
    await engine.dispose()


async def test_bundled_domains_load_once_and_their_index_loads_from_the_blob(
    factory: async_sessionmaker[AsyncSession],
) -> None:
    async with transaction(factory) as db:
        mine, other = Tenant(id=new_id(), name=f"a-{new_id()}"), Tenant(id=new_id(), name=f"b-{new_id()}")
        db.add_all([mine, other])
    for _ in range(2):
        async with transaction(factory) as db:
            await load_bundled_ontologies(db, mine.id)
    async with transaction(factory) as db:
        rows = await ontology_store.list_versions(db, mine.id)
        assert sorted(r.domain for r in rows) == ["aml", "clinical"]
        cache = IndexCache()
        index = await load_index(db, cache, mine.id, "clinical")
        assert index.version == next(r.id for r in rows if r.domain == "clinical")
        assert index.term_id("<https://tenet.dev/ontologies/clinical#RightLowerLobe>") >= 0
        assert await load_index(db, cache, mine.id, "clinical") is index
        with pytest.raises(NotFound):
            await load_index(db, cache, other.id, "clinical")
