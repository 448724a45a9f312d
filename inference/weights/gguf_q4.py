"""The Q4_0, Q4_1 and Q4_K blocks of a GGUF's linear weights, as codes, scales and minimums per group.

Q4_1 stores each run of 32 input columns of a row as a float16 scale ``d``, a
float16 minimum ``m`` and 32 four-bit codes ``q`` with ``w = d * q + m``:
asymmetric per-group quantisation with group 32, the form torch's int4
kernels take. Q4_0 is its symmetric form, a float16 scale ``d`` and 32 codes with
``w = d * (q - 8)``: the same with minimum ``-8 d``. Q4_K (the bulk of a ``Q4_K_M`` file) groups 256 columns into
eight sub-blocks of 32, each with a six-bit scale ``sc`` and minimum ``mn``
under the super-block's float16 ``d`` and ``dmin``: ``w = d * sc * q - dmin *
mn``, the same form with scale ``d * sc`` and minimum ``-dmin * mn`` per group
of 32. Reading the blocks as they are lets the int4 forward run on the
model's own codes, with no second rounding of the weights. Projections the
file holds in a finer type (Q5_0, Q6_K, Q8_0, ...: a Q4_K_M file keeps
Gemma 3's query, key, gate and up projections in Q5_0) are named in
``Q4Blocks.finer``: rounding them to four bits again would lose what the file
kept, so the int4 format serves them with the int8 kernel instead. That kernel
(torch's weight-only int8 product) takes one scale per output row, while
Q5_0 / Q8_0 keep one per 32 columns and Q6_K one per 16: no such block fits it
as it is, so those projections are quantised per row from the file's exact
values (the float weights the model holds), each once, at load.

Guarantees: :func:`q4_1_blocks` gives, per Hugging Face module name, codes
and per-group scales and minimums such that ``codes * scale + min`` equals the
GGUF's dequantised values (``gguf.dequantize``; Q4_K to float32 rounding of
the same products), in the module's row order (the rows of a Llama query and
key projection are un-permuted exactly as transformers' GGUF loader does;
Gemma 3's are stored in order). Tensors of other types are left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = ["Q4Block", "Q4Blocks", "finer_names", "q4_1_blocks"]

_GROUP = 32
_BLOCK_BYTES = 20  # float16 d, float16 m, 16 bytes of paired nibbles
_Q4_0_BLOCK_BYTES = 18  # float16 d, 16 bytes of paired nibbles
_K_ELEMENTS = 256  # a Q4_K super-block: 8 groups of 32
_K_BLOCK_BYTES = 144  # float16 d, float16 dmin, 12 bytes of 6-bit scales and mins, 128 of nibbles
#: Architectures whose block layout is read here, and whether their q / k rows are permuted.
_ARCHITECTURES = {"llama": True, "gemma3": False}
#: Bumped when what a kept table holds changes (older tables are scanned again).
_TABLE_FORMAT = 4
#: GGUF types finer than four bits per weight: the int4 format keeps them in int8.
_FINER = frozenset({"Q5_0", "Q5_1", "Q5_K", "Q6_K", "Q8_0", "Q8_1", "Q8_K", "F16", "BF16", "F32"})
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


def _decode_0(raw: np.ndarray, rows: int, cols: int) -> Q4Block:
    """Split Q4_0 bytes ``[rows, cols / 32 * 18]`` into codes, scales ``d`` and minimums ``-8 d``
    (``d * q - 8 d`` is ``d * (q - 8)`` exactly: both products fit float32's mantissa)."""
    blocks = raw.reshape(rows, cols // _GROUP, _Q4_0_BLOCK_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    packed = blocks[..., 2:]  # [rows, groups, 16]: element j low nibble, j + 16 high nibble
    codes = np.concatenate([packed & 0x0F, packed >> 4], axis=-1).reshape(rows, cols)
    return Q4Block(
        torch.from_numpy(np.ascontiguousarray(codes)),
        torch.from_numpy(d),
        torch.from_numpy(np.ascontiguousarray(-8.0 * d)),
    )


def _decode_k(raw: np.ndarray, rows: int, cols: int) -> Q4Block:
    """Split Q4_K bytes ``[rows, cols / 256 * 144]`` into codes and per-32 scales and minimums."""
    blocks = raw.reshape(rows, cols // _K_ELEMENTS, _K_BLOCK_BYTES)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)[..., None]
    dmin = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)[..., None]
    packed = blocks[..., 4:16].reshape(rows, -1, 3, 4)  # the 6-bit scales and mins, 12 bytes
    low, high, extra = packed[..., 0, :], packed[..., 1, :], packed[..., 2, :]
    sc = np.concatenate([low & 0x3F, (extra & 0x0F) | ((low >> 2) & 0x30)], axis=-1)
    mn = np.concatenate([high & 0x3F, (extra >> 4) | ((high >> 2) & 0x30)], axis=-1)
    # Four runs of 64 elements: 32 bytes each, low nibbles first 32 elements, high the next 32.
    qs = blocks[..., 16:].reshape(rows, -1, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(
        1, 1, 1, 2, 1
    )
    codes = (qs & 0x0F).reshape(rows, cols)
    scales = (d * sc.astype(np.float32)).reshape(rows, cols // _GROUP)
    mins = -(dmin * mn.astype(np.float32)).reshape(rows, cols // _GROUP)
    return Q4Block(
        torch.from_numpy(np.ascontiguousarray(codes)),
        torch.from_numpy(np.ascontiguousarray(scales)),
        torch.from_numpy(np.ascontiguousarray(mins)),
    )


def _unpermute(block: Q4Block, heads: int) -> Q4Block:
    """Undo llama.cpp's rotary row order of a query or key projection (transformers' own rule)."""

    def rows(t: torch.Tensor) -> torch.Tensor:
        dim = t.shape[0] // heads // 2
        return t.reshape(heads, dim, 2, *t.shape[1:]).swapaxes(2, 1).reshape(t.shape).contiguous()

    return Q4Block(rows(block.codes), rows(block.scales), rows(block.mins))


class Q4Blocks(Mapping[str, Q4Block]):
    """A GGUF's four-bit (Q4_0, Q4_1, Q4_K) projections by module name, each read from the file and decoded when asked for.

    Only the block being read is in memory (read, not mapped: no page of the
    file stays in this process's resident set), so a model is converted one
    projection at a time.
    """

    def __init__(
        self,
        path: Path,
        tensors: Mapping[str, tuple[int, int, int, int, int, str]],
        finer: frozenset[str] = frozenset(),
    ) -> None:
        self._path = path
        # name -> (file offset, bytes, rows, cols, heads to un-permute, "Q4_0", "Q4_1" or "Q4_K")
        self._tensors = dict(tensors)
        #: Projections the file holds in a type finer than four bits (by module name).
        self.finer = finer

    def __getitem__(self, name: str) -> Q4Block:
        offset, size, rows, cols, heads, kind = self._tensors[name]
        raw = np.fromfile(self._path, dtype=np.uint8, count=size, offset=offset)
        decode = {"Q4_K": _decode_k, "Q4_0": _decode_0}.get(kind, _decode)
        block = decode(raw, rows, cols)
        return _unpermute(block, heads) if heads else block

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)


def q4_1_blocks(path: Path, *, heads: int, kv_heads: int, table: Path | None = None) -> Q4Blocks:
    """Every four-bit projection (Q4_0, Q4_1, Q4_K) of a Llama or Gemma 3 GGUF by module name (``model.layers.0.mlp.up_proj``).

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
            if kept["heads"] == [heads, kv_heads] and kept.get("format") == _TABLE_FORMAT:
                return Q4Blocks(
                    path,
                    {name: tuple(row) for name, row in kept["blocks"].items()},
                    frozenset(kept["finer"]),
                )
        except (OSError, ValueError, KeyError, TypeError):
            pass
    blocks = _scan(path, heads=heads, kv_heads=kv_heads)
    if table is not None:
        try:
            tmp = table.with_name(table.name + ".tmp")
            tmp.write_text(
                json.dumps(
                    {
                        "format": _TABLE_FORMAT,
                        "heads": [heads, kv_heads],
                        "blocks": blocks._tensors,
                        "finer": sorted(blocks.finer),
                    }
                )
            )
            tmp.replace(table)
        except OSError:
            pass  # a read-only cache: the header is read again next time
    return blocks


def _scan(path: Path, *, heads: int, kv_heads: int) -> Q4Blocks:
    from gguf import GGMLQuantizationType, GGUFReader

    reader = GGUFReader(str(path))
    arch = reader.fields.get("general.architecture")
    name = None if arch is None else bytes(arch.parts[arch.data[0]]).decode()
    if name not in _ARCHITECTURES:
        return Q4Blocks(path, {})
    permutes = _ARCHITECTURES[name]
    kinds = {
        GGMLQuantizationType.Q4_0: "Q4_0",
        GGMLQuantizationType.Q4_1: "Q4_1",
        GGMLQuantizationType.Q4_K: "Q4_K",
    }
    found: dict[str, tuple[int, int, int, int, int, str]] = {}
    finer: set[str] = set()
    for tensor in reader.tensors:
        parts = tensor.name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in _LAYER_NAMES:
            continue
        if tensor.tensor_type.name in _FINER:
            finer.add(f"model.layers.{parts[1]}.{_LAYER_NAMES[parts[2]]}")
        if tensor.tensor_type not in kinds:
            continue
        cols, rows = (int(n) for n in tensor.shape)
        permuted = {"attn_q": heads, "attn_k": kv_heads}.get(parts[2], 0) if permutes else 0
        found[f"model.layers.{parts[1]}.{_LAYER_NAMES[parts[2]]}"] = (
            int(tensor.data_offset),
            int(tensor.n_bytes),
            rows,
            cols,
            permuted,
            kinds[tensor.tensor_type],
        )
    return Q4Blocks(path, found, frozenset(finer))


def finer_names(blocks: Mapping[str, Q4Block]) -> frozenset[str]:
    """The projections ``blocks``' file holds finer than four bits (none for a plain mapping)."""
    return blocks.finer if isinstance(blocks, Q4Blocks) else frozenset()
