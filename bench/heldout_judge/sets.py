"""The held-out sets, read from ``bench/data/heldout_sets.json``: each one's data and judges.

A set's entry names its data file (``bench/data/<data>``), the line its
reports carry as ``judge``, whether an empty answer fails every instruction
(``empty_answer_fails``), the instruction ids its data uses (``judges``) and,
where an id's verifier has another id, which one (``verifiers``: instruction
id -> verifier id). A set's judge table is exactly its ``judges``: an id the
set does not list is a ``KeyError``, so a typo in the data cannot read as a
failed answer.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.heldout_judge import VERIFIERS
from bench.heldout_judge.readings import Judge, answered

__all__ = ["DATA_DIR", "SETS", "Suite", "names", "suite"]

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
#: The file describing every held-out set.
SETS = DATA_DIR / "heldout_sets.json"


@dataclass(frozen=True)
class Suite:
    """A held-out set the harness runs: its report name, data file and judge table.

    ``judges`` maps an instruction id to its verifier function and its
    one-line reading; ``judged_by`` names the judge in the report;
    ``new_families`` are the ids the set's description says no earlier set judges.
    """

    name: str
    data: Path
    judges: Mapping[str, tuple[Judge, str]]
    judged_by: str
    new_families: frozenset[str] = field(default_factory=frozenset)

    def grade(self, judge_id: str, args: Mapping[str, Any], text: str) -> bool:
        """Whether ``text`` meets instruction ``judge_id``; an unknown id is a ``KeyError``."""
        function, _ = self.judges[judge_id]
        return function(args, text)


def _suite(name: str, entry: Mapping[str, Any]) -> Suite:
    renamed: Mapping[str, str] = entry.get("verifiers", {})
    judges: dict[str, tuple[Judge, str]] = {}
    for judge_id in entry["judges"]:
        function, reading = VERIFIERS[renamed.get(judge_id, judge_id)]
        judges[judge_id] = (answered(function) if entry["empty_answer_fails"] else function, reading)
    return Suite(
        name,
        DATA_DIR / entry["data"],
        judges,
        entry["judged_by"],
        frozenset(entry.get("new_families", ())),
    )


@functools.cache
def _suites() -> dict[str, Suite]:
    described: dict[str, Any] = json.loads(SETS.read_text(encoding="utf-8"))
    return {name: _suite(name, entry) for name, entry in described.items()}


def names() -> list[str]:
    """The held-out sets' names, in the order the file lists them."""
    return list(_suites())


def suite(name: str) -> Suite:
    """The held-out set ``name``; an unknown name is a ``KeyError``."""
    return _suites()[name]
