"""Schemas of ``POST /v1/reason``: the request, and the answer with what explains it."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from app.schemas.constraints import EntropyOut, Profile
from inference.decoder.endings import End
from inference.pipeline import ReasonOptions
from reasoning.budget import Budget
from reasoning.constraints.model import Constraint, Premise, Span, Verdict
from reasoning.evidence.model import EvidenceSubgraph, LinkedEntity
from reasoning.rules.decide import decision_sentence
from reasoning.rules.model import Decision, NearestRule

__all__ = [
    "BranchOut",
    "CaseFactOut",
    "ConclusionOut",
    "ConflictSpan",
    "ConstraintOut",
    "DecisionOut",
    "FactSpan",
    "MissingOut",
    "PruningOut",
    "ReasonRequest",
    "ReasonResponse",
    "StepOut",
]


class ReasonRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A prompt to answer; ``domain`` picks the ontology whose evidence grounds it."""

    prompt: str
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    session_id: str | None = None
    profile: Profile | None = None
    options: ReasonOptions = msgspec.field(default_factory=ReasonOptions)


class ConstraintOut(msgspec.Struct, frozen=True, kw_only=True):
    """A constraint as extracted, with its verdict on the final answer (None: not decoded)."""

    id: str
    kind: str
    params: dict[str, Any]
    hardness: str
    scope: str
    origin: str
    source: Span | None
    confidence: float
    verdict: Verdict | None


class StepOut(msgspec.Struct, frozen=True, kw_only=True):
    """One step of the answer (docs/reasoning.md); ``kind`` is one of ``reasoning.steps.STEP_KINDS``
    and ``support`` the evidence ids that support the step."""

    id: str
    branch: str
    text: str
    confidence: float
    calibration_hint: str | None
    evidence_cited: list[str]
    evidence_used: list[str]
    premise_ids: list[str]
    verdicts: list[Verdict]
    entropy: float
    contrast: float | None
    violation: str | None
    repaired: int
    kind: str = "supported"
    support: list[str] = msgspec.field(default_factory=list)


class BranchOut(msgspec.Struct, frozen=True, kw_only=True):
    view: str
    relevance: float
    text: str
    confidence: float
    weight: float
    agrees: bool
    premise_ids: list[str]
    evidence_ids: list[str]
    step_ids: list[str]
    #: How the branch's text ended: ``model`` (its own stop), ``landed`` (a budget ended it on a
    #: complete sentence or closed structure) or ``budget_cut`` (no complete sentence fitted).
    end: End = "model"


class PruningOut(msgspec.Struct, frozen=True, kw_only=True):
    pruned: dict[str, int]
    steps_checked: int
    repairs: int
    unrepaired: int
    counterfactual_scored: int
    counterfactual_flops_share: float
    constraint_check_share: float
    prefix_cache_hit: bool
    #: Complete claims checked against the decision (every one, steering on or off), and
    #: how many contradicted it (pruned when steering, else flagged as the step's violation).
    claims_checked: int = 0
    claims_contradicted: int = 0
    #: Distinct claims that wanted a counterfactual check and got none, and why (reason -> claims).
    counterfactual_skipped: int = 0
    counterfactual_skip_reasons: dict[str, int] = msgspec.field(default_factory=dict)


class ConflictSpan(msgspec.Struct, frozen=True, kw_only=True):
    a: str
    b: str
    reason: str
    spans: list[Span | None]


class FactSpan(msgspec.Struct, frozen=True, kw_only=True):
    """Where in the request a case fact was read (character offsets, end exclusive)."""

    start: int
    end: int
    text: str


class CaseFactOut(msgspec.Struct, frozen=True, kw_only=True):
    """A fact of the request that fired a rule (terms as N-Triples / bare IRIs)."""

    subject: str
    predicate: str
    object: str
    span: FactSpan | None


class ConclusionOut(msgspec.Struct, frozen=True, kw_only=True):
    """One thing one decision rule derived for the case, and what it rests on.

    ``evidence_ids`` are the ids of the rule's facts in ``evidence`` (what
    the answer cites); ``premise_ids`` the request's premises among the facts.
    """

    statement: str
    rule_id: str
    action: str
    evidence_ids: list[str]
    case_facts: list[CaseFactOut]
    premise_ids: list[str]


class OutcomeOut(msgspec.Struct, frozen=True, kw_only=True):
    """What values of a missing input would decide under one rule (``condition`` empty: any value)."""

    rule_id: str
    condition: str
    actions: list[str]
    statement: str


class MissingOut(msgspec.Struct, frozen=True, kw_only=True):
    """An input the request lacks that would change the decision, the rules that read it, and
    what its values would decide (``outcomes``)."""

    input: str
    label: str
    rule_ids: list[str]
    outcomes: list[OutcomeOut] = msgspec.field(default_factory=list)


class FailingOut(msgspec.Struct, frozen=True, kw_only=True):
    """A condition of the nearest rule the case does not meet: ``required`` what the rule
    requires, ``actual`` what the case has (empty when the case does not state it)."""

    kind: str
    required: str
    actual: str
    input: str | None


