"""The keyword and capital-word controllers over the real tokenizer, driven by
random logits (fast), and once through the bundled model."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_controllers import drive_with_bias

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.keywords import Keyword, Keywording
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.verifiers import verify_all
from reasoning.errors import ConflictError

END_PHRASE = "Is there anything else I can help with?"


def c(kind: str, cid: str | None = None, **params: Any) -> Constraint:
    return Constraint(id=cid or kind, kind=Kind(kind), params=params)


def occurrences(keyword: str, text: str) -> int:
    """IFEval's count: case-insensitive, non-overlapping substring matches."""
    return len(re.findall(re.escape(keyword), text, flags=re.IGNORECASE))


def tokens_holding(tokenizer: Any, steering: Any, *pieces: str) -> dict[int, float]:
    """Token ids whose text holds any of ``pieces`` (case-insensitive), for a bias."""
    return {
        i: 0.0
        for i, text in enumerate(steering.tables.texts)
        if any(p in text.lower() for p in pieces) and text.strip()
    }


def failed(constraints: list[Constraint], text: str) -> list[str]:
    return [v.constraint_id for v in verify_all(constraints, text) if not v.satisfied]


MINIMUMS = [
    c("keyword_frequency", keyword="mountain", relation="at least", n=3),
    c("keywords_present", keywords=["river bank", "hippopotamus"]),
]


@pytest.mark.parametrize("policy", [[], [c("all_lowercase")], [c("all_capitals")]])
def test_owed_keywords_are_written_when_the_model_never_would(tokenizer: Any, policy: list[Constraint]) -> None:
    """A model that never writes the keywords nor stops still gets every one,
    spread through the text (the first well before its end)."""
    constraints = MINIMUMS + policy
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=120)
    assert steering.controlled >= {"keyword_frequency", "keywords_present"}
    avoid = {t: -30.0 for t in tokens_holding(tokenizer, steering, "mount", "river", "bank", "hipp")}
    avoid[tokenizer.eos_token_id] = -30.0
    for seed in range(3):
        state = drive_with_bias(steering, 120, seed, avoid)
        assert occurrences("mountain", state.text) >= 3, state.text
        assert occurrences("river bank", state.text) >= 1, state.text
        assert occurrences("hippopotamus", state.text) >= 1, state.text
        assert state.text.lower().find("mountain") < len(state.text) / 2, state.text
        assert steering.unmet(state) == (), state.text
        assert failed(constraints, state.text) == [], state.text


def test_owed_keywords_are_written_when_the_model_wants_to_stop_at_once(tokenizer: Any) -> None:
    steering = compile_steering(MINIMUMS, tokenizer, prompt="x", max_new_tokens=80)
    for seed in range(3):
        state = drive_with_bias(steering, 80, seed, {tokenizer.eos_token_id: 12.0})
        assert state.finished, state.text
        assert failed(MINIMUMS, state.text) == [], state.text
        assert steering.unmet(state) == ()


def test_a_chosen_first_token_commits_to_its_keyword(tokenizer: Any) -> None:
    """The model's own " hipp" becomes "hippopotamus", written early rather
    than where the pacing would have put it."""
    constraints = [c("keywords_present", keywords=["hippopotamus"])]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=100)
    start = tokenizer.encode(" hipp")[0]
    state = drive_with_bias(steering, 100, 0, {start: 14.0})
    assert state.text.lower().find("hippopotamus") < 20, state.text
    assert failed(constraints, state.text) == []


@pytest.mark.parametrize("policy", [[], [c("all_lowercase")], [c("no_comma")]])
def test_a_capped_keyword_never_exceeds_its_maximum(tokenizer: Any, policy: list[Constraint]) -> None:
    """A model that loves the keyword and its pieces (" mount" + "ain", "Mountain")
    writes it at most the allowed number of times, however it is split."""
    constraints = [c("keyword_frequency", keyword="mountain", relation="less than", n=3), *policy]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=100)
    assert "keyword_frequency" in steering.controlled
    pieces = {"mountain", "mountains", "mount", "ain", "tain", "ountain"}
    love = {i: 12.0 for i, text in enumerate(steering.tables.texts) if text.strip().lower() in pieces}
    for seed in range(3):
        state = drive_with_bias(steering, 100, seed, love)
        assert occurrences("mountain", state.text) <= 2, state.text
        assert steering.unmet(state) == (), state.text


