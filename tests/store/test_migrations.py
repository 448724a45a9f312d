"""The Alembic revisions build exactly the ORM schema, on SQLite and PostgreSQL, up and down."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

import migrations
from store.db import create_engine
from store.models import Base

#: What the first revision creates; later revisions add feature tables.
FOUNDATION_TABLES = {
    "tenants",
    "api_keys",
    "ontology_versions",
    "runs",
    "run_steps",
    "sessions",
    "premises",
    "audit_events",
    "provenance_bundles",
}
TABLES = set(Base.metadata.tables)
HEAD = migrations.head_revision()


def _inspect(url: str, work: Any) -> Any:
    async def main() -> Any:
        engine = create_engine(url)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(work)
        finally:
            await engine.dispose()

    return asyncio.run(main())


def _tables(url: str) -> set[str]:
    return set(_inspect(url, lambda conn: inspect(conn).get_table_names())) - {"alembic_version"}


def _schema_diff(url: str) -> list[Any]:
    return list(
        _inspect(
            url, lambda conn: compare_metadata(MigrationContext.configure(conn), Base.metadata)
        )
    )


def test_upgrade_creates_every_table_and_downgrade_removes_them(db_url: str) -> None:
    assert migrations.current_revision(db_url) is None
    migrations.upgrade(db_url)
    assert migrations.current_revision(db_url) == HEAD
    assert _tables(db_url) == TABLES >= FOUNDATION_TABLES
    migrations.downgrade(db_url, "0001")
    assert migrations.current_revision(db_url) == "0001"
    assert _tables(db_url) == FOUNDATION_TABLES
    migrations.downgrade(db_url, "base")
    assert migrations.current_revision(db_url) is None
    assert _tables(db_url) == set()
    migrations.upgrade(db_url)
    assert _tables(db_url) == TABLES


def test_migrated_schema_matches_the_models(db_url: str) -> None:
    migrations.upgrade(db_url)
    assert _schema_diff(db_url) == []


def test_upgrade_is_idempotent(db_url: str) -> None:
    migrations.upgrade(db_url)
    migrations.upgrade(db_url)
    assert migrations.current_revision(db_url) == HEAD


def test_script_location_does_not_depend_on_cwd(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite+aiosqlite:///{tmp_path / 'elsewhere.db'}"
    migrations.upgrade(url)
    assert migrations.current_revision(url) == HEAD
