"""Controllers of rules on every piece and of shares (issue 19): every sentence / line /
paragraph opening with a text. A random-logits model biased towards ending pieces
everywhere and writing other words never leaves a piece that opens otherwise, judged by
the form's verifier and by an independent split; impossible combinations are refused;
one short run on the bundled model."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def _sentences(text: str) -> list[str]:
    """Sentences as an independent restatement splits them: after . ! ? and whitespace."""
    return [p.strip() for p in re.split(r"(?<=[.!?])[\"'”’)\]]*\s+", text.strip()) if p.strip()]


def _first_word(piece: str) -> str:
    return re.split(r"[\s.,?!'\"]", piece.strip().lstrip("'\""), maxsplit=1)[0].lower()


EVERY_OPENING = [
    ("sentences, one word", {"unit": "sentences", "text": "Note"},
     lambda t: all(_first_word(p) == "note" for p in _sentences(t))),
    ("sentences, a phrase", {"unit": "sentences", "text": "In short"},
     lambda t: all(p.lower().startswith("in short") for p in _sentences(t))),
    ("lines", {"unit": "lines", "text": "And"},
     lambda t: all(_first_word(ln) == "and" for ln in t.splitlines() if ln.strip())),
    ("paragraphs", {"unit": "paragraphs", "text": "Indeed"},
     lambda t: all(_first_word(p) == "indeed" for p in re.split(r"\n\s*\n", t) if p.strip())),
]


@pytest.mark.parametrize(("name", "params", "ok"), EVERY_OPENING, ids=[row[0] for row in EVERY_OPENING])
def test_every_piece_opening_holds_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any],
                                                    ok: Any) -> None:
    constraints = [gen(Kind.POSITION, k=0, op="starts_with", **params),
                   gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "digits"}
    bias = bias_towards(tokenizer, r"^[.!?]$|^\n\n?$", 10.0)  # pieces end everywhere, with any next word
    bias.update(bias_towards(tokenizer, r"^ ?[A-Za-z]+$", 3.0))
    pieces = 0
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "opening" not in steering.unmet(state)
        pieces += len(_sentences(state.text)) if params["unit"] == "sentences" else state.text.count("\n")
    assert pieces >= 2 * len(SEEDS)  # the adversary did end pieces, and each new one was opened


def test_every_opening_that_another_text_cannot_begin_is_a_conflict(tokenizer: Any) -> None:
    every = gen(Kind.POSITION, "a", unit="sentences", k=0, op="starts_with", text="Note")
    cases = [
        [every, Constraint(id="b", kind=Kind.START_PHRASE, params={"phrase": "Hello there."})],
        [every, gen(Kind.POSITION, "b", unit="sentences", k=3, op="starts_with", text="However")],
        [every, gen(Kind.POSITION, "b", unit="sentences", k=0, op="starts_with", text="Also")],
    ]
    for constraints in cases:
        with pytest.raises(ConflictError) as refused:
            compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert set(refused.value.extra["constraint_ids"]) == {"a", "b"}
    agreeing = [every, Constraint(id="b", kind=Kind.START_PHRASE, params={"phrase": "Note that rivers flow."})]
    steering = compile_steering(agreeing, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "a" in steering.uncontrolled  # the start phrase is fixed text: left to the prompt
