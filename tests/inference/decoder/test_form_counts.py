"""Counts of the constraint form beyond plain caps: distinct words, minima per piece,
a paragraph opened by a word at a middle position. A random-logits model biased towards
what each constraint forbids never violates a controlled one (judged by the form's
verifiers and by independent restatements); impossible combinations are refused."""

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


def _words(text: str) -> list[str]:
    """Words: runs of word characters, each Han character one word."""
    return re.findall(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+", text)


def _sentences(text: str) -> list[str]:
    """Sentences as an independent restatement splits them: after . ! ? and whitespace."""
    return [p for p in re.split(r"(?<=[.!?])[\"'”’)\]]*\s+", text.strip()) if p.strip()]


def test_distinct_words_cap_holds_on_random_logits(tokenizer: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="unique_words", relation="at most", n=9),
                   Constraint(id="kw", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["delta"]})]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "kw"}
    bias = bias_towards(tokenizer, r"^ [a-z]+$", 3.0)  # a new word at every step
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert len({w.lower() for w in _words(state.text)}) <= 9, state.text
        assert "delta" in state.text.lower(), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "tally" not in steering.unmet(state)


def test_distinct_words_cap_beside_words_chosen_at_decode_time_is_left_to_the_prompt(tokenizer: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="unique_words", relation="at most", n=20),
                   Constraint(id="caps", kind=Kind.CAPITAL_WORD_FREQUENCY, params={"relation": "at least", "n": 2})]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled and "caps" in steering.controlled


FLOORS = [
    ("words per sentence", {"unit": "words", "relation": "at least", "n": 6, "per": "sentences"},
     lambda t: all(len(_words(s)) >= 6 for s in _sentences(t))),
    ("characters per sentence", {"unit": "characters", "relation": "more than", "n": 30, "per": "sentences"},
     lambda t: all(len(s) > 30 for s in _sentences(t))),
    ("non-space characters per line", {"unit": "characters", "filter": {"nonspace": True}, "relation": "at least",
                                       "n": 25, "per": "lines"},
     lambda t: all(len(re.sub(r"\s", "", ln)) >= 25 for ln in t.splitlines() if ln.strip())),
    ("words per line", {"unit": "words", "relation": "at least", "n": 4, "per": "lines"},
     lambda t: all(len(_words(ln)) >= 4 for ln in t.splitlines() if ln.strip())),
]


@pytest.mark.parametrize(("name", "params", "ok"), FLOORS, ids=[row[0] for row in FLOORS])
def test_minima_per_piece_hold_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any], ok: Any) -> None:
    constraints = [gen(Kind.COUNT, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^[.!?]$|^\n$", 12.0)  # ends everywhere
    bias.update(bias_towards(tokenizer, r"^ [a-z]+$", 3.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert len(_sentences(state.text)) >= 2 or "\n" in state.text, state.text  # pieces did end
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "floor" not in steering.unmet(state)


def test_an_exact_count_per_sentence_is_a_floor_and_a_cap(tokenizer: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="words", relation="exactly", n=5, per="sentences")]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^ [a-z]+$", 3.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert all(len(_words(s)) == 5 for s in _sentences(state.text)), state.text
        assert judged(constraints, state.text) == [], state.text


def test_minima_per_piece_beside_fixed_text_or_a_filter_are_left_to_the_prompt(tokenizer: Any) -> None:
    cases = [
        [gen(Kind.COUNT, unit="words", relation="at least", n=5, per="sentences"),
         Constraint(id="end", kind=Kind.END_PHRASE, params={"phrase": "Is there anything else?"})],
        [gen(Kind.COUNT, unit="keywords", filter={"text": "river"}, relation="at least", n=1, per="sentences")],
    ]
    for constraints in cases:
        steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert "f" in steering.uncontrolled


def test_a_word_opening_a_middle_paragraph_holds_on_random_logits(tokenizer: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="paragraphs", k=2, op="starts_with", text="Meanwhile"),
                   gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "digits"}
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, None)
        paragraphs = state.text.split("\n\n")
        assert len(paragraphs) >= 2 and paragraphs[1].split()[0].strip(".,!?").lower() == "meanwhile", state.text
        assert judged(constraints, state.text) == [], state.text


PARAGRAPH_COUNTS = [
    ("exactly three", [gen(Kind.COUNT, unit="paragraphs", relation="exactly", n=3)], "Describe a river.", None),
    ("two, the second opened by a word", [gen(Kind.COUNT, unit="paragraphs", relation="at least", n=2),
                                          gen(Kind.POSITION, "p", unit="paragraphs", k=2, op="starts_with", text="此外")],
     "描述一条河流。", "此外"),
]


@pytest.mark.parametrize(("name", "constraints", "prompt", "word"), PARAGRAPH_COUNTS,
                         ids=[row[0] for row in PARAGRAPH_COUNTS])
def test_a_paragraph_count_is_the_blank_line_body_with_its_placed_word(
    tokenizer: Any, name: str, constraints: list[Constraint], prompt: str, word: str | None
) -> None:
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=BUDGET)
    assert steering.controlled == {c.id for c in constraints}
    n = constraints[0].params["n"]
    bias = bias_towards(tokenizer, r"\n", 5.0)  # a model that breaks paragraphs everywhere
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        paragraphs = [p for p in re.split(r"\n\s*\n", state.text) if p.strip()]
        assert len(paragraphs) == n, state.text
        if word is not None:
            assert paragraphs[1].startswith(word), state.text
        assert judged(constraints, state.text) == [], state.text


