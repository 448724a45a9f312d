"""Word-length caps and adjacent-word rules at decode time: a random-logits model biased towards
long words, or towards words sharing the previous word's initial, never breaks them (judged by
the form's verifier and by an independent restatement)."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.count_maxima import added
from reasoning.constraints.form.model import Filter, Measure, Unit
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (5, 23)


def _initials_repeat(text: str) -> bool:
    words = re.findall(r"[^\W\d_]+|\d+", text)
    return any(a[0].lower() == b[0].lower() and b[0].isalpha() for a, b in pairwise(words))


SHAPED = [
    ("no word over 5 letters", {"unit": "words", "filter": {"min_length": 6}, "relation": "at most", "n": 0},
     r"^\s?[a-z]{4,}$", lambda t: all(len(w) <= 5 for w in re.findall(r"\w+", t))),
    ("no repeated initial", {"unit": "words", "filter": {"same_as_previous": "initial"}, "relation": "at most",
                             "n": 0}, r"^ [sS][a-z]+$", lambda t: not _initials_repeat(t)),
    ("no word twice in a row", {"unit": "words", "filter": {"same_as_previous": "word"}, "relation": "at most",
                                "n": 0}, r"^ the$", lambda t: not re.search(r"\b(\w+)\W+\1\b", t, re.IGNORECASE)),
]


@pytest.mark.parametrize(("name", "params", "pattern", "ok"), SHAPED, ids=[row[0] for row in SHAPED])
def test_word_shape_caps_hold_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any], pattern: str,
                                               ok: Any) -> None:
    constraints = [gen(Kind.COUNT, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, pattern)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "tally" not in steering.unmet(state)


@pytest.mark.parametrize(("text", "chunk", "more"), [
    ("Big red", " rabbit", 1), ("Big red", " apple", 0), ("Big red\n", "Rose", 1), ("Big red — ", "rat", 1),
    ("Big r", "at", 0), ("Big red", "dy rabbit", 1), ("大 red", " rose", 1),
])
def test_a_word_is_judged_against_the_word_before_it_across_any_separator(text: str, chunk: str, more: int) -> None:
    measure = Measure(unit=Unit.WORDS, filter=Filter(same_as_previous="initial"))
    assert added(measure, text, chunk) == more
