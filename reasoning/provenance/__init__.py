"""Provenance of runs (W3C PROV) and the canonical hashing of audit events.

Pure library code: no database, no HTTP. ``build_run_document`` turns a
``RunRecord`` into a PROV document; ``formats`` writes and reads it as PROV-N,
PROV-JSON, PROV-XML and PROV-O (Turtle, JSON-LD), one run or a stream of
runs; ``canonical`` gives the byte-exact JSON the audit chain hashes.
"""

from __future__ import annotations

from reasoning.provenance.builder import (
    AGENT,
    BUNDLE,
    ONTOLOGY,
    TENET,
    build_run_document,
    bundle_id,
    run_namespace,
)
from reasoning.provenance.canonical import (
    GENESIS_HASH,
    canonical_json,
    event_digest,
    iso_utc,
    normalise_json,
    sha256_hex,
)
from reasoning.provenance.formats import (
    MEDIA_TYPES,
    ExportWriter,
    ProvFormat,
    from_prov_json,
    parse,
    serialize,
)
from reasoning.provenance.record import (
    ActivitySpan,
    ModelAgent,
    OntologyArtifact,
    PruningDecision,
    Reinference,
    RunKind,
    RunRecord,
    StepTrace,
)

__all__ = [
    "AGENT",
    "BUNDLE",
    "GENESIS_HASH",
    "MEDIA_TYPES",
    "ONTOLOGY",
    "TENET",
    "ActivitySpan",
    "ExportWriter",
    "ModelAgent",
    "OntologyArtifact",
    "ProvFormat",
    "PruningDecision",
    "Reinference",
    "RunKind",
    "RunRecord",
    "StepTrace",
    "build_run_document",
    "bundle_id",
    "canonical_json",
    "event_digest",
    "from_prov_json",
    "iso_utc",
    "normalise_json",
    "parse",
    "run_namespace",
    "serialize",
    "sha256_hex",
]
