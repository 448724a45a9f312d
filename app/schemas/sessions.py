"""Schemas of sessions, turns, premise retraction / amendment and feedback."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from app.schemas.constraints import Profile
from app.schemas.reason import ReasonResponse
from inference.pipeline import ReasonOptions

__all__ = [
    "AnswerOut",
    "FeedbackConstraint",
    "FeedbackCreate",
    "FeedbackItem",
    "FeedbackResult",
    "PolicyChangeOut",
    "PremiseAmend",
    "PremiseOut",
    "ReinferenceOut",
    "SessionCreate",
    "SessionOut",
    "TurnBranchOut",
    "TurnCreate",
    "TurnOut",
    "TurnResult",
    "TurnStepOut",
    "VerdictOut",
]

_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
_Text = Annotated[str, msgspec.Meta(min_length=1, max_length=4000)]


class SessionCreate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``domain``: the ontology whose evidence grounds every turn; ``profile``:
    default constraints applied to every turn unless the prompt overrides them."""

    domain: _Name | None = None
    profile: Profile | None = None


class TurnCreate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A new prompt in the session; ``options`` as ``POST /v1/reason`` takes them."""

    prompt: Annotated[str, msgspec.Meta(min_length=1)]
    options: ReasonOptions = msgspec.field(default_factory=ReasonOptions)


class PremiseAmend(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A new value ("25%") or a whole new text for a premise; at least one."""

    value: _Text | None = None
    text: _Text | None = None


class PremiseOut(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    text: str
    topic: str
    value: str | None
    status: Literal["active", "retracted", "amended"]
    turn: int
    run_id: str | None
    created_at: datetime
    updated_at: datetime
    history: list[dict[str, Any]] = msgspec.field(default_factory=list)


class TurnOut(msgspec.Struct, frozen=True, kw_only=True):
    """One run of the session: a reasoning turn or a re-inference."""

    run_id: str
    kind: str
    status: str
    prompt: str
    created_at: datetime
    duration_ms: float | None


class TurnStepOut(msgspec.Struct, frozen=True, kw_only=True):
    """A step of a session turn's answer: its DAG node id (``t<turn>:step:<view>/<id>``) and what
    it rests on. ``/v1/reason``'s ``StepOut`` is the fuller per-run view (decode diagnostics)."""

    id: str
    text: str
    confidence: float
    evidence_ids: list[str] = msgspec.field(default_factory=list)
    premise_ids: list[str] = msgspec.field(default_factory=list)
    calibration_hint: str | None = None
    kind: str = "supported"
    support: list[str] = msgspec.field(default_factory=list)


class TurnBranchOut(msgspec.Struct, frozen=True, kw_only=True):
    """An evidence branch of a session turn with its steps and whether the latest re-inference
    recomputed it. ``/v1/reason``'s ``BranchOut`` names its steps by id instead."""

    view: str
    relevance: float
    premise_ids: list[str]
    evidence_ids: list[str]
    text: str
    confidence: float
    recomputed: bool
    steps: list[TurnStepOut]


class VerdictOut(msgspec.Struct, frozen=True, kw_only=True):
    constraint_id: str
    satisfied: bool
    detail: str = ""


class AnswerOut(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of one turn as it stands now (after any re-inference)."""

    turn: int
    run_id: str
    status: str
    text: str
    reasoning_path: list[str]
    branches: list[TurnBranchOut]
    verdicts: list[VerdictOut]


class ReinferenceOut(msgspec.Struct, frozen=True, kw_only=True):
    """What a partial re-inference recomputed, what it reused, and what it saved.

    ``recomputed`` / ``reused`` / ``removed`` are DAG node ids (``removed``: a
    branch that only existed for the changed premise, e.g. ``assumptions``).
    ``full_rerun_estimate_ms`` is the prefill plus decode time of the turn's
    last full run: what re-running the turn from scratch costs.
    """

    turn: int
    previous_run_id: str
    changed_premise_ids: list[str]
    recomputed: list[str]
    reused: list[str]
    removed: list[str]
    elapsed_ms: float
    full_rerun_estimate_ms: float
    saved_ms: float


class SessionOut(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    domain: str | None
    profile: Profile | None
    created_at: datetime
    last_active_at: datetime
    expires_at: datetime
    premises: list[PremiseOut]
    turns: list[TurnOut]
    current_answer: AnswerOut | None


class TurnResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of a turn.

    ``kind``: ``reason`` (a new question), ``retraction`` / ``amendment``
    (premises changed, partial re-inference ran) or ``confirmation``
    (``status == "needs_confirmation"``: the turn named a premise
    ambiguously; ``candidates`` lists them and nothing was recomputed).
    ``response`` is the run in the shape ``POST /v1/reason`` answers
    (constraints with verdicts, evidence, steps with confidence); its premise
    ids are the run's own (``p1``), ``premises`` maps them to session ids.
    """

    session_id: str
    kind: Literal["reason", "retraction", "amendment", "confirmation"]
    status: str
    run_id: str | None
    answer: AnswerOut | None
    premises: list[PremiseOut]
    reinference: ReinferenceOut | None = None
    candidates: list[PremiseOut] = msgspec.field(default_factory=list)
    message: str = ""
    response: ReasonResponse | None = None


class FeedbackConstraint(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A constraint the run should have had (``constraint_missing``)."""

    kind: _Name
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    hardness: Literal["hard", "soft"] = "hard"


class FeedbackItem(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    kind: Literal["constraint_wrong", "constraint_missing", "weigh_more", "weigh_less", "step_wrong"]
    constraint_id: _Name | None = None
    constraint: FeedbackConstraint | None = None
    step_id: _Name | None = None
    comment: Annotated[str, msgspec.Meta(max_length=2000)] = ""


class FeedbackCreate(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    items: Annotated[list[FeedbackItem], msgspec.Meta(min_length=1, max_length=50)]


class PolicyChangeOut(msgspec.Struct, frozen=True, kw_only=True):
    target: str
    field: str
    before: Any
    after: Any
    feedback: str


class FeedbackResult(msgspec.Struct, frozen=True, kw_only=True):
    """``applied`` is False for a run outside any session: the feedback is
    recorded for audit, but there is no later turn for it to change."""

    run_id: str
    session_id: str | None
    applied: bool
    changes: list[PolicyChangeOut]
    audit_event_id: str | None
