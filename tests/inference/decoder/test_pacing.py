"""The owed-item pacing every owing controller shares: tokens left, when the next item falls
due, when insertions are urgent; checked against the budget arithmetic written out."""

from __future__ import annotations

import pytest

from inference.decoder.token_controllers.layout import LayoutSegment
from inference.decoder.token_controllers.pacing import SLACK, insert_urgent, next_due, tokens_left
from inference.decoder.token_controllers.protocol import RowPlanDraft, SteerState
from inference.decoder.token_controllers.template import Free


def _draft(n_tokens: int, reserve: int = 0, inserts: int = 0) -> RowPlanDraft:
    comp = LayoutSegment(segment=Free(role="body"), reserve_tokens=reserve)
    return RowPlanDraft(state=SteerState(n_tokens=n_tokens), comp=comp, target=0, exit=0, owed=(), owed_tokens=0,
                 inserts=inserts)


@pytest.mark.parametrize(("n", "reserve", "slack", "owed", "left"), [
    (0, 0, SLACK, 0, 98), (40, 10, SLACK, 0, 48), (40, 10, 0, 5, 45), (99, 0, 3, 0, -2),
])
def test_tokens_left_is_the_budget_less_written_reserved_slack_and_owed(
    n: int, reserve: int, slack: int, owed: int, left: int
) -> None:
    assert tokens_left(100, _draft(n, reserve), slack=slack, owed=owed) == left


def test_items_fall_due_evenly_over_the_usable_budget() -> None:
    # 3 items over a usable budget of 100 - 2 - 18 = 80: due at 20, 40 and 60 tokens.
    firsts = []
    for done in range(3):
        firsts.append(next(n for n in range(100) if next_due(_draft(n), 100, done, 3, kept=18)))
    assert firsts == [20, 40, 60]
    # The reserve of later segments shortens the usable budget the same way.
    assert next(n for n in range(100) if next_due(_draft(n, reserve=18), 100, 0, 3)) == 20


def test_insertions_are_urgent_once_the_budget_left_holds_little_more_than_them() -> None:
    # 100 - 2 - n <= 5 + 1 from n = 92 on.
    assert [n for n in range(88, 96) if insert_urgent(_draft(n, inserts=5), 100)] == [92, 93, 94, 95]
