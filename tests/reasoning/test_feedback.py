"""Feedback on a run changes the constraints and view weights of later turns."""

from __future__ import annotations

import msgspec
import pytest

from reasoning.constraints.model import Constraint, Hardness, Kind, Relation, Verdict
from reasoning.errors import InvalidInput, NotFound
from reasoning.feedback import (
    MAX_WEIGHT,
    MIN_WEIGHT,
    VIEW_PENALTY,
    WEIGHT_FACTOR,
    Feedback,
    FeedbackKind,
    RunView,
    SessionPolicy,
    apply_feedback,
    constraint_signature,
)

WORDS = Constraint(id="C1", kind=Kind.WORD_COUNT, params={"relation": Relation.LESS_THAN, "n": 80})
CITE = Constraint(id="C2", kind=Kind.CITE_SOURCES, params={"min": 1}, hardness=Hardness.SOFT)
LOWER = Constraint(id="C3", kind=Kind.ALL_LOWERCASE)
RUN = RunView(
    constraints=(WORDS, CITE, LOWER),
    verdicts=(Verdict(constraint_id="C1", satisfied=False), Verdict(constraint_id="C3", satisfied=True)),
    step_views={"compliance.1": "compliance", "fund_flow.1": "fund_flow"},
)


def _next_turn(policy: SessionPolicy) -> dict[str, Constraint]:
    """The same constraints re-extracted in a later turn, under new ids."""
    later = (
        msgspec.structs.replace(WORDS, id="C7"),
        msgspec.structs.replace(CITE, id="C8"),
        msgspec.structs.replace(LOWER, id="C9"),
    )
    return {c.kind.value: c for c in policy.adjust_constraints(later)}


def test_wrong_constraint_is_dropped_from_later_turns() -> None:
    policy, changes = apply_feedback(SessionPolicy(), RUN, [
        Feedback(kind=FeedbackKind.CONSTRAINT_WRONG, constraint_id="C3")])
    assert "all_lowercase" not in _next_turn(policy)
    assert [(c.target, c.field, c.before, c.after) for c in changes] == [
        ("constraint:C3", "disabled", False, True)]


def test_weigh_more_scales_weight_and_promotes_a_soft_constraint() -> None:
    policy, _ = apply_feedback(SessionPolicy(), RUN, [
        Feedback(kind=FeedbackKind.WEIGH_MORE, constraint_id="C2")])
    cite = _next_turn(policy)["cite_sources"]
    assert cite.weight == pytest.approx(CITE.weight * WEIGHT_FACTOR)
    assert cite.hardness is Hardness.HARD
    assert cite.id == "C8"


def test_weigh_less_demotes_a_hard_constraint_and_weights_stay_bounded() -> None:
    items = [Feedback(kind=FeedbackKind.WEIGH_LESS, constraint_id="C1")] * 30
    policy, changes = apply_feedback(SessionPolicy(), RUN, items)
    words = _next_turn(policy)["word_count"]
    assert words.hardness is Hardness.SOFT
    assert words.weight == pytest.approx(MIN_WEIGHT)
    assert len(changes) == 60
    up, _ = apply_feedback(SessionPolicy(), RUN, [
        Feedback(kind=FeedbackKind.WEIGH_MORE, constraint_id="C1")] * 30)
    assert _next_turn(up)["word_count"].weight == pytest.approx(MAX_WEIGHT)


def test_missing_constraint_is_added_once_and_not_duplicated() -> None:
    missing = Constraint(id="x", kind=Kind.NO_COMMA)
    policy, _ = apply_feedback(SessionPolicy(), RUN, [
        Feedback(kind=FeedbackKind.CONSTRAINT_MISSING, constraint=missing)] * 2)
    later = _next_turn(policy)
    assert later["no_comma"].id == "F1"
    assert len(policy.added) == 1
    present = policy.adjust_constraints([Constraint(id="C5", kind=Kind.NO_COMMA)])
    assert [c.id for c in present] == ["C5"]


def test_step_wrong_lowers_the_view_and_raises_failed_hard_constraints() -> None:
    policy, changes = apply_feedback(SessionPolicy(), RUN, [
        Feedback(kind=FeedbackKind.STEP_WRONG, step_id="compliance.1")])
    assert policy.view_weight("compliance") == pytest.approx(VIEW_PENALTY)
    assert policy.view_weight("fund_flow") == 1.0
    assert policy.adjustment(WORDS).priority == 1
    assert policy.adjustment(LOWER).priority == 0
    assert {c.target for c in changes} == {"view:compliance", "constraint:C1"}


def test_policy_round_trips_through_json() -> None:
    policy, _ = apply_feedback(SessionPolicy(), RUN, [
        Feedback(kind=FeedbackKind.WEIGH_MORE, constraint_id="C2"),
        Feedback(kind=FeedbackKind.CONSTRAINT_MISSING, constraint=Constraint(id="x", kind=Kind.TITLE)),
        Feedback(kind=FeedbackKind.STEP_WRONG, step_id="fund_flow.1"),
    ])
    back = msgspec.json.decode(msgspec.json.encode(policy), type=SessionPolicy)
    assert back == policy


def test_signature_ignores_ids_and_param_order() -> None:
    a = Constraint(id="A", kind=Kind.KEYWORD_FREQUENCY, params={"keyword": "risk", "n": 2})
    b = Constraint(id="B", kind=Kind.KEYWORD_FREQUENCY, params={"n": 2, "keyword": "risk"})
    assert constraint_signature(a) == constraint_signature(b)


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (Feedback(kind=FeedbackKind.WEIGH_MORE, constraint_id="C99"), NotFound),
        (Feedback(kind=FeedbackKind.WEIGH_MORE), InvalidInput),
        (Feedback(kind=FeedbackKind.STEP_WRONG, step_id="nope.1"), NotFound),
        (Feedback(kind=FeedbackKind.STEP_WRONG), InvalidInput),
        (Feedback(kind=FeedbackKind.CONSTRAINT_MISSING), InvalidInput),
    ],
)
def test_invalid_feedback_changes_nothing(item: Feedback, error: type[Exception]) -> None:
    start, _ = apply_feedback(SessionPolicy(), RUN, [
        Feedback(kind=FeedbackKind.WEIGH_MORE, constraint_id="C1")])
    with pytest.raises(error):
        apply_feedback(start, RUN, [Feedback(kind=FeedbackKind.WEIGH_LESS, constraint_id="C1"), item])
    assert start.adjustment(WORDS).priority == 1
