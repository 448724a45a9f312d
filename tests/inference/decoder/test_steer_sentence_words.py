"""A word in the k-th sentence written where the model continues into it, not pasted before the
sentence's mark ("... a long, narrow table eat."): the bundled model, asked for the keyword in its
third sentence, writes a third sentence that holds the word and goes on past it; against a
random-logits model the word's first token is favoured more the longer the sentence grows."""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
from test_form_controllers import gen, judged, steered_answer

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.sentence_words import SentenceWord
from reasoning.constraints.model import Kind

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if re.search(r"\w", s)]


def test_the_words_first_token_is_favoured_more_as_the_sentence_grows(tokenizer: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="sentences", k=1, op="contains", text="harvest")]
    steering = compile_steering(
        constraints, tokenizer, prompt="Describe autumn.", max_new_tokens=90
    )
    assert steering.spec(SentenceWord) is not None
    first = tokenizer.encode(" harvest", add_special_tokens=False)[0]
    other = tokenizer.encode(" branch", add_special_tokens=False)[0]
    gains = []
    for opening in ("The", "The leaves turn red and gold and fall slowly to the ground in the"):
        state = steering.initial_state()
        for token in tokenizer.encode(opening, add_special_tokens=False):
            state = steering.advance(state, token)
        flat = torch.log_softmax(torch.zeros(1, steering.tables.size), dim=-1)
        out = steering.apply([state], flat)
        gains.append(float(out[0, first] - out[0, other]))
    assert 0.0 < gains[0] < gains[1]


def test_bundled_model_continues_its_third_sentence_into_the_keyword(loaded_model: Any) -> None:
    budget = 80
    prompt = "Write a short story about a cat. Include the keyword eat in the third sentence."
    constraints, steering, answer = steered_answer(loaded_model, prompt, budget)
    assert (
        steering.spec(SentenceWord) is not None
        and {c.id for c in constraints} <= steering.controlled
    )
    assert judged(constraints, answer) == [], answer
    third = _sentences(answer)[2]
    words = [w.strip(".,;:!?\"'").lower() for w in third.split()]
    assert "eat" in words, answer
    assert words.index("eat") < len(words) - 1, answer  # the sentence goes on past the word
