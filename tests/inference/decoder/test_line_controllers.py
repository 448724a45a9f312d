"""Counts of lines ("a poem of exactly four lines", "at most three lines"): a random-logits
model biased towards line breaks, or away from them and towards stopping, never leaves a
controlled count broken, judged by the form's verifier and by an independent count;
impossible counts are refused; one short run on the bundled model."""

from __future__ import annotations

from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Kind
from reasoning.errors import ConflictError, LimitExceeded

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _lines(text: str) -> int:
    return sum(1 for line in text.split("\n") if line.strip())


CASES = [
    ("at most 2, breaks everywhere", "at most", 2, r"\n", 8.0, lambda n: n <= 2),
    ("exactly 4, wants to stop", "exactly", 4, r"^ [a-z]+$", 2.0, lambda n: n == 4),
    ("at least 3, wants to stop", "at least", 3, r"^ [a-z]+$", 2.0, lambda n: n >= 3),
]


@pytest.mark.parametrize(("name", "relation", "n", "pattern", "value", "ok"), CASES, ids=[row[0] for row in CASES])
def test_line_counts_hold_on_random_logits(tokenizer: Any, name: str, relation: str, n: int, pattern: str,
                                           value: float, ok: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="lines", relation=relation, n=n)]
    steering = compile_steering(constraints, tokenizer, prompt="Write a short poem.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, pattern, value)
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 6.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(_lines(state.text)), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "lines" not in steering.unmet(state)


def test_impossible_line_counts_are_refused(tokenizer: Any) -> None:
    with pytest.raises(ConflictError):
        compile_steering([gen(Kind.COUNT, "a", unit="lines", relation="at least", n=5),
                          gen(Kind.COUNT, "b", unit="lines", relation="at most", n=3)],
                         tokenizer, prompt="Write a short poem.", max_new_tokens=BUDGET)
    with pytest.raises(LimitExceeded):
        compile_steering([gen(Kind.COUNT, unit="lines", relation="at least", n=60)], tokenizer,
                         prompt="Write a short poem.", max_new_tokens=BUDGET)


@pytest.mark.model
def test_bundled_model_writes_the_counted_lines(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 48
    prompt = "Write a short poem about the sea."
    constraints = [gen(Kind.COUNT, unit="lines", relation="exactly", n=4)]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"f"}
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert _lines(result.answer) == 4, result.answer
    assert judged(constraints, result.answer) == [], result.answer
