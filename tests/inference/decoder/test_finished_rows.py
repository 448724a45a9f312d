"""Rows of finished branches leave the decode forwards (``DecodeOptions.drop_finished``): the
same answers as feeding every row every step (bundled model).

Four branches whose answers end at different steps are decoded twice, with
``drop_finished`` off and on, through a ``MicroBatcher`` (as the service
decodes): every branch's text, score, steps and verdicts are the same, and
with it on the decode forwards carried fewer rows.
"""

from __future__ import annotations

import pytest

from inference.decoder.decode import DecodeResult, decode
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.prompting import PromptPlan, common_prefix_length

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]

# A short answer first and last, a long one between: the fed rows shrink from both ends.
QUESTIONS = (
    "Answer with one word: is water wet?",
    "Write a long story about a lighthouse keeper and the sea.",
    "Reply with only the number: what is two plus two?",
    "Describe the water cycle in three sentences.",
)


def _plan(model: LoadedModel) -> PromptPlan:
    tok = model.tokenizer
    texts = [
        tok.apply_chat_template(
            [{"role": "user", "content": q}], tokenize=False, add_generation_prompt=True
        )
        for q in QUESTIONS
    ]
    full = [list(tok(text, add_special_tokens=False)["input_ids"]) for text in texts]
    shared = common_prefix_length(full)
    return PromptPlan(
        prefix_ids=tuple(full[0][:shared]),
        suffixes=tuple(tuple(ids[shared:]) for ids in full),
        views=tuple(f"q{i}" for i in range(len(full))),
        relevance=(1.0,) * len(full),
        facts=((),) * len(full),
        texts=QUESTIONS,
    )


def _decode(model: LoadedModel, drop: bool) -> tuple[DecodeResult, int, int]:
    """The decode, the rows its one-token steps carried and how many such steps ran."""
    batcher = MicroBatcher(model.model, ModelRunner(model.model).call, max_rows=64, max_wait_s=0.0)
    try:
        result = decode(
            model.model,
            model.tokenizer,
            _plan(model),
            DecodeOptions(width=2, max_new_tokens=40, drop_finished=drop),
            batcher=batcher,
        )
        stats = batcher.stats()
    finally:
        batcher.close()
    return result, stats.rows, stats.lane_steps


def test_finished_branches_leave_the_forwards_with_the_same_answers(loaded_model: LoadedModel) -> None:
    every, rows_every, steps_every = _decode(loaded_model, False)
    dropped, rows_dropped, steps_dropped = _decode(loaded_model, True)
    assert dropped.answer == every.answer
    assert [b.text for b in dropped.branches] == [b.text for b in every.branches]
    assert [b.score for b in dropped.branches] == [b.score for b in every.branches]
    assert [
        [(s.text, s.token_start, s.token_end, s.verdicts, s.violation) for s in b.steps]
        for b in dropped.branches
    ] == [
        [(s.text, s.token_start, s.token_end, s.verdicts, s.violation) for s in b.steps]
        for b in every.branches
    ]
    assert dropped.decode_steps == every.decode_steps and steps_dropped == steps_every
    assert dropped.flops == every.flops  # the counterfactual budget's base does not move
    # The branches end at different steps (the short answers well before the budget) ...
    lengths = sorted(len(b.text) for b in every.branches)
    assert lengths[0] < lengths[-1]
    # ... and once they do, their rows are not fed: every step carried all 8 rows before.
    assert rows_every == 8 * steps_every
    assert rows_dropped < rows_every
