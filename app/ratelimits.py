"""Per-key request limits and quotas, shared by every replica through Redis when configured.

``TENET_KEY_RATE_LIMITS`` names what each API key may spend, in the notation
of the `limits <https://limits.readthedocs.io>`_ library (``120/minute``, or
several: ``120/minute;20000/day``, a rate limit and a daily quota). Every
authenticated request counts once against each of them, in order; the first
one used up refuses the request with 429 and ``Retry-After`` (the seconds
until its window lets a request through again), naming the limit.

Where the counts live decides what "per key" means:

- ``TENET_REDIS_URL`` set: in Redis, so N replicas together admit what one
  would (sliding-window counters, updated atomically by the library's Lua
  scripts: no read-modify-write race between replicas). While Redis does not
  answer, a keyed request cannot be counted and is refused with 503 (never
  admitted uncounted: a quota that fails open is no quota), and ``/readyz``
  reports ``rate_limits: unreachable`` so a load balancer stops sending.
- unset: in this process's memory; each replica then counts on its own (a
  single-process deployment, the default, loses nothing).

The counting is the library's, not ours: :class:`limits.aio.strategies.SlidingWindowCounterRateLimiter`
weighs the previous window's count by its remaining overlap, which avoids a
fixed window's double burst at the boundary in constant memory per key.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from limits import RateLimitItem, parse_many
from limits.aio.storage import MemoryStorage, RedisStorage, Storage
from limits.aio.strategies import SlidingWindowCounterRateLimiter
from limits.errors import StorageError
from redis.asyncio import ConnectionPool

from app.settings import Settings
from reasoning.errors import Overloaded, Unavailable

__all__ = ["KeyLimits"]

#: Seconds a Redis connection attempt or command may take before the store counts as down.
REDIS_TIMEOUT_S: Final = 0.5
#: Seconds keyed requests are refused without asking Redis again after it failed to answer.
FAIL_FAST_S: Final = 1.0
#: The Retry-After of a request refused because Redis does not answer.
REDIS_RETRY_AFTER_S: Final = 5.0
_NAMESPACE: Final = "tenet-key"


class KeyLimits:
    """The configured per-key limits over the configured store (Redis or this process)."""

    def __init__(self, rates: str = "", redis_url: str = "") -> None:
        self.limits: tuple[RateLimitItem, ...] = tuple(parse_many(rates)) if rates.strip() else ()
        self.shared = bool(redis_url)
        self._storage: Storage
        # Our own pool, so that closing the app closes its connections (the library keeps none
        # of the client's lifecycle).
        self._pool: ConnectionPool | None = None
        if redis_url:
            self._pool = ConnectionPool.from_url(
                redis_url, socket_connect_timeout=REDIS_TIMEOUT_S, socket_timeout=REDIS_TIMEOUT_S
            )
            self._storage = RedisStorage(
                "async+" + redis_url,
                wrap_exceptions=True,
                implementation="redispy",
                key_prefix="TENET",
                connection_pool=self._pool,  # type: ignore[arg-type]
            )
        else:
            self._storage = MemoryStorage()
        self._limiter = SlidingWindowCounterRateLimiter(self._storage)
        self._down_until = 0.0
        self._down_reason = ""

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyLimits:
        return cls(settings.key_rate_limits, settings.redis_url)

    @property
    def enabled(self) -> bool:
        """True when at least one limit is configured."""
        return bool(self.limits)

    async def admit(self, key_id: str) -> None:
        """Count one request of ``key_id`` against every limit.

        Raises:
            Overloaded: a limit is used up (429; ``retry_after_s`` until it admits again).
            Unavailable: the shared store does not answer (503), so the request is not admitted.
        """
        if time.monotonic() < self._down_until:
            raise self._unreachable(self._down_reason)
        for item in self.limits:
            try:
                if await self._limiter.hit(item, _NAMESPACE, key_id):
                    continue
                stats = await self._limiter.get_window_stats(item, _NAMESPACE, key_id)
            except StorageError as exc:
                # Refuse at once for a moment: every request waiting out the connect timeout
                # would only pile up while Redis is down.
                self._down_until = time.monotonic() + FAIL_FAST_S
                self._down_reason = type(exc.storage_error).__name__
                raise self._unreachable(self._down_reason) from None
            wait_s = max(1.0, stats.reset_time - time.time())
            raise Overloaded(
                f"this API key's limit of {item} is used up; retry in {wait_s:.0f} s",
                retry_after_s=wait_s,
                limit=str(item),
            )

    @staticmethod
    def _unreachable(reason: str) -> Unavailable:
        return Unavailable(
            "the shared rate-limit store (TENET_REDIS_URL) does not answer, so this request "
            f"cannot be counted against its key's limits ({reason}); retry shortly",
            retry_after_s=REDIS_RETRY_AFTER_S,
            rate_limits="unreachable",
        )

    async def state(self) -> str:
        """``off`` (no limit configured), ``local`` (counted in this process), ``ok`` (Redis
        answers) or ``unreachable`` (Redis configured and not answering)."""
        if not self.enabled:
            return "off"
        if not self.shared:
            return "local"
        try:
            healthy = await asyncio.wait_for(self._storage.check(), REDIS_TIMEOUT_S * 2)
        except TimeoutError:
            healthy = False
        return "ok" if healthy else "unreachable"

    async def close(self) -> None:
        """Close the connections to Redis (none to close without it)."""
        if self._pool is not None:
            await self._pool.disconnect()
