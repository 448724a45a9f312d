"""Feedback on a run, turned into the session's policy for the next turns.

A reviewer says of a run: this constraint was wrong (should not have been
applied), this one was missing, this one should weigh more or less, or this
step was wrong. :func:`apply_feedback` folds such items into a
:class:`SessionPolicy` and returns the exact changes (before / after) so the
caller can record them for audit and show them in the session graph.

Constraint ids are only unique within a run, so the policy keys adjustments by
the constraint's *signature* (kind and canonical parameters): "under 80 words"
in the next turn gets the weight the reviewer asked for in this one.

How the policy acts on a later turn (:meth:`SessionPolicy.adjust_constraints`,
:meth:`SessionPolicy.view_weight`):

- ``constraint_wrong``: the constraint is dropped from later turns;
- ``constraint_missing``: the given constraint is added to every later turn
  (with origin ``user``) unless the turn already has one of that signature;
- ``weigh_more`` / ``weigh_less``: weight times / divided by
  :data:`WEIGHT_FACTOR` (kept within [:data:`MIN_WEIGHT`, :data:`MAX_WEIGHT`])
  and priority +1 / -1; a soft constraint raised to priority >= 1 becomes
  hard (it gets a decode controller), a hard one lowered below 0 becomes soft;
- ``step_wrong``: the evidence view of the step's branch weighs
  :data:`VIEW_PENALTY` times less in the aggregation of later turns, and the
  hard constraints whose verdict on that run failed gain one priority.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

import msgspec

from reasoning.constraints.model import Constraint, Hardness, Origin, Verdict
from reasoning.errors import InvalidInput, NotFound

__all__ = [
    "MAX_WEIGHT",
    "MIN_WEIGHT",
    "VIEW_PENALTY",
    "WEIGHT_FACTOR",
    "ConstraintAdjustment",
    "Feedback",
    "FeedbackKind",
    "PolicyChange",
    "RunView",
    "SessionPolicy",
    "apply_feedback",
    "constraint_signature",
]

WEIGHT_FACTOR = 1.5
MIN_WEIGHT = 0.1
MAX_WEIGHT = 8.0
VIEW_PENALTY = 0.5


class FeedbackKind(StrEnum):
    CONSTRAINT_WRONG = "constraint_wrong"
    CONSTRAINT_MISSING = "constraint_missing"
    WEIGH_MORE = "weigh_more"
    WEIGH_LESS = "weigh_less"
    STEP_WRONG = "step_wrong"


class Feedback(msgspec.Struct, frozen=True, kw_only=True):
    """One item of feedback. Which target field is required depends on ``kind``:
    ``constraint_id`` for wrong / weigh_more / weigh_less, ``constraint`` for
    missing (its ``id`` is ignored), ``step_id`` for step_wrong."""

    kind: FeedbackKind
    constraint_id: str | None = None
    constraint: Constraint | None = None
    step_id: str | None = None
    comment: str = ""


class ConstraintAdjustment(msgspec.Struct, frozen=True, kw_only=True):
    """What the policy does to constraints of one signature."""

    weight_factor: float = 1.0
    priority: int = 0
    disabled: bool = False


class SessionPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """The accumulated effect of all feedback in a session (JSON-serialisable)."""

    adjustments: dict[str, ConstraintAdjustment] = msgspec.field(default_factory=dict)
    added: tuple[Constraint, ...] = ()
    view_weights: dict[str, float] = msgspec.field(default_factory=dict)

    def adjustment(self, constraint: Constraint) -> ConstraintAdjustment:
        return self.adjustments.get(constraint_signature(constraint), ConstraintAdjustment())

    def view_weight(self, view: str) -> float:
        """Multiplier for a view's relevance in the aggregation (1.0 when untouched)."""
        return self.view_weights.get(view, 1.0)

    def adjust_constraints(self, constraints: Sequence[Constraint]) -> tuple[Constraint, ...]:
        """The constraints a later turn runs with: disabled ones dropped, weights
        scaled, hardness set by priority, missing ones appended (ids ``F1``...)."""
        out: list[Constraint] = []
        for c in constraints:
            adj = self.adjustment(c)
            if adj.disabled:
                continue
            out.append(_adjusted(c, adj))
        present = {constraint_signature(c) for c in out}
        for n, extra in enumerate(self.added, start=1):
            if constraint_signature(extra) not in present:
                adj = self.adjustment(extra)
                if not adj.disabled:
                    out.append(_adjusted(msgspec.structs.replace(extra, id=f"F{n}"), adj))
        return tuple(out)


class PolicyChange(msgspec.Struct, frozen=True, kw_only=True):
    """One change made by feedback, for the audit log and the session graph."""

    target: str
    field: str
    before: Any
    after: Any
    feedback: FeedbackKind


class RunView(msgspec.Struct, frozen=True, kw_only=True):
    """What feedback needs to know of the run it is about."""

    constraints: tuple[Constraint, ...]
    verdicts: tuple[Verdict, ...] = ()
    step_views: dict[str, str] = msgspec.field(default_factory=dict)


