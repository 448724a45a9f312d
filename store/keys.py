"""Tenants and API keys: key material, hashing and the queries on both tables.

A key reads ``tnt_<prefix>_<secret>``: the prefix (12 hex characters) is
stored in clear and shown in listings so an operator can tell keys apart;
the secret (32 random bytes, URL-safe base64) is stored only as its SHA-256.
Because the secret has 256 bits of entropy a fast hash is safe here, and it
keeps verification to microseconds on every request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import literal, select, tuple_
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from reasoning.errors import InvalidInput, NotFound
from store.key_events import announce_revoked
from store.models import ApiKey, Tenant, UTCDateTime, new_id, utcnow
from store.tenant_names import check_tenant_name, skeleton

__all__ = [
    "DEFAULT_TENANT",
    "KEY_PREFIX",
    "SCOPES",
    "NewKey",
    "check_tenant_name",
    "count_keys",
    "create_key",
    "find_key",
    "get_or_create_tenant",
    "get_tenant_by_name",
    "hash_secret",
    "list_keys",
    "list_tenants",
    "parse_key",
    "revoke_key",
    "touch_key",
    "validate_scopes",
]

SCOPES: tuple[str, ...] = ("reason", "ontology:read", "ontology:write", "audit:read", "admin")
DEFAULT_TENANT = "default"
KEY_PREFIX = "tnt"
_TOUCH_EVERY = timedelta(seconds=60)


@dataclass(frozen=True)
class NewKey:
    """A freshly created key: the row and the one-time plaintext token."""

    key: ApiKey
    token: str


def hash_secret(secret: str) -> str:
    """SHA-256 hex digest of a key's secret part."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def parse_key(token: str) -> tuple[str, str] | None:
    """Split ``tnt_<prefix>_<secret>`` into (prefix, secret); None when malformed."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX:
        return None
    prefix, secret = parts[1], parts[2]
    if len(prefix) != 12 or not all(c in "0123456789abcdef" for c in prefix) or len(secret) < 32:
        return None
    return prefix, secret


def validate_scopes(scopes: Iterable[str]) -> list[str]:
    """Deduplicated, sorted scopes; raises InvalidInput naming any unknown scope."""
    wanted = sorted({s.strip() for s in scopes if s.strip()})
    unknown = [s for s in wanted if s not in SCOPES]
    if unknown:
        raise InvalidInput(
            f"unknown scope(s) {unknown}; known scopes: {list(SCOPES)}", scopes=unknown
        )
    if not wanted:
        raise InvalidInput(f"a key needs at least one scope of {list(SCOPES)}")
    return wanted


async def get_tenant_by_name(session: AsyncSession, name: str) -> Tenant | None:
    return (await session.execute(select(Tenant).where(Tenant.name == name))).scalar_one_or_none()


async def list_tenants(session: AsyncSession) -> Sequence[Tenant]:
    """Every tenant, by name."""
    return (await session.execute(select(Tenant).order_by(Tenant.name))).scalars().all()


async def _refuse_look_alike(session: AsyncSession, name: str) -> None:
    """InvalidInput when a new tenant ``name`` looks like an existing tenant's (same skeleton)."""
    wanted = skeleton(name)
    for other in (await session.execute(select(Tenant.name))).scalars():
        if other != name and skeleton(other) == wanted:  # the same name: a concurrent create
            raise InvalidInput(
                f"the tenant name {name!r} looks like the existing tenant {other!r}; "
                "choose a name that reads differently",
                field="tenant", looks_like=other,
            )


