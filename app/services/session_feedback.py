"""Feedback on a run: folded into its session's policy (always recorded for audit).

The policy (constraint adjustments and added constraints, view weights)
applies to the session's later turns (``apply_policy`` when a turn is
planned) and shows on the turn's DAG nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from app.schemas.sessions import FeedbackCreate, FeedbackResult, PolicyChangeOut
from app.services.session_core import SessionCore
from app.services.session_dag import policy_marks, step_node
from inference.pipeline import ReasonResult
from reasoning.constraints.model import Constraint, Hardness, Kind
from reasoning.errors import InvalidInput
from reasoning.feedback import Feedback, FeedbackKind, RunView, SessionPolicy, apply_feedback
from store import runs as run_store
from store import sessions as repo
from store.audit import append_event
from store.db import transaction
from store.models import Session as SessionRow

__all__ = ["SessionFeedback"]


class SessionFeedback(SessionCore):
    """Feedback on a run of the caller's, folded into the run's session policy."""

    async def feedback(self, run_id: str, data: FeedbackCreate) -> FeedbackResult:
        """Fold feedback on a run into its session's policy; always recorded for audit."""
        async with transaction(self.factory) as db:
            run = await run_store.get_run(db, self.tenant_id, run_id)
            session_id = run.session_id
        items = [_feedback_item(i) for i in data.items]
        if session_id is None:
            async with transaction(self.factory) as db:
                event = await append_event(
                    db, tenant_id=self.tenant_id, event_type="run.feedback", subject_type="run", subject_id=run_id,
                    payload={"items": msgspec.to_builtins(data.items), "applied": False, "key_id": self.key_id},
                )
            return FeedbackResult(run_id=run_id, session_id=None, applied=False, changes=[],
                                  audit_event_id=event.id)
        async with self.ws.lock(session_id), transaction(self.factory) as db:
            session = await self._load(db, session_id, for_update=True)
            turn = _turn_of_run(session, run_id)
            policy = msgspec.convert(session.state.get("policy") or {}, SessionPolicy)
            view = _run_view(turn)
            new_policy, changes = apply_feedback(policy, view, items)
            dag = repo.load_dag(session)
            state = {**session.state, "policy": msgspec.to_builtins(new_policy)}
            policy_marks(dag, int(turn["turn"]), state)
            event = await append_event(
                db, tenant_id=self.tenant_id, event_type="run.feedback", subject_type="run", subject_id=run_id,
                payload={"session_id": session_id, "items": msgspec.to_builtins(data.items), "applied": True,
                         "changes": msgspec.to_builtins(changes), "key_id": self.key_id},
            )
            await repo.save_session(db, session, expected_active_at=session.last_active_at, dag=dag,
                                    state=state)
        return FeedbackResult(
            run_id=run_id, session_id=session_id, applied=True,
            changes=[PolicyChangeOut(target=c.target, field=c.field, before=c.before, after=c.after,
                                     feedback=str(c.feedback)) for c in changes],
            audit_event_id=event.id,
        )


def _feedback_item(item: Any) -> Feedback:
    constraint = None
    if item.constraint is not None:
        try:
            kind = Kind(item.constraint.kind)
        except ValueError:
            raise InvalidInput(f"unknown constraint kind {item.constraint.kind!r}", field="constraint.kind") from None
        constraint = Constraint(id="feedback", kind=kind, params=dict(item.constraint.params),
                                hardness=Hardness(item.constraint.hardness))
    return Feedback(kind=FeedbackKind(item.kind), constraint_id=item.constraint_id, constraint=constraint,
                    step_id=item.step_id, comment=item.comment)


def _turn_of_run(session: SessionRow, run_id: str) -> dict[str, Any]:
    for t in session.state.get("turns", []):
        if run_id in t.get("runs", []):
            return dict(t)
    raise InvalidInput(f"run {run_id!r} is not a turn of session {session.id!r}")


def _run_view(turn: Mapping[str, Any]) -> RunView:
    """Constraints, verdicts and step ids (as the API shows them) of a turn's latest run."""
    result = msgspec.convert(turn["result"], ReasonResult)
    number = int(turn["turn"])
    step_views = {
        step_node(number, spec.view, s.id): spec.view
        for spec, branch in zip(result.branch_specs, result.branches)
        for s in branch.steps
    }
    step_views.update({f"{spec.view}/{s.id}": spec.view
                       for spec, branch in zip(result.branch_specs, result.branches) for s in branch.steps})
    return RunView(
        constraints=tuple(msgspec.convert(c, Constraint) for c in turn.get("constraints", [])),
        verdicts=result.verdicts,
        step_views=step_views,
    )
