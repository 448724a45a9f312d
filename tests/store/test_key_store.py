from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

import migrations
from reasoning.errors import InvalidInput, NotFound
from store import keys as key_store
from store.db import create_engine, create_sessionmaker, transaction
from store.models import ApiKey, Run, RunStep, Tenant


@pytest.fixture
async def sessions(db_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    await asyncio.to_thread(migrations.upgrade, db_url)
    engine = create_engine(db_url)
    yield create_sessionmaker(engine)
    await engine.dispose()


@pytest.mark.parametrize(
    "token",
    [
        "",
        "tnt_",
        "abc_0123456789ab_" + "s" * 43,
        "tnt_0123456789AB_" + "s" * 43,
        "tnt_0123456789a_" + "s" * 43,
        "tnt_0123456789ab_short",
    ],
)
def test_malformed_tokens_do_not_parse(token: str) -> None:
    assert key_store.parse_key(token) is None


def test_secret_may_contain_underscores() -> None:
    assert key_store.parse_key("tnt_0123456789ab_" + "a_b" * 15) == ("0123456789ab", "a_b" * 15)


def test_scopes_are_checked_and_normalised() -> None:
    assert key_store.validate_scopes(["reason", " admin", "reason"]) == ["admin", "reason"]
    with pytest.raises(InvalidInput, match="superuser"):
        key_store.validate_scopes(["reason", "superuser"])
    with pytest.raises(InvalidInput):
        key_store.validate_scopes([" "])


async def test_key_round_trip_stores_only_the_hash(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with transaction(sessions) as session:
        tenant = await key_store.get_or_create_tenant(session, "acme")
        created = await key_store.create_key(session, tenant.id, "ci", ["reason"])
    prefix, secret = key_store.parse_key(created.token) or ("", "")
    async with sessions() as session:
        row = await session.get(ApiKey, created.key.id)
        assert row is not None
        assert row.prefix == prefix and secret not in row.secret_hash
        assert row.secret_hash == key_store.hash_secret(secret)
        assert row.created_at.tzinfo is not None and row.created_at.utcoffset() == timedelta(0)
        found = await key_store.find_key(session, created.token)
        assert found is not None and found.id == created.key.id
        assert (
            await key_store.find_key(
                session, created.token[:-1] + ("A" if created.token[-1] != "A" else "B")
            )
            is None
        )


async def test_tenants_are_unique_by_name(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with transaction(sessions) as session:
        first = await key_store.get_or_create_tenant(session, "acme")
        again = await key_store.get_or_create_tenant(session, " acme ")
    assert first.id == again.id
    with pytest.raises(IntegrityError):
        async with transaction(sessions) as session:
            session.add(Tenant(name="acme"))


async def test_revocation_is_scoped_by_tenant_and_idempotent(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with transaction(sessions) as session:
        acme = await key_store.get_or_create_tenant(session, "acme")
        other = await key_store.get_or_create_tenant(session, "other")
        created = await key_store.create_key(session, acme.id, "k", ["reason"])
    async with transaction(sessions) as session:
        with pytest.raises(NotFound):
            await key_store.revoke_key(session, created.key.id, other.id)
    async with transaction(sessions) as session:
        first = (await key_store.revoke_key(session, created.key.id, acme.id)).revoked_at
    async with transaction(sessions) as session:
        second = (await key_store.revoke_key(session, created.key.id, None)).revoked_at
    assert first is not None and first == second


async def test_touch_writes_at_most_once_a_minute(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with transaction(sessions) as session:
        tenant = await key_store.get_or_create_tenant(session, "acme")
        key = (await key_store.create_key(session, tenant.id, "k", ["reason"])).key
        await key_store.touch_key(session, key)
        first = key.last_used_at
        await key_store.touch_key(session, key)
        assert key.last_used_at == first
        key.last_used_at = datetime.now(UTC) - timedelta(minutes=2)
        await key_store.touch_key(session, key)
        assert key.last_used_at is not None and first is not None and key.last_used_at >= first


async def test_a_failed_transaction_leaves_nothing(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    with pytest.raises(RuntimeError):
        async with transaction(sessions) as session:
            await key_store.get_or_create_tenant(session, "half-written")
            raise RuntimeError("crash mid-request")
    async with sessions() as session:
        assert await key_store.get_tenant_by_name(session, "half-written") is None


async def test_deleting_a_run_cascades_to_its_steps(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with transaction(sessions) as session:
        tenant = await key_store.get_or_create_tenant(session, "acme")
        run = Run(tenant_id=tenant.id, kind="reason", status="ok", prompt="p")
        session.add(run)
        await session.flush()
        session.add(RunStep(run_id=run.id, idx=0, branch="compliance", text="s", confidence=0.5))
    async with transaction(sessions) as session:
        await session.delete(await session.get(Run, run.id))
    async with sessions() as session:
        from sqlalchemy import func, select

        assert (await session.execute(select(func.count()).select_from(RunStep))).scalar_one() == 0


async def test_check_constraints_refuse_unknown_kinds(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with transaction(sessions) as session:
        tenant = await key_store.get_or_create_tenant(session, "acme")
    with pytest.raises(IntegrityError):
        async with transaction(sessions) as session:
            session.add(Run(tenant_id=tenant.id, kind="guess", status="ok"))


async def test_naive_datetimes_are_refused(sessions: async_sessionmaker[AsyncSession]) -> None:
    with pytest.raises(Exception, match="naive datetime"):
        async with transaction(sessions) as session:
            session.add(Tenant(name="naive", created_at=datetime(2024, 1, 1)))


async def test_concurrent_get_or_create_of_a_new_tenant_gives_one_row(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async def get_or_create(name: str) -> str:
        async with transaction(sessions) as db:
            return (await key_store.get_or_create_tenant(db, name)).id

    names = [f"race-{i % 3}" for i in range(30)]
    ids = await asyncio.gather(*(get_or_create(name) for name in names))
    by_name: dict[str, set[str]] = {}
    for name, tenant_id in zip(names, ids, strict=True):
        by_name.setdefault(name, set()).add(tenant_id)
    assert all(len(found) == 1 for found in by_name.values()), by_name
    async with sessions() as db:
        rows = (await db.execute(select(Tenant).where(Tenant.name.like("race-%")))).scalars().all()
    assert sorted(t.name for t in rows) == ["race-0", "race-1", "race-2"]


@pytest.mark.parametrize(
    "name",
    [
        "t\x00x",
        "zero\u200bwidth",
        "bidi\u202eevil",
        "line\u2028sep",
        "tab\tname",
        "\ue000private",
        " ",
        "\u3164",  # Hangul filler: a letter that renders blank
        "\u2800",  # the blank Braille pattern
        "default\u3164",
        "x\ufe0f",  # a variation selector
        "d\u0435fault",  # a Cyrillic e among Latin letters
        "\u0391lpha",  # a Greek capital alpha among Latin letters
    ],
)
def test_tenant_names_hold_only_visible_characters_of_one_writing_system(name: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        key_store.check_tenant_name(name)
    assert "tenant name" in caught.value.detail


@pytest.mark.parametrize("name", ["Acme 中国", "東京 カンパニー", "서울 Bank", "Ωμέγα-Λ", "Москва"])
def test_names_of_one_script_or_an_allowed_mix_are_accepted(name: str) -> None:
    assert key_store.check_tenant_name(name) == name


@pytest.mark.parametrize("look_alike", ["DEFAULT", "\uff44\uff45\uff46\uff41\uff55\uff4c\uff54", "de fault"])
async def test_a_new_tenant_that_looks_like_an_existing_one_is_refused(
    sessions: async_sessionmaker[AsyncSession], look_alike: str
) -> None:
    async with transaction(sessions) as session:
        await key_store.get_or_create_tenant(session, "default")
    async with transaction(sessions) as session:
        with pytest.raises(InvalidInput) as caught:
            await key_store.get_or_create_tenant(session, look_alike)
        assert caught.value.extra["looks_like"] == "default"
        assert (await key_store.get_or_create_tenant(session, "default")).name == "default"


def test_tenant_names_are_stripped_and_nfc_normalised() -> None:
    assert key_store.check_tenant_name("  Cafe\u0301 Ltd ") == "Caf\u00e9 Ltd"
    assert key_store.check_tenant_name("北京 分公司") == "北京 分公司"


async def test_a_new_sqlite_database_is_private_to_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    await asyncio.to_thread(migrations.upgrade, f"sqlite+aiosqlite:///{path}")
    assert path.stat().st_mode & 0o777 == 0o600
    loose = tmp_path / "loose.db"
    loose.touch(mode=0o644)
    loose.chmod(0o644)
    engine = create_engine(f"sqlite+aiosqlite:///{loose}")
    await engine.dispose()
    assert loose.stat().st_mode & 0o777 == 0o600