async def get_or_create_tenant(session: AsyncSession, name: str) -> Tenant:
    """The tenant called ``name`` (see :func:`check_tenant_name`), created when new.

    A new name that looks like an existing tenant's (``store.tenant_names.skeleton``:
    width, case and spacing aside) is refused. Race-safe: concurrent calls for one new
    name, in any number of sessions, all get the same row (``INSERT ... ON CONFLICT DO
    NOTHING`` on the unique name, then a read), on SQLite and PostgreSQL.
    """
    name = check_tenant_name(name)
    tenant = await get_tenant_by_name(session, name)
    if tenant is None:
        await _refuse_look_alike(session, name)
        dialect = session.get_bind().dialect.name
        insert = postgresql_insert if dialect == "postgresql" else sqlite_insert
        await session.execute(
            insert(Tenant)
            .values(id=new_id(), name=name, created_at=utcnow())
            .on_conflict_do_nothing(index_elements=[Tenant.name])
        )
        tenant = await get_tenant_by_name(session, name)
        if tenant is None:  # pragma: no cover - the row exists once the insert returns
            raise InvalidInput(f"tenant {name!r} could not be created", field="tenant")
    return tenant


async def create_key(
    session: AsyncSession, tenant_id: str, name: str, scopes: Iterable[str]
) -> NewKey:
    """Create a key; the returned token is the only time the secret exists in clear."""
    checked = validate_scopes(scopes)
    prefix = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    key = ApiKey(
        tenant_id=tenant_id,
        name=name.strip() or "unnamed",
        prefix=prefix,
        secret_hash=hash_secret(secret),
        scopes=checked,
    )
    session.add(key)
    await session.flush()
    return NewKey(key=key, token=f"{KEY_PREFIX}_{prefix}_{secret}")


async def list_keys(
    session: AsyncSession,
    tenant_id: str | None,
    *,
    limit: int | None = None,
    after_id: str | None = None,
) -> Sequence[ApiKey]:
    """Keys of one tenant (all tenants when ``tenant_id`` is None), oldest first.

    ``limit`` caps the rows; ``after_id`` continues after that key (keyset on
    creation time and id, so a page never repeats or skips a key). An unknown
    ``after_id`` is InvalidInput.
    """
    query = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if tenant_id is not None:
        query = query.where(ApiKey.tenant_id == tenant_id)
    if after_id is not None:
        last = await session.get(ApiKey, after_id)
        if last is None or (tenant_id is not None and last.tenant_id != tenant_id):
            raise InvalidInput("the cursor is not one this service issued", field="cursor")
        query = query.where(
            tuple_(ApiKey.created_at, ApiKey.id) > tuple_(literal(last.created_at, UTCDateTime()), last.id)
        )
    if limit is not None:
        query = query.limit(limit)
    return (await session.execute(query)).scalars().all()


async def count_keys(session: AsyncSession) -> int:
    """Number of keys in the database (bootstrap creates the first one)."""
    return len((await session.execute(select(ApiKey.id))).all())


async def revoke_key(session: AsyncSession, key_id: str, tenant_id: str | None) -> ApiKey:
    """Revoke a key of ``tenant_id`` (any tenant when None); another tenant's key is NotFound.

    Revoking twice keeps the first revocation time. On PostgreSQL the
    revocation is announced to every replica when the transaction commits
    (``store.key_events``), so none keeps accepting the key from its cache.
    """
    key = await session.get(ApiKey, key_id)
    if key is None or (tenant_id is not None and key.tenant_id != tenant_id):
        raise NotFound(f"API key {key_id} not found")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        await session.flush()
        await announce_revoked(session, key.id)
    return key


async def find_key(session: AsyncSession, token: str) -> ApiKey | None:
    """The key whose token this is (revoked or not), or None: malformed, unknown or wrong secret."""
    parsed = parse_key(token)
    if parsed is None:
        return None
    prefix, secret = parsed
    key = (
        await session.execute(select(ApiKey).where(ApiKey.prefix == prefix))
    ).scalar_one_or_none()
    if key is None or not hmac.compare_digest(key.secret_hash, hash_secret(secret)):
        return None
    return key


async def touch_key(session: AsyncSession, key: ApiKey) -> None:
    """Record use, at most once a minute per key (keeps reads from becoming writes)."""
    now = utcnow()
    last = key.last_used_at
    if last is None or now - last >= _TOUCH_EVERY:
        key.last_used_at = now
        await session.flush()
