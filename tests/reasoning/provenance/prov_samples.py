"""A realistic reason run (AML flow) shared by the provenance tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reasoning.constraints.model import Constraint, Hardness, Kind, Premise, Span, Verdict
from reasoning.evidence.model import EvidenceFact
from reasoning.provenance import (
    ActivitySpan,
    ModelAgent,
    OntologyArtifact,
    PruningDecision,
    Reinference,
    RunKind,
    RunRecord,
    StepTrace,
)

__all__ = ["T0", "aml_record"]

T0 = datetime(2026, 5, 1, 9, 30, 0, 123456, tzinfo=UTC)
PROMPT = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, "
    "who is on our PEP list. Should this be escalated? Answer in under 80 words, "
    "cite the rules you rely on, and do not cite rules in force before 2020. 必须用中文回答"
)


def _at(ms: float) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def aml_record(tenant_id: str = "acme", key_id: str | None = "key-1") -> RunRecord:
    """A reason run with every kind of provenance input filled."""
    stages = ("parse", "extract", "graph", "evidence", "prefill", "decode", "verify")
    activities = tuple(
        ActivitySpan(name=name, started_at=_at(i * 10), ended_at=_at(i * 10 + 9))
        for i, name in enumerate(stages)
    )
    words = PROMPT.index("under 80 words")
    constraints = (
        Constraint(
            id="C1",
            kind=Kind.WORD_COUNT,
            params={"relation": "less than", "n": 80},
            source=Span(start=words, end=words + 14, text="under 80 words"),
        ),
        Constraint(id="C2", kind=Kind.CITE_SOURCES, params={"min": 1}, hardness=Hardness.SOFT),
        Constraint(
            id="C3", kind=Kind.CITATION_TIME_WINDOW, params={"not_before": "2020-01-01"}
        ),
    )
    premises = (
        Premise(id="P1", text="Assume the tax rate is 20%.", topic="tax rate", value="20%"),
    )
    evidence = (
        EvidenceFact(
            id="E1",
            subject="aml:JonDoe",
            predicate="aml:onList",
            object="aml:PEPList",
            text="Jon Doe is on the PEP list",
            view="entity_relations",
            score=0.91,
            hops=1,
            ontology_version="aml-v3",
            modified="2024-05-11",
            stale_hint="PEP list last updated 2024-05-11",
        ),
        EvidenceFact(
            id="E2",
            subject="aml:Rule12",
            predicate="aml:requires",
            object="aml:Escalation",
            text="Rule 12 requires escalation of PEP transfers over EUR 1,000,000",
            view="compliance",
            score=0.87,
            hops=2,
            ontology_version="aml-v3",
            effective="2021-03-01",
        ),
    )
    steps = (
        StepTrace(
            id="S1",
            text="Jon Doe is a PEP.",
            started_at=_at(50),
            ended_at=_at(53),
            confidence=0.71,
            view="entity_relations",
            evidence_ids=("E1",),
            calibration_hint="PEP list last updated 2024-05-11",
        ),
        StepTrace(
            id="S2",
            text="Rule 12 requires escalation [E2].",
            started_at=_at(53),
            ended_at=_at(58),
            confidence=0.83,
            view="compliance",
            evidence_ids=("E2",),
            premise_ids=("P1",),
            depends_on=("S1",),
            verdicts=(Verdict(constraint_id="C3", satisfied=True),),
        ),
    )
    return RunRecord(
        tenant_id=tenant_id,
        key_id=key_id,
        kind=RunKind.REASON,
        status="ok",
        prompt=PROMPT,
        started_at=T0,
        finished_at=_at(70),
        request={"prompt": PROMPT, "domain": "aml"},
        result={"answer": "Escalate: Jon Doe is a PEP [E1]; Rule 12 applies [E2]."},
        session_id="sess-1",
        model=ModelAgent(
            name="SmolLM2-135M-Instruct", sha256="ab" * 32, dtype="float32", device="cpu",
            parameters=134515008,
        ),
        timings={name: 9.0 for name in stages},
        activities=activities,
        constraints=constraints,
        premises=premises,
        evidence=evidence,
        steps=steps,
        answer="Escalate: Jon Doe is a PEP [E1]; Rule 12 applies [E2].",
        verdicts=(
            Verdict(constraint_id="C1", satisfied=True),
            Verdict(constraint_id="C2", satisfied=True),
            Verdict(constraint_id="C3", satisfied=False, detail="E1 undated"),
        ),
        pruning=(
            PruningDecision(
                rule="semantic_consistency",
                at=_at(55),
                beam=2,
                detail="contradicts E2",
                text="Rule 12 does not apply.",
                step_id="S2",
                constraint_ids=("C1", "C3"),
                evidence_ids=("E2",),
            ),
            PruningDecision(rule="entropy_bound", at=_at(56), beam=3, score=0.91),
        ),
        reinferences=(
            Reinference(
                started_at=_at(60),
                ended_at=_at(66),
                retracted_premise_ids=("P1",),
                recomputed=("S2",),
                reused=("S1", "E1"),
                previous_run_id="run-0",
                saved_ms=41.5,
            ),
        ),
        ontologies=(OntologyArtifact(version="aml-v3", domain="aml", sha256="cd" * 32),),
    )
