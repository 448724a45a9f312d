"""Every sentence ending with one mark ("end each sentence with an exclamation mark"): a
random-logits model biased towards the other terminals and closing quotes never leaves a
sentence that ends otherwise, judged by the form's verifier and by an independent split;
two marks are refused; one short run on the bundled model."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _sentence_ends(text: str) -> list[str]:
    """The last non-space character of each sentence, split after a run of terminals and closers."""
    pieces = [p.strip() for p in re.split(r"(?<=[.!?。！？])[\"'”’)\]]*\s+", text.strip()) if p.strip()]
    return [p[-1] for p in pieces]


def _each_sentence(cid: str, mark: str) -> Constraint:
    return gen(Kind.WRAP, cid, left="", right=mark, unit="sentences")


@pytest.mark.parametrize("mark", ["!", "?"])
def test_every_sentence_ends_with_the_mark_on_random_logits(tokenizer: Any, mark: str) -> None:
    constraints = [_each_sentence("f", mark)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"[.!?。！？\"')]", 6.0)  # every terminal and closer, often
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 4.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        ends = _sentence_ends(state.text)
        assert ends and set(ends) == {mark}, state.text
        assert judged(constraints, state.text) == [], state.text


def test_two_marks_for_every_sentence_are_a_conflict_and_fixed_text_is_left_to_the_prompt(tokenizer: Any) -> None:
    with pytest.raises(ConflictError):
        compile_steering([_each_sentence("a", "!"), _each_sentence("b", "?")], tokenizer,
                         prompt="Describe a river.", max_new_tokens=BUDGET)
    fixed = [_each_sentence("f", "!"), Constraint(id="end", kind=Kind.END_PHRASE, params={"phrase": "Thank you."})]
    steering = compile_steering(fixed, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled


@pytest.mark.model
def test_bundled_model_ends_every_sentence_with_the_mark(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 40
    prompt = "Cheer on a friend who is running a marathon."
    constraints = [_each_sentence("f", "!")]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"f"}
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert set(_sentence_ends(result.answer)) == {"!"}, result.answer
    assert judged(constraints, result.answer) == [], result.answer