def constraint_signature(constraint: Constraint) -> str:
    """``kind`` plus canonical JSON of ``params``: stable across runs and ids."""
    params = json.dumps(constraint.params, sort_keys=True, ensure_ascii=False, default=str)
    return f"{constraint.kind.value}:{params}"


def _adjusted(c: Constraint, adj: ConstraintAdjustment) -> Constraint:
    weight = min(MAX_WEIGHT, max(MIN_WEIGHT, c.weight * adj.weight_factor))
    hardness = c.hardness
    if adj.priority >= 1:
        hardness = Hardness.HARD
    elif adj.priority < 0:
        hardness = Hardness.SOFT
    if weight == c.weight and hardness is c.hardness:
        return c
    return msgspec.structs.replace(c, weight=weight, hardness=hardness)


def _find(run: RunView, constraint_id: str | None) -> Constraint:
    if not constraint_id:
        raise InvalidInput("this kind of feedback needs constraint_id")
    for c in run.constraints:
        if c.id == constraint_id:
            return c
    raise NotFound(f"the run has no constraint {constraint_id!r}")


class _Builder:
    """Mutable scratch state while one batch of feedback is applied."""

    def __init__(self, policy: SessionPolicy) -> None:
        self.adjustments = dict(policy.adjustments)
        self.added = list(policy.added)
        self.views = dict(policy.view_weights)
        self.changes: list[PolicyChange] = []

    def adjust(self, c: Constraint, kind: FeedbackKind, **fields: Any) -> None:
        sig = constraint_signature(c)
        old = self.adjustments.get(sig, ConstraintAdjustment())
        new = msgspec.structs.replace(old, **fields)
        self.adjustments[sig] = new
        for name in fields:
            self.changes.append(
                PolicyChange(target=f"constraint:{c.id}", field=name,
                             before=getattr(old, name), after=getattr(new, name), feedback=kind)
            )

    def policy(self) -> SessionPolicy:
        return SessionPolicy(adjustments=self.adjustments, added=tuple(self.added),
                             view_weights=self.views)


def _apply_one(b: _Builder, run: RunView, item: Feedback) -> None:
    kind = item.kind
    if kind is FeedbackKind.CONSTRAINT_MISSING:
        if item.constraint is None:
            raise InvalidInput("constraint_missing feedback needs the missing constraint")
        extra = msgspec.structs.replace(item.constraint, origin=Origin.USER, source=None)
        sig = constraint_signature(extra)
        if all(constraint_signature(a) != sig for a in b.added):
            b.added.append(extra)
            b.changes.append(PolicyChange(target=f"signature:{sig}", field="added",
                                          before=False, after=True, feedback=kind))
        if b.adjustments.get(sig, ConstraintAdjustment()).disabled:
            b.adjust(extra, kind, disabled=False)
        return
    if kind is FeedbackKind.STEP_WRONG:
        if not item.step_id:
            raise InvalidInput("step_wrong feedback needs step_id")
        view = run.step_views.get(item.step_id)
        if view is None:
            raise NotFound(f"the run has no step {item.step_id!r}")
        before = b.views.get(view, 1.0)
        b.views[view] = before * VIEW_PENALTY
        b.changes.append(PolicyChange(target=f"view:{view}", field="weight",
                                      before=before, after=b.views[view], feedback=kind))
        failed = {v.constraint_id for v in run.verdicts if not v.satisfied}
        for c in run.constraints:
            if c.id in failed and c.hardness is Hardness.HARD:
                old = b.adjustments.get(constraint_signature(c), ConstraintAdjustment())
                b.adjust(c, kind, priority=old.priority + 1)
        return
    c = _find(run, item.constraint_id)
    old = b.adjustments.get(constraint_signature(c), ConstraintAdjustment())
    if kind is FeedbackKind.CONSTRAINT_WRONG:
        b.adjust(c, kind, disabled=True)
    elif kind is FeedbackKind.WEIGH_MORE:
        b.adjust(c, kind, weight_factor=_clamp_factor(c, old.weight_factor * WEIGHT_FACTOR),
                 priority=old.priority + 1)
    else:
        b.adjust(c, kind, weight_factor=_clamp_factor(c, old.weight_factor / WEIGHT_FACTOR),
                 priority=old.priority - 1)


def _clamp_factor(c: Constraint, factor: float) -> float:
    """Keep ``c.weight * factor`` inside [MIN_WEIGHT, MAX_WEIGHT] so repeated
    feedback cannot push a weight to zero or to infinity."""
    base = c.weight if c.weight > 0 else 1.0
    return min(MAX_WEIGHT / base, max(MIN_WEIGHT / base, factor))


def apply_feedback(
    policy: SessionPolicy, run: RunView, items: Iterable[Feedback]
) -> tuple[SessionPolicy, tuple[PolicyChange, ...]]:
    """Fold ``items`` into ``policy``. All-or-nothing: if any item is invalid
    (unknown constraint or step, missing target) the error is raised and the
    caller's policy is unchanged (the input policy is never mutated)."""
    builder = _Builder(policy)
    for item in items:
        _apply_one(builder, run, item)
    return builder.policy(), tuple(builder.changes)

