"""Linear layers over weights stored in one format, through torch's own kernels.

Each class is an ``nn.Module`` computing ``x @ W.T (+ b)`` for ``x [..., in]``
and can replace an ``nn.Linear`` in a model (the gpt-fast ``quantize.py``
habit): the library forward and the lean forward then read the same single
copy of the weights.

- :class:`PackedLinear`: float32 weights reordered once into oneDNN's blocked
  layout (faster than MKL's sgemm for a beam's few rows on some CPUs);
- :class:`Int8Linear`: weight-only int8, symmetric per output channel,
  ``_weight_int8pack_mm``;
- :class:`Int4Linear`: weight-only int4, asymmetric per group of input
  columns, ``_weight_int4pack_mm_for_cpu`` on the CPU and
  ``_weight_int4pack_mm`` on CUDA (the CUDA path is written to torch's
  documented layout but has not run on a GPU here);
- :class:`Int8Embedding`: a token lookup that reads an int8 LM head's codes
  and scales, so a tied embedding table costs no second copy.

``Int8Linear.rows`` and ``Int4Linear.rows`` give a kernel over a band of a
fused kernel's output rows that shares its codes (the model's own q / k / v
modules are such bands of the lean forward's fused q/k/v kernel).

The quantised kernels take activations in bfloat16 (their float32 paths are
an order of magnitude slower on the CPU); their scales are stored in the
activations' dtype, as the kernels require.

Each linear class's ``direct()`` is its product as a plain function over
the tensors the module holds at that moment, with the same result as
calling the module: the lean forward calls it 121 times a decode step,
where the module call's own dispatch (``nn.Module.__call__``, buffer
look-ups, the device test) measured about a tenth of an int4 step's host
time. A kernel's tensors are fixed once built; a function taken before they
were replaced would read the old ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from reasoning.errors import InvalidInput

__all__ = [
    "INT4_GROUP",
    "Int4Linear",
    "Int8Embedding",
    "Int8Linear",
    "PackedLinear",
    "parameter_count",
    "quantize_int4",
    "quantize_int8",
    "stored_bytes",
]

#: Input columns per int4 group: GGUF's Q4_0 / Q4_1 block size and the group
#: torch's int4 kernels handle best.
INT4_GROUP = 32
#: Output rows per block of the CPU int4 layout: a band of rows starting and
#: ending on a multiple of it is a contiguous slice of the packed codes.
_INT4_CPU_ROW_BLOCK = 64


def quantize_int8(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-channel int8: ``(codes [N, K] int8, scales [N] float32)``.

    ``weight ~= codes * scales[:, None]``; the error per entry is at most half a
    step, ``max|w_row| / 254``.
    """
    w = weight.detach().float()
    scales = w.abs().amax(dim=1).clamp(min=1e-12) / 127.0
    codes = torch.round(w / scales[:, None]).clamp(-127, 127).to(torch.int8)
    return codes, scales


