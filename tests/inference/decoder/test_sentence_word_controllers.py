"""A word in the k-th sentence (issue 19): a random-logits model fond of ending sentences and of other
words still writes the word inside the k-th sentence (judged by the form's verifier), the compile step
controls one such position only where nothing else rules the sentences' ends; one short model run."""

from __future__ import annotations

from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.form import Position, Unit, check
from reasoning.constraints.model import Constraint, Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _word_in(k: int, text: str, cid: str = "f") -> Constraint:
    return gen(Kind.POSITION, cid, unit="sentences", k=k, op="contains", text=text)


@pytest.mark.parametrize(("k", "text"), [(1, "harvest"), (2, "river"), (3, "blue whale")])
def test_the_kth_sentence_holds_the_word_against_a_model_that_ends_sentences(tokenizer: Any, k: int,
                                                                              text: str) -> None:
    constraints = [_word_in(k, text)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe autumn.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^[.!?]$|^ ?(?:the|a|leaves|cold)$", 6.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert check(Position(unit=Unit.SENTENCES, k=k, op="contains", text=text), state.text).satisfied, state.text
        assert judged(constraints, state.text) == [], state.text


def test_one_controller_of_sentence_ends(tokenizer: Any) -> None:
    ending = gen(Kind.POSITION, "e", unit="sentences", k=1, op="ends_with", text="friends")
    both = compile_steering([ending, _word_in(2, "river")], tokenizer, prompt="x", max_new_tokens=BUDGET)
    assert {"e", "f"} <= both.uncontrolled  # two rules on sentence ends: both left to the prompt
    two = compile_steering([_word_in(1, "river"), _word_in(2, "delta", "g")], tokenizer, prompt="x",
                           max_new_tokens=BUDGET)
    assert {"f", "g"} <= two.uncontrolled
    keyword = Constraint(id="k", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["tide"]})
    assert "f" in compile_steering([_word_in(1, "river"), keyword], tokenizer, prompt="x",
                                   max_new_tokens=BUDGET).uncontrolled


@pytest.mark.model
def test_bundled_model_puts_the_word_in_its_second_sentence(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    constraints = [_word_in(2, "river")]
    tokenizer = loaded_model.tokenizer
    prompt = "Describe a walk in the countryside in a few short sentences."
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=48)
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(loaded_model.model, tokenizer, plan, steering=steering,
                    options=DecodeOptions(width=2, max_new_tokens=48, prune=False), constraints=constraints)
    assert steering.controlled == {"f"}
    assert judged(constraints, result.answer) == [], result.answer
