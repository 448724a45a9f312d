"""A lean forward for Llama-family decoders over weights in any stored format, on our KV slab.

Why it exists: a beam search multiplies a handful of rows (4 per branch, up
to 64 merged) by each weight matrix, so a decode step is bound by reading
the weights, and the library forward adds per-module overhead around each
product. This forward is the Llama computation written out once (embedding,
per layer RMSNorm, q/k/v projection, rotary embedding, attention over the
slab, output projection, RMSNorm, gate/up projection, SiLU, down
projection, final norm, LM head) over *linear kernels* chosen per weight
format by :mod:`inference.weights` (oneDNN-packed float32, bfloat16,
weight-only int8 or int4). It accepts a
:class:`~inference.decoder.kv_slab.SlabCache` (one decode) or a
:class:`~inference.decoder.grouped_attention.GroupedCache` (a merged
micro-batch step), exactly as the library forward does.

Guarantees:

- with float32 kernels, logits equal the library forward's up to
  floating-point summation order (tested on the bundled model and on small
  random Llama, Mistral and Qwen2 models, for prefills, ragged decode steps
  and merged steps); with other kernels they equal the library forward's over
  the same kernels (the installed model) to the activations' precision;
- only models of the Llama family (``llama``, ``mistral`` without sliding
  window, ``qwen2``) qualify: :func:`unsupported_reason` says why any other
  does not, and such models keep the library forward;
- :func:`attach` registers one forward per model object; the runner finds it
  with :func:`packed_forward`;
- attention runs in the dtype of the slab it writes to: new keys and values
  are stored in it and the queries cast to it. ``kv_dtype`` is the dtype a
  slab for this forward should have: float32 on the CPU whatever the weights
  (torch's CPU attention over bfloat16 was measured 7-15x slower than over
  float32 for a beam's few rows, and the rest of the step is the weights'
  kernels), the activations' dtype elsewhere.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from inference.decoder.grouped_attention import GroupedCache
from inference.decoder.kv_slab import SlabCache, supports_slab_cache

__all__ = ["LeanLayer", "LeanLlama", "Linear", "attach", "packed_forward", "unsupported_reason"]

#: ``x [..., in] -> [..., out]``: one projection in some weight format.
Linear = Callable[[torch.Tensor], torch.Tensor]

_FAMILY = frozenset({"llama", "mistral", "qwen2"})
_FORWARDS: weakref.WeakKeyDictionary[Any, LeanLlama] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class LeanLayer:
    """One decoder layer's norms and projections; a fused projection is a one-element tuple."""

    input_norm: torch.Tensor
    post_norm: torch.Tensor
    eps: float
    qkv: tuple[Linear, ...]  # (fused [(H + 2 KV) D, hidden],) or (q, k, v)
    o: Linear
    gate_up: tuple[Linear, ...]  # (fused [2 I, hidden],) or (gate, up)
    down: Linear


def unsupported_reason(model: Any) -> str | None:
    """Why ``model`` cannot take the lean forward, or None when it can."""
    config = model.config.get_text_config(decoder=True)
    if getattr(config, "model_type", None) not in _FAMILY:
        return f"model type {getattr(config, 'model_type', None)!r} is not of the Llama family"
    if getattr(config, "hidden_act", None) != "silu" or not supports_slab_cache(model.config):
        return "the model's activation or attention differs from Llama's"
    inner = getattr(model, "model", None)
    if (
        inner is None
        or not all(
            hasattr(inner, name) for name in ("embed_tokens", "layers", "norm", "rotary_emb")
        )
        or not hasattr(model, "lm_head")
    ):
        return "the model's modules are not laid out as Llama's"
    for layer in inner.layers:
        attn, mlp = layer.self_attn, layer.mlp
        if any(hasattr(attn, extra) for extra in ("q_norm", "k_norm", "sinks")):
            return "the attention has extra normalisation"
        if not all(hasattr(attn, p) for p in ("q_proj", "k_proj", "v_proj", "o_proj")) or not all(
            hasattr(mlp, p) for p in ("gate_proj", "up_proj", "down_proj")
        ):
            return "a layer's projections are not laid out as Llama's"
    return None


