"""Ontology ingest and loaded indexes: what turns stored ontology bytes into the reasoning core's
:class:`~reasoning.evidence.index.OntologyIndex`.

The store (:mod:`store.ontologies`) keeps the versions' rows and bytes; this
module runs the core on them: it ingests uploads and the bundled domains
(parse, materialise, validate, index) and decodes a version's stored index
into the runtime's per-process :class:`~reasoning.evidence.cache.IndexCache`.
Guarantees:

- heavy work (ingesting, decoding an index) runs in a worker thread, never
  on the event loop, and at most two uploads ingest at once;
- callers ingest *before* they write, so a refused file leaves no row;
- a bundled file is ingested once per process (keyed by path and content
  hash), however many tenants load it;
- the index of a version is decoded once per cache; the current version of a
  domain is read from the database on every call, so a deleted or newer
  version is seen at once.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Final

from anyio import to_thread
from sqlalchemy.ext.asyncio import AsyncSession

from reasoning.errors import NotFound, Unavailable
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.cache import IndexCache
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import IngestLimits, IngestResult, content_hash, ingest_ontology
from store import ontologies as ontology_store

__all__ = ["ingest_upload", "load_bundled_ontologies", "load_index"]

_INGEST_SLOTS: Final = threading.BoundedSemaphore(2)
"""At most two uploads parse and materialise at once (each may start a reasoner process
and hold a large graph in memory); further uploads wait in their worker thread."""


async def ingest_upload(data: bytes, media_type: str, limits: IngestLimits) -> IngestResult:
    """Ingest an uploaded file in a worker thread (one of two slots); refused input raises the
    core's errors (``InvalidInput``, ``UnsafeContent``, ``LimitExceeded``) before anything is stored."""
    return await to_thread.run_sync(_ingest, data, media_type, limits)


def _ingest(data: bytes, media_type: str, limits: IngestLimits) -> IngestResult:
    with _INGEST_SLOTS:
        return ingest_ontology(data, media_type, limits=limits)


async def load_index(session: AsyncSession, cache: IndexCache, tenant_id: str, domain: str
                     ) -> OntologyIndex:
    """The in-memory index of the domain's current version (decoded once, then cached)."""
    row = await ontology_store.current_version(session, tenant_id, domain)
    if row is None:
        raise NotFound(f"no ontology for domain {domain!r}; upload one to /v1/ontologies",
                       resource="ontology", domain=domain)
    cached = cache.get(row.id)
    if cached is not None:
        return cached
    blob = await ontology_store.materialised_index(session, row.id)
    if blob is None:
        raise Unavailable(f"ontology version {row.id} has no index; re-upload it",
                          resource="ontology")
    version = row.id
    return await to_thread.run_sync(
        lambda: cache.get_or_load(version, lambda: OntologyIndex.from_bytes(blob, version=version))
    )


async def load_bundled_ontologies(
    db_session: AsyncSession,
    tenant_id: str,
    *,
    cache: IndexCache | None = None,
    limits: IngestLimits | None = None,
) -> None:
    """Load the bundled sample domains for ``tenant_id`` when missing (idempotent).

    A domain is skipped when the tenant already has this exact file, or any
    version of that domain that is in service (an uploaded newer version
    must not be displaced by the sample).
    """
    for domain, path in bundled_domains():
        data = path.read_bytes()
        if await ontology_store.find_by_hash(db_session, tenant_id, domain, content_hash(data)) is not None:
            continue
        if await ontology_store.current_version(db_session, tenant_id, domain) is not None:
            continue
        result = await to_thread.run_sync(_ingest_bundled, str(path), data, limits)
        row, _ = await ontology_store.save_version(db_session, tenant_id, domain, data, result,
                                                   filename=path.name)
        if cache is not None:
            cache.put(result.index.with_version(row.id))


def _ingest_bundled(path: str, data: bytes, limits: IngestLimits | None) -> IngestResult:
    return _ingest_cached(path, content_hash(data), data, limits or IngestLimits())


@lru_cache(maxsize=8)
def _ingest_cached(path: str, digest: str, data: bytes, limits: IngestLimits) -> IngestResult:
    """Bundled files are ingested once per process (keyed by path and content hash)."""
    return ingest_ontology(data, "text/turtle", limits=limits)
