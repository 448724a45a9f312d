"""A count of paragraphs beside a text closing every paragraph ("two paragraphs ... end every
paragraph with 'More next week.'"): both are controlled, the count as the blank-line body of that
many paragraphs and the text as each paragraph's closing, written before the paragraph's share of
the budget runs out. A random-logits model fond of line breaks and of stopping still writes the
count of paragraphs, each ending with the text; where a paragraph's share of the budget ends it, the
bundled model writes the text after a whole sentence (the open sentence is asked to end first)."""

from __future__ import annotations

from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged, steered_answer

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (7, 31, 113)
TEXT = "More next week."


def _paragraphs(text: str) -> list[str]:
    """A reader's split: blank-line separated pieces that hold a word."""
    return [p.strip() for p in text.split("\n\n") if any(ch.isalnum() for ch in p)]


@pytest.mark.parametrize("n", [2, 3])
def test_each_counted_paragraph_ends_with_the_text_against_a_model_that_ends_early(
    tokenizer: Any, n: int
) -> None:
    constraints = [
        gen(Kind.COUNT, "n", unit="paragraphs", relation="exactly", n=n),
        gen(Kind.POSITION, "t", unit="paragraphs", k=0, op="ends_with", text=TEXT),
    ]
    steering = compile_steering(
        constraints, tokenizer, prompt="Tell me about markets.", max_new_tokens=BUDGET
    )
    assert steering.controlled == {"n", "t"}
    bias = bias_towards(tokenizer, r"^\n+$", 5.0)
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        paragraphs = _paragraphs(state.text)
        assert len(paragraphs) == n, state.text
        assert all(p.endswith(TEXT) for p in paragraphs), state.text
        assert judged(constraints, state.text) == [], state.text


@pytest.mark.model
def test_bundled_model_closes_each_paragraph_after_a_whole_sentence(loaded_model: Any) -> None:
    budget = 120
    prompt = f"Write two paragraphs about a rainy market day. End every paragraph with '{TEXT}'"
    constraints, steering, answer = steered_answer(loaded_model, prompt, budget)
    assert {c.id for c in constraints} <= steering.controlled
    assert judged(constraints, answer) == [], answer
    paragraphs = _paragraphs(answer)
    assert len(paragraphs) == 2, answer
    assert all(p.endswith(TEXT) for p in paragraphs), answer
    # The first paragraph's share of the budget ends it (the model would go on): its open
    # sentence is asked to end first, so the text follows a whole sentence.
    assert paragraphs[0][: -len(TEXT)].rstrip()[-1:] in ".!?", answer
