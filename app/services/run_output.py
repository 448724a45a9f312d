"""What a run gives out: its public response and its record.

:func:`build_response` is the shape ``/v1/reason``, session turns and the chat
extensions answer with; :func:`run_record` is the one place a run's record
(what the store and provenance keep) is built, for runs answered on their own
and for session turns alike. :class:`app.services.runs.RunService` calls
both in its sequence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec

from app.metrics import STAGES
from app.schemas.constraints import EntropyOut
from app.schemas.reason import (
    BranchOut,
    ConflictSpan,
    PruningOut,
    ReasonResponse,
    StepOut,
    constraint_out,
    decision_out,
)
from inference.loader import ModelIdentity
from inference.pipeline import Plan, ReasonOptions, ReasonResult
from reasoning.provenance import (
    ActivitySpan,
    ModelAgent,
    OntologyArtifact,
    Reinference,
    RunKind,
    RunRecord,
    StepTrace,
)

__all__ = ["TurnRun", "build_response", "model_agent", "run_record"]


def build_response(
    run_id: str,
    plan: Plan,
    result: ReasonResult,
    model: dict[str, Any],
    *,
    session_id: str | None = None,
) -> ReasonResponse:
    """The public shape of a run (``/v1/reason``, session turns, chat extensions)."""
    analysis = plan.analysis
    verdicts = {v.constraint_id: v for v in result.verdicts}
    decoded = result.decode
    steps = [s for branch in result.branches for s in branch.steps]
    answer_steps = result.answer_steps
    answer_branch = (
        result.branches[result.answer_branch] if result.answer_branch is not None else None
    )
    premise_ids = {spec.view: list(spec.premise_ids) for spec in result.branch_specs}
    return ReasonResponse(
        run_id=run_id,
        status=result.status.value,
        answer=result.answer,
        language=analysis.language,
        detail=result.conflict,
        constraints=[constraint_out(c, verdicts.get(c.id)) for c in analysis.constraints],
        conflicts=[
            ConflictSpan(a=c.a, b=c.b, reason=c.reason, spans=list(c.spans)) for c in analysis.graph.conflicts
        ],
        premises=list(plan.premises),
        entropy=EntropyOut.of(analysis.entropy),
        budget=plan.budget,
        linked_entities=list(plan.linked),
        evidence=list(plan.subgraphs),
        branches=[
            BranchOut(
                view=b.view,
                relevance=b.relevance,
                text=b.text,
                confidence=round(b.confidence, 4),
                weight=round(b.weight, 4),
                agrees=b.agrees,
                premise_ids=premise_ids.get(b.view, []),
                evidence_ids=[f.id for spec in result.branch_specs if spec.view == b.view for f in spec.facts],
                step_ids=[s.id for s in b.steps],
                end=b.end,
            )
            for b in result.branches
        ],
        reasoning_path=[s.id for s in answer_steps],
        confidence_by_step={s.id: round(s.confidence, 4) for s in answer_steps},
        steps=[
            StepOut(
                id=s.id,
                branch=s.branch,
                text=s.text,
                confidence=round(s.confidence, 4),
                calibration_hint=s.calibration_hint,
                evidence_cited=list(s.evidence_cited),
                evidence_used=list(s.evidence_used),
                premise_ids=list(s.premise_ids),
                verdicts=list(s.verdicts),
                entropy=round(s.entropy, 4),
                contrast=s.contrast,
                violation=s.violation,
                repaired=s.repaired,
                kind=s.kind,
                support=list(s.support),
            )
            for s in steps
        ],
        pruning=(
            PruningOut(
                pruned=dict(decoded.pruning.pruned),
                steps_checked=decoded.pruning.steps_checked,
                repairs=decoded.pruning.repairs,
                unrepaired=decoded.pruning.unrepaired,
                counterfactual_scored=decoded.pruning.counterfactual_scored,
                counterfactual_flops_share=round(decoded.counterfactual_flops_share, 4),
                constraint_check_share=round(decoded.constraint_check_share, 4),
                prefix_cache_hit=decoded.prefix_cache_hit,
                claims_checked=decoded.pruning.claims_checked,
                claims_contradicted=decoded.pruning.claims_contradicted,
                counterfactual_skipped=decoded.pruning.counterfactual_skipped,
                counterfactual_skip_reasons=dict(decoded.pruning.counterfactual_skip_reasons),
            )
            if decoded is not None
            else None
        ),
        violations=list(answer_branch.violations) if answer_branch is not None else [],
        usage={
            "prompt_tokens": decoded.prompt_tokens if decoded else 0,
            "completion_tokens": decoded.generated_tokens if decoded else 0,
        },
        timings={stage: result.timings.get(stage, 0.0) for stage in STAGES},
        model=model,
        session_id=session_id,
        recomputed=list(result.recomputed),
        reused=list(result.reused),
        decision=decision_out(result.decision or plan.decision, analysis.language),
        end=answer_branch.end if answer_branch is not None else None,
    )


def _activities(started: datetime, timings: dict[str, float]) -> tuple[ActivitySpan, ...]:
    """The stages as consecutive timed activities (their measured durations, in order)."""
    spans, cursor = [], started
    for stage in STAGES:
        if timings.get(stage) is None:
            continue
        end = cursor + timedelta(milliseconds=timings[stage])
        spans.append(ActivitySpan(name=stage, started_at=cursor, ended_at=end))
        cursor = end
    return tuple(spans)


@dataclasses.dataclass(frozen=True)
class TurnRun:
    """What a session turn's run record holds beyond a plain run's.

    ``premises`` maps the run's premise ids to the session's stored ones;
    ``finished`` is when the turn's decode ended; ``reinference`` the
    partial re-run a premise change made, if this run is one.
    """

    session_id: str
    prompt: str
    options: ReasonOptions
    premises: Mapping[str, str]
    finished: datetime
    reinference: Reinference | None = None


def run_record(
    plan: Plan,
    result: ReasonResult,
    identity: ModelIdentity,
    of: ReasonResponse | TurnRun,
    *,
    tenant_id: str,
    key_id: str | None,
    started: datetime,
    kind: RunKind = RunKind.REASON,
    request: Mapping[str, Any] | None = None,
    domain: str | None = None,
) -> RunRecord:
    """What provenance and the store keep of a reasoning run: the one place a run record is built.

    A run answered on its own is recorded from its public response (``of``;
    ``request`` is the request as the caller sent it): the steps as the response shows them,
    timed by the decode stage, the stages as timed activities and the
    domain's ontology version. A session turn's run (``turn``) is recorded
    from its ``result``: its steps keyed ``view/step id`` as the session's DAG
    keys them, over the turn's time, with the premise ids of their branch;
    the result names the recomputed and reused branches and the stored
    premise ids, and a re-run carries its re-inference.
    """
    agent = model_agent(identity)
    if isinstance(of, TurnRun):
        return _turn_record(plan, result, agent, of, tenant_id=tenant_id, key_id=key_id, started=started,
                            kind=kind)
    response = of
    finished = datetime.now(UTC)
    step_times = _activities(started, response.timings)
    decode_span = next((a for a in step_times if a.name == "decode"), None)
    steps = tuple(
        StepTrace(
            id=s.id,
            text=s.text,
            started_at=decode_span.started_at if decode_span else started,
            ended_at=decode_span.ended_at if decode_span else finished,
            confidence=s.confidence,
            view=s.branch,
            evidence_ids=tuple(dict.fromkeys((*s.evidence_cited, *s.evidence_used))),
            premise_ids=tuple(s.premise_ids),
            verdicts=tuple(s.verdicts),
            calibration_hint=s.calibration_hint,
        )
        for s in response.steps
    )
    ontologies = (
        (OntologyArtifact(version=plan.domain_version, domain=domain or ""),) if plan.domain_version else ()
    )
    return RunRecord(
        tenant_id=tenant_id,
        key_id=key_id,
        kind=kind,
        status=response.status,
        prompt=plan.prompt,
        started_at=started,
        finished_at=max(finished, started),
        request=dict(request or {}),
        result={
            "answer": response.answer, "status": response.status, "run_id": response.run_id,
            "decision": msgspec.to_builtins(response.decision),
        },
        model=agent,
        timings=response.timings,
        activities=step_times,
        constraints=plan.analysis.constraints,
        premises=plan.premises,
        evidence=tuple(f for g in plan.subgraphs for f in g.facts),
        steps=steps,
        answer=response.answer or None,
        verdicts=result.verdicts,
        ontologies=ontologies,
    )


def _turn_record(plan: Plan, result: ReasonResult, agent: ModelAgent, turn: TurnRun, *, tenant_id: str,
                 key_id: str | None, started: datetime, kind: RunKind) -> RunRecord:
    """A session turn's run record (see :func:`run_record`)."""
    finished = turn.finished
    steps = tuple(
        StepTrace(
            id=f"{spec.view}/{s.id}", text=s.text, started_at=started, ended_at=finished,
            confidence=s.confidence, view=spec.view,
            evidence_ids=tuple(dict.fromkeys((*s.evidence_cited, *s.evidence_used))),
            premise_ids=tuple(p for p in s.premise_ids if p in spec.premise_ids),
            verdicts=s.verdicts, calibration_hint=s.calibration_hint,
        )
        for spec, branch in zip(result.branch_specs, result.branches)
        for s in branch.steps
    )
    return RunRecord(
        tenant_id=tenant_id, key_id=key_id, kind=kind,
        status=str(result.status), prompt=turn.prompt, started_at=started, finished_at=finished,
        request={"prompt": turn.prompt, "options": msgspec.to_builtins(turn.options), "session_id": turn.session_id},
        result={
            "answer": result.answer, "status": str(result.status),
            "recomputed": list(result.recomputed), "reused": list(result.reused),
            "premises": dict(turn.premises), "conflict": result.conflict,
        },
        session_id=turn.session_id,
        model=agent,
        timings=dict(result.timings),
        constraints=plan.active_constraints, premises=plan.premises,
        evidence=tuple(f for s in plan.branches for f in s.facts),
        steps=steps, answer=result.answer, verdicts=result.verdicts,
        reinferences=(turn.reinference,) if turn.reinference is not None else (),
    )


def model_agent(identity: ModelIdentity) -> ModelAgent:
    """The provenance agent of the loaded model: the identity's fields that ``ModelAgent`` records."""
    return ModelAgent(**{name: getattr(identity, name) for name in ModelAgent.__struct_fields__})
