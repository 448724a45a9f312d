"""The k-th sentence ending with a text ("the first sentence must end with the word 'friends'"):
a random-logits model biased to end sentences early and to stop never ends that sentence on
another word, judged by the form's verifier and by a restatement; left to the prompt beside a
rule on every sentence's end."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 80
SEEDS = (3, 17, 101)


def _sentences(text: str) -> list[str]:
    """Sentences as a reader splits them: up to a run of end marks before a space or the end."""
    return [s.strip() for s in re.findall(r".*?(?:[.!?]+(?=\s|$)|$)", text, flags=re.DOTALL) if s.strip()]


@pytest.mark.parametrize(("k", "text"), [(1, "friends"), (2, "every day")])
def test_the_kth_sentence_ends_with_the_text_against_a_model_that_ends_sentences_early(
    tokenizer: Any, k: int, text: str
) -> None:
    constraints = [gen(Kind.POSITION, unit="sentences", k=k, op="ends_with", text=text)]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about cats.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^[.!?]+$", 6.0)  # sentence ends everywhere
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))  # and a wish to stop
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        sentences = _sentences(state.text)
        assert len(sentences) >= k, state.text
        assert sentences[k - 1].lower().rstrip(".!?").endswith(text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "sentence-end" not in steering.unmet(state)


def test_a_sentence_ending_beside_a_rule_on_every_sentence_end_is_left_to_the_prompt(tokenizer: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="sentences", k=1, op="ends_with", text="friends"),
                   gen(Kind.WRAP, "m", unit="sentences", left="", right="!")]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about cats.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled and "m" in steering.controlled
