"""An LRU cache of prefilled prompt prefixes (their KV), bounded in bytes, per tenant.

Key: (tenant, model identity, SHA-256 of the prefix token ids). A later
request -- or a session re-inference after a premise was retracted -- whose
prompt starts with the same tokens on the same model skips the prefix
prefill. Entries are never shared across tenants: the tenant is part of the
key and ``get`` cannot reach another tenant's entry even for identical
tokens (the KV of a prompt reveals the prompt).

Stored tensors are treated as immutable; the decoder copies them into its
own batch slab and never writes to them. Thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from inference.decoder.kv_slab import PrefixKV
from reasoning.errors import InvalidInput

__all__ = ["PrefixCache", "PrefixCacheStats", "PrefixScope", "prefix_key"]


class PrefixCacheStats(msgspec.Struct, frozen=True, kw_only=True):
    hits: int
    misses: int
    evictions: int
    entries: int
    bytes: int
    max_bytes: int


def prefix_key(tenant: str, model: str, token_ids: Sequence[int]) -> tuple[str, str, str]:
    """The cache key of a prefix: tenant, model identity and a hash of its token ids."""
    digest = hashlib.sha256(b",".join(str(t).encode() for t in token_ids)).hexdigest()
    return tenant, model, f"{len(token_ids)}:{digest}"


def _nbytes(kv: PrefixKV) -> int:
    return sum(k.nbytes + v.nbytes for k, v in kv)


class PrefixCache:
    """LRU over prefilled prefixes; ``max_bytes`` bounds the sum of their tensor bytes."""

    def __init__(self, max_bytes: int = 512 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str, str], tuple[PrefixKV, int]] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._lock = threading.Lock()

    def get(self, tenant: str, model: str, token_ids: Sequence[int]) -> PrefixKV | None:
        """The prefilled KV of exactly ``token_ids`` for this tenant and model, or None (a miss)."""
        key = prefix_key(tenant, model, token_ids)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
            return entry[0]

    def put(self, tenant: str, model: str, token_ids: Sequence[int], kv: PrefixKV) -> bool:
        """Store a prefix; evict least recently used entries to fit. False when it can never fit."""
        size = _nbytes(kv)
        if size > self.max_bytes:
            return False
        key = prefix_key(tenant, model, token_ids)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            while self._entries and self._bytes + size > self.max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted
                self._evictions += 1
            self._entries[key] = (kv, size)
            self._bytes += size
            return True

    def clear_tenant(self, tenant: str) -> int:
        """Drop every entry of ``tenant`` (e.g. when its key is revoked); return how many."""
        with self._lock:
            keys = [k for k in self._entries if k[0] == tenant]
            for key in keys:
                self._bytes -= self._entries.pop(key)[1]
            return len(keys)

    def stats(self) -> PrefixCacheStats:
        with self._lock:
            return PrefixCacheStats(
                hits=self._hits,
                misses=self._misses,
                evictions=self._evictions,
                entries=len(self._entries),
                bytes=self._bytes,
                max_bytes=self.max_bytes,
            )


@dataclass(frozen=True)
class PrefixScope:
    """One tenant's entries of a ``PrefixCache`` for one model: what a decode may read and fill.

    A scope always names both a tenant and a model identity, so a decode
    given one can neither share an entry across tenants nor reuse a prefix
    prefilled by another model.

    Raises:
        InvalidInput: an empty ``tenant`` or ``model_id``.
    """

    cache: PrefixCache
    tenant: str
    model_id: str

    def __post_init__(self) -> None:
        if not self.tenant or not self.model_id:
            raise InvalidInput("a prefix cache scope needs a tenant and a model identity")

    def get(self, token_ids: Sequence[int]) -> PrefixKV | None:
        """The prefilled KV of exactly ``token_ids`` in this scope, or None (a miss)."""
        return self.cache.get(self.tenant, self.model_id, token_ids)

    def put(self, token_ids: Sequence[int], kv: PrefixKV) -> bool:
        """Store a prefix in this scope; False when it can never fit (``PrefixCache.put``)."""
        return self.cache.put(self.tenant, self.model_id, token_ids, kv)
