"""The k-th sentence ending with a text ("the first sentence must end with the word 'friends'"):
a random-logits model biased to end sentences early and to stop never ends that sentence on
another word, judged by the form's verifier and by a restatement; left to the prompt beside a
rule on every sentence's end."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 80
SEEDS = (3, 17, 101)


def _sentences(text: str) -> list[str]:
    """Sentences as a reader splits them: up to a run of end marks before a space or the end (a
    Chinese one anywhere), with the quotes or brackets closed after them."""
    ends = r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)|[\u3002\uff01\uff1f]+[\"'\u201d\u2019)\]]*"
    return [s.strip() for s in re.findall(rf".*?(?:{ends}|$)", text, flags=re.DOTALL) if s.strip()]


@pytest.mark.parametrize(("k", "text"), [(1, "friends"), (2, "every day")])
def test_the_kth_sentence_ends_with_the_text_against_a_model_that_ends_sentences_early(
    tokenizer: Any, k: int, text: str
) -> None:
    constraints = [gen(Kind.POSITION, unit="sentences", k=k, op="ends_with", text=text)]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about cats.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^[.!?]+$", 6.0)  # sentence ends everywhere
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))  # and a wish to stop
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        sentences = _sentences(state.text)
        assert len(sentences) >= k, state.text
        assert sentences[k - 1].lower().rstrip(".!?").endswith(text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "sentence-end" not in steering.unmet(state)


def test_the_kth_sentence_may_hold_a_decimal_before_its_ending(tokenizer: Any) -> None:
    """A model fond of numbers: a '.' between digits ends no sentence, so the first sentence
    may hold '3.5' (every '.' was masked in it) and still ends with the word."""
    constraints = [gen(Kind.POSITION, unit="sentences", k=1, op="ends_with", text="friends")]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about cats.", max_new_tokens=BUDGET)
    bias = bias_towards(tokenizer, r"^\d$|^\.$", 14.0)  # digits and full stops everywhere
    decimals = 0
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        first = _sentences(state.text)[0]
        assert re.sub(r"\W+$", "", first.lower()).endswith("friends"), state.text
        assert judged(constraints, state.text) == [], state.text
        decimals += len(re.findall(r"\d\.\d", first))
    assert decimals > 0


def test_a_sentence_ending_beside_a_rule_on_every_sentence_end_is_left_to_the_prompt(tokenizer: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="sentences", k=1, op="ends_with", text="friends"),
                   gen(Kind.WRAP, "m", unit="sentences", left="", right="!")]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about cats.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled and "m" in steering.controlled


@pytest.mark.parametrize(("relation", "n", "ok"), [("exactly", 2, lambda k: k == 2), ("at most", 2, lambda k: 1 <= k <= 2),
                                                   ("at least", 2, lambda k: k >= 2)])
def test_sentences_per_paragraph_hold_in_a_counted_body_against_a_model_that_ends_sentences_early(
    tokenizer: Any, relation: str, n: int, ok: Any
) -> None:
    constraints = [gen(Kind.COUNT, "p", unit="paragraphs", relation="exactly", n=3),
                   gen(Kind.COUNT, unit="sentences", per="paragraphs", relation=relation, n=n)]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about dogs.", max_new_tokens=120)
    assert steering.controlled == {"p", "f"}
    bias = bias_towards(tokenizer, r"^[.!?]+$|\n", 4.0)  # sentence and paragraph ends everywhere
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 6.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, 120, seed, bias)
        paragraphs = [p for p in re.split(r"\n\s*\n", state.text) if p.strip()]
        assert len(paragraphs) == 3, state.text
        assert all(ok(len(_sentences(p))) for p in paragraphs), state.text
        assert judged(constraints, state.text) == [], state.text


@pytest.mark.parametrize(("relation", "n", "ok"), [("exactly", 2, lambda k: k == 2), ("at most", 2, lambda k: 1 <= k <= 2),
                                                   ("at least", 2, lambda k: k >= 2)])
def test_sentences_per_paragraph_hold_alone_in_a_free_body(tokenizer: Any, relation: str, n: int, ok: Any) -> None:
    """No paragraph count: the model writes its own blank lines (the adversary ends sentences
    and paragraphs everywhere), and every paragraph it writes is within the bound."""
    constraints = [gen(Kind.COUNT, unit="sentences", per="paragraphs", relation=relation, n=n)]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about dogs.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^[.!?]+$|^ [A-Z][a-z]+$", 4.0)
    bias.update(bias_towards(tokenizer, r"^\n\n?$", 14.0))
    paragraphs_seen = 0
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        paragraphs = [p for p in re.split(r"\n\s*\n", state.text) if p.strip()]
        assert all(ok(len(_sentences(p))) for p in paragraphs), state.text
        assert judged(constraints, state.text) == [], state.text
        paragraphs_seen += len(paragraphs)
    assert paragraphs_seen > len(SEEDS)  # the model did end paragraphs of its own


def test_sentences_per_paragraph_beside_a_rule_on_lines_are_left_to_the_prompt(tokenizer: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="sentences", per="paragraphs", relation="at most", n=2),
                   gen(Kind.COUNT, "l", unit="lines", relation="at most", n=6)]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about dogs.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled


@pytest.mark.model
def test_bundled_model_ends_its_first_sentence_on_the_word_and_writes_the_ing_words(loaded_model: Any) -> None:
    """One short generation, three assertions: the first sentence's last word, the words
    ending in 'ing' (the initials controller's ending mode), and the verdicts."""
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 40
    prompt = "Tell me about cats."
    constraints = [gen(Kind.POSITION, unit="sentences", k=1, op="ends_with", text="friends"),
                   gen(Kind.COUNT, "ing", unit="words", filter={"ends_with": "ing"}, relation="at least", n=2)]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"f", "ing"}
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert _sentences(result.answer)[0].lower().rstrip(".!?\"'").endswith("friends"), result.answer
    assert sum(w.lower().strip(".,;:!?\"'()").endswith("ing") for w in result.answer.split()) >= 2, result.answer
    assert judged(constraints, result.answer) == [], result.answer


def test_a_sentence_ending_beside_a_line_count_holds_both(tokenizer: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="sentences", k=1, op="ends_with", text="waves"),
                   gen(Kind.COUNT, "l", unit="lines", relation="exactly", n=4)]
    steering = compile_steering(constraints, tokenizer, prompt="Write a poem about the sea.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "l"}
    bias = bias_towards(tokenizer, r"^[.!?]+$", 6.0)
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert judged(constraints, state.text) == [], state.text
