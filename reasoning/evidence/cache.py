"""An in-memory LRU of loaded ontology indexes, keyed by version id.

An index is decoded from its stored blob once per process and shared by all
requests (it is read-only). The cache is thread-safe; decoding happens
outside the lock, so a slow load never blocks lookups of other versions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from reasoning.evidence.index import OntologyIndex

__all__ = ["IndexCache"]


class IndexCache:
    """Up to ``max_entries`` indexes, least recently used evicted first."""

    def __init__(self, max_entries: int = 16) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.max_entries = max_entries
        self._entries: OrderedDict[str, OntologyIndex] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, version: str) -> OntologyIndex | None:
        with self._lock:
            index = self._entries.get(version)
            if index is not None:
                self._entries.move_to_end(version)
            return index

    def put(self, index: OntologyIndex) -> OntologyIndex:
        """Store ``index`` under its version; returns the cached instance."""
        with self._lock:
            current = self._entries.get(index.version)
            if current is not None:
                self._entries.move_to_end(index.version)
                return current
            self._entries[index.version] = index
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            return index

    def get_or_load(self, version: str, load: Callable[[], OntologyIndex]) -> OntologyIndex:
        """The cached index of ``version``, loading (outside the lock) when absent."""
        found = self.get(version)
        if found is not None:
            return found
        return self.put(load().with_version(version))

    def discard(self, version: str) -> None:
        with self._lock:
            self._entries.pop(version, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
