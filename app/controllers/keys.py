"""API key management (``admin`` scope).

Tenancy rule: an admin key of the ``default`` tenant is the operator's and
manages keys of every tenant (creating a tenant on first use); an admin key of
any other tenant manages only its own tenant's keys, and another tenant's key
id answers 404 as if it did not exist.

Every creation and revocation is an audit event (``key.created``,
``key.revoked``) in the chain of the key's tenant, naming the acting key; it
commits with the change or not at all.
"""

from __future__ import annotations

import msgspec
from litestar import Controller, delete, get, post
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.auth import AuthContext, requires_scope
from app.schemas.keys import Key, KeyCreate, KeyCreated, KeyList
from reasoning.errors import Forbidden
from store import keys as key_store
from store.audit import append_event
from store.models import ApiKey, Tenant

__all__ = ["KeysController"]


def _key(key: ApiKey, tenant_name: str) -> Key:
    return Key(
        id=key.id,
        tenant_id=key.tenant_id,
        tenant=tenant_name,
        name=key.name,
        prefix=key.prefix,
        scopes=list(key.scopes),
        created_at=key.created_at,
        last_used_at=key.last_used_at,
        revoked_at=key.revoked_at,
    )


async def _audit(db_session: AsyncSession, event_type: str, key: ApiKey, auth: AuthContext) -> None:
    """Record a key change in the chain of the key's tenant, in the request's transaction."""
    await append_event(
        db_session,
        tenant_id=key.tenant_id,
        event_type=event_type,
        subject_type="api_key",
        subject_id=key.id,
        payload={
            "prefix": key.prefix,
            "name": key.name,
            "scopes": list(key.scopes),
            "by_key": auth.key_id,
            "by_tenant": auth.tenant_id,
        },
    )


class KeysController(Controller):
    path = "/v1/keys"
    tags = ("keys",)
    guards = (requires_scope("admin"),)

    @post(operation_id="create_key", summary="Create an API key; the secret is shown only here")
    async def create_key(
        self, data: KeyCreate, auth: AuthContext, db_session: AsyncSession
    ) -> KeyCreated:
        tenant_name = data.tenant or auth.tenant_name
        if tenant_name != auth.tenant_name and not auth.is_operator:
            raise Forbidden(
                "only an admin key of the default tenant may create keys for other tenants"
            )
        tenant = await key_store.get_or_create_tenant(db_session, tenant_name)
        created = await key_store.create_key(db_session, tenant.id, data.name, data.scopes)
        await _audit(db_session, "key.created", created.key, auth)
        return KeyCreated(
            **msgspec.structs.asdict(_key(created.key, tenant.name)), key=created.token
        )

    @get(operation_id="list_keys", summary="List keys (never their secrets)")
    async def list_keys(
        self,
        auth: AuthContext,
        db_session: AsyncSession,
        tenant: str | None = Parameter(
            default=None, description="Operator only: one tenant's keys"
        ),
        limit: int = Parameter(default=100, ge=1, le=1000, description="keys per page"),
        cursor: str | None = Parameter(
            default=None, max_length=64, description="next_cursor of the previous page"
        ),
    ) -> KeyList:
        tenant_id: str | None = auth.tenant_id
        if tenant is not None and not auth.is_operator and tenant != auth.tenant_name:
            raise Forbidden("only an admin key of the default tenant may list other tenants' keys")
        if auth.is_operator:
            tenant_id = None
            if tenant is not None:
                found = await key_store.get_tenant_by_name(db_session, tenant)
                if found is None:
                    return KeyList(data=[])
                tenant_id = found.id
        names = {t.id: t.name for t in await key_store.list_tenants(db_session)}
        rows = await key_store.list_keys(db_session, tenant_id, limit=limit + 1, after_id=cursor)
        page = rows[:limit]
        return KeyList(
            data=[_key(k, names.get(k.tenant_id, "")) for k in page],
            next_cursor=page[-1].id if len(rows) > limit else None,
        )

    @delete(
        "/{key_id:str}",
        operation_id="revoke_key",
        summary="Revoke a key (idempotent)",
        status_code=200,
    )
    async def revoke_key(self, key_id: str, auth: AuthContext, db_session: AsyncSession) -> Key:
        scope_tenant = None if auth.is_operator else auth.tenant_id
        key = await key_store.revoke_key(db_session, key_id, scope_tenant)
        await _audit(db_session, "key.revoked", key, auth)
        tenant = await db_session.get(Tenant, key.tenant_id)
        return _key(key, tenant.name if tenant else "")