def quantize_int4(
    weight: torch.Tensor, group: int = INT4_GROUP
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Asymmetric per-group int4: ``(codes [N, K] int32 in 0..15, scales, mins [N, K / group])``.

    ``weight ~= codes * scale + min`` within each group of ``group`` input
    columns, GGUF's Q4_1 form; the error per entry is at most half a step.
    """
    w = weight.detach().float()
    rows, cols = w.shape
    if cols % group:
        raise InvalidInput(f"input width {cols} is not a multiple of the int4 group {group}")
    grouped = w.reshape(rows, cols // group, group)
    low, high = grouped.amin(dim=-1), grouped.amax(dim=-1)
    scales = ((high - low) / 15.0).clamp(min=1e-12)
    codes = torch.round((grouped - low[..., None]) / scales[..., None]).clamp(0, 15)
    return codes.reshape(rows, cols).to(torch.int32), scales, low


class PackedLinear(nn.Module):
    """A float32 linear whose weight lives in oneDNN's blocked layout (an opaque tensor)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.in_features, self.out_features = int(weight.shape[1]), int(weight.shape[0])
        self.packed: torch.Tensor = torch.ops.mkldnn._reorder_linear_weight(
            weight.detach().float().contiguous()
        )
        self.bias = None if bias is None else bias.detach().float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _packed_product(x, self.packed, self.bias, self.in_features, self.out_features)

    def direct(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """This kernel's product as a plain function over the tensors it holds now (see module doc)."""
        return functools.partial(
            _packed_product,
            packed=self.packed,
            bias=self.bias,
            in_features=self.in_features,
            out_features=self.out_features,
        )


class Int8Linear(nn.Module):
    """Weight-only int8 linear: int8 codes ``[N, K]`` and one scale per output channel."""

    codes: torch.Tensor  # [N, K] int8
    scales: torch.Tensor  # [N]

    def __init__(
        self,
        codes: torch.Tensor,
        scales: torch.Tensor,
        bias: torch.Tensor | None,
        dtype: torch.dtype = torch.bfloat16,
    ) -> None:
        super().__init__()
        self.out_features, self.in_features = (int(n) for n in codes.shape)
        self.register_buffer("codes", codes.to(torch.int8).contiguous())
        self.register_buffer("scales", scales.to(dtype).contiguous())
        self.bias = None if bias is None else bias.detach().to(dtype)

    @classmethod
    def from_weight(
        cls, weight: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype = torch.bfloat16
    ) -> Int8Linear:
        codes, scales = quantize_int8(weight)
        return cls(codes.to(weight.device), scales.to(weight.device), bias, dtype)

    @classmethod
    def from_rows(
        cls,
        read: Callable[[int, int], torch.Tensor],
        shape: tuple[int, int],
        *,
        chunk: int = 4096,
        dtype: torch.dtype = torch.bfloat16,
    ) -> Int8Linear:
        """Quantise a ``shape`` weight read ``chunk`` rows at a time (``read(lo, hi)``).

        The same codes and scales as :meth:`from_weight` (the quantisation is
        per row), without the whole weight in float at once: a 49152 x 576 LM
        head is 113 MB in float32 and 27 MB as codes.
        """
        rows, cols = shape
        codes = torch.empty((rows, cols), dtype=torch.int8)
        scales = torch.empty(rows, dtype=torch.float32)
        for lo in range(0, rows, chunk):
            hi = min(rows, lo + chunk)
            codes[lo:hi], scales[lo:hi] = quantize_int8(read(lo, hi))
        return cls(codes, scales, None, dtype)

    def rows(self, lo: int, hi: int) -> Int8Linear:
        """The kernel of output rows ``lo:hi``, sharing this one's codes and scales."""
        band = Int8Linear.__new__(Int8Linear)
        nn.Module.__init__(band)
        band.out_features, band.in_features = hi - lo, self.in_features
        band.register_buffer("codes", self.codes[lo:hi])
        band.register_buffer("scales", self.scales[lo:hi])
        band.bias = None if self.bias is None else self.bias[lo:hi]
        return band

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _int8_product(x, self.codes, self.scales, self.bias, self.out_features)

    def direct(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """This kernel's product as a plain function over the tensors it holds now (see module doc)."""
        return functools.partial(
            _int8_product,
            codes=self.codes,
            scales=self.scales,
            bias=self.bias,
            out_features=self.out_features,
        )


class Int4Linear(nn.Module):
    """Weight-only int4 linear: packed codes and a (scale, zero) pair per group and channel.

    Built from codes ``q`` in 0..15 with ``w = q * scale + min`` per group (the
    Q4_1 form); torch's kernels compute ``(q - 8) * scale + zero``, so the
    stored zero is ``min + 8 * scale``.
    """

    packed: torch.Tensor  # the kernel's opaque layout of the codes
    scale_zero: torch.Tensor  # [K / group, N, 2]

    def __init__(
        self,
        codes: torch.Tensor,
        scales: torch.Tensor,
        mins: torch.Tensor,
        bias: torch.Tensor | None,
        *,
        group: int = INT4_GROUP,
        dtype: torch.dtype = torch.bfloat16,
    ) -> None:
        super().__init__()
        self.out_features, self.in_features = (int(n) for n in codes.shape)
        self.group = group
        q = codes.to(torch.int32).contiguous()
        if q.device.type == "cuda":
            nibbles = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
            # CUDA's layout tiles K by 16 * inner_k_tiles (2, 4 or 8): take the largest that fits.
            tiles = next(t for t in (8, 4, 2) if self.in_features % (16 * t) == 0)
            packed = torch.ops.aten._convert_weight_to_int4pack(nibbles, tiles)
        else:
            packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
        self.register_buffer("packed", packed)
        scales32, mins32 = scales.float(), mins.float()
        pairs = torch.stack([scales32, mins32 + 8.0 * scales32], dim=-1)  # [N, K/g, 2]
        self.register_buffer("scale_zero", pairs.transpose(0, 1).contiguous().to(dtype))
        self.bias = None if bias is None else bias.detach().to(dtype)

    @classmethod
    def from_weight(
        cls,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        *,
        group: int = INT4_GROUP,
        dtype: torch.dtype = torch.bfloat16,
    ) -> Int4Linear:
        codes, scales, mins = quantize_int4(weight, group)
        device = weight.device
        return cls(
            codes.to(device), scales.to(device), mins.to(device), bias, group=group, dtype=dtype
        )

    def rows(self, lo: int, hi: int) -> Int4Linear | None:
        """The kernel of output rows ``lo:hi`` sharing this one's packed codes, or None.

        Only the CPU layout is sliced, and only on whole blocks of 64 rows
        (where a band of rows is a contiguous slice of the packed codes); the
        band's (scale, zero) pairs are a copy (the kernel takes them
        contiguous), an eighth of its codes' bytes.
        """
        if self.packed.device.type != "cpu" or lo % _INT4_CPU_ROW_BLOCK or hi % _INT4_CPU_ROW_BLOCK:
            return None
        band = Int4Linear.__new__(Int4Linear)
        nn.Module.__init__(band)
        band.out_features, band.in_features, band.group = hi - lo, self.in_features, self.group
        band.register_buffer("packed", self.packed[lo:hi])
        band.register_buffer("scale_zero", self.scale_zero[:, lo:hi].contiguous())
        band.bias = None if self.bias is None else self.bias[lo:hi]
        return band

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _int4_product(
            x, self._product(), self.packed, self.group, self.scale_zero, self.bias, self.out_features
        )

    def _product(self) -> Any:
        """torch's int4 product for the device the codes are on."""
        if self.packed.device.type == "cuda":
            return torch.ops.aten._weight_int4pack_mm
        return torch.ops.aten._weight_int4pack_mm_for_cpu

    def direct(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """This kernel's product as a plain function over the tensors it holds now (see module doc)."""
        return functools.partial(
            _int4_product,
            product=self._product(),
            packed=self.packed,
            group=self.group,
            scale_zero=self.scale_zero,
            bias=self.bias,
            out_features=self.out_features,
        )


def _packed_product(
    x: torch.Tensor,
    packed: torch.Tensor,
    bias: torch.Tensor | None,
    in_features: int,
    out_features: int,
) -> torch.Tensor:
    out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(
        x.reshape(-1, in_features), packed, bias, "none", [], ""
    )
    return out.view(*x.shape[:-1], out_features)


def _int8_product(
    x: torch.Tensor,
    codes: torch.Tensor,
    scales: torch.Tensor,
    bias: torch.Tensor | None,
    out_features: int,
) -> torch.Tensor:
    flat = x.reshape(-1, codes.shape[1]).to(scales.dtype)
    out: torch.Tensor = torch.ops.aten._weight_int8pack_mm(flat, codes, scales)
    if bias is not None:
        out = out + bias
    return out.view(*x.shape[:-1], out_features)


def _int4_product(
    x: torch.Tensor,
    product: Any,
    packed: torch.Tensor,
    group: int,
    scale_zero: torch.Tensor,
    bias: torch.Tensor | None,
    out_features: int,
) -> torch.Tensor:
    flat = x.reshape(-1, scale_zero.shape[0] * group).to(scale_zero.dtype)
    out: torch.Tensor = product(flat, packed, group, scale_zero)
    if bias is not None:
        out = out + bias
    return out.view(*x.shape[:-1], out_features)


class Int8Embedding(nn.Module):
    """Token embeddings read from an int8 LM head's codes: row ``t`` is ``codes[t] * scales[t]``.

    For a model whose input embedding is tied to its LM head: the lookup
    shares the head's buffers, so the table is held once, as int8 (27 MB for
    49152 x 576 rather than 54 MB in bfloat16 beside the head's codes).
    """

    def __init__(self, head: Int8Linear, scale: torch.Tensor | None = None) -> None:
        super().__init__()
        self.head = head
        self.num_embeddings, self.embedding_dim = head.out_features, head.in_features
        #: A scaled embedding's factor (Gemma: the square root of the hidden size), applied as
        #: the library applies it: cast to the table's dtype, after the lookup; None: none.
        self.embed_scale: torch.Tensor | None
        self.register_buffer(
            "embed_scale", None if scale is None else scale.detach().to(head.scales.dtype), persistent=False
        )

    @property
    def weight(self) -> torch.Tensor:
        """The dequantised table ``[V, hidden]`` (a new tensor: for inspection, not for decoding)."""
        return self.head.codes.to(self.head.scales.dtype) * self.head.scales[:, None]

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        codes = F.embedding(input_ids, self.head.codes.view(torch.uint8)).view(torch.int8)
        rows = codes.to(self.head.scales.dtype) * self.head.scales[input_ids].unsqueeze(-1)
        return rows if self.embed_scale is None else rows * self.embed_scale


def parameter_count(model: nn.Module) -> int:
    """The model's weights, quantised ones included (entries, not bytes), as before conversion.

    A quantised LM head that stands in for tied input embeddings is not
    counted twice.
    """
    count = sum(p.numel() for p in model.parameters())
    tied = bool(getattr(getattr(model, "config", None), "tie_word_embeddings", False))
    for name, module in model.named_modules():
        if isinstance(module, (Int4Linear, Int8Linear)) and not (tied and name == "lm_head"):
            count += module.in_features * module.out_features
            count += 0 if module.bias is None else module.bias.numel()
    return count


def stored_bytes(model: nn.Module) -> int:
    """Bytes of the model's weights as held: every distinct storage behind its parameters and buffers.

    A storage shared by several modules (a tied head, a band of a fused
    kernel) counts once; what the lean forward holds beside the model (a
    fused kernel whose bands the model's modules are) is counted by passing
    its modules too (``nn.ModuleList``). A module holding weights in an
    object torch does not see as a tensor (fbgemm's packed codes) says how
    many bytes in its ``opaque_bytes``.
    """
    seen: dict[tuple[str, int], int] = {}
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor.is_meta:
            continue
        storage = tensor.untyped_storage()
        seen[(str(tensor.device), storage.data_ptr())] = storage.nbytes()
    opaque = sum(int(getattr(module, "opaque_bytes", 0)) for module in model.modules())
    return sum(seen.values()) + opaque
