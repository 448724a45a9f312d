"""The lean forward of newer families against the library's own forward, on tiny random models.

Qwen 3 (per-head q / k norms), Gemma 3 (sandwich norms, scaled embeddings, Gemma's ``1 + w``
norms, GELU, local and global rotary bases, sliding layers, soft-capped logits) and Phi-3
(fused q/k/v and gate/up projections): in float32 the lean forward's decode (prefix,
ragged branches, a fork, a rollback) gives every row the library forward's logits over that
row's tokens alone; in int8 its logits stay close to float32's (KL reported by the assertion).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, Gemma3TextConfig, Phi3Config, Qwen3Config

from inference.decoder.batch import prefill_branches, prefill_prefix
from inference.decoder.beam import decode_step
from inference.decoder.packed_llama import packed_forward, unsupported_reason
from inference.decoder.runner import ModelRunner
from inference.weights.build import build_forward, convert

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB = 300
_SMALL = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 3,
    "vocab_size": VOCAB,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}

CONFIGS = {
    "qwen3": lambda: Qwen3Config(**_SMALL, head_dim=16),
    "gemma3": lambda: Gemma3TextConfig(
        **_SMALL,
        head_dim=16,
        sliding_window=5,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        final_logit_softcapping=3.0,
        query_pre_attn_scalar=24,
    ),
    "phi3": lambda: Phi3Config(**_SMALL, pad_token_id=0),
}


def _tiny(family: str) -> Any:
    torch.manual_seed(0)
    config = CONFIGS[family]()
    config._attn_implementation = "sdpa"
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():  # wider than the initialiser's scale, norms away from their init
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(4.0)
            else:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


def _reference(model: Any, tokens: torch.Tensor) -> torch.Tensor:
    return model(input_ids=tokens[None]).logits[0, -1].float()


@pytest.mark.parametrize("family", list(CONFIGS))
def test_the_lean_forward_decodes_as_the_library_forward(family: str) -> None:
    model = _tiny(family)
    assert unsupported_reason(model) is None
    convert(model)
    runner = ModelRunner(model)
    assert runner.packed is packed_forward(model) and runner.packed is not None
    gen = torch.Generator().manual_seed(3)
    prompt = torch.randint(1, VOCAB, (30,), generator=gen)
    with torch.inference_mode():
        kv = prefill_prefix(runner, prompt[:20].tolist())
        suffixes = [prompt[20:23].tolist(), prompt[23:29].tolist()]
        state, first = prefill_branches(runner, 20, kv, suffixes, width=2, max_new_tokens=8)
        ids = torch.zeros((state.rows, state.mask.shape[1]), dtype=torch.long)
        ids[:, :20] = prompt[:20]
        for b, suffix in enumerate(suffixes):
            for row in (2 * b, 2 * b + 1):  # a suffix's tokens lie on its row's unmasked columns
                ids[row, 20 + state.mask[row, 20 : state.columns].nonzero().squeeze(1)] = torch.tensor(suffix)
            expected = _reference(model, torch.cat((prompt[:20], torch.tensor(suffix))))
            torch.testing.assert_close(first[b], expected, atol=1e-4, rtol=1e-4)
        worst = 0.0
        for step in range(6):
            if step == 2:
                state.fork([1], [0])
                ids[1] = ids[0]
            if step == 4:
                state.mask[3, state.columns - 1] = False
                state.positions[3] = int(state.mask[3, : state.columns].sum())
            feed = torch.randint(1, VOCAB, (state.rows,), generator=gen)
            ids[:, state.columns] = feed
            logits = decode_step(runner, state, feed)
            seen = state.mask[:, : state.columns]
            for row in range(state.rows):
                expected = _reference(model, ids[row, : state.columns][seen[row]])
                worst = max(worst, float((logits[row] - expected).abs().max()))
    assert worst < 1e-4, f"{family}: max abs logit difference {worst:.2e}"


@pytest.mark.parametrize("family", list(CONFIGS))
def test_int8_kernels_stay_close_to_float32(family: str) -> None:
    model = _tiny(family)
    tokens = torch.randint(1, VOCAB, (1, 24), generator=torch.Generator().manual_seed(4))
    with torch.inference_mode():
        reference = model(input_ids=tokens).logits[0].float()
        forward, _ = build_forward(model, "int8")
        runner = ModelRunner(model, packed=False)
        cache = runner.new_cache(1, 24)
        mask = torch.ones((1, 24), dtype=torch.bool)
        logits = forward(tokens, torch.arange(24)[None], mask, cache, last_only=False)[0].float()
    kl = F.kl_div(
        F.log_softmax(logits, -1), F.log_softmax(reference, -1), log_target=True, reduction="batchmean"
    )
    assert float(kl) < 0.05, f"{family}: KL(float32 || int8) {float(kl):.4f}"


def test_int4_keeps_projections_a_gguf_holds_finer_in_int8() -> None:
    """A Q4_K_M file holds some projections finer than four bits (Gemma 3's q / k / gate / up in
    Q5_0, half its v in Q8_0): the int4 format serves those with the int8 kernel, the fused
    q / k / v split into runs of one kind, and its logits come closer to float32's than when
    every projection is rounded to four bits."""
    from pathlib import Path

    from inference.weights.gguf_q4 import Q4Blocks
    from inference.weights.kernels import Int4Linear, Int8Linear

    model = _tiny("gemma3")
    layers = range(len(model.model.layers))
    finer = frozenset(
        f"model.layers.{i}.{name}" for i in layers for name in ("self_attn.v_proj", "mlp.gate_proj")
    )
    tokens = torch.randint(1, VOCAB, (1, 24), generator=torch.Generator().manual_seed(4))
    kls = []
    with torch.inference_mode():
        reference = model(input_ids=tokens).logits[0].float()
        for blocks in (Q4Blocks(Path("no.gguf"), {}), Q4Blocks(Path("no.gguf"), {}, finer)):
            forward, replacements = build_forward(model, "int4", blocks)
            runner = ModelRunner(model, packed=False)
            cache = runner.new_cache(1, 24)
            mask = torch.ones((1, 24), dtype=torch.bool)
            logits = forward(tokens, torch.arange(24)[None], mask, cache, last_only=False)[0].float()
            kls.append(
                float(
                    F.kl_div(
                        F.log_softmax(logits, -1),
                        F.log_softmax(reference, -1),
                        log_target=True,
                        reduction="batchmean",
                    )
                )
            )
    kinds = [type(k) for k in forward.layers[0].qkv]
    assert kinds == [Int4Linear, Int8Linear], kinds  # (q, k) in four bits, v in int8
    assert isinstance(replacements["model.layers.0.mlp.gate_proj"], Int8Linear)
    assert isinstance(replacements["model.layers.0.mlp.up_proj"], Int4Linear)
    assert kls[1] < kls[0], f"KL(float32 || int4) all four-bit {kls[0]:.4f}, finer kept {kls[1]:.4f}"


@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_a_tied_scaled_embedding_reads_the_int8_heads_codes(weights: str) -> None:
    """Gemma 3 ties its (scaled) input embedding to the LM head: in int8 / int4 the lookup reads
    the head's int8 codes, its factor kept (no float table held beside them), and the model
    stays close to float32 through the lean forward and through the library forward alike."""
    from inference.weights.kernels import Int8Embedding, Int8Linear

    model = _tiny("gemma3")
    assert model.lm_head.weight is model.model.embed_tokens.weight
    tokens = torch.randint(1, VOCAB, (1, 24), generator=torch.Generator().manual_seed(5))
    with torch.inference_mode():
        reference = model(input_ids=tokens).logits[0].float()
        convert(model, weights)
        embedding = model.model.embed_tokens
        assert isinstance(embedding, Int8Embedding) and isinstance(model.lm_head, Int8Linear)
        assert embedding.head is model.lm_head and embedding.embed_scale is not None
        assert float(embedding.embed_scale) == float(torch.tensor(64**0.5).to(torch.bfloat16))
        table = model.lm_head.codes.to(torch.bfloat16) * model.lm_head.scales[:, None]
        torch.testing.assert_close(embedding(tokens)[0], table[tokens[0]] * embedding.embed_scale)
        held = [t for t in [*model.parameters(), *model.buffers()] if t.shape == (VOCAB, 64)]
        assert [t.dtype for t in held] == [torch.int8], "a float table is held beside the codes"
        mask = torch.ones((1, 24), dtype=torch.bool)
        outs = {}
        for name, packed in (("lean", True), ("library", False)):
            runner = ModelRunner(model, packed=packed)
            cache = runner.new_cache(1, 24)
            outs[name] = runner.call(tokens, torch.arange(24)[None], mask, cache, last_only=False)[0].float()
    for name, logits in outs.items():
        kl = F.kl_div(
            F.log_softmax(logits, -1), F.log_softmax(reference, -1), log_target=True, reduction="batchmean"
        )
        assert float(kl) < 0.05, f"{weights} {name}: KL(float32 || {weights}) {float(kl):.4f}"
