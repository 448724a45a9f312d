"""Sub-bullets under every bullet, read from a request and written by the bundled model: every
top-level item is followed by its sub-items (indented, their own marker), as many as asked,
and the verifier agrees; a reader of our own counts them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_form_controllers import judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.extraction import extract

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _children(text: str) -> list[int]:
    """Sub-items under each top-level item: an unindented '* ' / '- ' line opens an item, an
    indented one adds to the item before it."""
    counts: list[int] = []
    for line in text.splitlines():
        if re.match(r"[*-] \S", line):
            counts.append(0)
        elif re.match(r"\s+[*-] \S", line) and counts:
            counts[-1] += 1
    return counts


def test_bundled_model_writes_a_sub_bullet_under_every_bullet(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 90
    prompt = "Write 3 bullet points about saving money, each with one sub-bullet."
    constraints = list(extract(prompt).constraints)
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert constraints and {c.id for c in constraints} <= steering.controlled
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model,
        tokenizer,
        plan,
        steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False),
        constraints=constraints,
    )
    assert _children(result.answer) == [1, 1, 1], result.answer
    assert judged(constraints, result.answer) == [], result.answer
