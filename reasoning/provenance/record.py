"""What a run reports about itself, so it can be stored and made provenance.

``RunRecord`` is the one value object the reason, constraints, re-inference
and ontology-upload paths fill and hand to ``store.runs.record_run``. It is
plain data (frozen msgspec Structs, JSON-serialisable) so the reasoning core
can build it without knowing about the database or HTTP.

Times are timezone-aware datetimes (a naive one is read as UTC).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

import msgspec

from reasoning.constraints.model import Constraint, Premise, Verdict
from reasoning.evidence.model import EvidenceFact

__all__ = [
    "ActivitySpan",
    "ModelAgent",
    "OntologyArtifact",
    "PruningDecision",
    "Reinference",
    "RunKind",
    "RunRecord",
    "StepTrace",
]

Scalar = str | int | float | bool


class RunKind(StrEnum):
    """What a run did; each kind becomes a ``tenet:`` type of the run activity."""

    REASON = "reason"
    CONSTRAINTS = "constraints"
    REINFERENCE = "reinference"
    ONTOLOGY_UPLOAD = "ontology_upload"
    CHAT = "chat"


class ModelAgent(msgspec.Struct, frozen=True, kw_only=True):
    """The model that decoded, by file hash.

    Field names match ``inference.loader.ModelIdentity`` so a caller writes
    ``ModelAgent(**dataclasses.asdict(loaded.identity))``.
    """

    name: str
    sha256: str
    dtype: str
    source: str = ""
    device: str = ""
    parameters: int = 0


class ActivitySpan(msgspec.Struct, frozen=True, kw_only=True):
    """One timed stage of the pipeline (``parse``, ``extract``, ``evidence`` ...).

    Stages are recorded in the order given; each is informed by the one
    before it.
    """

    name: str
    started_at: datetime
    ended_at: datetime
    attributes: dict[str, Scalar] = msgspec.field(default_factory=dict)


class StepTrace(msgspec.Struct, frozen=True, kw_only=True):
    """One reasoning step: the text a decode step produced and what it rests on.

    ``evidence_ids`` and ``premise_ids`` name ``EvidenceFact.id`` and
    ``Premise.id`` values of the same run; ``depends_on`` names earlier steps.
    """

    id: str
    text: str
    started_at: datetime
    ended_at: datetime
    confidence: float | None = None
    view: str | None = None
    evidence_ids: tuple[str, ...] = ()
    premise_ids: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    calibration_hint: str | None = None


class PruningDecision(msgspec.Struct, frozen=True, kw_only=True):
    """A beam cut by a pruning rule, with the rule and why.

    ``rule`` is the rule's name (``semantic_consistency``, ``evidence_chain``,
    ``entropy_bound``, ``degenerate`` ...); ``step_id`` is the step the beam
    was producing when it was cut, where known; ``constraint_ids`` and
    ``evidence_ids`` name what the rule checked the continuation against.
    """

    rule: str
    at: datetime
    beam: int
    detail: str = ""
    text: str = ""
    step_id: str | None = None
    constraint_ids: tuple[str, ...] = ()
    evidence_ids: tuple[str, ...] = ()
    score: float | None = None


class Reinference(msgspec.Struct, frozen=True, kw_only=True):
    """A partial re-run after premises were retracted or amended."""

    started_at: datetime
    ended_at: datetime
    retracted_premise_ids: tuple[str, ...] = ()
    recomputed: tuple[str, ...] = ()
    reused: tuple[str, ...] = ()
    previous_run_id: str | None = None
    saved_ms: float | None = None


class OntologyArtifact(msgspec.Struct, frozen=True, kw_only=True):
    """An ontology version a run used, or the one an upload produced.

    ``generated`` is True for the version an ontology-upload run created.
    """

    version: str
    domain: str
    sha256: str = ""
    triples: int | None = None
    generated: bool = False


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a finished run hands to the store and to provenance.

    ``request`` and ``result`` are the JSON bodies as the API saw them;
    ``timings`` the wall time per stage in milliseconds (as returned to the
    client); ``activities`` the same stages with start and end times.
    """

    tenant_id: str
    key_id: str | None
    kind: RunKind
    status: str
    prompt: str
    started_at: datetime
    finished_at: datetime
    request: dict[str, Any] = msgspec.field(default_factory=dict)
    result: dict[str, Any] = msgspec.field(default_factory=dict)
    session_id: str | None = None
    model: ModelAgent | None = None
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    activities: tuple[ActivitySpan, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    premises: tuple[Premise, ...] = ()
    evidence: tuple[EvidenceFact, ...] = ()
    steps: tuple[StepTrace, ...] = ()
    answer: str | None = None
    verdicts: tuple[Verdict, ...] = ()
    pruning: tuple[PruningDecision, ...] = ()
    reinferences: tuple[Reinference, ...] = ()
    ontologies: tuple[OntologyArtifact, ...] = ()
