"""Sliding-window and hybrid attention in the steered decoder, against the library's own forward.

Tiny random-weight models whose layers look back over a window of 6 tokens: Mistral (every layer
windowed), Qwen2 with its sliding switch (hybrid: full then windowed layers) and Gemma 3 (hybrid
by ``layer_types``). A ragged three-branch decode over a 30-token prompt (five times the window)
with a fork and a rolled-back row, through the prefix cache, the library forward and (for the
Llama family) the lean forward, gives every row's next-token logits equal to the library forward
over that row's tokens alone, whose mask is the library's own.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, Gemma3TextConfig, MistralConfig, Qwen2Config

from inference.decoder.batch import BatchState, prefill_branches, prefill_prefix
from inference.decoder.beam import decode_step
from inference.decoder.grouped_attention import GroupedCache, use_grouped_attention
from inference.decoder.kv_slab import layer_windows, slab_refusal, visible
from inference.decoder.runner import ModelRunner
from inference.prefix_cache import PrefixCache
from inference.weights.build import convert

pytestmark = pytest.mark.usefixtures("one_torch_thread")

WINDOW = 6
VOCAB = 300
_SMALL = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "vocab_size": VOCAB,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "sliding_window": WINDOW,
}


def _tiny(config: Any, attention: str = "sdpa") -> Any:
    torch.manual_seed(0)
    config._attn_implementation = attention
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # wider than the initialiser's scale: logits that differ by token
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(4.0)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


CONFIGS = {
    "mistral": lambda: MistralConfig(**_SMALL),
    "qwen2-hybrid": lambda: Qwen2Config(**_SMALL, use_sliding_window=True, max_window_layers=1),
    "gemma3": lambda: Gemma3TextConfig(
        **_SMALL, head_dim=16, layer_types=["sliding_attention", "full_attention", "sliding_attention"]
    ),
}
WINDOWS = {
    "mistral": (WINDOW, WINDOW, WINDOW),
    "qwen2-hybrid": (None, WINDOW, WINDOW),
    "gemma3": (WINDOW, None, WINDOW),
}


def _reference(model: Any, tokens: torch.Tensor) -> torch.Tensor:
    """The library forward's next-token logits after ``tokens`` (its own causal and window mask)."""
    return model(input_ids=tokens[None]).logits[0, -1].float()


def _check_rows(model: Any, state: BatchState, ids: torch.Tensor, logits: torch.Tensor) -> None:
    seen = state.mask[:, : state.columns]
    for row in range(state.rows):
        expected = _reference(model, ids[row, : state.columns][seen[row]])
        torch.testing.assert_close(logits[row], expected, atol=1e-4, rtol=1e-4)


def _decode_and_check(model: Any, runner: ModelRunner) -> None:
    """Prefix (through the prefix cache), ragged branches, steps with a fork and a rollback."""
    gen = torch.Generator().manual_seed(3)
    prompt = torch.randint(1, VOCAB, (45,), generator=gen)
    prefix, cache = 30, PrefixCache()
    with torch.inference_mode():
        cache.put("t", "m", prompt[:prefix].tolist(), prefill_prefix(runner, prompt[:prefix].tolist()))
        kv = cache.get("t", "m", prompt[:prefix].tolist())
        assert kv is not None
        suffixes = [prompt[30:33].tolist(), prompt[33:42].tolist(), prompt[42:44].tolist()]
        state, first = prefill_branches(runner, prefix, kv, suffixes, width=2, max_new_tokens=12)
        ids = torch.zeros((state.rows, state.mask.shape[1]), dtype=torch.long)  # token per column
        ids[:, :prefix] = prompt[:prefix]
        for row in range(state.rows):  # a suffix's tokens lie on its row's unmasked columns
            columns = prefix + state.mask[row, prefix : state.columns].nonzero().squeeze(1)
            ids[row, columns] = torch.tensor(suffixes[row // 2])
        for b in range(3):
            expected = _reference(model, torch.cat((prompt[:prefix], torch.tensor(suffixes[b]))))
            torch.testing.assert_close(first[b], expected, atol=1e-4, rtol=1e-4)
        for step in range(10):
            if step == 4:
                state.fork([1, 3], [0, 2])
                ids[[1, 3]] = ids[[0, 2]]
            if step == 7:  # row 4 abandons its last two tokens (a repaired step)
                state.mask[4, state.columns - 2 :] = False
                state.positions[4] = int(state.mask[4, : state.columns].sum())
            feed = torch.randint(1, VOCAB, (state.rows,), generator=gen)
            ids[:, state.columns] = feed
            _check_rows(model, state, ids, decode_step(runner, state, feed))


@pytest.mark.parametrize(
    ("family", "attention"),
    [*((family, "sdpa") for family in CONFIGS), ("gemma3", "eager")],
)
def test_the_library_forward_on_the_slab_equals_the_library_forward_alone(
    family: str, attention: str
) -> None:
    model = _tiny(CONFIGS[family](), attention)
    assert layer_windows(model.config) == WINDOWS[family]
    runner = ModelRunner(model, packed=False)
    assert runner.new_cache(1, 4).windows == WINDOWS[family]
    _decode_and_check(model, runner)


@pytest.mark.parametrize("family", ["mistral", "qwen2-hybrid"])
def test_the_lean_forward_on_the_slab_equals_the_library_forward_alone(family: str) -> None:
    model = _tiny(CONFIGS[family]())
    convert(model)
    runner = ModelRunner(model)
    assert runner.packed is not None and runner.packed.windows == WINDOWS[family]
    _decode_and_check(model, runner)


@pytest.mark.parametrize("packed", [False, True])
def test_a_merged_step_attends_over_each_layers_window(packed: bool) -> None:
    model = _tiny(CONFIGS["qwen2-hybrid"]())
    if packed:
        convert(model)
    assert use_grouped_attention(model)
    runner = ModelRunner(model, packed=packed)
    gen = torch.Generator().manual_seed(5)
    with torch.inference_mode():
        groups, rows = [], []
        for count, length in ((2, 17), (3, 9)):
            cache = runner.new_cache(count, length + 1)
            tokens = torch.randint(1, VOCAB, (count, length + 1), generator=gen)
            pos = torch.arange(length).unsqueeze(0).expand(count, -1)
            runner.call(tokens[:, :length], pos, torch.ones((count, length), dtype=torch.bool), cache)
            groups.append((cache, torch.ones((count, length + 1), dtype=torch.bool)))
            rows.extend(tokens)
        merged = GroupedCache(groups)
        feed = torch.stack([row[-1:] for row in rows])
        pos = torch.tensor([[17], [17], [9], [9], [9]])
        logits = runner.call(feed, pos, torch.ones((5, 1, 1, 1), dtype=torch.bool), merged)
        for row, tokens in enumerate(rows):
            torch.testing.assert_close(
                logits[row, -1].float(), _reference(model, tokens), atol=1e-4, rtol=1e-4
            )


def test_a_window_counts_tokens_not_columns() -> None:
    # Row 1 skips columns 1 and 2 (padding): its window of 2 reaches back to column 0.
    mask = torch.tensor([[True, True, True, True], [True, False, False, True]])
    seen = visible(mask, 1, 2)[:, 0, 0]
    assert seen.tolist() == [[False, False, True, True], [True, False, False, True]]


def test_layers_of_another_kind_are_refused_with_the_reason() -> None:
    config = Qwen2Config(**_SMALL)
    config.layer_types = ["full_attention", "linear_attention", "full_attention"]
    reason = slab_refusal(config)
    assert reason is not None and "layer 1" in reason and "linear_attention" in reason
