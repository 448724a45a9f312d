"""What sets one decoder family's computation apart from Llama's, as configuration.

The lean forward (:mod:`inference.decoder.packed_llama`) computes every family it accepts
with one loop; the differences it must know are few and are read here from the model's
configuration and module tree, never by one module per family:

- ``norm_offset``: Gemma's RMSNorm scales by ``1 + weight`` (the lean forward folds the
  offset into the weight it multiplies by: :func:`norm_weight`);
- ``activation``: the MLP's gate activation, SiLU or tanh-approximated GELU;
- ``embed_scale``: Gemma multiplies the embeddings by the square root of the hidden size
  (the library's embedding module holds it: read there);
- q / k norms (Qwen 3, Gemma 3), sandwich norms around attention and MLP (Gemma 3), fused
  ``qkv_proj`` / ``gate_up_proj`` projections (Phi-3), per-layer rotary tables (Gemma 3's local
  and global bases), the final logits' soft-capping: read from the module tree and the
  configuration by the forward itself.

Guarantees: :data:`FAMILIES` names every model type the lean forward accepts; a family not
named keeps the library forward (``packed_llama.unsupported_reason`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["FAMILIES", "Family", "family_of", "norm_eps", "norm_weight"]


@dataclass(frozen=True)
class Family:
    """How one model type departs from Llama's computation (see the module docstring)."""

    norm_offset: float = 0.0
    #: The configuration attribute naming the MLP activation, and the activations accepted.
    activation_key: str = "hidden_act"
    activations: tuple[str, ...] = ("silu",)
    #: Whether the input embeddings are multiplied by the square root of the hidden size.
    scaled_embedding: bool = False
    #: transformers' default of ``tie_word_embeddings`` when ``config.json`` omits it.
    tied_by_default: bool = False


_LLAMA = Family()
_GEMMA = Family(
    norm_offset=1.0,
    activation_key="hidden_activation",
    activations=("gelu_pytorch_tanh", "gelu_tanh"),
    scaled_embedding=True,
    tied_by_default=True,
)

#: Every model type the lean forward computes, by its configuration's ``model_type``.
FAMILIES: dict[str, Family] = {
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "qwen2": _LLAMA,
    "qwen3": _LLAMA,
    "phi3": _LLAMA,
    "gemma3_text": _GEMMA,
}


def family_of(config: Any) -> Family | None:
    """The family of a (text) configuration, or None when the lean forward does not compute it."""
    return FAMILIES.get(str(getattr(config, "model_type", "")))


def norm_weight(norm: Any, family: Family) -> torch.Tensor:
    """The scale an RMSNorm module multiplies by: its weight, plus the family's offset."""
    weight: torch.Tensor = norm.weight.detach()
    return weight + family.norm_offset if family.norm_offset else weight


def norm_eps(norm: Any) -> float:
    """An RMSNorm module's epsilon (``variance_epsilon`` in Llama's modules, ``eps`` in Gemma's)."""
    eps = getattr(norm, "variance_epsilon", None)
    return float(eps if eps is not None else norm.eps)
