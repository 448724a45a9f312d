"""An answer whose language or letter case is constrained is long enough to identify its language."""

from __future__ import annotations

from typing import Any

import pytest

from inference.decoder.compile import IDENTIFIABLE_WORDS, compile_steering
from reasoning.constraints.model import Constraint, Kind


def c(kind: str, **params: Any) -> Constraint:
    return Constraint(id=kind, kind=Kind(kind), params=params)


@pytest.mark.parametrize(
    "constraints",
    [
        [c("all_capitals")],
        [c("all_lowercase"), c("no_comma")],
        [c("response_language", language="de")],
        [c("all_capitals"), c("sections", n=2, splitter="PARAGRAPH")],
    ],
)
def test_case_or_latin_language_gets_a_word_floor(tokenizer: Any, constraints: list[Constraint]) -> None:
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=200)
    assert steering.limits.min_words == IDENTIFIABLE_WORDS


@pytest.mark.parametrize(
    "constraints",
    [
        [c("no_comma")],
        [c("response_language", language="zh")],
        [c("all_capitals"), c("word_count", relation="at most", n=10)],
        [c("all_capitals"), c("sentence_count", relation="at most", n=2)],
        [c("all_lowercase"), c("json_format")],
    ],
)
def test_no_floor_without_a_language_check_or_against_the_request(
    tokenizer: Any, constraints: list[Constraint]
) -> None:
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=200)
    assert steering.limits.min_words in (None, 0)


def test_the_floor_fits_the_budget_and_never_lowers_a_minimum(tokenizer: Any) -> None:
    short = compile_steering([c("all_capitals")], tokenizer, prompt="x", max_new_tokens=30)
    assert short.limits.min_words == 10
    longer = compile_steering(
        [c("all_capitals"), c("word_count", relation="at least", n=60)],
        tokenizer,
        prompt="x",
        max_new_tokens=200,
    )
    assert longer.limits.min_words == 60
