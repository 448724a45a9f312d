"""Our own Llama module tree's parts against the library's: config, rotary tables, tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoTokenizer, LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as library_rotate

from inference.decoder.kv_slab import supports_slab_cache
from inference.lean.config import lean_reason, read_config
from inference.lean.rotary import RotaryTable, apply_rotary_pos_emb
from inference.lean.tokenizer import load_tokenizer
from inference.loader import prepare_cache
from inference.weights.direct import direct_reason
from reasoning.errors import InvalidInput
from tests.conftest import MODEL_CACHE


def _bundled_dir() -> Path:
    cached = prepare_cache("bundled", MODEL_CACHE)
    assert cached is not None
    return cached


@pytest.mark.model
def test_the_bundled_config_reads_as_the_librarys() -> None:
    directory = _bundled_dir()
    ours, theirs = read_config(directory), AutoConfig.from_pretrained(directory)
    for name in (
        "model_type",
        "hidden_size",
        "intermediate_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "vocab_size",
        "rms_norm_eps",
        "tie_word_embeddings",
        "hidden_act",
    ):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.rope_theta == theirs.rope_parameters["rope_theta"]
    assert ours.get_text_config(decoder=True) is ours and supports_slab_cache(ours)


@pytest.mark.parametrize("theta", [10000.0, 100000.0])
def test_the_rotary_tables_and_rotation_are_the_librarys(theta: float) -> None:
    config = LlamaConfig(
        hidden_size=128,
        num_attention_heads=2,
        head_dim=64,
        rope_parameters={"rope_type": "default", "rope_theta": theta},
    )
    library = LlamaRotaryEmbedding(config)
    ours = RotaryTable(64, theta)
    positions = torch.tensor([[0, 1, 2, 7, 300], [5, 6, 7, 8, 4095]])
    for dtype in (torch.float32, torch.bfloat16):
        like = torch.empty(0, dtype=dtype)
        (c1, s1), (c2, s2) = library(like, positions), ours(like, positions)
        assert c1.dtype == c2.dtype == dtype
        assert torch.equal(c1, c2) and torch.equal(s1, s2)
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 2, 5, 64, generator=gen), torch.randn(2, 1, 5, 64, generator=gen)
    cos, sin = ours(torch.empty(0), positions)
    for mine, theirs in zip(apply_rotary_pos_emb(q, k, cos, sin), library_rotate(q, k, cos, sin)):
        assert torch.equal(mine, theirs)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"model_type": "gpt2"}, "not of the Llama family"),
        ({"hidden_act": "gelu"}, "activation"),
        ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}}, "llama3"),
        ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "linear"),
        ({"partial_rotary_factor": 0.5}, "partial"),
    ],
)
def test_configs_the_tree_does_not_compute_go_to_the_library(
    tmp_path: Path, change: dict[str, object], says: str
) -> None:
    raw = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "vocab_size": 10,
        "rope_theta": 10000.0,
        **change,
    }
    reason = lean_reason(raw)
    assert reason is not None and says in reason
    (tmp_path / "config.json").write_text(json.dumps(raw))
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert direct_reason(tmp_path) == reason
    with pytest.raises(InvalidInput, match="loaded by the library"):
        read_config(tmp_path)


@pytest.mark.model
def test_the_tokenizer_loads_without_the_model_config_as_autotokenizer_loads_it(
    tmp_path: Path,
) -> None:
    directory = _bundled_dir()
    ours, theirs = load_tokenizer(directory), AutoTokenizer.from_pretrained(directory)
    assert type(ours) is type(theirs) and len(ours) == len(theirs)
    assert ours.all_special_ids == theirs.all_special_ids
    assert (ours.eos_token_id, ours.pad_token_id) == (theirs.eos_token_id, theirs.pad_token_id)
    texts = ["Hello world", "每句话最多使用一个逗号。", "<|im_start|>user\nhi<|im_end|>", "  x\t\n"]
    assert ours(texts)["input_ids"] == theirs(texts)["input_ids"]
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "hi"}]
    rendered = ours.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == theirs.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    # A directory that names no class: AutoTokenizer's own resolution, the same tokenizer.
    plain = tmp_path / "plain"
    shutil.copytree(directory, plain, ignore=shutil.ignore_patterns("*.safetensors"))
    config = json.loads((plain / "tokenizer_config.json").read_text())
    del config["tokenizer_class"]
    (plain / "tokenizer_config.json").write_text(json.dumps(config))
    assert load_tokenizer(plain)(texts)["input_ids"] == theirs(texts)["input_ids"]
