"""Session DAG recording: the node ids and traces a turn adds to the session's reasoning DAG.

A turn's branches, steps and conclusions are recorded as traces keyed the way
the API names them (steps ``view/step id`` per turn), their premise ids the
session's stored ones; a re-run turn's nodes split into recomputed and reused;
the feedback policy shows on a turn's constraint and branch nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from inference.pipeline import ReasonResult
from reasoning.constraints.model import Constraint, Kind
from reasoning.dag import BranchTrace, ConclusionTrace, DagStep, NodeKind, ReasoningDag, node_id
from reasoning.feedback import SessionPolicy

__all__ = ["branch_traces", "classify_nodes", "conclusion_traces", "policy_marks", "step_node"]


def step_node(turn: int, view: str, step_id: str) -> str:
    """The DAG node of a step: per turn, keyed ``view/step id``.

    Step ids (``<view>.S<k>``) name their view already; the key keeps the
    view prefix so the DAGs of sessions stored earlier still resolve.
    """
    return node_id(NodeKind.STEP, f"{view}/{step_id}", turn=turn)


def conclusion_traces(result: ReasonResult, mapping: Mapping[str, str]) -> list[ConclusionTrace]:
    """DAG traces of the decision's conclusions, premise ids mapped to the stored premise ids."""
    if result.decision is None:
        return []
    return [
        ConclusionTrace(
            key=f"{c.rule_id}/{c.action.rsplit('#', 1)[-1].rsplit('/', 1)[-1]}", statement=c.statement_en,
            rule_id=c.rule_id, premise_ids=tuple(mapping[p] for p in c.premise_ids if p in mapping),
            evidence_ids=c.evidence_ids,
        )
        for c in result.decision.conclusions
    ]


def branch_traces(result: ReasonResult, mapping: Mapping[str, str], recomputed: set[str] | None) -> list[BranchTrace]:
    """DAG traces of a result's branches, premise ids mapped to the stored premise ids."""
    out: list[BranchTrace] = []
    for spec, branch in zip(result.branch_specs, result.branches):
        premise_ids = tuple(mapping[p] for p in spec.premise_ids if p in mapping)
        out.append(
            BranchTrace(
                view=spec.view,
                premise_ids=premise_ids,
                evidence_ids=tuple(f.id for f in spec.facts),
                steps=tuple(
                    DagStep(
                        id=f"{spec.view}/{s.id}",
                        text=s.text,
                        confidence=s.confidence,
                        evidence_ids=tuple(dict.fromkeys((*s.evidence_cited, *s.evidence_used))),
                        premise_ids=tuple(mapping[p] for p in s.premise_ids if p in mapping),
                    )
                    for s in branch.steps
                ),
                text=branch.text,
                confidence=branch.confidence,
                recomputed=recomputed is None or spec.view in recomputed,
            )
        )
    return out


def classify_nodes(turn: int, result: ReasonResult, recomputed_views: set[str], *,
              answer_changed: bool) -> tuple[list[str], list[str]]:
    """DAG node ids of a re-run turn, split into recomputed and reused."""
    done: list[str] = []
    kept: list[str] = []
    for spec, branch in zip(result.branch_specs, result.branches):
        ids = [node_id(NodeKind.BRANCH, spec.view, turn=turn), *(step_node(turn, spec.view, s.id) for s in branch.steps)]
        (done if spec.view in recomputed_views else kept).extend(ids)
    (done if answer_changed else kept).append(node_id(NodeKind.ANSWER, "answer", turn=turn))
    return done, kept


def policy_marks(dag: ReasoningDag, turn: int, state: Mapping[str, Any]) -> None:
    """Show the session policy on a turn's constraint and branch nodes (weight, priority, disabled)."""
    policy = msgspec.convert(state.get("policy") or {}, SessionPolicy)
    for node in dag.nodes(NodeKind.CONSTRAINT):
        if node.attrs.get("turn") != turn:
            continue
        probe = Constraint(id="probe", kind=Kind(node.attrs["kind"]), params=node.attrs.get("params") or {})
        adj = policy.adjustment(probe)
        dag.update(node.id, priority=adj.priority, weight_factor=adj.weight_factor, disabled=adj.disabled)
    for node in dag.nodes(NodeKind.BRANCH):
        if node.attrs.get("turn") == turn:
            dag.update(node.id, view_weight=policy.view_weight(node.label))
