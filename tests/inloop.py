"""The real app served in the test's own event loop, on SQLite or PostgreSQL.

``litestar.testing.AsyncTestClient`` runs the app in a thread of its own,
whose event loop differs from the test's; asyncpg connections belong to one
loop, so a test that touches the PostgreSQL pool from both sides fails with
"attached to a different loop". Here start-up, requests and shutdown all run
in the test's loop (``httpx.ASGITransport`` plus ``Litestar.lifespan``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from litestar import Litestar

import migrations
from app.bootstrap import bootstrap_admin_key
from app.embedded import running
from app.factory import create_app
from app.settings import Settings
from tests.conftest import MODEL_CACHE, bearer

__all__ = ["Served", "serve", "settings_on"]


class Served:
    """A running app, an HTTP client of it and the bootstrap admin key's headers."""

    def __init__(self, app: Litestar, client: httpx.AsyncClient, admin: dict[str, str]) -> None:
        self.app = app
        self.client = client
        self.admin = admin


def settings_on(
    engine: str, request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> Settings:
    """Settings on a migrated database of ``engine`` ("sqlite" or "postgres"); no model."""
    data_dir = tmp_path / "data"
    data_dir.mkdir(exist_ok=True)
    if engine == "sqlite":
        (data_dir / "tenet.db").write_bytes(sqlite_template.read_bytes())
        return Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE)
    url = str(request.getfixturevalue("postgres_url"))
    migrations.upgrade(url)
    return Settings(
        data_dir=data_dir, database_url=url, load_model=False, model_cache_dir=MODEL_CACHE
    )


@asynccontextmanager
async def serve(settings: Settings, app: Litestar | None = None) -> AsyncIterator[Served]:
    """Start ``app`` (default: ``create_app(settings)``) in this loop; shut it down after."""
    application = app or create_app(settings)
    async with running(application):
        token = await bootstrap_admin_key(application.state.runtime.sessionmaker, None)
        assert token is not None, "the database already had keys"
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield Served(application, client, bearer(token))
