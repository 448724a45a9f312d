"""Shared fixtures: settings, the real app and HTTP client, keys, databases, the model.

Every fixture drives real components: a migrated SQLite file per test (copied
from one migrated template, so migrations run once per session), PostgreSQL
in a fresh database per test when it answers, and the bundled model loaded
once per session from the safetensors cache that ``make prepare`` builds.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from litestar import Litestar
from litestar.testing import AsyncTestClient

import migrations
from app.bootstrap import bootstrap_admin_key
from app.factory import create_app
from app.runtime import Runtime
from app.services.ontologies import load_bundled_ontologies
from app.settings import Settings
from inference.loader import LoadedModel, load_model
from store import keys as key_store
from store.admin import accepts_connections, execute_on_server
from store.db import transaction

REPO_ROOT = Path(__file__).resolve().parent.parent
POSTGRES_URL = os.environ.get(
    "TENET_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
)
MODEL_CACHE = Path(os.environ.get("TENET_TEST_MODEL_CACHE", REPO_ROOT / "var" / "models"))
#: Where the model tests run: "cpu" in CI; bench/gpu_check.sh sets "cuda".
TEST_DEVICE = os.environ.get("TENET_TEST_DEVICE", "cpu")
#: Torch intra-op threads for the whole session: on a shared 2-core machine more threads
#: oversubscribe and run several times slower; TENET_TEST_TORCH_THREADS overrides it.
TEST_TORCH_THREADS = int(os.environ.get("TENET_TEST_TORCH_THREADS", "1"))
#: Servers, CLI runs and Ray workers that tests start load float32 weights, so their answers
#: do not depend on the machine's load-time probe (nor pay for it); the tests of ``auto`` and
#: of each format pass ``weights`` themselves.
os.environ.setdefault("TENET_WEIGHTS", "float32")
#: Two legal regimes declared disjoint (owl:disjointWith), with English and Chinese labels.
REGIMES_TTL = (Path(__file__).resolve().parent / "data" / "regimes.ttl").read_bytes()

MakeKey = Callable[[str, list[str]], Awaitable[dict[str, str]]]


def bearer(token: str) -> dict[str, str]:
    """Authorization headers for a key token."""
    return {"Authorization": f"Bearer {token}"}


def check_problem(response: Any, status: int) -> dict[str, Any]:
    """Assert ``response`` is an RFC 9457 problem with ``status``; return its body."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert {"type", "title", "detail", "instance", "request_id"} <= body.keys()
    assert body["request_id"] == response.headers["x-request-id"]
    assert "Traceback" not in response.text
    return body


async def load_bundled(app: Litestar, tenant: str) -> None:
    """Load the bundled AML and clinical domains for ``tenant`` (created if new) on ``app``, their
    indexes in the app's cache; loading them again changes nothing."""
    runtime: Runtime = app.state.runtime
    async with transaction(runtime.sessionmaker) as session:
        row = await key_store.get_or_create_tenant(session, tenant)
        await load_bundled_ontologies(session, row.id, cache=runtime.ontology_indexes)


@pytest.fixture
def assert_problem() -> Callable[[Any, int], dict[str, Any]]:
    """``assert_problem(response, status) -> body``: checks the problem+json shape."""
    return check_problem


def postgres_available(url: str = POSTGRES_URL) -> bool:
    """True when something accepts TCP connections at the PostgreSQL URL's host and port."""
    return accepts_connections(url)


# --- databases -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def migrated_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file; tests get copies of it."""
    path = tmp_path_factory.mktemp("template") / "tenet.db"
    migrations.upgrade(f"sqlite+aiosqlite:///{path}")
    return path


def _postgres_admin(statement: str) -> None:
    """Run one server-level statement (CREATE/DROP DATABASE) on the test PostgreSQL."""
    asyncio.run(execute_on_server(POSTGRES_URL, statement))


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """URL of a fresh, empty PostgreSQL database, dropped afterwards (skips without PostgreSQL)."""
    if not postgres_available():
        pytest.skip(f"PostgreSQL does not answer at {POSTGRES_URL}")
    name = f"tenet_test_{uuid.uuid4().hex[:12]}"
    _postgres_admin(f'CREATE DATABASE "{name}"')
    base = POSTGRES_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        _postgres_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty (unmigrated) database: SQLite, and PostgreSQL when it answers."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    return str(request.getfixturevalue("postgres_url"))


