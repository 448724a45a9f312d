"""Counterfactual scoring: only what differs is run, and the numbers equal whole-text scoring."""

from __future__ import annotations

import pytest
import torch

from inference.decoder.batch import prefill_branches, prefill_prefix
from inference.decoder.beam import decode_step
from inference.decoder.contrast import (
    RowClaim,
    RowContext,
    _windows,
    row_contrast,
    row_cost,
    rows_contrast,
    rows_cost,
    scored_tokens,
    shared_prefix,
    token_logprobs,
    window_contrast,
    window_cost,
)
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel

PROMPT = "Evidence: Acme Ltd sent EUR 2,000,000 to Jon Doe.\nState one fact:"
CLAIMS = [
    "Acme Ltd sent EUR 2,000,000 to Jon Doe.",
    "Acme Ltd did not send EUR 2,000,000 to Jon Doe.",
    "Acme Ltd sent EUR 2,000,000 to Jane Roe.",
]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_shared_prefix_leaves_every_text_a_tail() -> None:
    assert shared_prefix([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]]) == 2
    assert shared_prefix([[1, 2], [1, 2]]) == 1
    assert shared_prefix([[7], [7, 8]]) == 0
    assert scored_tokens([[1, 2, 3, 4], [1, 2, 5]]) == 2 + 2 * 2


@pytest.mark.model
def test_shared_prefix_scoring_equals_scoring_each_text_whole(loaded_model: LoadedModel) -> None:
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)
    prompt = list(tok(PROMPT, add_special_tokens=False)["input_ids"])
    texts = [list(tok(" " + c, add_special_tokens=False)["input_ids"]) for c in CLAIMS]
    assert shared_prefix(texts) >= 2
    with torch.inference_mode():
        kv = prefill_prefix(runner, prompt)
        whole = loaded_model.model(torch.tensor([prompt], device=loaded_model.device)).logits[0, -1]
        first = torch.log_softmax(whole.float(), -1)
        runner.counters.flops.clear()
        ours = token_logprobs(runner, kv, len(prompt), first, texts)
        for text, got in zip(texts, ours):
            logits = (
                loaded_model.model(torch.tensor([prompt + text], device=loaded_model.device))
                .logits[0]
                .float()
            )
            lp = torch.log_softmax(logits, -1)
            want = [float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(text)]
            assert got == pytest.approx(want, abs=2e-3)
    flops = runner.counters.flops["counterfactual"]
    assert flops == pytest.approx(2.0 * runner.parameters * scored_tokens(texts))


def test_windows_cover_the_changed_span_and_a_lookahead() -> None:
    claim = [1, 2, 3, 4, 5, 6]
    assert _windows(claim, [1, 2, 9, 4, 5, 6], 2) == (2, 5, 5)
    assert _windows(claim, [1, 2, 3, 4, 7, 8, 5, 6], 2) == (4, 6, 8)  # an insertion
    assert _windows(claim, [1, 2, 3, 4, 5, 6, 7], 2) == (6 - 1, 6, 7)  # one extends the other
    assert window_cost(claim, [[1, 2, 9, 4, 5, 6], [1, 2, 3, 4, 7, 8, 5, 6]]) == 6 + 2 * 4
    assert window_cost(claim, [[1, 9, 3, 4, 5, 6]]) == 4 + 1 * 3  # the claim up to its window


@pytest.mark.model
def test_window_contrast_equals_whole_text_scoring_on_the_windows(
    loaded_model: LoadedModel,
) -> None:
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)
    prompt = list(tok(PROMPT, add_special_tokens=False)["input_ids"])
    claim, *variants = [list(tok(" " + c, add_special_tokens=False)["input_ids"]) for c in CLAIMS]

    def whole(text: list[int]) -> list[float]:
        logits = (
            loaded_model.model(torch.tensor([prompt + text], device=loaded_model.device))
            .logits[0]
            .float()
        )
        lp = torch.log_softmax(logits, -1)
        return [float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(text)]

    with torch.inference_mode():
        kv = prefill_prefix(runner, prompt)
        first = torch.log_softmax(
            loaded_model.model(torch.tensor([prompt], device=loaded_model.device))
            .logits[0, -1]
            .float(),
            -1,
        )
        runner.counters.flops.clear()
        got = window_contrast(runner, kv, len(prompt), first, claim, variants)
        claim_lp = whole(claim)
        expected = []
        for variant in variants:
            start, c_end, v_end = _windows(claim, variant, 2)
            v_lp = whole(variant)[start:v_end]
            c_lp = claim_lp[start:c_end]
            expected.append(sum(c_lp) / len(c_lp) - sum(v_lp) / len(v_lp))
    assert got.value == pytest.approx(min(expected), abs=2e-3)
    assert got.best == 1 + expected.index(min(expected))
    assert list(got.claim_logprobs) == pytest.approx(claim_lp[: len(got.claim_logprobs)], abs=2e-3)
    flops = runner.counters.flops["counterfactual"]
    assert flops == pytest.approx(2.0 * runner.parameters * window_cost(claim, variants))
    assert window_cost(claim, variants) < len(variants + [claim]) * len(claim)


