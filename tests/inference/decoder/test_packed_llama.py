"""The packed Llama forward against the library's own forward: same logits and the same KV for
prefills, ragged decode steps (a branch's beams reading their shared prompt once), forks,
rolled-back rows and merged steps, on the bundled model and on small random models of every
family it accepts; everything else is refused."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    GPT2Config,
    LlamaConfig,
    MistralConfig,
    Qwen2Config,
)

from inference.decoder.batch import BatchState, prefill_branches, prefill_prefix
from inference.decoder.beam import decode_step
from inference.decoder.grouped_attention import GroupedCache, use_grouped_attention
from inference.decoder.packed_llama import attach, packed_forward, unsupported_reason
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.weights.build import convert, onednn_packs
from inference.weights.kernels import PackedLinear

pytestmark = pytest.mark.usefixtures("one_torch_thread")

_SMALL = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "vocab_size": 300}


def _tiny(config: Any, seed: int = 0) -> Any:
    torch.manual_seed(seed)
    config._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(config)
    # Random weights of initialiser scale give near-uniform logits; widen them so the
    # comparison sees real differences between tokens.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(4.0)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def _trace(
    runner: ModelRunner, vocab: int, prefix: int = 40
) -> tuple[list[torch.Tensor], BatchState]:
    """Logits of a ragged three-branch prefill and eight decode steps with a fork and a rollback."""
    gen = torch.Generator().manual_seed(7)
    ids = torch.randint(1, vocab, (prefix + 30,), generator=gen).tolist()
    with torch.inference_mode():
        kv = prefill_prefix(runner, ids[:prefix])
        suffixes = [
            ids[prefix : prefix + 5],
            ids[prefix + 5 : prefix + 14],
            ids[prefix + 14 : prefix + 16],
        ]
        state, first = prefill_branches(runner, prefix, kv, suffixes, width=2, max_new_tokens=10)
        # Each branch's two beams hold its prompt alike: one-token steps read it once per branch.
        assert state.cache.shared == (state.columns, 2)
        out = [first]
        for step in range(8):
            if step == 3:
                state.fork([1, 3], [0, 2])  # beams of branches 0 and 1 take their sibling's history
            if step == 5:
                state.mask[4, state.columns - 1] = False  # row 4 abandons its last token
            if step == 6:
                state.mask[5, prefix + 1] = False  # row 5 stops seeing a column of the shared prompt
            feed = torch.randint(1, vocab, (state.rows,), generator=gen)
            out.append(decode_step(runner, state, feed))
    return out, state


def _assert_same_decode(model: Any, vocab: int, atol: float) -> None:
    library = ModelRunner(model, packed=False)
    packed = ModelRunner(model)
    assert library.packed is None and packed.packed is not None
    theirs, their_state = _trace(library, vocab)
    ours, our_state = _trace(packed, vocab)
    assert len(ours) == len(theirs) == 9
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=atol, rtol=1e-4)
    # The keys and values every row attends to (padding columns hold whatever, masked).
    assert torch.equal(our_state.mask, their_state.mask)
    seen = our_state.mask[:, : our_state.columns]  # [N, C]
    for mine, other in zip(our_state.cache.slab_layers, their_state.cache.slab_layers):
        for a, b in zip(mine.used(), other.used()):
            # Ours may hold them in float32 where the library's slab is in the weights' dtype.
            torch.testing.assert_close(
                a.transpose(1, 2)[seen].float(),
                b.transpose(1, 2)[seen].float(),
                atol=atol,
                rtol=1e-4,
            )


@pytest.mark.model
def test_the_bundled_model_decodes_alike_through_both_forwards(loaded_model: LoadedModel) -> None:
    if loaded_model.device.type != "cpu":
        pytest.skip("the packed forward is a CPU forward")
    assert packed_forward(loaded_model.model) is not None  # load_model attaches it
    _assert_same_decode(loaded_model.model, 49152, atol=2e-3)


@pytest.mark.model
def test_a_merged_step_through_the_packed_forward_equals_the_library_one(
    loaded_model: LoadedModel,
) -> None:
    if loaded_model.device.type != "cpu":
        pytest.skip("the packed forward is a CPU forward")
    assert use_grouped_attention(loaded_model.model)  # as the micro-batcher switches it
    results = []
    for runner in (ModelRunner(loaded_model.model, packed=False), ModelRunner(loaded_model.model)):
        with torch.inference_mode():
            groups = []
            for rows, length, seed in ((2, 17, 1), (3, 6, 2)):
                gen = torch.Generator().manual_seed(seed)
                cache = runner.new_cache(rows, length + 2)
                ids = torch.randint(0, 5000, (rows, length), generator=gen)
                pos = torch.arange(length).unsqueeze(0).expand(rows, -1)
                mask = torch.ones((rows, length + 1), dtype=torch.bool)
                mask[0, 2] = False
                runner.call(ids, pos, mask[:, :length], cache)
                groups.append((cache, mask, length))
            merged = GroupedCache([(cache, mask) for cache, mask, _ in groups])
            ids = torch.tensor([[11], [12], [13], [14], [15]])
            pos = torch.tensor([[17], [17], [6], [6], [6]])
            results.append(
                runner.call(ids, pos, torch.ones((5, 1, 1, 1), dtype=torch.bool), merged)
            )
    torch.testing.assert_close(results[1], results[0], atol=2e-3, rtol=1e-4)


@pytest.mark.parametrize(
    "config",
    [
        LlamaConfig(
            **_SMALL,
            num_attention_heads=4,
            num_key_value_heads=2,
            attention_bias=True,
            mlp_bias=True,
        ),
        Qwen2Config(
            **_SMALL, num_attention_heads=4, num_key_value_heads=1, use_sliding_window=False
        ),
        MistralConfig(**_SMALL, num_attention_heads=4, num_key_value_heads=4, sliding_window=None),
    ],
    ids=["llama-with-biases", "qwen2", "mistral"],
)
def test_every_accepted_family_decodes_alike_through_both_forwards(config: Any) -> None:
    model = _tiny(config)
    assert unsupported_reason(model) is None
    forward = convert(model)
    assert packed_forward(model) is forward
    assert isinstance(forward.lm_head, PackedLinear) == onednn_packs()
    _assert_same_decode(model, config.vocab_size, atol=1e-4)


def test_other_models_keep_the_library_forward() -> None:
    gpt2 = _tiny(GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=100))
    assert "Llama family" in (unsupported_reason(gpt2) or "")
    assert ModelRunner(gpt2).packed is None

    # Sliding windows are the slab's affair (tests/inference/decoder/test_sliding_window.py).
    windowed = _tiny(
        MistralConfig(**_SMALL, num_attention_heads=4, num_key_value_heads=2, sliding_window=16)
    )
    assert unsupported_reason(windowed) is None


def test_a_detached_model_runs_the_library_forward() -> None:
    model = _tiny(LlamaConfig(**_SMALL, num_attention_heads=4, num_key_value_heads=2))
    convert(model)
    attach(model, None)
    assert packed_forward(model) is None and ModelRunner(model).packed is None


def test_a_build_whose_onednn_cannot_pack_runs_float32_on_the_models_own_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _tiny(LlamaConfig(**_SMALL, num_attention_heads=4, num_key_value_heads=2))
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    onednn_packs.cache_clear()
    try:
        assert not onednn_packs()
        forward = convert(model)
        assert forward.lm_head is model.lm_head
        assert forward.layers[0].qkv[0] is model.model.layers[0].self_attn.q_proj
    finally:
        monkeypatch.undo()
        onednn_packs.cache_clear()
    _assert_same_decode(model, _SMALL["vocab_size"], atol=1e-4)