# --- the app -------------------------------------------------------------------------


@pytest.fixture
def settings(tmp_path: Path, migrated_sqlite_template: Path) -> Settings:
    """Settings on a temporary data dir with a migrated SQLite database; no model loading."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    return Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE)


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[Litestar]:
    """The real app on the ``settings`` database (migrated)."""
    application = create_app(settings)
    yield application
    await application.state.runtime.close()


@pytest.fixture
async def client(app: Litestar) -> AsyncIterator[AsyncTestClient[Litestar]]:
    """An in-process HTTP client of ``app`` (start-up and shutdown run)."""
    async with AsyncTestClient(app=app) as test_client:
        yield test_client


@pytest.fixture
async def admin_headers(app: Litestar) -> dict[str, str]:
    """Authorization headers of the default tenant's bootstrap admin key."""
    runtime: Runtime = app.state.runtime
    token = await bootstrap_admin_key(runtime.sessionmaker, None)
    assert token is not None, "the test database already had keys"
    return bearer(token)


@pytest.fixture
def make_key(app: Litestar) -> MakeKey:
    """``await make_key(tenant, scopes)`` -> headers of a new key (the tenant is created if new)."""
    runtime: Runtime = app.state.runtime

    async def make(tenant: str, scopes: list[str]) -> dict[str, str]:
        async with transaction(runtime.sessionmaker) as session:
            row = await key_store.get_or_create_tenant(session, tenant)
            created = await key_store.create_key(session, row.id, f"test {tenant}", scopes)
        return bearer(created.token)

    return make


# --- the model -----------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def session_torch_threads() -> Iterator[None]:
    """Every test runs with ``TEST_TORCH_THREADS`` intra-op threads, whatever its position in
    the session (a benchmark's ``main`` also sets the count for the process)."""
    before = torch.get_num_threads()
    torch.set_num_threads(TEST_TORCH_THREADS)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """One intra-op thread for a module: on a shared 2-core machine more threads oversubscribe
    and run about 10x slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    """The bundled model's tokenizer, from the shared safetensors cache (no model weights loaded)."""
    from transformers import AutoTokenizer

    from inference.loader import prepare_cache

    cache = prepare_cache("bundled", MODEL_CACHE)
    assert cache is not None
    return AutoTokenizer.from_pretrained(cache)


@pytest.fixture(scope="session")
def loaded_model() -> LoadedModel:
    """The bundled model, loaded once per session from the shared safetensors cache."""
    return load_model("bundled", device=TEST_DEVICE, cache_root=MODEL_CACHE)


@pytest.fixture(scope="session")
def model_settings(
    tmp_path_factory: pytest.TempPathFactory, migrated_sqlite_template: Path
) -> Settings:
    data_dir = tmp_path_factory.mktemp("model-app")
    shutil.copy(migrated_sqlite_template, data_dir / "tenet.db")
    return Settings(data_dir=data_dir, load_model=False, model_cache_dir=MODEL_CACHE, device=TEST_DEVICE)


@pytest.fixture(scope="session")
def model_app(model_settings: Settings, loaded_model: LoadedModel) -> Litestar:
    """An app whose runtime already holds the session's loaded model."""
    runtime = Runtime(model_settings)
    runtime.set_model(loaded_model)
    return create_app(model_settings, runtime=runtime)


@pytest.fixture(scope="session")
async def model_client(model_app: Litestar) -> AsyncIterator[AsyncTestClient[Litestar]]:
    async with AsyncTestClient(app=model_app) as test_client:
        yield test_client


@pytest.fixture(scope="session")
async def model_admin_headers(model_app: Litestar) -> dict[str, str]:
    """Admin headers for ``model_app`` (its default tenant)."""
    runtime: Runtime = model_app.state.runtime
    token = await bootstrap_admin_key(runtime.sessionmaker, None)
    assert token is not None
    return bearer(token)