def test_impossible_minima_and_positions_are_conflicts(tokenizer: Any) -> None:
    cases = [
        [gen(Kind.COUNT, "a", unit="words", relation="at least", n=10, per="sentences"),
         gen(Kind.COUNT, "b", unit="words", relation="at most", n=8, per="sentences")],
        [gen(Kind.COUNT, "a", unit="words", relation="at least", n=30, per="sentences"),
         Constraint(id="b", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 20})],
        [gen(Kind.COUNT, "a", unit="words", relation="at least", n=10, per="sentences"),
         Constraint(id="b", kind=Kind.SENTENCE_COUNT, params={"relation": "at least", "n": 4}),
         Constraint(id="c", kind=Kind.WORD_COUNT, params={"relation": "at most", "n": 30})],
        [gen(Kind.POSITION, "a", unit="sentences", k=4, op="starts_with", text="However"),
         Constraint(id="b", kind=Kind.SENTENCE_COUNT, params={"relation": "at most", "n": 3})],
    ]
    for constraints in cases:
        with pytest.raises(ConflictError) as refused:
            compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert "a" in refused.value.extra["constraint_ids"]


OPENINGS = [
    ("third sentence, one word", {"unit": "sentences", "k": 3, "op": "starts_with", "text": "However"},
     lambda t: re.match(r"however(?:[\s.,?!'\"]|$)", _sentences(t)[2].lower()) is not None),
    ("second sentence, a phrase", {"unit": "sentences", "k": 2, "op": "starts_with", "text": "In short"},
     lambda t: _sentences(t)[1].lower().startswith("in short")),
    ("second line", {"unit": "lines", "k": 2, "op": "starts_with", "text": "Next"},
     lambda t: [ln for ln in t.splitlines() if ln.strip()][1].split()[0].strip(".,?!'\"").lower() == "next"),
]


@pytest.mark.parametrize(("name", "params", "ok"), OPENINGS, ids=[row[0] for row in OPENINGS])
def test_a_middle_piece_opening_holds_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any],
                                                       ok: Any) -> None:
    constraints = [gen(Kind.POSITION, **params), gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "digits"}
    bias = bias_towards(tokenizer, r"^[.!?]$|^\n$", 12.0)  # pieces end everywhere, with any next word
    bias.update(bias_towards(tokenizer, r"^ ?[A-Za-z]+$", 3.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "opening" not in steering.unmet(state)


def test_a_middle_opening_beside_inserted_words_or_a_cap_on_its_letters_is_left_to_the_prompt(tokenizer: Any) -> None:
    cases = [
        [gen(Kind.POSITION, unit="sentences", k=2, op="starts_with", text="However"),
         Constraint(id="kw", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["delta"]})],
        [gen(Kind.POSITION, unit="sentences", k=2, op="starts_with", text="However"),
         gen(Kind.COUNT, "no-w", unit="letters", filter={"text": "w"}, relation="at most", n=0)],
    ]
    for constraints in cases:
        steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert "f" in steering.uncontrolled


@pytest.mark.model
def test_bundled_model_keeps_a_floor_an_opening_and_a_distinct_words_cap(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 64
    prompt = "Describe a river in spring."
    constraints = [
        gen(Kind.COUNT, "floor", unit="words", relation="at least", n=6, per="sentences"),
        gen(Kind.POSITION, "second", unit="sentences", k=2, op="starts_with", text="Meanwhile"),
        gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0),
        gen(Kind.COUNT, "distinct", unit="unique_words", relation="at most", n=40),
    ]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"floor", "second", "digits", "distinct"}
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert judged(constraints, result.answer) == [], result.answer
    assert len(_sentences(result.answer)) >= 2, result.answer


def _eos_and_short_tokens(steering: Any, tokenizer: Any) -> dict[int, float]:
    """A model that wants to stop at once, and otherwise writes one character at a time."""
    bias = bias_towards(tokenizer, r"^\S$|^\s+$", 4.0)
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 12.0))
    return bias


