"""The bundled GGUF's Q4_1 blocks: read as they are, equal to the GGUF's own dequantised values."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from gguf import GGUFReader, dequantize
from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS

from inference.loader import bundled_gguf_path
from inference.weights.gguf_q4 import Q4Blocks, finer_names, q4_1_blocks
from inference.weights.kernels import Int4Linear

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HEADS, KV_HEADS = 9, 3  # SmolLM2-135M


@pytest.fixture(scope="module")
def blocks() -> Q4Blocks:
    """The bundled GGUF's Q4_1 blocks, read once for the module (reading them is most of
    each test's time)."""
    return q4_1_blocks(bundled_gguf_path(), heads=HEADS, kv_heads=KV_HEADS)


@functools.cache
def _reader() -> GGUFReader:
    """The bundled GGUF's reader, opened once (opening it indexes every tensor)."""
    return GGUFReader(str(bundled_gguf_path()))


def _library_weight(name: str) -> torch.Tensor:
    """The float weight transformers' GGUF loader makes of a tensor (dequantised, rows un-permuted)."""
    tensor = next(t for t in _reader().tensors if t.name == name)
    values = dequantize(tensor.data, tensor.tensor_type)
    processor = TENSOR_PROCESSORS["llama"](
        config={"num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS}
    )
    return torch.from_numpy(np.ascontiguousarray(processor.process(values, name).weights))


@pytest.mark.parametrize(
    ("gguf_name", "module"),
    [
        ("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj"),
        ("blk.3.attn_k.weight", "model.layers.3.self_attn.k_proj"),
        ("blk.29.ffn_down.weight", "model.layers.29.mlp.down_proj"),
    ],
)
def test_q4_1_blocks_dequantise_to_exactly_the_ggufs_values(
    gguf_name: str, module: str, blocks: Q4Blocks
) -> None:
    assert len(blocks) == 30 * 7  # every projection of every layer is Q4_1
    block = blocks[module]
    assert block.codes.dtype == torch.uint8 and int(block.codes.max()) <= 15
    ours = block.codes.float() * block.scales.repeat_interleave(
        32, 1
    ) + block.mins.repeat_interleave(32, 1)
    assert torch.equal(ours, _library_weight(gguf_name))


def test_the_int4_kernel_holds_the_ggufs_codes_and_dequantises_to_its_values(
    blocks: Q4Blocks,
) -> None:
    block = blocks["model.layers.5.self_attn.o_proj"]
    cols = block.codes.shape[1]
    # The codes, no second rounding: unit scales and zero minimums read them back.
    unit = Int4Linear(
        block.codes,
        torch.ones_like(block.scales),
        torch.zeros_like(block.mins),
        None,
        dtype=torch.float32,
    )
    assert torch.equal(unit(torch.eye(cols)).T, block.codes.float())
    # With the block's own scales and minimums (kept in float32) it is the GGUF's weight.
    exact = Int4Linear(block.codes, block.scales, block.mins, None, dtype=torch.float32)
    assert torch.equal(exact(torch.eye(cols)).T, _library_weight("blk.5.attn_output.weight"))


def test_a_gguf_of_another_architecture_gives_no_blocks(tmp_path: object) -> None:
    from pathlib import Path

    from gguf import GGUFWriter

    path = Path(str(tmp_path)) / "other.gguf"
    writer = GGUFWriter(str(path), "gpt2")
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((4, 32), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert len(q4_1_blocks(path, heads=1, kv_heads=1)) == 0


def test_q4_k_blocks_read_as_int4_groups_equal_the_ggufs_values(tmp_path: object) -> None:
    """A Gemma 3 GGUF's Q4_K tensor (random bytes with finite scales): per-32 scales and minimums
    whose codes dequantise to gguf's own values, rows in order (no rotary permutation)."""
    from pathlib import Path

    from gguf import GGMLQuantizationType, GGUFWriter

    rows, cols = 6, 512  # two 256-element super-blocks per row
    gen = np.random.default_rng(0)
    raw = gen.integers(0, 256, size=(rows, cols // 256, 144), dtype=np.uint8)
    halves = gen.uniform(0.001, 0.05, size=(rows, cols // 256, 2)).astype(np.float16)
    raw[..., 0:4] = halves.view(np.uint8).reshape(rows, cols // 256, 4)  # d and dmin
    data = raw.reshape(rows, -1)
    path = Path(str(tmp_path)) / "gemma.gguf"
    writer = GGUFWriter(str(path), "gemma3")
    writer.add_tensor("blk.0.attn_q.weight", data, raw_dtype=GGMLQuantizationType.Q4_K)
    writer.add_tensor("blk.0.ffn_up.weight", np.zeros((rows, cols), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    table = Path(str(tmp_path)) / "blocks.json"
    blocks = q4_1_blocks(path, heads=2, kv_heads=1, table=table)
    assert list(blocks) == ["model.layers.0.self_attn.q_proj"]  # the float32 tensor is left out
    # ... and named finer than four bits: the int4 format keeps it in int8, as a later load reads
    assert finer_names(blocks) == {"model.layers.0.mlp.up_proj"}
    assert finer_names(q4_1_blocks(path, heads=2, kv_heads=1, table=table)) == finer_names(blocks)
    block = blocks["model.layers.0.self_attn.q_proj"]
    assert block.codes.shape == (rows, cols) and int(block.codes.max()) <= 15
    ours = block.codes.float() * block.scales.repeat_interleave(
        32, 1
    ) + block.mins.repeat_interleave(32, 1)
    theirs = torch.from_numpy(dequantize(data, GGMLQuantizationType.Q4_K)).reshape(rows, cols)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)


def test_q4_0_blocks_read_as_int4_groups_equal_the_ggufs_values(tmp_path: object) -> None:
    """A Q4_0 tensor (symmetric: ``d * (q - 8)``) is read as four-bit codes with scale ``d`` and
    minimum ``-8 d``: exactly gguf's own dequantised values, and the int4 kernel built on them
    holds that weight; the rows of a Llama query are un-permuted as the library's loader does."""
    from pathlib import Path

    from gguf import GGMLQuantizationType, GGUFWriter

    rows, cols = 16, 64  # two 32-element blocks per row (the int4 kernel takes rows by 16)
    gen = np.random.default_rng(1)
    raw = gen.integers(0, 256, size=(rows, cols // 32, 18), dtype=np.uint8)
    scales = gen.uniform(0.001, 0.05, size=(rows, cols // 32, 1)).astype(np.float16)
    raw[..., 0:2] = scales.view(np.uint8).reshape(rows, cols // 32, 2)
    data = raw.reshape(rows, -1)
    path = Path(str(tmp_path)) / "llama.gguf"
    writer = GGUFWriter(str(path), "llama")
    writer.add_tensor("blk.0.attn_q.weight", data, raw_dtype=GGMLQuantizationType.Q4_0)
    writer.add_tensor("blk.0.attn_output.weight", data, raw_dtype=GGMLQuantizationType.Q4_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    blocks = q4_1_blocks(path, heads=2, kv_heads=1)
    assert sorted(blocks) == ["model.layers.0.self_attn.o_proj", "model.layers.0.self_attn.q_proj"]
    assert finer_names(blocks) == frozenset()
    theirs = torch.from_numpy(dequantize(data, GGMLQuantizationType.Q4_0)).reshape(rows, cols)
    for name, heads in (("model.layers.0.self_attn.o_proj", 0), ("model.layers.0.self_attn.q_proj", 2)):
        block = blocks[name]
        assert block.codes.shape == (rows, cols) and int(block.codes.max()) <= 15
        ours = block.codes.float() * block.scales.repeat_interleave(
            32, 1
        ) + block.mins.repeat_interleave(32, 1)
        expected = theirs
        if heads:
            processor = TENSOR_PROCESSORS["llama"](
                config={"num_attention_heads": heads, "num_key_value_heads": 1}
            )
            expected = torch.from_numpy(
                np.ascontiguousarray(processor.process(theirs.numpy(), "blk.0.attn_q.weight").weights)
            )
        assert torch.equal(ours, expected), name
        kernel = Int4Linear(block.codes, block.scales, block.mins, None, dtype=torch.float32)
        assert torch.equal(kernel(torch.eye(cols)).T, expected), name
