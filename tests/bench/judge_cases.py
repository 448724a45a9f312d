"""The checks every held-out set's judges get, whatever the set.

A set's test module keeps a table ``CASES`` of judge id -> (args, an answer
that meets the instruction, one that does not); these checks guarantee that
each judge has a case and a one-line reading, and that on its case it passes
the meeting answer and fails the other (and, where the set says so, an empty
answer: a refused run did not do the task).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Case", "check_case", "check_table"]

#: (args, an answer that meets the instruction, one that does not).
Case = tuple[dict[str, Any], str, str]


def check_table(cases: Mapping[str, Case], judges: Mapping[str, tuple[Any, str]]) -> None:
    """Every judge has a case, every case a judge, and every judge a documented reading."""
    assert set(cases) == set(judges)
    assert all(description for _, description in judges.values())


def check_case(
    judge: Callable[[str, Mapping[str, Any], str], bool],
    judge_id: str,
    case: Case,
    *,
    empty_fails: bool,
) -> None:
    """The judge passes the case's meeting answer and fails the other (and an empty one)."""
    args, meets, breaks = case
    assert judge(judge_id, args, meets), f"{judge_id} refused the answer that meets it"
    assert not judge(judge_id, args, breaks), f"{judge_id} passed the answer that does not"
    if empty_fails:
        assert not judge(judge_id, args, ""), f"{judge_id} passed an empty answer"
        assert not judge(judge_id, args, " \n "), f"{judge_id} passed a blank answer"
