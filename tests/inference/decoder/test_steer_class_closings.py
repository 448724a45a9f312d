"""Every sentence (line) ends with an emoji the model picks ("end every sentence with an emoji"):
a random-logits model biased to end sentences and to stop never ends a piece without one, judged
by the verifier and by a reading of our own; the bundled model writes its own emoji before each
sentence's mark; a second rule on the same ends leaves the class to the prompt."""

from __future__ import annotations

import re
from typing import Any

import emoji
import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged, steered_answer

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 60
SEEDS = (5, 23, 211)


def _ends_with_emoji(piece: str) -> bool:
    """A reader's check: the piece's last character, marks and quotes after it aside, ends an emoji."""
    bare = piece.rstrip(" .!?\u3002\uff01\uff1f\"'\u201d\u2019)")
    found = emoji.emoji_list(bare)
    return bool(found) and found[-1]["match_end"] == len(bare)


def _sentences(text: str) -> list[str]:
    return [
        s.strip() for s in re.split(r"(?<=[.!?\u3002\uff01\uff1f])\s+", text) if re.search(r"\w", s)
    ]


@pytest.mark.parametrize("unit", ["sentences", "lines"])
def test_every_piece_ends_with_an_emoji_against_a_model_that_ends_pieces_early(
    tokenizer: Any, unit: str
) -> None:
    constraints = [gen(Kind.POSITION, unit=unit, k=0, op="ends_with", text="", word_class="emoji")]
    steering = compile_steering(
        constraints, tokenizer, prompt="Tell me about cats.", max_new_tokens=BUDGET
    )
    assert steering.controlled == {"f"}
    ends = r"^[.!?]+$" if unit == "sentences" else r"^\n+$"
    bias = bias_towards(tokenizer, ends, 6.0)
    bias.update(dict.fromkeys((int(t) for t in steering.tables.eos_ids), 8.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        pieces = (
            _sentences(state.text)
            if unit == "sentences"
            else [ln for ln in state.text.splitlines() if ln.strip()]
        )
        assert pieces, state.text
        assert all(_ends_with_emoji(p) for p in pieces), state.text
        assert judged(constraints, state.text) == [], state.text
        assert steering.unmet(state) == (), state.text


def test_an_emoji_ending_beside_another_rule_on_sentence_ends_is_left_to_the_prompt(
    tokenizer: Any,
) -> None:
    constraints = [
        gen(Kind.POSITION, unit="sentences", k=0, op="ends_with", text="", word_class="emoji"),
        gen(Kind.WRAP, "m", unit="sentences", left="", right="!"),
    ]
    steering = compile_steering(
        constraints, tokenizer, prompt="Tell me about cats.", max_new_tokens=BUDGET
    )
    assert "f" in steering.uncontrolled and "m" in steering.controlled


def test_bundled_model_ends_every_sentence_with_its_own_emoji(loaded_model: Any) -> None:
    """One short generation of the request as read: three sentences, each closed by an emoji
    the model chose, then its mark (no emoji in place of a word, no run of marks)."""
    budget = 48
    prompt = (
        "Write three short motivational sentences for a gym post. End every sentence with an emoji."
    )
    constraints, steering, answer = steered_answer(loaded_model, prompt, budget)
    assert any(c.params.get("word_class") == "emoji" for c in constraints)
    assert {c.id for c in constraints} <= steering.controlled
    sentences = _sentences(answer)
    assert len(sentences) == 3, answer
    assert all(_ends_with_emoji(s) for s in sentences), answer
    assert not re.search(r"[.!?]{2}", answer), answer
    assert judged(constraints, answer) == [], answer
