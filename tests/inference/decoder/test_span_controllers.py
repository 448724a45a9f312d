"""Counts of delimited spans ("two remarks in parentheses", "three phrases in double quotes"):
a random-logits model biased against them (stopping, breaking lines, opening more) never
violates a controlled count, judged by the form's verifier and by an independent
restatement; impossible counts are refused; one short run on the bundled model."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError, LimitExceeded

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _spans(text: str, left: str, right: str) -> int:
    """Spans as a reader finds them: a delimiter, some text on the same line, the closing one."""
    pattern = re.escape(left) + r"([^\n]+?)" + re.escape(right)
    return sum(1 for inner in re.findall(pattern, text) if inner.strip(left + right).strip())


def _spans_count(cid: str, left: str, right: str, relation: str, n: int) -> Constraint:
    return gen(Kind.COUNT, cid, unit="spans", filter={"left": left, "right": right, "nonempty": True},
               relation=relation, n=n)


MINIMA = [
    ("two in parentheses", [_spans_count("f", "(", ")", "exactly", 2)], "(", ")", lambda n: n == 2),
    ("three in quotes", [_spans_count("f", '"', '"', "exactly", 3)], '"', '"', lambda n: n == 3),
    ("a range in brackets", [_spans_count("f", "[", "]", "at least", 1), _spans_count("g", "[", "]", "at most", 2)],
     "[", "]", lambda n: 1 <= n <= 2),
    # delimiters of several marks, spelled in one token or several
    ("two in bold", [_spans_count("f", "**", "**", "exactly", 2)], "**", "**", lambda n: n == 2),
    ("one in double angles", [_spans_count("f", "<<", ">>", "at least", 1)], "<<", ">>", lambda n: n >= 1),
    ("two in corner brackets", [_spans_count("f", "「", "」", "exactly", 2)], "「", "」", lambda n: n == 2),
]


@pytest.mark.parametrize(("name", "constraints", "left", "right", "ok"), MINIMA, ids=[row[0] for row in MINIMA])
def test_span_counts_hold_against_a_model_that_stops_and_breaks_lines(
    tokenizer: Any, name: str, constraints: list[Constraint], left: str, right: str, ok: Any
) -> None:
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {c.id for c in constraints}
    bias = bias_towards(tokenizer, r"\n|^[.!?]$", 5.0)  # line breaks and sentence ends everywhere
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))  # and a wish to stop
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(_spans(state.text, left, right)), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "spans" not in steering.unmet(state)


@pytest.mark.parametrize(("left", "right", "pattern"), [("(", ")", r"[()]"), ("**", "**", r"\*"), ("<<", ">>", r"[<>]")])
def test_a_span_maximum_holds_against_a_model_that_opens_them(tokenizer: Any, left: str, right: str,
                                                             pattern: str) -> None:
    constraints = [_spans_count("f", left, right, "at most", 1)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, pattern, 6.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert _spans(state.text, left, right) <= 1, state.text
        assert judged(constraints, state.text) == [], state.text


def test_impossible_span_counts_are_refused_and_fixed_delimiters_left_to_the_prompt(tokenizer: Any) -> None:
    with pytest.raises(ConflictError):
        compile_steering([_spans_count("a", "(", ")", "at least", 3), _spans_count("b", "(", ")", "at most", 1)],
                         tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    with pytest.raises(LimitExceeded):
        compile_steering([_spans_count("a", "(", ")", "at least", 20)], tokenizer, prompt="Describe a river.",
                         max_new_tokens=BUDGET)
    fixed = [_spans_count("f", "(", ")", "exactly", 2),
             Constraint(id="end", kind=Kind.END_PHRASE, params={"phrase": "See you (soon)."})]
    steering = compile_steering(fixed, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled


@pytest.mark.model
def test_bundled_model_writes_the_counted_spans(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 48
    prompt = "Describe a mountain lake in a few sentences."
    constraints = [_spans_count("f", "(", ")", "exactly", 2)]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"f"}
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert _spans(result.answer, "(", ")") == 2, result.answer
    assert judged(constraints, result.answer) == [], result.answer
