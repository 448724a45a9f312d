"""Sub-bullets under every bullet, read from a request and written by the bundled model: every
top-level item is followed by its sub-items (indented, their own marker), as many as asked,
and the verifier agrees; a reader of our own counts them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_form_controllers import judged, steered_answer

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
    budget = 90
    prompt = "Write 3 bullet points about saving money, each with one sub-bullet."
    constraints, steering, answer = steered_answer(loaded_model, prompt, budget)
    assert constraints and {c.id for c in constraints} <= steering.controlled
    assert _children(answer) == [1, 1, 1], answer
    assert judged(constraints, answer) == [], answer
