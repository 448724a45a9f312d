"""The ontology repository on real databases (SQLite and, when it answers, PostgreSQL)."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from reasoning.errors import NotFound
from reasoning.evidence.ingest import ingest_ontology
from store import ontologies as repo
from store.db import transaction
from store.models import OntologyVersion

TTL = b"""@prefix ex: <https://example.org/s#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:a rdfs:label "Alpha" ; ex:p ex:b .
"""


async def test_versions_are_idempotent_tenant_scoped_and_soft_deleted(
    factory: async_sessionmaker[AsyncSession], tenants: tuple[str, str]
) -> None:
    mine, other = tenants
    first = ingest_ontology(TTL, "text/turtle")
    second_bytes = TTL + b'ex:c rdfs:label "Charlie" .\n'
    second = ingest_ontology(second_bytes, "text/turtle")
    async with transaction(factory) as db:
        v1, created = await repo.save_version(db, mine, "demo", TTL, first)
        assert created
        again, created_again = await repo.save_version(db, mine, "demo", TTL, first)
        assert not created_again and again.id == v1.id
        v2, _ = await repo.save_version(db, mine, "demo", second_bytes, second)
    async with transaction(factory) as db:
        current = await repo.current_version(db, mine, "demo")
        assert current is not None and current.id == v2.id
        with pytest.raises(NotFound):
            await repo.get_version(db, other, v1.id)
        assert await repo.list_versions(db, other) == []
        await repo.delete_version(db, mine, v2.id)
    async with transaction(factory) as db:
        current = await repo.current_version(db, mine, "demo")
        assert current is not None and current.id == v1.id
        stored = await db.scalar(select(OntologyVersion.content).where(OntologyVersion.id == v1.id))
        assert stored == TTL
        uploaded_at = v2.created_at
        again_v2, created = await repo.save_version(db, mine, "demo", second_bytes, second)
        # Nothing comes back silently: the row is still deleted until it is restored.
        assert not created and again_v2.id == v2.id and again_v2.deleted_at is not None
        deleted_at = await repo.restore_version(db, again_v2)
        assert deleted_at is not None and again_v2.deleted_at is None
        assert again_v2.created_at == uploaded_at

