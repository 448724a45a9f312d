"""API-key authentication and scope guards.

Every route needs ``Authorization: Bearer tnt_<prefix>_<secret>`` except
routes marked public (``opt={"public": True}``: ``/healthz``, ``/readyz``)
and the OpenAPI schema under ``/schema``. A missing, malformed, unknown or
revoked key is 401 (with ``WWW-Authenticate``); a valid key without the
scope a route needs is 403. ``admin`` implies every scope.

Usage in a controller::

    @post("/v1/reason", guards=[requires_scope("reason")])
    async def create_reasoning(self, auth: AuthContext, ...) -> ...:
        ...  # filter every query by auth.tenant_id
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.middleware.authentication import (
    AbstractAuthenticationMiddleware,
    AuthenticationResult,
)
from litestar.types import Guard

from app.errors import Unauthorized
from reasoning.errors import Forbidden, InvalidInput
from store.keys import DEFAULT_TENANT, SCOPES, find_key, touch_key

__all__ = [
    "PUBLIC",
    "SCOPES",
    "ApiKeyMiddleware",
    "AuthContext",
    "Unauthorized",
    "requires_scope",
]

#: Route ``opt`` that exempts a handler from authentication.
PUBLIC: Mapping[str, Any] = MappingProxyType({"public": True})


@dataclass(frozen=True)
class AuthContext:
    """Who is calling: the tenant every query must filter by, the key and its scopes."""

    tenant_id: str
    key_id: str
    scopes: frozenset[str]
    tenant_name: str = ""

    def has(self, scope: str) -> bool:
        """True when the key holds ``scope`` or ``admin``."""
        return "admin" in self.scopes or scope in self.scopes

    @property
    def is_operator(self) -> bool:
        """An admin of the default tenant: manages keys of every tenant."""
        return "admin" in self.scopes and self.tenant_name == DEFAULT_TENANT


class ApiKeyMiddleware(AbstractAuthenticationMiddleware):
    """Resolves the bearer token to an :class:`AuthContext` stored as ``scope["user"]``."""

    async def authenticate_request(
        self, connection: ASGIConnection[Any, Any, Any, Any]
    ) -> AuthenticationResult:
        header = connection.headers.get("authorization")
        if not header:
            raise Unauthorized(
                "missing Authorization header; send 'Authorization: Bearer <API key>'"
            )
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("malformed Authorization header; expected 'Bearer <API key>'")
        runtime = connection.app.state.runtime
        async with runtime.sessionmaker() as session:
            key = await find_key(session, token)
            if key is None:
                raise Unauthorized("invalid API key")
            if key.revoked_at is not None:
                raise Unauthorized("this API key has been revoked")
            await touch_key(session, key)
            await session.refresh(key, ["tenant"])
            context = AuthContext(
                tenant_id=key.tenant_id,
                key_id=key.id,
                scopes=frozenset(key.scopes),
                tenant_name=key.tenant.name,
            )
            await session.commit()
        return AuthenticationResult(user=context, auth=key.id)


def requires_scope(scope: str) -> Guard:
    """A guard admitting keys that hold ``scope`` (or ``admin``); 403 otherwise."""
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r}; known scopes: {list(SCOPES)}")

    def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        user = connection.scope.get("user")
        if not isinstance(user, AuthContext):
            raise Unauthorized("this route needs an API key")
        if not user.has(scope):
            raise Forbidden(f"this API key lacks the scope {scope!r}", required_scope=scope)

    guard.__name__ = f"requires_scope_{scope.replace(':', '_')}"
    return guard
