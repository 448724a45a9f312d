"""Each sentence a step longer than the one before (issue 19): a random-logits model fond of ending
sentences early and of running on still writes sentences whose lengths grow (or shrink) by the step,
judged by the form's verifier; the compile step leaves other sentence or word rules alone; one short
model run."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.sentence_steps import FIRST_WORDS
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Unit
from reasoning.constraints.model import Constraint, Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _steps(step: int, cid: str = "f") -> Constraint:
    return gen(Kind.SPREAD, cid, unit="words", per="sentences", step=step)


@pytest.mark.parametrize("step", [2, 1, -2])
def test_sentences_grow_by_the_step_against_a_model_that_ends_sentences_anywhere(tokenizer: Any, step: int) -> None:
    constraints = [_steps(step)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a storm.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^[.!?]$|^ ?(?:rain|wind|and)$", 5.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert state.finished, state.text  # it stopped at a sentence the budget could not hold
        lengths = [len(units.words(p)) for p in units.pieces(Unit.SENTENCES, state.text)]
        assert lengths and FIRST_WORDS[0] <= lengths[0] <= FIRST_WORDS[1], state.text
        assert all(b - a == step for a, b in pairwise(lengths)), (lengths, state.text)
        assert judged(constraints, state.text) == [], state.text


def test_other_rules_on_sentences_or_words_leave_the_step_to_the_prompt(tokenizer: Any) -> None:
    for other in (Constraint(id="n", kind=Kind.SENTENCE_COUNT, params={"relation": "exactly", "n": 4}),
                  Constraint(id="w", kind=Kind.WORD_COUNT, params={"relation": "at most", "n": 40}),
                  gen(Kind.POSITION, "p", unit="sentences", k=0, op="starts_with", text="Then")):
        steering = compile_steering([_steps(2), other], tokenizer, prompt="x", max_new_tokens=BUDGET)
        assert "f" in steering.uncontrolled, other.kind
    assert "f" in compile_steering([_steps(9)], tokenizer, prompt="x", max_new_tokens=BUDGET).uncontrolled


@pytest.mark.model
def test_bundled_model_writes_sentences_two_words_longer_each(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    constraints = [_steps(2)]
    tokenizer = loaded_model.tokenizer
    prompt = "Describe a sunrise."
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=48)
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(loaded_model.model, tokenizer, plan, steering=steering,
                    options=DecodeOptions(width=2, max_new_tokens=48, prune=False), constraints=constraints)
    assert steering.controlled == {"f"}
    assert judged(constraints, result.answer) == [], result.answer