@pytest.mark.parametrize(("limit", "budget"), [(12, 60), (25, 100)])
def test_keyword_minimums_fit_a_tight_word_maximum(tokenizer: Any, limit: int, budget: int) -> None:
    """The word maximum keeps room for the owed keywords, whether the model
    avoids them and the end or wants to stop at once."""
    constraints = [
        c("keyword_frequency", keyword="river bank", relation="at least", n=2),
        c("keywords_present", keywords=["stone"]),
        c("word_count", relation="less than", n=limit),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=budget)
    avoid = {t: -30.0 for t in tokens_holding(tokenizer, steering, "river", "bank", "stone")}
    avoid[tokenizer.eos_token_id] = -30.0
    for bias in (avoid, {tokenizer.eos_token_id: 8.0}):
        for seed in range(3):
            state = drive_with_bias(steering, budget, seed, bias)
            assert failed(constraints, state.text) == [], state.text
            assert steering.unmet(state) == (), state.text


def test_a_keyword_in_a_later_literal_is_not_written_again(tokenizer: Any) -> None:
    """The end phrase will bring "help": the body owes nothing."""
    constraints = [c("keywords_present", keywords=["help"]), c("end_phrase", phrase=END_PHRASE)]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=60)
    avoid = {t: -30.0 for t in tokens_holding(tokenizer, steering, "help")}
    state = drive_with_bias(steering, 60, 0, avoid)
    assert state.finished and state.text.endswith(END_PHRASE), state.text
    assert occurrences("help", state.text) == 1, state.text
    assert failed(constraints, state.text) == []


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(text=st.text("abA", max_size=12), chunk=st.text("abA", max_size=6), keyword=st.sampled_from(["ab", "aba", "aa", "b"]))
def test_new_matches_bound_the_growth_of_the_count(text: str, chunk: str, keyword: str) -> None:
    """The per-token check never undercounts what a token adds (exact for
    keywords that cannot overlap themselves)."""
    k = Keyword(keyword, at_most=0)
    grown = k.count(text + chunk) - k.count(text)
    assert grown <= k.new_matches(text, chunk)
    if keyword in ("ab", "b"):
        assert grown == k.new_matches(text, chunk)


@pytest.mark.model
def test_bundled_model_meets_a_keyword_count_in_bullets(loaded_model: Any) -> None:
    """The README's request: three bullets and "risk" at least twice."""
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    constraints = [c("bullet_count", n=3), c("keyword_frequency", keyword="risk", relation="at least", n=2)]
    tokenizer = loaded_model.tokenizer
    prompt = "List the main risks of lending to a new customer."
    budget = 72
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"bullet_count", "keyword_frequency"}
    result = decode(
        loaded_model.model, tokenizer, plan_prompt(tokenizer, prompt, constraints), steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert occurrences("risk", result.answer) >= 2, result.answer
    assert failed(constraints, result.answer) == [], result.answer
    # Unpruned at width 2 the model may write one bullet three times: that is reported as a
    # degenerate step (the pruning rules), never as a broken constraint.
    assert all("degenerate step" in v for v in result.violations), result.violations


def test_a_chinese_keyword_is_written_without_a_space_before_it(tokenizer: Any) -> None:
    constraints = [c("response_language", language="zh"), c("keyword_frequency", keyword="风险", relation="at least", n=2)]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=60)
    assert steering.controlled == {"response_language", "keyword_frequency"}
    avoid = {t: -30.0 for t in tokens_holding(tokenizer, steering, "风", "险")} | {tokenizer.eos_token_id: -30.0}
    state = drive_with_bias(steering, 60, 1, avoid)
    assert occurrences("风险", state.text) >= 2, state.text
    (keywording,) = [k for k in steering.controllers if isinstance(k, Keywording)]
    spelling = keywording.texts[0].spelling
    assert tokenizer.decode(list(spelling.spaced)) == tokenizer.decode(list(spelling.bare)) == "风险"
    assert failed(constraints, state.text) == [], state.text


