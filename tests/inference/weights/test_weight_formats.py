"""Each weight format on real models: the bundled model in bfloat16 / int8 / int4 against float32,
the lean forward against the library forward over the same converted weights, the auto probe,
and the refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoTokenizer, GPT2Config, LlamaConfig

from inference.decoder.kv_slab import SlabCache
from inference.decoder.packed_llama import LeanLlama, packed_forward
from inference.loader import LoadedModel, load_model, prepare_cache
from inference.weights.build import convert
from inference.weights.formats import WEIGHT_FORMATS, check_weights
from inference.weights.kernels import Int4Linear, Int8Linear
from inference.weights.probe import KL_GATE, distribution_gap, teacher_forced_logits
from inference.weights.select import apply_weights
from reasoning.errors import InvalidInput
from tests.conftest import MODEL_CACHE, TEST_DEVICE
from tests.inference.decoder.test_packed_llama import _assert_same_decode, _tiny

pytestmark = pytest.mark.usefixtures("one_torch_thread")

_SMALL = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "vocab_size": 300}
PROMPT = "Explain in one sentence why the sky looks blue during the day."


def _greedy(forward: LeanLlama, ids: list[int], new: int, device: torch.device) -> list[int]:
    """``new`` greedy tokens after ``ids`` through ``forward`` on a slab cache."""
    cache = SlabCache(len(forward.layers), len(ids) + new)
    cache.allocate(1, forward.kv_heads, forward.head_dim, forward.kv_dtype, device)
    mask = torch.ones((1, len(ids) + new), dtype=torch.bool, device=device)
    out: list[int] = []
    with torch.inference_mode():
        x = torch.tensor([ids], device=device)
        logits = forward(
            x,
            torch.arange(len(ids), device=device)[None],
            mask[:, : len(ids)],
            cache,
            last_only=True,
        )
        for step in range(new):
            token = int(logits[0, -1].argmax())
            out.append(token)
            position = torch.tensor([[len(ids) + step]], device=device)
            logits = forward(
                torch.tensor([[token]], device=device),
                position,
                mask[:, : len(ids) + step + 1],
                cache,
                last_only=True,
            )
    return out


@pytest.mark.model
@pytest.mark.parametrize("weights", ["bfloat16", "int8", "int4"])
def test_each_format_continues_as_float32_does(loaded_model: LoadedModel, weights: str) -> None:
    reference = packed_forward(loaded_model.model)
    assert reference is not None and loaded_model.weights.weights == "float32"
    text = loaded_model.tokenizer.apply_chat_template(
        [{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=False
    )
    ids = list(loaded_model.tokenizer(text)["input_ids"])
    expected = _greedy(reference, ids, 12, loaded_model.device)

    lm = load_model("bundled", device=TEST_DEVICE, cache_root=MODEL_CACHE, weights=weights)
    forward = packed_forward(lm.model)
    assert forward is not None and forward.weights == weights
    assert (lm.identity.weights, lm.identity.dtype) == (weights, "bfloat16")
    assert (lm.weights.requested, lm.weights.forward) == (weights, "packed")
    assert lm.identity.parameters == loaded_model.identity.parameters
    if weights != "bfloat16":
        kernel = Int8Linear if weights == "int8" else Int4Linear
        assert isinstance(lm.model.model.layers[0].mlp.down_proj, kernel)
    ours = _greedy(forward, ids, 12, lm.device)
    assert ours[:3] == expected[:3]
    # Along float32's own continuation the next-token distributions stay within the gate.
    sequence = [ids + expected]
    kl, top1 = distribution_gap(
        teacher_forced_logits(reference, sequence, loaded_model.device),
        teacher_forced_logits(forward, sequence, lm.device),
    )
    assert kl <= KL_GATE and top1 >= 0.8
    # The library forward runs on the same converted weights and agrees.
    with torch.inference_mode():
        x = torch.tensor(sequence, device=lm.device)
        library = lm.model(x).logits[0].float()
    ours_logits = teacher_forced_logits(forward, sequence, lm.device)
    assert distribution_gap(library, ours_logits)[0] < 0.01


@pytest.mark.parametrize("weights", ["bfloat16", "int8", "int4"])
def test_the_lean_forward_equals_the_library_forward_on_converted_weights(weights: str) -> None:
    model = _tiny(LlamaConfig(**_SMALL, num_attention_heads=4, num_key_value_heads=2))
    forward = convert(model, weights)
    assert forward.dtype == torch.bfloat16 and packed_forward(model) is forward
    assert next(model.parameters()).dtype == torch.bfloat16
    assert model.model.rotary_emb.inv_freq.dtype == torch.float32
    # bfloat16 activations: the two forwards round in different places.
    _assert_same_decode(model, _SMALL["vocab_size"], atol=0.5)


def _bundled_tokenizer() -> Any:
    cached = prepare_cache("bundled", MODEL_CACHE)
    assert cached is not None
    return AutoTokenizer.from_pretrained(cached)


def test_auto_picks_a_format_within_the_gate_and_reuses_its_measurement(tmp_path: Path) -> None:
    tokenizer = _bundled_tokenizer()
    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        vocab_size=len(tokenizer),
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    first = apply_weights(_tiny(config), tokenizer, "auto", gguf=None, probe_dir=tmp_path)
    assert {p.weights for p in first.probes} == set(WEIGHT_FORMATS)
    chosen = next(p for p in first.probes if p.weights == first.weights)
    assert chosen.passed and chosen.kl_vs_float32 <= KL_GATE
    assert all(p.passed == (p.kl_vs_float32 <= KL_GATE) for p in first.probes)
    assert all(p.step_ms > 0 for p in first.probes)
    assert first.weights in first.reason and "at this load" in first.reason
    assert list(tmp_path.glob("weights-probe-*.json"))

    model = _tiny(config)
    again = apply_weights(model, tokenizer, "auto", gguf=None, probe_dir=tmp_path)
    assert again.probes == first.probes and again.weights == first.weights
    assert "reused" in again.reason
    forward = packed_forward(model)
    assert forward is not None and forward.weights == again.weights


def test_other_architectures_take_the_library_forward_or_are_refused() -> None:
    gpt2 = _tiny(GPT2Config(n_embd=32, n_layer=1, n_head=2, vocab_size=100))
    choice = apply_weights(gpt2, None, "auto", gguf=None)
    assert (choice.weights, choice.forward) == ("float32", "library")
    assert "fallback" in choice.reason and packed_forward(gpt2) is None
    for weights in ("int8", "int4"):
        with pytest.raises(InvalidInput, match="Llama-family"):
            apply_weights(gpt2, None, weights, gguf=None)


@pytest.mark.parametrize("value", ["fp8", "int3", "", "float"])
def test_unknown_formats_are_refused(value: str) -> None:
    with pytest.raises(InvalidInput, match="auto, float32, bfloat16, int8, int4"):
        check_weights(value)
    with pytest.raises(InvalidInput):
        load_model("bundled", device="cpu", weights=value)


def test_format_names_are_normalised() -> None:
    assert check_weights(" INT4 ") == "int4"


def test_a_model_directory_converts_without_a_gguf(tmp_path: Path) -> None:
    """int4 without Q4_1 blocks quantises the float weights itself (groups of 32)."""
    model = _tiny(LlamaConfig(**_SMALL, num_attention_heads=4, num_key_value_heads=2))
    model.save_pretrained(tmp_path)
    _bundled_tokenizer().save_pretrained(tmp_path)
    lm = load_model(str(tmp_path), device="cpu", weights="int4")
    assert lm.identity.weights == "int4" and isinstance(lm.model.lm_head, Int8Linear)
    assert isinstance(lm.model.model.layers[1].self_attn.q_proj, Int4Linear)
