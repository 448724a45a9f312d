"""Decided steps reach ``on_step`` while the search runs, and they are the answer's own steps."""

from __future__ import annotations

import time
from typing import Any

import pytest

from inference.decoder.decode import DecodeOptions, decode
from inference.prompting import plan_prompt

pytestmark = pytest.mark.model


@pytest.mark.parametrize("width", [1, 3])
def test_decided_steps_stream_before_the_end_and_prefix_the_answer(loaded_model: Any, width: int) -> None:
    lm = loaded_model
    plan = plan_prompt(lm.tokenizer, "List three colours, one per line.")
    heard: list[tuple[float, str, str]] = []
    result = decode(
        lm.model, lm.tokenizer, plan,
        options=DecodeOptions(width=width, max_new_tokens=24, prune=False),
        on_step=lambda view, text: heard.append((time.perf_counter(), view, text)),
    )
    finished = time.perf_counter()
    assert heard, "no step was announced"
    streamed = "".join(text for _, _, text in heard)
    assert result.branches[0].text.startswith(streamed.strip()) or result.branches[0].text.replace(" ", "").startswith(
        streamed.replace(" ", "")
    )
    assert all(view == plan.views[0] for _, view, _ in heard)
    if width == 1:
        assert heard[0][0] < finished
        assert len(heard) >= 2
