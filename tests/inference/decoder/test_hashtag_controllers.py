"""Hashtags ("include at least three hashtags"): a random-logits model that wants to stop
and to put spaces after '#' still writes the minimum, a cap holds against one biased
towards '#', both judged by the form's verifier and by an independent restatement; an
impossible count is refused; one short run on the bundled model."""

from __future__ import annotations

import re
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


def _hashtags(text: str) -> int:
    """'#' not glued to a word or another '#', then letters, digits or '_'."""
    return len(re.findall(r"(?:^|(?<=[^\w#]))#\w+", text))


@pytest.mark.parametrize(("relation", "n", "ok"), [("at least", 3, lambda k: k >= 3), ("exactly", 2, lambda k: k == 2)])
def test_a_hashtag_minimum_holds_against_a_model_that_stops(tokenizer: Any, relation: str, n: int, ok: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="hashtags", relation=relation, n=n)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^\s+$|^#", 4.0)  # bare spaces, and more '#'
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(_hashtags(state.text)), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "hashtags" not in steering.unmet(state)


def test_a_hashtag_cap_holds_and_impossible_counts_are_refused(tokenizer: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="hashtags", relation="at most", n=1)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"#", 6.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert _hashtags(state.text) <= 1, state.text
        assert judged(constraints, state.text) == [], state.text
    with pytest.raises(ConflictError):
        compile_steering([gen(Kind.COUNT, "a", unit="hashtags", relation="at least", n=3),
                          gen(Kind.COUNT, "b", unit="hashtags", relation="at most", n=2)],
                         tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    with pytest.raises(LimitExceeded):
        compile_steering([gen(Kind.COUNT, unit="hashtags", relation="at least", n=40)], tokenizer,
                         prompt="Describe a river.", max_new_tokens=BUDGET)


@pytest.mark.model
def test_bundled_model_writes_the_hashtags(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 40
    prompt = "Write a short post about a sunny day at the beach."
    constraints = [gen(Kind.COUNT, unit="hashtags", relation="at least", n=3)]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"f"}
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert _hashtags(result.answer) >= 3, result.answer
    assert judged(constraints, result.answer) == [], result.answer
