"""Token controllers over the real tokenizer, driven by random logits (fast)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from inference.decoder.compile import compile_steering
from inference.decoder.controllers import CharPolicy, ForbiddenWords
from inference.decoder.controllers.charset import split_utf8
from inference.decoder.vocab import vocab_tables
from reasoning.constraints.model import Constraint, Kind

MODEL_CACHE = Path("/tmp/tenet-cache")

# The stand-in "model" below emits seeded random logits: the tokenizer, the
# vocabulary tables and the controllers are the real ones. It prefers nothing
# in particular and never wants to stop, so it reaches every corner of the
# controllers (odd tokens, byte fragments, forced closings).


def drive(steering: Any, steps: int, seed: int, spread: float = 4.0) -> Any:
    """Sample ``steps`` tokens from steered random logits; return the last state."""
    return drive_with_bias(steering, steps, seed, None, spread)


def drive_with_bias(
    steering: Any, steps: int, seed: int, bias: dict[int, float] | None, spread: float = 4.0
) -> Any:
    """Like ``drive``; ``bias`` adds a fixed logit to some token ids every step."""
    generator = torch.Generator().manual_seed(seed)
    size = steering.tables.size
    state = steering.initial_state()
    boost = torch.zeros(size)
    for token, value in (bias or {}).items():
        boost[token] = value
    for _ in range(steps):
        logits = torch.randn(1, size, generator=generator) * spread + boost
        adjusted = steering.apply([state], torch.log_softmax(logits, dim=-1))
        assert adjusted.shape == (1, size)
        assert torch.isfinite(adjusted[0]).any(), "a live row was left without any allowed token"
        probs = torch.softmax(adjusted[0], dim=-1)
        token = int(torch.multinomial(probs, 1, generator=generator))
        state = steering.advance(state, token)
        if state.finished:
            break
    return state



@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    from inference.loader import prepare_cache

    cache = prepare_cache("bundled", MODEL_CACHE)
    assert cache is not None
    return AutoTokenizer.from_pretrained(cache)


def c(kind: str, **params: Any) -> Constraint:
    return Constraint(id=kind, kind=Kind(kind), params=params)


def test_vocab_tables_describe_tokens(tokenizer: Any) -> None:
    tables = vocab_tables(tokenizer)
    comma = tokenizer.encode(",", add_special_tokens=False)[0]
    space_the = tokenizer.encode(" the", add_special_tokens=False)[0]
    assert tables.has_comma[comma] and not tables.has_comma[space_the]
    assert tables.starts_space[space_the] and tables.word_runs[space_the] == 1
    assert tables.special[tokenizer.eos_token_id]
    # A byte piece of a multi-byte character is a fragment, never "letter-free".
    pieces = tokenizer.encode("好", add_special_tokens=False)
    assert len(pieces) > 1 and all(tables.fragment[p] for p in pieces)
    assert b"".join(tables.token_bytes[p] for p in pieces).decode() == "好"
    assert vocab_tables(tokenizer) is tables


def test_split_utf8_keeps_incomplete_tail() -> None:
    assert split_utf8("a好".encode()[:-1]) == ("a", "好".encode()[:-1])
    assert split_utf8(b"\xff\x00")[0] is None


@pytest.mark.parametrize(
    ("policy", "bad"),
    [
        (CharPolicy(no_comma=True), lambda t: "," in t),
        (CharPolicy(case="lower"), lambda t: any(ch.isupper() for ch in t)),
        (CharPolicy(case="upper"), lambda t: any(ch.islower() for ch in t)),
    ],
)
def test_policy_mask_admits_no_forbidden_character(tokenizer: Any, policy: CharPolicy, bad: Any) -> None:
    tables = vocab_tables(tokenizer)
    allowed = policy.allowed_mask(tables).nonzero().flatten().tolist()
    assert len(allowed) > 1000
    assert not any(bad(tables.texts[i]) for i in allowed)


def test_masked_mass_moves_to_case_folded_variant(tokenizer: Any) -> None:
    steering = compile_steering([c("all_lowercase")], tokenizer, prompt="x")
    tables = steering.tables
    upper = tokenizer.encode(" The", add_special_tokens=False)[0]
    lower = tokenizer.encode(" the", add_special_tokens=False)[0]
    logits = torch.full((1, tables.size), -20.0)
    logits[0, upper] = 10.0
    logits[0, lower] = 5.0
    lp = torch.log_softmax(logits, dim=-1)
    out = steering.apply([steering.initial_state()], lp)
    assert out[0, upper] == float("-inf")
    assert out[0, lower] > lp[0, upper] - 1e-3  # " The"'s mass now sits on " the"
    assert int(out[0].argmax()) == lower


@pytest.mark.parametrize("seed", range(2))
def test_random_model_obeys_case_comma_and_closes_structure(tokenizer: Any, seed: int) -> None:
    constraints = [
        c("no_comma"),
        c("all_lowercase"),
        c("title"),
        c("bullet_count", n=3),
        c("end_phrase", phrase="Is there anything else I can help with?"),
        c("quotation"),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=90)
    state = drive(steering, 90, seed)
    text = state.text
    assert "," not in text and text == text.lower()
    assert text.startswith('"<<') and text.endswith('is there anything else i can help with?"')
    assert re.search(r"<<[^\n]+>>", text)
    bullets = re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE) + re.findall(r"^\s*-.*$", text, flags=re.MULTILINE)
    assert len(bullets) == 3
    assert steering.unmet(state) == ()


def test_forbidden_word_split_across_tokens_never_appears(tokenizer: Any) -> None:
    word = "financial"
    pieces = tokenizer.encode(" " + word, add_special_tokens=False)
    parts = [tokenizer.encode(p, add_special_tokens=False) for p in (" fin", "anc", "ial")]
    assert all(len(p) == 1 for p in parts)
    split_ids = [p[0] for p in parts]
    steering = compile_steering([c("forbidden_words", words=[word, "risk"])], tokenizer, prompt="x", max_new_tokens=80)
    bias = {t: 9.0 for t in split_ids + pieces}
    bias[tokenizer.encode(".", add_special_tokens=False)[0]] = 7.0
    for seed in range(2):
        state = drive_with_bias(steering, 80, seed, bias)
        assert "fin" in state.text  # the model kept trying
        assert not re.search(rf"\b{word}\b", state.text, flags=re.IGNORECASE)


def test_forbidden_words_checker_window() -> None:
    words = ForbiddenWords(("risk",))
    assert not words.token_ok("the ri", "sk")  # the whole word, even at the end
    assert not words.token_ok("the ri", "sk.")
    assert words.token_ok("the ri", "sky")
    assert words.token_ok("the b", "risk")  # "brisk" is another word
    assert not words.ends_ok("a RISK")


def test_json_schema_output_parses(tokenizer: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    steering = compile_steering([c("json_format", schema=schema)], tokenizer, prompt="x", max_new_tokens=60)
    state = drive(steering, 60, 1)
    assert state.finished and steering.unmet(state) == ()
    value = json.loads(state.text)
    assert set(value) == {"name", "age"} and isinstance(value["age"], int)


def test_constrained_options_give_exactly_one_option(tokenizer: Any) -> None:
    options = ["My answer is yes.", "My answer is no.", "My answer is maybe."]
    steering = compile_steering([c("constrained_response", options=options)], tokenizer, prompt="x")
    state = drive(steering, 30, 3)
    assert state.text in options


def test_chinese_language_keeps_han_script(tokenizer: Any) -> None:
    steering = compile_steering([c("response_language", language="zh")], tokenizer, prompt="x", max_new_tokens=60)
    han = [tokenizer.encode(ch, add_special_tokens=False) for ch in "中文你好世界我们"]
    bias = {t: 6.0 for ids in han for t in ids}
    state = drive_with_bias(steering, 60, 0, bias)
    letters = [ch for ch in state.text if ch.isalpha()]
    assert letters and all("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in letters)
    assert "\ufffd" not in state.text


def test_word_and_sentence_limits_hold(tokenizer: Any) -> None:
    steering = compile_steering(
        [c("word_count", relation="less than", n=25), c("sentence_count", relation="less than", n=3)],
        tokenizer,
        prompt="x",
        max_new_tokens=120,
    )
    period = tokenizer.encode(".", add_special_tokens=False)[0]
    for seed in range(2):
        state = drive_with_bias(steering, 120, seed, {period: 5.0})
        assert len(re.findall(r"\w+", state.text)) < 25
        ends = re.findall(r"[.!?]+(?=\s)", state.text + " ")
        assert len(ends) <= 2


def test_minimum_words_hold_back_the_end(tokenizer: Any) -> None:
    steering = compile_steering([c("word_count", relation="at least", n=30)], tokenizer, prompt="x", max_new_tokens=200)
    eos = tokenizer.eos_token_id
    state = drive_with_bias(steering, 200, 0, {eos: 30.0})
    assert state.finished
    assert len(re.findall(r"\w+", state.text)) >= 30


def test_placeholders_are_inserted_when_the_model_stops(tokenizer: Any) -> None:
    steering = compile_steering([c("placeholders", n=2)], tokenizer, prompt="x", max_new_tokens=120)
    state = drive_with_bias(steering, 120, 2, {tokenizer.eos_token_id: 12.0})
    assert len(re.findall(r"\[.*?\]", state.text)) >= 2
    assert steering.unmet(state) == ()


def test_dead_end_is_reported_not_hidden(tokenizer: Any) -> None:
    # Two required properties need a comma between them; no_comma forbids it.
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    steering = compile_steering([c("json_format", schema=schema), c("no_comma")], tokenizer, prompt="x", max_new_tokens=40)
    state = drive(steering, 40, 0)
    assert "," not in state.text
    assert "format" in steering.unmet(state)
