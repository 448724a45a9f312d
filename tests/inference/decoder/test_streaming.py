"""Streamed steps: per branch, exactly the result's steps (ids and texts), decided ones while the search runs."""

from __future__ import annotations

import time
from typing import Any

import pytest

from inference.decoder.decode import DecodeResult, decode
from inference.decoder.options import DecodeOptions
from inference.decoder.stream import StepEvent
from inference.prompting import plan_prompt
from reasoning.evidence.model import EvidenceSubgraph
from reasoning.steps import step_id
from tests.inference.decoder.steering_doubles import Push
from tests.inference.evidence_samples import fact

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]


def _streamed(
    lm: Any,
    prompt: str,
    options: DecodeOptions,
    steering: Any = None,
    evidence: tuple[EvidenceSubgraph, ...] = (),
) -> tuple[list[tuple[float, StepEvent]], DecodeResult]:
    heard: list[tuple[float, StepEvent]] = []
    result = decode(
        lm.model,
        lm.tokenizer,
        plan_prompt(lm.tokenizer, prompt, (), evidence),
        steering=steering,
        options=options,
        on_step=lambda event: heard.append((time.perf_counter(), event)),
    )
    return heard, result


def _as_events(result: DecodeResult) -> list[StepEvent]:
    return [StepEvent(s.id, s.branch, s.text) for b in result.branches for s in b.steps]


@pytest.mark.parametrize("width", [1, 3])
def test_streamed_steps_are_the_result_steps(loaded_model: Any, width: int) -> None:
    heard, result = _streamed(
        loaded_model,
        "List three colours, one per line.",
        DecodeOptions(width=width, max_new_tokens=24, prune=False),
    )
    events = [event for _, event in heard]
    assert len(result.steps) >= 2, result.answer
    assert events == _as_events(result)
    assert [e.id for e in events] == list(result.reasoning_path)
    if width == 1:
        # Each step is announced as it closes: the first one a decode step or more before the last.
        per_step = result.timings.decode_s / max(1, result.decode_steps)
        assert heard[-1][0] - heard[0][0] > per_step / 2


@pytest.mark.parametrize("width", [1, 2])
def test_blank_lines_are_neither_streamed_nor_counted(loaded_model: Any, width: int) -> None:
    tok = loaded_model.tokenizer
    target = list(
        tok("Red is warm.\n\nBlue is cold.\n\nGreen is calm.", add_special_tokens=False)[
            "input_ids"
        ]
    )
    heard, result = _streamed(
        loaded_model,
        "Name three colours.",
        DecodeOptions(width=width, max_new_tokens=len(target) + 2, prune=False),
        steering=Push(target),
    )
    events = [event for _, event in heard]
    assert result.answer.startswith("Red is warm.\n\nBlue is cold.\n\nGreen is calm.")
    assert events == _as_events(result)
    view = result.branches[0].view
    assert [e.id for e in events][:3] == [step_id(view, k) for k in (1, 2, 3)]
    assert all(e.text.strip() for e in events)


def test_each_branch_streams_exactly_its_own_steps(loaded_model: Any) -> None:
    """Branches interleave; every event names its branch, and per branch the events are its steps."""
    evidence = (
        EvidenceSubgraph(
            view="rules",
            relevance=1.0,
            seeds=(),
            facts=(fact("E1", "rules", "Transfers over EUR 10,000 are reported."),),
        ),
        EvidenceSubgraph(
            view="parties",
            relevance=0.8,
            seeds=(),
            facts=(fact("E2", "parties", "Jon Doe is on the PEP list."),),
        ),
    )
    heard, result = _streamed(
        loaded_model,
        "Should a EUR 20,000 transfer to Jon Doe be reported? Answer in two short sentences.",
        DecodeOptions(width=2, max_new_tokens=20, prune=False),
        evidence=evidence,
    )
    events = [event for _, event in heard]
    assert sorted({e.branch for e in events}) == ["parties", "rules"]
    for branch in result.branches:
        mine = [e for e in events if e.branch == branch.view]
        assert mine == [StepEvent(s.id, s.branch, s.text) for s in branch.steps]
        assert all(e.id.startswith(f"{branch.view}.S") for e in mine)
    answer = result.branches[result.answer_branch]
    assert list(result.reasoning_path) == [s.id for s in answer.steps]
