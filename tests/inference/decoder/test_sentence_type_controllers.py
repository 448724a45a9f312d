"""Sentences counted by type (issue 19): the round of marks a request's counts or ratios make, a
random-logits model fond of other marks still ends its sentences in the round's order and stops at a
round's end (judged by the form's verifier), beside a count of all the sentences the rounds can make
(the sentences no type count names are statements), and the compile step leaves other sentence rules
alone; one short model run."""

from __future__ import annotations

from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.sentence_types import pattern_of
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Unit
from reasoning.constraints.model import Constraint, Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _each(mark: str, n: int, cid: str) -> Constraint:
    return gen(Kind.COUNT, cid, unit="sentences", relation="exactly", n=n, filter={"ends_with": mark})


def _ratio(part: str, whole: str, fraction: float, cid: str) -> Constraint:
    return gen(Kind.COUNT, cid, unit="sentences", relation="exactly", n=0, filter={"ends_with": part},
               of={"unit": "sentences", "filter": {"ends_with": whole}}, fraction=fraction)


def test_rounds_of_marks() -> None:
    def counted(pattern: tuple[str, ...] | None) -> dict[str, int]:
        assert pattern is not None
        return {mark: pattern.count(mark) for mark in set(pattern)}

    assert counted(pattern_of({"?": 2, ".": 2}, ())) == {"?": 2, ".": 2}
    assert counted(pattern_of({}, [(".", "?", 2.0)])) == {".": 2, "?": 1}
    assert counted(pattern_of({}, [("?", ".", 1.0), ("!", ".", 1.0)])) == {"?": 1, ".": 1, "!": 1}
    assert counted(pattern_of({}, [("!", ".", 0.5)])) == {".": 2, "!": 1}
    assert pattern_of({"?": 2, ".": 2}, ())[:2] in (("?", "."), (".", "?"))  # interleaved, not grouped
    assert pattern_of({}, [(".", "?", 2.0), ("?", ".", 1.0)]) is None  # they disagree
    assert pattern_of({".": 9}, ()) is None  # a round longer than the budget likes


@pytest.mark.parametrize(
    ("name", "constraints"),
    [
        ("two of each", [_each("?", 2, "q"), _each(".", 2, "s")]),
        ("twice as many statements", [_ratio(".", "?", 2.0, "r")]),
        ("equal numbers of three", [_ratio("?", ".", 1.0, "q"), _ratio("!", ".", 1.0, "e")]),
    ],
)
def test_sentences_end_in_the_rounds_order(tokenizer: Any, name: str, constraints: list[Constraint]) -> None:
    steering = compile_steering(constraints, tokenizer, prompt="Talk about the sea.", max_new_tokens=BUDGET)
    assert steering.controlled == {c.id for c in constraints}
    bias = bias_towards(tokenizer, r"^[.!?]$|^ ?(?:sea|waves)$", 5.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert state.finished, state.text
        assert units.pieces(Unit.SENTENCES, state.text), state.text
        assert judged(constraints, state.text) == [], state.text


def _total(relation: str, n: int) -> Constraint:
    return Constraint(id="n", kind=Kind.SENTENCE_COUNT, params={"relation": relation, "n": n})


@pytest.mark.parametrize(
    ("name", "constraints"),
    [
        # five sentences, two questions and one exclamation: the other two are statements
        ("the rest statements", [_total("exactly", 5), _each("?", 2, "q"), _each("!", 1, "e")]),
        ("as many questions as statements, at least three", [_total("at least", 3), _ratio(".", "?", 1.0, "r")]),
        ("two of each in four sentences", [_total("exactly", 4), _each("?", 2, "q"), _each(".", 2, "s")]),
    ],
)
def test_a_count_of_all_sentences_beside_the_types(tokenizer: Any, name: str, constraints: list[Constraint]) -> None:
    steering = compile_steering(constraints, tokenizer, prompt="Talk about the sea.", max_new_tokens=BUDGET)
    assert steering.controlled == {c.id for c in constraints}
    bias = bias_towards(tokenizer, r"^[.!?]$|^ ?(?:sea|waves)$", 5.0)
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 6.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert state.finished, state.text
        assert judged(constraints, state.text) == [], state.text


def test_other_sentence_rules_leave_the_types_to_the_prompt(tokenizer: Any) -> None:
    types = [_each("?", 2, "q"), _each(".", 2, "s")]
    steering = compile_steering([*types, _total("exactly", 5)], tokenizer, prompt="x", max_new_tokens=BUDGET)
    assert {"q", "s"} <= steering.uncontrolled  # the four sentences of the types are never five
    rounds = [_total("exactly", 3), _ratio(".", "?", 1.0, "r")]
    assert "r" in compile_steering(rounds, tokenizer, prompt="x", max_new_tokens=BUDGET).uncontrolled  # rounds of 2
    mixed = [_each("?", 2, "q"), _ratio(".", "?", 2.0, "r")]
    assert {"q", "r"} <= compile_steering(mixed, tokenizer, prompt="x", max_new_tokens=BUDGET).uncontrolled


@pytest.mark.model
def test_bundled_model_writes_two_questions_and_two_statements(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    constraints = [_each("?", 1, "q"), _each(".", 1, "s")]
    tokenizer = loaded_model.tokenizer
    prompt = "Say something about the weather."
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=48)
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(loaded_model.model, tokenizer, plan, steering=steering,
                    options=DecodeOptions(width=2, max_new_tokens=48, prune=False), constraints=constraints)
    assert steering.controlled == {"q", "s"}
    assert judged(constraints, result.answer) == [], result.answer
