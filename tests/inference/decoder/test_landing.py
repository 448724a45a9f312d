"""Landing: a random-logits model that never wants to stop ends on a complete sentence.

The stand-in model draws random logits over the real tokenizer with the
stop tokens pushed far down, so every end is the steering's. Completeness is
judged here with its own restatement (a sentence terminal, closers after it,
or a closed JSON value), independent of ``inference.decoder.endings``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from test_controllers import drive_with_bias

from inference.decoder.compile import compile_steering
from inference.decoder.endings import Lander, ends_complete, required_closing
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.textstats import count_sentences

pytestmark = pytest.mark.usefixtures("one_torch_thread")

_COMPLETE = re.compile(r"[.!?\u3002\uff01\uff1f][\"'\u201d\u2019)\]*]*\s*\Z")
_SEEDS = (3, 17, 101)


def _never_stops(steering: Any, tokenizer: Any) -> dict[int, float]:
    """The stop tokens (EOS, and the newlines that end a one-line part) pushed far down."""
    stops = [int(t) for t in steering.tables.eos_ids]
    stops += [int(t) for t in steering.tables.has_newline.nonzero().flatten().tolist()]
    return dict.fromkeys(stops, -40.0)


def _chinese(steering: Any) -> dict[int, float]:
    """A model that writes Chinese: Han characters and Chinese punctuation favoured."""
    han = re.compile(r"[\u4e00-\u9fff\u3002\uff01\uff1f\uff0c]")
    return {i: 16.0 for i, text in enumerate(steering.tables.texts) if han.search(text)}


def _run(
    constraints: list[Constraint],
    tokenizer: Any,
    budget: int,
    seed: int,
    prompt: str = "Describe a river.",
    chinese: bool = False,
) -> Any:
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    bias = _chinese(steering) if chinese else {}
    bias.update(_never_stops(steering, tokenizer))
    state = drive_with_bias(steering, budget, seed, bias)
    assert state.finished, (
        f"the steering did not end the answer within {budget} tokens: {state.text!r}"
    )
    assert state.n_tokens <= budget
    return state


def _c(kind: Kind, **params: Any) -> Constraint:
    return Constraint(id=kind.value, kind=kind, params=params)


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize(
    ("constraints", "budget"),
    [
        pytest.param([_c(Kind.WORD_COUNT, relation="less than", n=30)], 200, id="word-maximum"),
        pytest.param(
            [_c(Kind.SENTENCE_COUNT, relation="less than", n=3)], 120, id="sentence-maximum"
        ),
        pytest.param([_c(Kind.NO_COMMA)], 48, id="token-budget"),
    ],
)
def test_every_budget_ends_on_a_complete_sentence(
    tokenizer: Any, constraints: list[Constraint], budget: int, seed: int
) -> None:
    state = _run(constraints, tokenizer, budget, seed)
    assert _COMPLETE.search(state.text), state.text
    words = len(re.findall(r"\w+", state.text))
    for c in constraints:
        if c.kind == Kind.WORD_COUNT:
            assert words < c.params["n"], state.text


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize(
    ("constraints", "budget"),
    [
        pytest.param([_c(Kind.RESPONSE_LANGUAGE, lang="zh")], 40, id="token-budget"),
        pytest.param([_c(Kind.WORD_COUNT, relation="less than", n=25)], 120, id="word-maximum"),
        pytest.param(
            [_c(Kind.SENTENCE_COUNT, relation="less than", n=3)], 90, id="sentence-maximum"
        ),
    ],
)
def test_chinese_answers_end_on_a_chinese_sentence_end(
    tokenizer: Any, constraints: list[Constraint], budget: int, seed: int
) -> None:
    state = _run(constraints, tokenizer, budget, seed, prompt="描述一条河流。", chinese=True)
    assert re.search(r"[\u3002\uff01\uff1f][\u201d\u2019\u300d]*\s*\Z", state.text), state.text


@pytest.mark.parametrize("seed", _SEEDS)
def test_a_bullet_list_ends_on_a_complete_item(tokenizer: Any, seed: int) -> None:
    state = _run([_c(Kind.BULLET_COUNT, n=3)], tokenizer, 60, seed)
    items = re.findall(r"^\s*[*-] .*$", state.text, flags=re.MULTILINE)
    assert len(items) == 3, state.text
    assert _COMPLETE.search(items[-1]), state.text


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize("budget", [24, 60])
def test_json_closes_inside_the_budget(tokenizer: Any, budget: int, seed: int) -> None:
    state = _run([_c(Kind.JSON_FORMAT)], tokenizer, budget, seed)
    body = (
        state.text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    )
    value = json.loads(body)
    assert isinstance(value, dict) and value, state.text  # an object that holds a key, never {}
    assert "format" not in state.violations, state.text


def _eager_to_stop(steering: Any, one_line: bool) -> dict[int, float]:
    """A model that wants to stop as soon as it may: EOS favoured, and the newlines
    that end a one-line part (a list item) where the parts are lines."""
    stops = [int(t) for t in steering.tables.eos_ids]
    if one_line:
        stops += [int(t) for t in steering.tables.has_newline.nonzero().flatten().tolist()]
    return dict.fromkeys(stops, 40.0)


@pytest.mark.parametrize("seed", _SEEDS)
@pytest.mark.parametrize(
    ("constraints", "prompt", "chinese"),
    [
        pytest.param([_c(Kind.NO_COMMA)], "Describe a river.", False, id="free-answer"),
        pytest.param([_c(Kind.BULLET_COUNT, n=3)], "List three rivers.", False, id="bullet-list"),
        pytest.param(
            [_c(Kind.SENTENCE_COUNT, relation="less than", n=2), _c(Kind.BULLET_COUNT, n=3)],
            "List three rivers.",
            False,
            id="bullets-sharing-one-sentence",
        ),
        pytest.param([_c(Kind.NO_COMMA)], "描述一条河流。", True, id="chinese"),
    ],
)
def test_the_models_own_stop_waits_for_a_complete_sentence(
    tokenizer: Any, constraints: list[Constraint], prompt: str, chinese: bool, seed: int
) -> None:
    """A model eager to stop ends its last part on a sentence end, and nothing else changes:
    the earlier bullets stay as the model left them, and a sentence maximum still holds."""
    budget = 120
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    bias = _chinese(steering) if chinese else {}
    one_line = any(c.kind == Kind.BULLET_COUNT for c in constraints)
    bias.update(_eager_to_stop(steering, one_line))
    state = drive_with_bias(steering, budget, seed, bias)
    # The model's own stop ended it, not the budget's landing.
    assert state.finished and state.n_tokens < budget // 2, state.text
    assert _COMPLETE.search(state.text), state.text
    assert not state.violations, (state.violations, state.text)
    for c in constraints:
        if c.kind == Kind.SENTENCE_COUNT:
            assert count_sentences(state.text) < c.params["n"], state.text
        if c.kind == Kind.BULLET_COUNT:
            items = re.findall(r"^\s*[*-] .*$", state.text, flags=re.MULTILINE)
            assert len(items) == c.params["n"], state.text


def test_the_lander_finds_the_last_complete_sentence(tokenizer: Any) -> None:
    ids = tokenizer.encode(
        "Rivers flow. They carry silt to the sea and a deep understanding of hum",
        add_special_tokens=False,
    )
    lander = Lander(lambda t: str(tokenizer.decode(list(t))))
    n = lander.complete_length(ids)
    assert n is not None and n < len(ids)
    assert tokenizer.decode(ids[:n]).strip() == "Rivers flow."
    assert lander.complete_length(tokenizer.encode("no end here", add_special_tokens=False)) is None


@pytest.mark.parametrize(
    ("text", "complete"),
    [
        ("It is risky.", True),
        ('He said "no."', True),
        ("风险很高。", True),
        ("यह जोखिम है।", True),
        ('{"a": 1}', True),
        ("- a point.\n", True),
        ('```json\n{"a": 1}\n```', True),
        ("| river | length |\n| Nile | 6650 km |", True),
        ("and a deep understanding of human-", False),
        ("The answer is:", False),
        ("* Rivers carry silt\n* Seas rise", False),
        ("*Rivers*", False),
        ("1. Plan meals.\n2. Buy in bulk.\n3. ", False),
        ("Rivers:\n-", False),
        ("", False),
    ],
)
def test_ends_complete(text: str, complete: bool) -> None:
    assert ends_complete(text) is complete


def test_the_closing_the_request_requires_ends_the_answer(tokenizer: Any) -> None:
    constraints = [
        _c(Kind.END_PHRASE, phrase="Any other questions"),
        _c(Kind.NO_COMMA),
        Constraint(id="w", kind=Kind.WRAP, params={"left": "<", "right": "END", "unit": "answer"}),
        Constraint(id="q", kind=Kind.WRAP, params={"left": '"', "right": '"', "unit": "answer"}),
    ]
    last_word = Constraint(
        id="p", kind=Kind.POSITION, params={"unit": "words", "k": -1, "op": "is", "text": "light"}
    )
    first_word = Constraint(
        id="f", kind=Kind.POSITION, params={"unit": "words", "k": 1, "op": "is", "text": "Dawn"}
    )
    assert required_closing([last_word, first_word]) == ("light",)
    assert ends_complete("The sea turns gold. light", required_closing([last_word]))
    closing = required_closing(constraints)
    assert closing == ("Any other questions", "END")
    assert ends_complete("Rivers flow. any other questions", closing)
    assert ends_complete("Rivers flow END\n", closing)
    assert not ends_complete("Rivers flow", closing)
    assert not ends_complete("Rivers flow. any other questions", ())
    text = "Rivers flow to the sea. Any other questions and then some more words"
    ids = tokenizer.encode(text, add_special_tokens=False)
    lander = Lander(lambda t: str(tokenizer.decode(list(t))), closing=closing)
    n = lander.complete_length(ids)
    assert n is not None
    assert tokenizer.decode(ids[:n]).endswith("Any other questions")


@pytest.mark.model
def test_a_plain_decode_cut_by_its_budget_rolls_back_to_its_last_sentence(
    loaded_model: Any,
) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tok = loaded_model.tokenizer
    plan = plan_prompt(tok, "Explain in detail how rivers shape the land around them.")
    result = decode(
        loaded_model.model, tok, plan, options=DecodeOptions(width=2, max_new_tokens=40)
    )
    assert result.end in ("model", "landed", "budget_cut")
    assert result.end == result.branches[result.answer_branch].end
    if result.end == "landed":
        assert _COMPLETE.search(result.answer), result.answer
    if result.end == "budget_cut":
        assert not re.search(r"[.!?]", result.answer), result.answer
    assert result.end != "model" or result.generated_tokens < 40


@pytest.mark.model
def test_an_end_phrase_the_steering_closed_with_is_never_rolled_back(loaded_model: Any) -> None:
    """The forced end after an end phrase is a closed structure, not a cut sentence."""
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tok = loaded_model.tokenizer
    prompt = "Write a short note about a project. End your answer with the word finish."
    constraints = [_c(Kind.END_PHRASE, phrase="finish")]
    steering = compile_steering(constraints, tok, prompt=prompt, max_new_tokens=48)
    plan = plan_prompt(tok, prompt)
    result = decode(
        loaded_model.model,
        tok,
        plan,
        options=DecodeOptions(width=2, max_new_tokens=48),
        steering=steering,
        constraints=constraints,
    )
    assert result.answer.rstrip().endswith("finish"), result.answer
    assert result.end in ("model", "landed"), result.end
