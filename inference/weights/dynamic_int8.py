"""An int8 LM head whose product rounds the activations to 8 bits too (fbgemm's dynamic int8).

Why: at one decode row the weight-only int8 product (``_weight_int8pack_mm``)
of a 262,144 x 640 head (Gemma 3) took 72-100 ms on this machine's CPU, most
of a step; fbgemm's dynamically quantised product over the same codes and
scales took 25-50 ms (one thread, loaded machine). It rounds each call's
activations to unsigned 8 bits (one scale and zero point for all the rows of
the call), so its logits differ from the weight-only product's: measured on
Gemma 3 270M's head over a real prompt's hidden states, KL 0.0035 nats,
top-1 agreement 1.0 with full-range activations; 0.014 / 0.95 with the
7-bit range CPUs without VNNI need (their 16-bit sums saturate otherwise).

Guarantees: :class:`DynamicInt8Linear` is an
:class:`~inference.weights.kernels.Int8Linear` (the same codes and scales,
kept: a tied embedding reads them) whose product runs through fbgemm's
packed copy of the codes (a second copy, the codes' size); its logits are in
the activations' dtype; :func:`dynamic_head` gives one only where torch has
the fbgemm engine and the head is at least :data:`DYNAMIC_HEAD_ROWS` rows (a
vocabulary where the head dominates the step), else the head unchanged.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from inference.weights.kernels import Int8Linear

__all__ = ["DYNAMIC_HEAD_ROWS", "DynamicInt8Linear", "dynamic_head", "fbgemm_available"]

#: Heads from this many rows up take the dynamic product (Llama 3's 128,256 and Gemma's 262,144
#: vocabularies; the bundled model's 49,152-row head keeps the weight-only product).
DYNAMIC_HEAD_ROWS = 100_000


def fbgemm_available() -> bool:
    """Whether this torch build runs fbgemm's quantised products."""
    return (
        "fbgemm" in torch.backends.quantized.supported_engines
        and hasattr(torch.ops.quantized, "linear_dynamic")
        and hasattr(torch, "_make_per_channel_quantized_tensor")
    )


@functools.cache
def _full_range() -> bool:
    """Whether the CPU sums 8-bit products without saturating (VNNI): full 8-bit activations."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(flag in flags.split() for flag in ("avx512_vnni", "avx_vnni", "amx_int8"))


class DynamicInt8Linear(Int8Linear):
    """An int8 head (codes and per-row scales) multiplied through fbgemm's dynamic int8 product."""

    def __init__(self, head: Int8Linear) -> None:
        super().__init__(
            head.codes, head.scales, head.bias, head.scales.dtype
        )  # shared, not copied
        with warnings.catch_warnings():
            # torch marks its quantised tensors deprecated: when a release drops the
            # ops, fbgemm_available() is False and heads keep the weight-only product.
            warnings.simplefilter("ignore", UserWarning)
            weight = torch._make_per_channel_quantized_tensor(
                head.codes,
                head.scales.double(),
                torch.zeros(head.out_features, dtype=torch.long),
                0,
            )
        bias = None if head.bias is None else head.bias.float()
        self.packed: Any = torch.ops.quantized.linear_prepack(weight, bias)
        self.reduce_range = not _full_range()
        #: The packed copy's bytes (codes and a sum per row), for ``kernels.stored_bytes``.
        self.opaque_bytes = head.codes.numel() + 4 * head.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _dynamic_product(
            x, self.packed, self.reduce_range, self.in_features, self.out_features
        )

    def direct(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """This kernel's product as a plain function over the tensors it holds now."""
        return functools.partial(
            _dynamic_product,
            packed=self.packed,
            reduce_range=self.reduce_range,
            in_features=self.in_features,
            out_features=self.out_features,
        )


def _dynamic_product(
    x: torch.Tensor, packed: Any, reduce_range: bool, in_features: int, out_features: int
) -> torch.Tensor:
    flat = x.reshape(-1, in_features).float()
    out: torch.Tensor = torch.ops.quantized.linear_dynamic(flat, packed, reduce_range)
    return out.to(x.dtype).view(*x.shape[:-1], out_features)


def dynamic_head(head: Int8Linear) -> Int8Linear:
    """``head`` as a :class:`DynamicInt8Linear` where it pays (see the module docstring)."""
    if head.out_features < DYNAMIC_HEAD_ROWS or head.codes.device.type != "cpu":
        return head
    if not fbgemm_available():
        return head
    return DynamicInt8Linear(head)
