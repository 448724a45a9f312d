"""Counterfactual scoring: shared leading tokens run once, the numbers equal whole-text scoring."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from inference.decoder.batch import prefill_prefix
from inference.decoder.contrast import scored_tokens, shared_prefix, token_logprobs
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel

PROMPT = "Evidence: Acme Ltd sent EUR 2,000,000 to Jon Doe.\nState one fact:"
CLAIMS = [
    "Acme Ltd sent EUR 2,000,000 to Jon Doe.",
    "Acme Ltd did not send EUR 2,000,000 to Jon Doe.",
    "Acme Ltd sent EUR 2,000,000 to Jane Roe.",
]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


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
        whole = loaded_model.model(torch.tensor([prompt])).logits[0, -1]
        first = torch.log_softmax(whole.float(), -1)
        runner.counters.flops.clear()
        ours = token_logprobs(runner, kv, len(prompt), first, texts)
        for text, got in zip(texts, ours):
            logits = loaded_model.model(torch.tensor([prompt + text])).logits[0].float()
            lp = torch.log_softmax(logits, -1)
            want = [float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(text)]
            assert got == pytest.approx(want, abs=2e-3)
    flops = runner.counters.flops["counterfactual"]
    assert flops == pytest.approx(2.0 * runner.parameters * scored_tokens(texts))