def test_a_character_minimum_holds_against_a_model_that_wants_to_stop(tokenizer: Any) -> None:
    ranges = [
        ([gen(Kind.COUNT, unit="characters", relation="at least", n=300)], lambda n: n >= 300),
        ([gen(Kind.COUNT, unit="characters", relation="at least", n=150),
          gen(Kind.COUNT, "cap", unit="characters", relation="at most", n=190)], lambda n: 150 <= n <= 190),
        ([gen(Kind.COUNT, unit="letters", relation="exactly", n=120)], lambda n: n == 120),
        ([gen(Kind.COUNT, unit="characters", filter={"nonspace": True}, relation="at least", n=200)],
         lambda n: n >= 200),
    ]
    for constraints, ok in ranges:
        steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert steering.controlled == {c.id for c in constraints}
        bias = _eos_and_short_tokens(steering, tokenizer)
        for seed in SEEDS:
            state = drive_with_bias(steering, BUDGET, seed, bias)
            unit, spaced = constraints[0].params["unit"], "filter" not in constraints[0].params
            # A reader's length counts every character; "excluding spaces" leaves white space out.
            count = len(state.text) if unit == "characters" and spaced else sum(
                1 for ch in state.text if (ch.isalpha() if unit == "letters" else not ch.isspace()))
            assert ok(count), (count, state.text)
            assert judged(constraints, state.text) == [], state.text
            assert "form-minimum" not in steering.unmet(state)


def test_a_distinct_words_minimum_is_assisted_and_impossible_minima_are_refused(tokenizer: Any) -> None:
    steering = compile_steering([gen(Kind.COUNT, unit="unique_words", relation="at least", n=30)], tokenizer,
                                prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.assisted == {"f"} and not steering.controlled
    with pytest.raises(ConflictError):
        compile_steering([gen(Kind.COUNT, "a", unit="characters", relation="at least", n=300),
                          gen(Kind.COUNT, "b", unit="characters", relation="less than", n=200)],
                         tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    with pytest.raises(LimitExceeded):
        compile_steering([gen(Kind.COUNT, "a", unit="characters", relation="at least", n=6 * BUDGET + 1)],
                         tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)


def test_a_capped_ratio_holds_on_random_logits(tokenizer: Any) -> None:
    share = {"unit": "words", "filter": {"case": "upper"}, "relation": "at most", "n": 0,
             "of": {"unit": "words"}, "fraction": 0.1}
    constraints = [gen(Kind.COUNT, **share)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^ [A-Z]+$", 6.0)  # words in capitals first
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        words = _words(state.text)
        assert words and sum(w.isupper() for w in words) <= 0.1 * len(words), state.text
        assert sum(w.isupper() for w in words) >= 1, state.text  # the adversary did get some in
        assert judged(constraints, state.text) == [], state.text
        assert "tally" not in steering.unmet(state)


def test_ratio_minima_and_ratios_beside_fixed_text_are_left_to_the_prompt(tokenizer: Any) -> None:
    share = {"unit": "words", "filter": {"starts_with": "s"}, "relation": "at least", "n": 0,
             "of": {"unit": "words"}, "fraction": 0.3}  # (a share of sentences by their mark is controlled)
    capped = {"unit": "words", "filter": {"case": "upper"}, "relation": "at most", "n": 0,
              "of": {"unit": "words"}, "fraction": 0.1}
    cases = [
        [gen(Kind.COUNT, **share)],
        [gen(Kind.COUNT, **capped), Constraint(id="end", kind=Kind.END_PHRASE, params={"phrase": "ALL DONE."})],
    ]
    for constraints in cases:
        steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert "f" in steering.uncontrolled


def test_words_starting_with_letters_are_paced_in_against_a_model_that_wants_to_stop(tokenizer: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="words", filter={"starts_with": "wh"}, relation="at least", n=4)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^ [a-v]+$", 3.0)  # words without the letters
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert sum(w.lower().startswith("wh") for w in _words(state.text)) >= 4, state.text
        assert judged(constraints, state.text) == [], state.text
        assert "initials" not in steering.unmet(state)
    with pytest.raises(ConflictError):
        compile_steering(constraints + [Constraint(id="w", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 4})],
                         tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    beside = constraints + [Constraint(id="caps", kind=Kind.CAPITAL_WORD_FREQUENCY, params={"relation": "at least", "n": 2})]
    steering = compile_steering(beside, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled and "caps" in steering.controlled


def test_words_ending_with_letters_are_paced_in_and_closed_against_a_model_that_lengthens_them(tokenizer: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="words", filter={"ends_with": "ing"}, relation="at least", n=4)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^(s|ly|ed|er)$", 6.0)  # endings that would lengthen a word past 'ing'
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert sum(w.lower().strip(".,;:!?\"'()").endswith("ing") for w in state.text.split()) >= 4, state.text
        assert judged(constraints, state.text) == [], state.text
        assert "initials" not in steering.unmet(state)
