"""Every-word rules at decode time: a random-logits model biased towards breaking each rule (a word off
the alphabet, a word of a non-prime length, a word used again, a lowercase major word, a word opening
with another letter, a space) never breaks it, judged by the form's verifier and by an independent
restatement; and the bundled model writes an alphabetical run when asked."""

from __future__ import annotations

import re
from collections import Counter
from itertools import pairwise
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.count_maxima import added
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Filter, Measure, Unit
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 80
SEEDS = (5, 23)
_WORDS = re.compile(r"[^\W_]+")


def _alphabetical(text: str) -> bool:
    words = _WORDS.findall(text)
    return all(a[:1].isascii() and b[:1].isascii() and a[:1].isalpha()
               and (ord(b[0].lower()) - ord(a[0].lower())) % 26 == 1 for a, b in pairwise(words))


def _prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, n))


def _used_at_most(text: str, most: int) -> bool:
    return max(Counter(w.lower() for w in _WORDS.findall(text)).values(), default=0) <= most


RULES = [
    ("alphabet", Kind.COUNT, {"unit": "words", "filter": {"same_as_previous": "alphabet"}, "relation": "at most",
                              "n": 0}, r"^ the$", _alphabetical),
    ("prime lengths", Kind.COUNT, {"unit": "words", "filter": {"length_class": "prime", "negated": True},
                                   "relation": "at most", "n": 0}, r"^ [a-z]{4}$",
     lambda t: all(_prime(len(w)) for w in _WORDS.findall(t))),
    ("each word at most twice", Kind.COUNT, {"unit": "words", "filter": {"occurrence": 3}, "relation": "at most",
                                             "n": 0}, r"^ (the|and|river)$", lambda t: _used_at_most(t, 2)),
    ("title case", Kind.COUNT, {"unit": "words", "filter": {"stop_words": False, "case": "lower"},
                                "relation": "at most", "n": 0}, r"^ (river|water|flow)",
     lambda t: not re.search(r"\b(river|water|flow)", t)),
    ("every word starts with s", Kind.POSITION, {"unit": "words", "op": "starts_with", "text": "s", "k": 0},
     r"^ [tT]", lambda t: all(w[0].lower() == "s" for w in _WORDS.findall(t))),
    ("every word capitalised", Kind.POSITION, {"unit": "words", "op": "starts_with", "text": "", "k": 0,
                                               "word_class": "capital"}, r"^ (the|river|water)$",
     lambda t: all(w[0].isupper() for w in _WORDS.findall(t))),
    ("no spaces", Kind.COUNT, {"unit": "characters", "filter": {"chars": " \n"}, "relation": "at most", "n": 0},
     r"^ ", lambda t: " " not in t and "\n" not in t),
]


@pytest.mark.parametrize(("name", "kind", "params", "pattern", "ok"), RULES, ids=[row[0] for row in RULES])
def test_every_word_rules_hold_on_random_logits(tokenizer: Any, name: str, kind: Kind, params: dict[str, Any],
                                                pattern: str, ok: Any) -> None:
    constraints = [gen(kind, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, pattern)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "tally" not in steering.unmet(state)


LETTER_OPENINGS = [
    ("sentences", r"^ [A-Za-su-z]", lambda t: all(p[:1].lower() == "t" for p in re.split(r"(?<=[.!?])\s+", t.strip())
                                                   if p)),
    ("lines", r"^\n[A-Za-su-z]|^[A-Za-su-z]", lambda t: all(ln.strip()[:1].lower() == "t" for ln in t.splitlines()
                                                           if ln.strip())),
]


@pytest.mark.parametrize(("unit", "pattern", "ok"), LETTER_OPENINGS, ids=[row[0] for row in LETTER_OPENINGS])
def test_every_piece_opens_with_the_named_letter_on_random_logits(tokenizer: Any, unit: str, pattern: str,
                                                                   ok: Any) -> None:
    constraints = [gen(Kind.COUNT, unit=unit, filter={"starts_with": "t", "negated": True}, relation="at most", n=0)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, pattern)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "class-opening" not in steering.unmet(state)


@pytest.mark.parametrize(("text", "chunk", "more"), [
    ("the cat and the", " dog", 0), ("the cat and the dog", " the", 1), ("the cat, the dog and th", "e", 1),
])
def test_a_word_is_judged_against_all_its_earlier_uses(text: str, chunk: str, more: int) -> None:
    measure = Measure(unit=Unit.WORDS, filter=Filter(occurrence=3))
    assert added(measure, text, chunk) == more


@pytest.mark.parametrize("text", ["The cat saw the dog; the cat ran.", "the the", "Cats, cats and dogs\nthe cats"])
def test_the_uses_counted_per_candidate_agree_with_the_verifiers_count(text: str) -> None:
    measure = Measure(unit=Unit.WORDS, filter=Filter(occurrence=2, stop_words=False))
    for cut in range(len(text)):
        head, chunk = text[:cut], text[cut:]
        assert added(measure, head, chunk) == units.count(measure, text) - units.count(measure, head), (head, chunk)


def _decode(loaded_model: Any, prompt: str, constraints: list[Any], budget: int) -> tuple[Any, str]:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    return steering, result.answer


@pytest.mark.model
def test_bundled_model_writes_an_alphabetical_run_of_words(loaded_model: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="words", filter={"same_as_previous": "alphabet"}, relation="at most", n=0)]
    steering, answer = _decode(
        loaded_model, "Write a sentence about animals where each word starts with the next letter of the alphabet.",
        constraints, 20)
    assert steering.controlled == {"f"}
    assert len(_WORDS.findall(answer)) >= 2 and _alphabetical(answer), answer
    assert judged(constraints, answer) == [], answer


@pytest.mark.model
def test_bundled_model_opens_every_word_with_the_letter(loaded_model: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="words", k=0, op="starts_with", text="s")]
    steering, answer = _decode(loaded_model, "Write a sentence about snakes.", constraints, 16)
    assert steering.controlled == {"f"}
    assert _WORDS.findall(answer) and all(w[0].lower() == "s" for w in _WORDS.findall(answer)), answer
    assert judged(constraints, answer) == [], answer


@pytest.mark.model
def test_bundled_model_opens_every_sentence_with_the_letter(loaded_model: Any) -> None:
    constraints = [gen(Kind.COUNT, unit="sentences", filter={"starts_with": "t", "negated": True}, relation="at most",
                       n=0)]
    steering, answer = _decode(loaded_model, "Give two tips for a first marathon.", constraints, 32)
    assert steering.controlled == {"f"}
    assert answer.strip() and judged(constraints, answer) == [], answer
