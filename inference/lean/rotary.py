"""The rotary position embedding of Llama-family models, computed as transformers computes it.

Guarantees: :class:`RotaryTable` returns the ``cos, sin [B, S, head_dim]``
tables of transformers' default rotary embedding (``inv_freq = 1 /
theta ** (2i / d)``, angles in float32, cast to the dtype of the tensor
passed); :class:`KindRotaryTable` one such table per layer kind (Gemma 3's
local and global bases, buffers named ``{kind}_inv_freq`` as the library's),
chosen by ``layer_type``; :func:`apply_rotary_pos_emb` rotates queries and keys
``[B, H, S, D]`` by them exactly as transformers' function of that name.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["KindRotaryTable", "RotaryTable", "apply_rotary_pos_emb", "rotate_half"]


class RotaryTable(nn.Module):
    """``(x, position_ids [B, S]) -> (cos, sin)`` in ``x``'s dtype and on its device."""

    inv_freq: torch.Tensor

    def __init__(self, head_dim: int, theta: float, device: torch.device | None = None) -> None:
        super().__init__()
        steps = torch.arange(0, head_dim, 2, dtype=torch.float, device=device)
        self.register_buffer("inv_freq", 1.0 / (theta ** (steps / head_dim)), persistent=False)

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device)
        angles = torch.cat((freqs, freqs), dim=-1)
        return angles.cos().to(dtype=x.dtype), angles.sin().to(dtype=x.dtype)


class KindRotaryTable(nn.Module):
    """``(x, position_ids [B, S], layer_type) -> (cos, sin)``: the table of that layer kind."""

    def __init__(self, head_dim: int, thetas: tuple[tuple[str, float], ...]) -> None:
        super().__init__()
        steps = torch.arange(0, head_dim, 2, dtype=torch.float)
        for kind, theta in thetas:
            self.register_buffer(
                f"{kind}_inv_freq", 1.0 / (theta ** (steps / head_dim)), persistent=False
            )

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str
    ) -> tuple[torch.Tensor, torch.Tensor]:
        inv_freq: torch.Tensor = getattr(self, f"{layer_type}_inv_freq")
        freqs = position_ids[..., None].float() * inv_freq.to(device=x.device)
        angles = torch.cat((freqs, freqs), dim=-1)
        return angles.cos().to(dtype=x.dtype), angles.sin().to(dtype=x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """The last dimension's halves swapped, the new first half negated."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Queries and keys ``[B, H, S, D]`` rotated by the tables ``[B, S, D]`` (shared over heads)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
