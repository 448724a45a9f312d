"""API-key authentication and scope guards.

Every route needs ``Authorization: Bearer tnt_<prefix>_<secret>`` except
routes marked public (``opt={"public": True}``: ``/healthz``, ``/readyz``)
and the OpenAPI schema under ``/schema``. A missing, malformed, unknown or
revoked key is 401 (with ``WWW-Authenticate``); a valid key without the
scope a route needs is 403. ``admin`` implies every scope.

Verified keys are cached in memory for ``KEY_CACHE_TTL_S`` seconds, keyed by
the SHA-256 of the whole token, so a busy key costs no database round trip
per request; a revocation in this process (any ORM write of
``ApiKey.revoked_at``) evicts the key at once. On PostgreSQL every replica
listens for revocations (``store.key_events``: ``LISTEN/NOTIFY``) and evicts
a key revoked through any other replica as soon as that revocation commits;
while a replica's listening connection is down its cache is bypassed (every
request verifies against the database) and it is emptied when the listener
reconnects, since revocations may have been missed meanwhile. On SQLite (one
process) a revocation in another process takes effect within the TTL.
``last_used_at`` is written when the cache refreshes, at most once a minute per key (``store.keys.touch_key``). The middleware also
reads the request's scheduling hints (``X-Tenet-Priority``,
``X-Tenet-Deadline-S``) within the key's allowance (``app.hints``) and counts
the request against the key's limits (``app.ratelimits``: 429 past one).

Usage in a controller::

    @post("/v1/reason", guards=[requires_scope("reason")])
    async def create_reasoning(self, auth: AuthContext, ...) -> ...:
        ...  # filter every query by auth.tenant_id
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from collections import OrderedDict
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
from sqlalchemy import event

from app.errors import Unauthorized
from app.hints import hints_from_headers, keep_hints
from reasoning.errors import Forbidden, InvalidInput
from store.key_events import RevocationListener, listen_dsn
from store.keys import DEFAULT_TENANT, SCOPES, find_key, touch_key
from store.models import ApiKey

__all__ = [
    "KEY_CACHE",
    "PUBLIC",
    "SCOPES",
    "ApiKeyMiddleware",
    "AuthContext",
    "KeyCache",
    "Unauthorized",
    "requires_scope",
    "revocation_listener",
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


class KeyCache:
    """Verified keys by token hash, each for ``ttl_s`` seconds; at most ``max_entries`` (oldest out).

    Only keys that verified and were not revoked are stored. Used from the
    event loop only (no lock needed). While any revocation listener is deaf
    (:meth:`deafen` called more often than :meth:`hear`), :meth:`get` answers
    nothing, so every request verifies its key against the database.
    """

    def __init__(self, ttl_s: float = 10.0, max_entries: int = 10_000) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._deaf = 0
        self._generation = 0
        self._entries: OrderedDict[str, tuple[AuthContext, float]] = OrderedDict()
        # Keys revoked here, not re-cached for a TTL: a request verifying the key before the
        # revocation commits must not put it back.
        self._revoked: dict[str, float] = {}

    @staticmethod
    def token_hash(token: str) -> str:
        return hashlib.sha256(token.encode("utf-8")).hexdigest()

    @property
    def trusted(self) -> bool:
        """False while a revocation listener is deaf: cached keys are not used then."""
        return self._deaf == 0

    def deafen(self) -> None:
        """A revocation listener cannot hear revocations now: stop trusting cached keys."""
        self._deaf += 1

    @property
    def generation(self) -> int:
        """Changes each time the cache is emptied for possibly missed revocations; a
        verification that started before that must not store its result (see :meth:`put`)."""
        return self._generation

    def hear(self) -> None:
        """A revocation listener hears again: forget every key (revocations may have been
        missed while it was deaf) and trust the cache again once no listener is deaf."""
        self._deaf = max(0, self._deaf - 1)
        self._generation += 1
        self._entries.clear()

    def get(self, token: str) -> AuthContext | None:
        if self._deaf:
            return None
        digest = self.token_hash(token)
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if entry[1] <= time.monotonic():
            del self._entries[digest]
            return None
        return entry[0]

    def put(self, token: str, context: AuthContext, generation: int | None = None) -> None:
        """Store a verified key; not when it was revoked here lately, nor when ``generation``
        (taken before the verification read the key) is no longer :attr:`generation`."""
        now = time.monotonic()
        if self._revoked.get(context.key_id, 0.0) > now:
            return
        if generation is not None and generation != self._generation:
            return
        digest = self.token_hash(token)
        self._entries[digest] = (context, now + self.ttl_s)
        self._entries.move_to_end(digest)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def invalidate_key(self, key_id: str) -> int:
        """Drop every entry of ``key_id`` and keep it out for a TTL; returns how many were dropped."""
        now = time.monotonic()
        self._revoked = {k: t for k, t in self._revoked.items() if t > now}
        self._revoked[key_id] = now + self.ttl_s
        stale = [d for d, (ctx, _) in self._entries.items() if ctx.key_id == key_id]
        for digest in stale:
            del self._entries[digest]
        return len(stale)

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and self.get(token) is not None

    def clear(self) -> None:
        self._entries.clear()
        self._revoked.clear()


#: Seconds a verified key is trusted without asking the database again.
KEY_CACHE_TTL_S = 10.0
#: The process-wide cache of verified keys.
KEY_CACHE = KeyCache(ttl_s=KEY_CACHE_TTL_S)


@event.listens_for(ApiKey.revoked_at, "set")
def _evict_revoked(target: ApiKey, value: Any, _old: Any, _initiator: Any) -> None:
    """A key being revoked in this process is evicted before the revocation commits."""
    if value is not None and target.id is not None:
        KEY_CACHE.invalidate_key(target.id)


#: Verifications in flight by token hash (see ``ApiKeyMiddleware._verify_once``).
_VERIFYING: dict[str, asyncio.Task[AuthContext]] = {}


def _verified(digest: str, task: asyncio.Task[AuthContext]) -> None:
    if _VERIFYING.get(digest) is task:
        del _VERIFYING[digest]
    if not task.cancelled():
        task.exception()  # retrieved: every waiter may have gone, nothing to log


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
        context = KEY_CACHE.get(token) or await self._verify_once(connection, token)
        limits = connection.app.state.runtime.key_limits
        if limits.enabled:
            await limits.admit(context.key_id)
        keep_hints(connection, hints_from_headers(connection.headers, context.scopes))
        return AuthenticationResult(user=context, auth=context.key_id)

    @classmethod
    async def _verify_once(cls, connection: ASGIConnection[Any, Any, Any, Any], token: str) -> AuthContext:
        """Concurrent requests with the same uncached token share one verification.

        Without this, every request in flight when a key's cache entry is
        missing (start-up, or each TTL expiry) looked the key up and wrote
        ``last_used_at`` itself: 32 clients meant 32 queued database writes
        and a latency spike of a hundred milliseconds and more. A failed
        verification fails every request that waited for it.
        """
        digest = KeyCache.token_hash(token)
        loop = asyncio.get_running_loop()
        pending = _VERIFYING.get(digest)
        if pending is None or pending.get_loop() is not loop or pending.done():
            pending = loop.create_task(cls._verify(connection, token))
            _VERIFYING[digest] = pending
            pending.add_done_callback(functools.partial(_verified, digest))
        # Shielded: one waiter going away (client disconnect) does not cancel it for the others.
        return await asyncio.shield(pending)

    @staticmethod
    async def _verify(connection: ASGIConnection[Any, Any, Any, Any], token: str) -> AuthContext:
        """Look the key up, record its use (at most once a minute) and cache it."""
        runtime = connection.app.state.runtime
        generation = KEY_CACHE.generation
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
        KEY_CACHE.put(token, context, generation)
        return context


def revocation_listener(database_url: str) -> RevocationListener | None:
    """A listener evicting keys revoked through any replica from :data:`KEY_CACHE`; None on
    SQLite (no notifications, one process). Start it on the app's event loop."""
    dsn = listen_dsn(database_url)
    if dsn is None:
        return None
    return RevocationListener(
        dsn,
        on_revoked=KEY_CACHE.invalidate_key,
        on_deaf=KEY_CACHE.deafen,
        on_listening=KEY_CACHE.hear,
    )


def requires_scope(scope: str) -> Guard:
    """A guard admitting keys that hold ``scope`` (or ``admin``); 403 otherwise.

    The guard is a coroutine function (``await guard(connection, handler)``).
    """
    if scope not in SCOPES:
        raise InvalidInput(f"unknown scope {scope!r}; known scopes: {list(SCOPES)}")

    # A coroutine function: Litestar runs a plain function guard on a worker thread,
    # one thread hand-over per request for a check of a few microseconds.
    async def guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
        user = connection.scope.get("user")
        if not isinstance(user, AuthContext):
            raise Unauthorized("this route needs an API key")
        if not user.has(scope):
            raise Forbidden(f"this API key lacks the scope {scope!r}", required_scope=scope)

    guard.__name__ = f"requires_scope_{scope.replace(':', '_')}"
    return guard