class NearestOut(msgspec.Struct, frozen=True, kw_only=True):
    """For ``no_rule_applies``: the rule that came nearest to firing and what kept it from firing."""

    rule_id: str
    statement: str
    failing: list[FailingOut]
    actions: list[str]


class DecisionOut(msgspec.Struct, frozen=True, kw_only=True):
    """What the domain's decision rules give for the request.

    ``status``: ``decided`` (conclusions, all rules evaluated, none
    conflicting), ``no_rule_applies`` (the case is complete and no rule
    requires anything), ``undetermined`` (``missing`` names the inputs a rule
    needs) or ``conflicting`` (two conclusions declared in conflict both hold).
    ``statement`` is the sentence the steered answer states; ``nearest`` (only
    for ``no_rule_applies``, when some rule comes near) the rule nearest to firing.
    """

    status: str
    statement: str
    conclusions: list[ConclusionOut]
    missing: list[MissingOut]
    ontology_version: str
    rules_evaluated: int
    nearest: NearestOut | None = None


def decision_out(decision: Decision | None, language: str) -> DecisionOut | None:
    """The public shape of a decision, in ``language`` (``zh`` or English); None stays None."""
    if decision is None:
        return None
    lang = "zh" if language.startswith("zh") else "en"
    return DecisionOut(
        status=decision.status,
        statement=decision_sentence(decision, lang),
        conclusions=[
            ConclusionOut(
                statement=c.statement(lang),
                rule_id=c.rule_id,
                action=c.action,
                evidence_ids=list(c.evidence_ids),
                case_facts=[
                    CaseFactOut(
                        subject=f.subject, predicate=f.predicate, object=f.object,
                        span=FactSpan(start=f.start, end=f.end, text=f.text)
                        if f.start is not None and f.end is not None else None,
                    )
                    for f in c.case_facts
                ],
                premise_ids=list(c.premise_ids),
            )
            for c in decision.conclusions
        ],
        missing=[
            MissingOut(
                input=m.input, label=m.label_zh if lang == "zh" else m.label_en, rule_ids=list(m.rule_ids),
                outcomes=[
                    OutcomeOut(rule_id=o.rule_id, condition=o.condition_zh if lang == "zh" else o.condition_en,
                               actions=list(o.actions), statement=o.statement(lang))
                    for o in m.outcomes
                ],
            )
            for m in decision.missing
        ],
        ontology_version=decision.ontology_version,
        rules_evaluated=decision.rules_evaluated,
        nearest=_nearest_out(decision.nearest, lang),
    )


def _nearest_out(nearest: NearestRule | None, lang: str) -> NearestOut | None:
    if nearest is None:
        return None
    zh = lang == "zh"
    return NearestOut(
        rule_id=nearest.rule_id,
        statement=nearest.statement(lang),
        failing=[
            FailingOut(kind=f.kind, required=f.required_zh if zh else f.required_en,
                       actual=f.actual_zh if zh else f.actual_en, input=f.input)
            for f in nearest.failing
        ],
        actions=list(nearest.actions),
    )


class ReasonResponse(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of one run.

    ``status`` is ``ok``, or ``needs_confirmation`` when the constraints
    conflict (``conflicts`` names both source spans) or no decode can satisfy
    them (``detail`` says why); nothing is decoded then and ``answer`` is empty.
    """

    run_id: str
    status: str
    answer: str
    language: str
    detail: str | None
    constraints: list[ConstraintOut]
    conflicts: list[ConflictSpan]
    premises: list[Premise]
    entropy: EntropyOut
    budget: Budget
    linked_entities: list[LinkedEntity]
    evidence: list[EvidenceSubgraph]
    branches: list[BranchOut]
    reasoning_path: list[str]
    confidence_by_step: dict[str, float]
    steps: list[StepOut]
    pruning: PruningOut | None
    violations: list[str]
    usage: dict[str, int]
    timings: dict[str, float]
    model: dict[str, Any]
    session_id: str | None = None
    recomputed: list[str] = msgspec.field(default_factory=list)
    reused: list[str] = msgspec.field(default_factory=list)
    #: The pending confirmation a ``needs_confirmation`` run opened (``/v1/confirmations``).
    confirmation_id: str | None = None
    #: What the domain's decision rules give (None without a domain or when it declares no rules).
    decision: DecisionOut | None = None
    #: How the answer ended (``model`` | ``landed`` | ``budget_cut``, as ``BranchOut.end``);
    #: None when nothing was decoded.
    end: End | None = None


def constraint_out(constraint: Constraint, verdict: Verdict | None) -> ConstraintOut:
    return ConstraintOut(
        id=constraint.id,
        kind=str(constraint.kind),
        params=dict(constraint.params),
        hardness=str(constraint.hardness),
        scope=str(constraint.scope),
        origin=str(constraint.origin),
        source=constraint.source,
        confidence=constraint.confidence,
        verdict=verdict,
    )