class LeanLlama:
    """The lean forward of one model over given kernels (see the module docstring).

    ``dtype`` is the activations' dtype; the embedding table and norms are
    taken from ``model`` in that dtype (no copy when the model already is);
    an embedding that is not an ``nn.Embedding`` (a lookup over quantised
    codes) is called as it is.
    ``weights`` names the format for reports (``float32``, ``int4``...).
    """

    def __init__(
        self,
        model: Any,
        layers: Sequence[LeanLayer],
        lm_head: Linear,
        *,
        dtype: torch.dtype,
        weights: str,
    ) -> None:
        config = model.config.get_text_config(decoder=True)
        inner = model.model
        self.weights = weights
        self.dtype = dtype
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", self.heads))
        self.head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // self.heads)
        self.hidden = int(config.hidden_size)
        self.intermediate = int(config.intermediate_size)
        self.scaling = float(inner.layers[0].self_attn.scaling)
        embedding = inner.embed_tokens
        if isinstance(embedding, torch.nn.Embedding):
            table = embedding.weight.detach().to(dtype)  # [V, hidden]
            self.embed: Callable[[torch.Tensor], torch.Tensor] = lambda ids: F.embedding(ids, table)
        else:  # a lookup over quantised codes (``Int8Embedding``): the model's own module
            self.embed = embedding
        self.rotary = inner.rotary_emb
        self.norm = inner.norm.weight.detach().to(dtype)
        device = self.norm.device
        self.kv_dtype = torch.float32 if device.type == "cpu" else dtype
        # The rotary module reads only the dtype and device of its first argument.
        self._angles_like = torch.empty(0, dtype=self.kv_dtype, device=device)
        self.norm_eps = float(inner.norm.variance_epsilon)
        self.layers = tuple(layers)
        self.lm_head = lm_head

    def __call__(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        cache: SlabCache | GroupedCache,
        *,
        last_only: bool,
    ) -> torch.Tensor:
        """Logits ``[B, S, V]`` (``S == 1`` when ``last_only``), as ``ModelRunner.call`` promises.

        ``input_ids, position_ids: [B, S]``; with a ``SlabCache``,
        ``attention_mask: [B, past + S]`` bool; with a ``GroupedCache`` the
        cache carries each group's mask (one new token per row).
        """
        rows, new = input_ids.shape
        groups = self._groups(attention_mask, cache, rows, new)
        h = self.embed(input_ids)  # [B, S, hidden]
        cos, sin = self.rotary(self._angles_like, position_ids)  # [B, S, D] in kv_dtype
        q_size, kv_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        for index, layer in enumerate(self.layers):
            x = F.rms_norm(h, (self.hidden,), layer.input_norm, layer.eps)
            if len(layer.qkv) == 1:
                qkv = layer.qkv[0](x).to(self.kv_dtype)
                q, k, v = torch.split(qkv, [q_size, kv_size, kv_size], dim=-1)
            else:
                q, k, v = (proj(x).to(self.kv_dtype) for proj in layer.qkv)
            q, k = apply_rotary_pos_emb(
                q.view(rows, new, self.heads, self.head_dim).transpose(1, 2),
                k.view(rows, new, self.kv_heads, self.head_dim).transpose(1, 2),
                cos,
                sin,
            )
            v = v.view(rows, new, self.kv_heads, self.head_dim).transpose(1, 2)
            attended = self._attend(index, q, k, v, groups)  # [B, H, S, D]
            h = h + layer.o(attended.transpose(1, 2).reshape(rows, new, q_size).to(h.dtype))
            x = F.rms_norm(h, (self.hidden,), layer.post_norm, layer.eps)
            if len(layer.gate_up) == 1:
                gate, up = torch.split(
                    layer.gate_up[0](x), [self.intermediate, self.intermediate], dim=-1
                )
            else:
                gate, up = (proj(x) for proj in layer.gate_up)
            h = h + layer.down(F.silu(gate) * up)
        if last_only:
            h = h[:, -1:, :]
        return self.lm_head(F.rms_norm(h, (self.hidden,), self.norm, self.norm_eps))

    def _attend(
        self,
        index: int,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        groups: Sequence[tuple[SlabCache, torch.Tensor, int, int]],
    ) -> torch.Tensor:
        """Write each group's new keys and values into its slab and attend over its used columns."""
        outputs = []
        for slab, mask, lo, hi in groups:
            layer: Any = slab.layers[index]
            keys, values = layer.update(k[lo:hi], v[lo:hi])  # stored in the slab's dtype
            outputs.append(
                F.scaled_dot_product_attention(
                    q[lo:hi].to(keys.dtype),
                    keys,
                    values,
                    attn_mask=mask,
                    scale=self.scaling,
                    enable_gqa=True,
                )
            )
        return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=0)

    @staticmethod
    def _groups(
        attention_mask: torch.Tensor, cache: SlabCache | GroupedCache, rows: int, new: int
    ) -> list[tuple[SlabCache, torch.Tensor, int, int]]:
        """Every slab the call writes to, with its 4D attention mask and its rows."""
        if isinstance(cache, GroupedCache):
            return [
                (slab, mask, lo, hi)
                for (slab, _), mask, (lo, hi) in zip(cache.groups, cache.masks, cache.bounds)
            ]
        past = cache.get_seq_length()
        columns = past + new
        padding = attention_mask[:, None, None, :columns]  # [B, 1, 1, C]
        if new == 1:
            return [(cache, padding, 0, rows)]
        col = torch.arange(columns, device=attention_mask.device)
        query = past + torch.arange(new, device=attention_mask.device)[:, None]  # [S, 1]
        # Causal over the new tokens; a query always sees itself, so a padding
        # query (whose own column is masked) attends to something and stays finite.
        mask = (padding & (col <= query)) | (col == query)  # [B, 1, S, C]
        return [(cache, mask, 0, rows)]


def attach(model: Any, forward: LeanLlama | None) -> None:
    """Make ``forward`` the lean forward :func:`packed_forward` returns for ``model`` (None: none)."""
    with _LOCK:
        if forward is None:
            _FORWARDS.pop(model, None)
        else:
            _FORWARDS[model] = forward


def packed_forward(model: Any) -> LeanLlama | None:
    """The lean forward attached to ``model``, if any (never builds one)."""
    with _LOCK:
        return _FORWARDS.get(model)
