"""The Q4_1 blocks of a GGUF's linear weights, as codes, scales and minimums per group.

Q4_1 stores each run of 32 input columns of a row as a float16 scale ``d``, a
float16 minimum ``m`` and 32 four-bit codes ``q`` with ``w = d * q + m``:
asymmetric per-group quantisation with group 32, the form torch's int4
kernels take. Reading the blocks as they are lets the int4 forward run on the
model's own codes, with no second rounding of the weights.

Guarantees: :func:`q4_1_blocks` gives, per Hugging Face module name, codes
and per-group scales and minimums such that ``codes * scale + min`` equals the
GGUF's dequantised values (``gguf.dequantize``) exactly, in the module's row
order (the rows of a Llama query and key projection are un-permuted exactly
as transformers' GGUF loader does). Tensors of other types are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = ["Q4Block", "Q4Blocks", "q4_1_blocks"]

_GROUP = 32
_BLOCK_BYTES = 20  # float16 d, float16 m, 16 bytes of paired nibbles
_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}


@dataclass(frozen=True)
class Q4Block:
    """One weight's Q4_1 content: ``codes [N, K]`` uint8 in 0..15, ``scales, mins [N, K / 32]`` float32."""

    codes: torch.Tensor
    scales: torch.Tensor
    mins: torch.Tensor


def _decode(raw: np.ndarray, rows: int, cols: int) -> Q4Block:
    """Split the GGUF's bytes ``[rows, cols / 32 * 20]`` into codes, scales and minimums."""
    blocks = raw.reshape(rows, cols // _GROUP, _BLOCK_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    packed = blocks[..., 4:]  # [rows, groups, 16]: element j low nibble, j + 16 high nibble
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).reshape(rows, cols)
    return Q4Block(
        torch.from_numpy(np.ascontiguousarray(codes)), torch.from_numpy(d), torch.from_numpy(m)
    )


def _unpermute(block: Q4Block, heads: int) -> Q4Block:
    """Undo llama.cpp's rotary row order of a query or key projection (transformers' own rule)."""

    def rows(t: torch.Tensor) -> torch.Tensor:
        dim = t.shape[0] // heads // 2
        return t.reshape(heads, dim, 2, *t.shape[1:]).swapaxes(2, 1).reshape(t.shape).contiguous()

    return Q4Block(rows(block.codes), rows(block.scales), rows(block.mins))


class Q4Blocks(Mapping[str, Q4Block]):
    """A GGUF's Q4_1 projections by module name, each read from the file and decoded when asked for.

    Only the block being read is in memory (read, not mapped: no page of the
    file stays in this process's resident set), so a model is converted one
    projection at a time.
    """

    def __init__(self, path: Path, tensors: Mapping[str, tuple[int, int, int, int, int]]) -> None:
        self._path = path
        # name -> (file offset, bytes, rows, cols, heads to un-permute)
        self._tensors = dict(tensors)

    def __getitem__(self, name: str) -> Q4Block:
        offset, size, rows, cols, heads = self._tensors[name]
        raw = np.fromfile(self._path, dtype=np.uint8, count=size, offset=offset)
        block = _decode(raw, rows, cols)
        return _unpermute(block, heads) if heads else block

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)


def q4_1_blocks(path: Path, *, heads: int, kv_heads: int, table: Path | None = None) -> Q4Blocks:
    """Every Q4_1 projection of a Llama-architecture GGUF by module name (``model.layers.0.mlp.up_proj``).

    Empty for other architectures: their row orders are not known here, and
    their weights are then quantised from the float values instead.

    ``table``, when given, keeps where each block lies in the file: reading
    the GGUF's header (its whole vocabulary among the metadata) briefly costs
    about 130 MB of resident memory, so later loads of the same file read the
    table instead. The caller names a file per GGUF content (the model
    cache is keyed by the file's digest).
    """
    if table is not None:
        try:
            kept = json.loads(table.read_text())
            if kept["heads"] == [heads, kv_heads]:
                return Q4Blocks(path, {name: tuple(row) for name, row in kept["blocks"].items()})
        except (OSError, ValueError, KeyError, TypeError):
            pass
    blocks = _scan(path, heads=heads, kv_heads=kv_heads)
    if table is not None:
        try:
            tmp = table.with_name(table.name + ".tmp")
            tmp.write_text(json.dumps({"heads": [heads, kv_heads], "blocks": blocks._tensors}))
            tmp.replace(table)
        except OSError:
            pass  # a read-only cache: the header is read again next time
    return blocks


def _scan(path: Path, *, heads: int, kv_heads: int) -> Q4Blocks:
    from gguf import GGMLQuantizationType, GGUFReader

    reader = GGUFReader(str(path))
    arch = reader.fields.get("general.architecture")
    if arch is None or bytes(arch.parts[arch.data[0]]).decode() != "llama":
        return Q4Blocks(path, {})
    found: dict[str, tuple[int, int, int, int, int]] = {}
    for tensor in reader.tensors:
        parts = tensor.name.split(".")
        if (
            tensor.tensor_type != GGMLQuantizationType.Q4_1
            or len(parts) != 4
            or parts[0] != "blk"
            or parts[2] not in _LAYER_NAMES
        ):
            continue
        cols, rows = (int(n) for n in tensor.shape)
        permuted = {"attn_q": heads, "attn_k": kv_heads}.get(parts[2], 0)
        found[f"model.layers.{parts[1]}.{_LAYER_NAMES[parts[2]]}"] = (
            int(tensor.data_offset),
            int(tensor.n_bytes),
            rows,
            cols,
            permuted,
        )
    return Q4Blocks(path, found)
