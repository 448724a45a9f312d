"""A word the k-th paragraph must hold, beside a count of paragraphs ("three paragraphs ... mention
giraffes in the last paragraph"): the k-th (counted from the start or from the end of the counted
paragraphs) is opened by the word, so the body of that many blank-line paragraphs holds it where
asked. Both constraints are controlled; a random-logits model writes the word in that paragraph and
no other count of paragraphs; the bundled model too."""

from __future__ import annotations

from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged, steered_answer

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (11, 47, 229)


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in text.split("\n\n") if p.strip()]


def _holds(paragraph: str, word: str) -> bool:
    return word.lower() in [w.strip(".,;:!?\"'").lower() for w in paragraph.split()]


@pytest.mark.parametrize(("n", "k", "nth"), [(3, -1, 3), (4, -2, 3), (4, 2, 2)])
def test_the_kth_paragraph_holds_the_word(tokenizer: Any, n: int, k: int, nth: int) -> None:
    constraints = [
        gen(Kind.COUNT, "n", unit="paragraphs", relation="exactly", n=n),
        gen(Kind.POSITION, "w", unit="paragraphs", k=k, op="contains", text="harbour"),
    ]
    steering = compile_steering(
        constraints, tokenizer, prompt="Tell me about boats.", max_new_tokens=BUDGET
    )
    assert steering.controlled == {"n", "w"}
    bias = bias_towards(tokenizer, r"^\n+$", 4.0)
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 6.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        paragraphs = _paragraphs(state.text)
        assert len(paragraphs) == n, state.text
        assert _holds(paragraphs[nth - 1], "harbour"), state.text
        assert judged(constraints, state.text) == [], state.text


def test_a_word_placed_outside_the_counted_paragraphs_is_not_controlled(tokenizer: Any) -> None:
    constraints = [
        gen(Kind.COUNT, "n", unit="paragraphs", relation="exactly", n=2),
        gen(Kind.POSITION, "w", unit="paragraphs", k=-3, op="contains", text="harbour"),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=BUDGET)
    assert "w" not in steering.controlled


@pytest.mark.model
def test_bundled_model_mentions_the_word_in_the_last_paragraph(loaded_model: Any) -> None:
    budget = 120
    prompt = "Write three short paragraphs about a trip to the zoo, and mention giraffes in the last paragraph."
    constraints, steering, answer = steered_answer(loaded_model, prompt, budget)
    assert {c.id for c in constraints} <= steering.controlled
    assert judged(constraints, answer) == [], answer
    paragraphs = _paragraphs(answer)
    assert len(paragraphs) == 3 and _holds(paragraphs[2], "giraffes"), answer
