"""compile_steering: what it controls, what it refuses, how it reads parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from inference.decoder.compile import compile_steering
from inference.decoder.controllers.template import Free, Literal
from reasoning.constraints.model import Constraint, Hardness, Kind, Scope
from reasoning.errors import ConflictError, InvalidInput, LimitExceeded


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    from inference.loader import prepare_cache

    cache = prepare_cache("bundled", Path("/tmp/tenet-cache"))
    assert cache is not None
    return AutoTokenizer.from_pretrained(cache)


def c(kind: str, cid: str | None = None, **params: Any) -> Constraint:
    return Constraint(id=cid or kind, kind=Kind(kind), params=params)


def test_controlled_assisted_and_uncontrolled_are_reported(tokenizer: Any) -> None:
    constraints = [
        c("no_comma"),
        c("title"),
        c("keywords_present", keywords=["risk"]),
        c("response_language", language="de"),
        Constraint(id="window", kind=Kind.CITATION_TIME_WINDOW, params={"not_before": "2020-01-01"}, scope=Scope.EVIDENCE),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x")
    assert steering.controlled == {"no_comma", "title"}
    assert steering.assisted == {"response_language"}  # a Latin mask does not pin German
    assert steering.uncontrolled == {"keywords_present", "window"}


def test_script_languages_are_controlled(tokenizer: Any) -> None:
    steering = compile_steering([c("response_language", language="zh")], tokenizer, prompt="x")
    assert steering.controlled == {"response_language"}


def test_soft_static_constraint_is_a_bias_not_a_mask(tokenizer: Any) -> None:
    import torch

    soft = Constraint(id="s", kind=Kind.NO_COMMA, hardness=Hardness.SOFT)
    steering = compile_steering([soft], tokenizer, prompt="x")
    assert steering.assisted == {"s"} and not steering.controlled
    comma = tokenizer.encode(",", add_special_tokens=False)[0]
    lp = torch.log_softmax(torch.zeros(1, steering.tables.size), dim=-1)
    out = steering.apply([steering.initial_state()], lp)
    assert torch.isfinite(out[0, comma]) and out[0, comma] < lp[0, comma]


def test_layout_literals_follow_the_case_policy(tokenizer: Any) -> None:
    steering = compile_steering(
        [c("all_lowercase"), c("postscript", marker="P.S."), c("end_phrase", phrase="Any Questions?")],
        tokenizer,
        prompt="x",
    )
    literals = [s.segment.text for s in steering._segments if isinstance(s.segment, Literal)]
    assert any("p.s." in text for text in literals)
    assert literals[-1].endswith("any questions?")


def test_bullets_layout_has_one_literal_per_bullet(tokenizer: Any) -> None:
    steering = compile_steering([c("bullet_count", n=4)], tokenizer, prompt="x")
    segments = [s.segment for s in steering._segments]
    assert sum(isinstance(s, Literal) and "* " in s.text for s in segments) == 4
    assert sum(isinstance(s, Free) and s.gate for s in segments) == 1


@pytest.mark.parametrize(
    ("constraints", "ids"),
    [
        ([c("all_lowercase"), c("all_capitals")], {"all_lowercase", "all_capitals"}),
        ([c("no_comma"), c("end_phrase", phrase="Thanks, bye.")], {"no_comma", "end_phrase"}),
        ([c("json_format"), c("bullet_count", n=3)], {"json_format", "bullet_count"}),
        ([c("json_format"), c("title")], {"json_format", "title"}),
        ([c("word_count", relation="at least", n=100), c("word_count", "w2", relation="less than", n=50)], {"word_count", "w2"}),
        ([c("response_language", language="zh"), c("response_language", "r2", language="ru")], {"response_language", "r2"}),
        ([c("all_capitals"), c("constrained_response", options=["My answer is yes."])], {"all_capitals", "constrained_response"}),
    ],
)
def test_impossible_sets_are_refused_with_their_ids(tokenizer: Any, constraints: list[Constraint], ids: set[str]) -> None:
    with pytest.raises(ConflictError) as raised:
        compile_steering(constraints, tokenizer, prompt="x")
    assert set(raised.value.extra["constraint_ids"]) == ids


def test_budget_too_small_for_minimum_is_refused(tokenizer: Any) -> None:
    with pytest.raises(LimitExceeded):
        compile_steering([c("word_count", relation="at least", n=300)], tokenizer, prompt="x", max_new_tokens=100)


@pytest.mark.parametrize(
    "constraint",
    [
        c("word_count", relation="about", n=3),
        c("word_count", relation="at least"),
        c("regex_format", pattern="(unclosed"),
        c("letter_frequency", letter="ab", relation="at least", n=2),
        c("nth_paragraph_first_word", n=2, nth=3, first_word="so"),
        c("end_phrase", phrase="  "),
    ],
)
def test_malformed_parameters_are_invalid_input(tokenizer: Any, constraint: Constraint) -> None:
    with pytest.raises(InvalidInput):
        compile_steering([constraint], tokenizer, prompt="x")


def test_repeat_prompt_falls_back_to_the_prompt(tokenizer: Any) -> None:
    steering = compile_steering([c("repeat_prompt")], tokenizer, prompt="Say hi.")
    first = steering._segments[0].segment
    assert isinstance(first, Literal) and first.text.startswith("Say hi.")