@pytest.mark.model
def test_row_contrast_equals_scoring_prompt_answer_and_variant_whole(
    loaded_model: LoadedModel,
) -> None:
    """Variants scored over a ragged row of the decode's slab (padding columns masked in the
    middle) give the numbers of running the prompt, the answer before the claim and the
    variant whole; the claim's own log-probabilities are the decode's, not re-run."""
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)

    def ids(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    prefix = ids("Evidence: Acme Ltd sent EUR 2,000,000 to Jon Doe.")
    suffixes = [ids("\nState one fact about the payment, please:"), ids("\nState one fact:")]
    earlier = ids(" Here is one fact.")
    claim, *variants = [ids(" " + c) for c in CLAIMS]
    answer = earlier + claim
    width = 2
    row = 1 * width  # the shorter branch: its padding columns sit between prompt and answer

    def whole(text: list[int]) -> list[float]:
        full = prefix + suffixes[1] + text
        logits = loaded_model.model(torch.tensor([full], device=loaded_model.device)).logits[0]
        lp = torch.log_softmax(logits.float(), -1)
        return [float(lp[len(full) - len(text) - 1 + i, t]) for i, t in enumerate(text)]

    with torch.inference_mode():
        kv = prefill_prefix(runner, prefix)
        state, _ = prefill_branches(
            runner, len(prefix), kv, suffixes, width=width, max_new_tokens=len(answer) + 2
        )
        for token in answer[:-1]:  # the decode feeds every chosen token but the newest
            decode_step(runner, state, torch.full((state.rows,), token, dtype=torch.long))
        context = RowContext(
            state.cache,
            row,
            state.mask[row, : state.columns],
            state.prompt_lengths[1],
            state.prompt_last_token[1],
        )
        decoded = whole(answer)  # what the beam knows of every chosen token
        runner.counters.flops.clear()
        got = row_contrast(runner, context, answer, len(earlier), decoded, variants)
        expected = []
        for variant in variants:
            start, c_end, v_end = _windows(claim, variant, 2)
            v_lp = whole(earlier + variant)[len(earlier) + start : len(earlier) + v_end]
            c_lp = decoded[len(earlier) + start : len(earlier) + c_end]
            expected.append(sum(c_lp) / len(c_lp) - sum(v_lp) / len(v_lp))
    assert got.value == pytest.approx(min(expected), abs=2e-3)
    assert got.best == 1 + expected.index(min(expected))
    flops = runner.counters.flops["counterfactual"]
    assert flops == pytest.approx(2.0 * runner.parameters * row_cost(claim, variants))
    assert row_cost(claim, variants) < window_cost(claim, variants)


@pytest.mark.model
def test_the_claims_of_one_answer_are_scored_together_as_each_alone(
    loaded_model: LoadedModel,
) -> None:
    """Two claims of one answer and their variants in one ragged batch over the row give each
    claim's contrast alone; one forward per window width, no padded position run."""
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)

    def ids(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    prompt = ids(PROMPT)
    first, *first_variants = [ids(" " + c) for c in CLAIMS]
    second = ids(" Jon Doe holds an account in Malta.")
    second_variants = [ids(" Jon Doe holds an account in Cyprus."), ids(" Jon Doe holds no account in Malta.")]
    answer = first + second
    with torch.inference_mode():
        state, _ = prefill_branches(runner, 0, (), [prompt], width=1, max_new_tokens=len(answer) + 2)
        for token in answer[:-1]:
            decode_step(runner, state, torch.tensor([token]))
        context = RowContext(state.cache, 0, state.mask[0, : state.columns], len(prompt), prompt[-1])
        lps = [-0.5 - 0.01 * k for k in range(len(answer))]  # the decode's, as the beam keeps them
        alone = [
            row_contrast(runner, context, answer[: len(first)], 0, lps, first_variants),
            row_contrast(runner, context, answer, len(first), lps, second_variants),
        ]
        claims = [
            RowClaim(0, len(first), tuple(tuple(v) for v in first_variants)),
            RowClaim(len(first), len(answer), tuple(tuple(v) for v in second_variants)),
        ]
        runner.counters.flops.clear()
        calls = runner.counters.scoring_calls
        together = rows_contrast(runner, context, answer, lps, claims)
    for got, one in zip(together, alone, strict=True):
        assert got.best == one.best and got.value == pytest.approx(one.value, abs=2e-3)
    assert runner.counters.flops["counterfactual"] == pytest.approx(
        2.0 * runner.parameters * rows_cost(answer, claims)
    )
    widths = {
        end - start
        for claim, variants in ((first, first_variants), (second, second_variants))
        for start, _, end in (_windows(claim, v, 2) for v in variants)
    }
    assert runner.counters.scoring_calls - calls == len(widths) < len(first_variants) + len(second_variants)
