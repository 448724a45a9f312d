"""A sentence or line placed counted from the end ("the third sentence from the end is a question",
"the line before last must say exactly 'Kind regards,'") beside an exact count of that unit in the
same request: the place is the k-th from the start of the counted pieces, steered by the k-th
sentence's ending or the k-th line's opening (``compile.forms.placed_from_start``). Both
constraints are controlled; a random-logits model keeps the count and meets the place; without
an exact count the place stays uncontrolled (an end nobody plans); the bundled model too."""

from __future__ import annotations

from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged, steered_answer

from inference.decoder.compile import compile_steering
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Unit
from reasoning.constraints.model import Constraint, Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 110
SEEDS = (5, 31, 173)


def _question_at(n: int, k: int) -> list[Constraint]:
    return [
        gen(Kind.SENTENCE_COUNT, "n", relation="exactly", n=n),
        gen(Kind.POSITION, "q", unit="sentences", k=k, op="ends_with", text="?"),
    ]


@pytest.mark.parametrize(("n", "k"), [(5, -3), (4, -2)])
def test_the_kth_sentence_from_the_end_is_a_question(tokenizer: Any, n: int, k: int) -> None:
    constraints = _question_at(n, k)
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about owls.", max_new_tokens=BUDGET)
    assert steering.controlled == {"n", "q"}
    bias = bias_towards(tokenizer, r"^[.!]+$", 6.0)  # sentences ended early, never as questions
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 6.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        sentences = units.pieces(Unit.SENTENCES, state.text)
        assert len(sentences) == n, state.text
        assert sentences[k].rstrip().endswith("?"), state.text
        assert judged(constraints, state.text) == [], state.text


def test_the_line_before_last_is_exactly_the_text(tokenizer: Any) -> None:
    constraints = [
        gen(Kind.COUNT, "n", unit="lines", relation="exactly", n=4),
        gen(Kind.POSITION, "l", unit="lines", k=-2, op="is", text="Kind regards,"),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="Write a note.", max_new_tokens=BUDGET)
    assert steering.controlled == {"n", "l"}
    bias = bias_towards(tokenizer, r"^\n+$", 4.0)  # lines broken early
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 6.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        lines = units.pieces(Unit.LINES, state.text)
        assert len(lines) == 4, state.text
        assert lines[-2].strip() == "Kind regards,", state.text
        assert judged(constraints, state.text) == [], state.text


@pytest.mark.parametrize("count", [
    None,
    {"relation": "at least", "n": 5},
    {"relation": "exactly", "n": 2},  # the third from the end is outside it
])
def test_a_place_from_an_unplanned_end_is_not_controlled(tokenizer: Any, count: dict[str, Any] | None) -> None:
    constraints = [gen(Kind.POSITION, "q", unit="sentences", k=-3, op="ends_with", text="?")]
    if count is not None:
        constraints.append(gen(Kind.SENTENCE_COUNT, "n", **count))
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=BUDGET)
    assert "q" not in steering.controlled


def test_a_place_against_a_count_no_controller_keeps_is_withdrawn(tokenizer: Any) -> None:
    """The generic count of sentences is verified, not steered: the place counted against it is
    left to the prompt too."""
    constraints = [gen(Kind.COUNT, "n", unit="sentences", relation="exactly", n=5),
                   gen(Kind.POSITION, "q", unit="sentences", k=-3, op="ends_with", text="?")]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=BUDGET)
    assert "n" not in steering.controlled and "q" not in steering.controlled


@pytest.mark.model
def test_bundled_model_asks_its_question_third_from_the_end(loaded_model: Any) -> None:
    budget = 120
    prompt = "Write exactly five sentences about owls. The third sentence from the end is a question."
    constraints, steering, answer = steered_answer(loaded_model, prompt, budget, _question_at(5, -3))
    assert steering.controlled == {"n", "q"}
    assert judged(constraints, answer) == [], answer