def test_a_maximum_keeps_room_for_a_required_keyword_that_holds_it(tokenizer: Any) -> None:
    """"risk" at most once and "risk appetite" required: a model that loves
    "risks" and "Risk" may not spend the one "risk" the required phrase needs
    (its own " risk" would begin the phrase)."""
    constraints = [
        c("keyword_frequency", keyword="risk", relation="at most", n=1),
        c("keywords_present", keywords=["risk appetite"]),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=60)
    love = {i: 12.0 for i, text in enumerate(steering.tables.texts) if text.strip() in {"risks", "Risk", "risky"}}
    for seed in range(2):
        state = drive_with_bias(steering, 60, seed, love)
        assert occurrences("risk", state.text) == 1 and "risk appetite" in state.text, state.text
        assert steering.unmet(state) == (), state.text


def capital_words(text: str) -> int:
    """IFEval's count: nltk tokens that are all capitals (punkt-free, as bench.steering judges)."""
    import nltk

    return sum(1 for word in nltk.word_tokenize(text, preserve_line=True) if word.isupper())


@pytest.mark.parametrize("extra", [[], [c("no_comma")], [c("word_count", relation="less than", n=20)]])
def test_a_capital_word_minimum_is_met_by_a_model_that_writes_none(tokenizer: Any, extra: list[Constraint]) -> None:
    """A model that avoids capital letters and the end still writes the owed
    capital words, each a whole word in capitals (spread over the text when
    no word maximum presses them to its end)."""
    constraints = [c("capital_word_frequency", relation="at least", n=4), *extra]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=80)
    assert "capital_word_frequency" in steering.controlled
    avoid = {i: -30.0 for i in range(steering.tables.size) if bool(steering.tables.has_upper[i])}
    avoid[tokenizer.eos_token_id] = -30.0
    for seed in range(3):
        state = drive_with_bias(steering, 80, seed, avoid)
        assert capital_words(state.text) >= 4, state.text
        if not extra:
            assert re.search(r"\b[A-Z]{2,}\b", state.text[: len(state.text) // 2]), state.text
        assert steering.unmet(state) == (), state.text
        assert failed(constraints, state.text) == [], state.text


def test_a_capital_word_minimum_holds_when_the_model_wants_to_stop(tokenizer: Any) -> None:
    constraints = [c("capital_word_frequency", relation="at least", n=3)]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=60)
    for seed in range(3):
        state = drive_with_bias(steering, 60, seed, {tokenizer.eos_token_id: 12.0})
        assert state.finished and capital_words(state.text) >= 3, state.text
        assert steering.unmet(state) == ()


def test_capital_words_are_controlled_only_where_they_can_be_promised(tokenizer: Any) -> None:
    maximum = c("capital_word_frequency", relation="less than", n=3)
    assert compile_steering([maximum], tokenizer, prompt="x").uncontrolled == {"capital_word_frequency"}
    minimum = c("capital_word_frequency", relation="at least", n=3)
    chinese = compile_steering([minimum, c("response_language", language="zh")], tokenizer, prompt="x")
    assert chinese.uncontrolled == {"capital_word_frequency"}
    with pytest.raises(ConflictError):
        compile_steering([minimum, c("all_lowercase")], tokenizer, prompt="x")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    pieces=st.lists(st.text("abA .'-\n", max_size=5), max_size=8),
    keyword=st.sampled_from(["ab", "aba", "aa", "a b", "B"]),
)
def test_running_counts_equal_a_recount(pieces: list[str], keyword: str) -> None:
    """The steering counts keywords and capital words chunk by chunk; the
    running counts always equal a count of the whole text."""
    from inference.decoder.token_controllers.capitals import Capitals
    from inference.decoder.token_controllers.keywords import Keywords

    keywords, capitals = Keywords((Keyword(keyword, at_least=1),)), Capitals(1)
    text, counts, caps = "", (0,), 0
    for chunk in pieces:
        counts = keywords.counts_after(counts, text, chunk)
        caps = capitals.count_after(caps, text, chunk)
        text += chunk
        assert counts == keywords.counts(text)
        assert caps == capitals.count(text)
