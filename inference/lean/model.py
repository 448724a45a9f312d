"""Our own module tree of a Llama-family causal LM: the holder of the lean forward's weights.

Gemma 3 is built by the same classes from its configuration's family
(:attr:`~inference.lean.config.LeanConfig.family`): ``1 + w`` norms, per-head
q / k norms, the sandwich norms (``pre_feedforward_layernorm``,
``post_feedforward_layernorm``, and ``post_attention_layernorm`` on the
attention's output), GELU, embeddings scaled by the square root of the hidden
size, a rotary table per layer kind and soft-capped logits, under the
library's module names.

The tree has transformers' layout and names (``model.embed_tokens``,
``model.layers[i].self_attn.q_proj`` ... ``mlp.down_proj``,
``input_layernorm``, ``model.norm``, ``model.rotary_emb``, ``lm_head``), so
the direct load (:mod:`inference.weights.direct`), the lean forward
(:mod:`inference.decoder.packed_llama`), the layer profile and the weight
accounting read it as they read the library's model. It is built without
weights (:meth:`LeanCausalLM.skeleton`: every projection a meta placeholder
the load replaces by its kernel).

Guarantees:

- ``model(input_ids, attention_mask=None, position_ids=None)`` without a
  cache computes the whole sequence through the tree's own modules (each
  layer module is called, so forward hooks see every layer), causal over
  the tokens with the 2D padding mask (each layer over its sliding window, if
  it has one), in the lean forward's arithmetic:
  RMSNorm by ``F.rms_norm`` in the activations' dtype, attention in float32
  on the CPU; its logits equal the lean forward's prefill to that precision;
- a call with a cache (``past_key_values``), and :meth:`LeanCausalLM.generate`,
  run the library's forward over the same modules
  (:func:`inference.lean.library.library_view`, built on first use): the
  benchmarks' library-forward comparisons and ``generate`` baselines keep
  working, at the cost of importing transformers' modelling code then.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from inference.decoder.kv_slab import layer_windows, visible
from inference.lean.config import LeanConfig
from inference.lean.rotary import KindRotaryTable, RotaryTable, apply_rotary_pos_emb
from reasoning.errors import InvalidInput

__all__ = ["CausalOutput", "LeanCausalLM", "Placeholder", "ScaledEmbedding"]


@dataclass(frozen=True)
class CausalOutput:
    """What a forward returns: ``logits [B, S, V]`` (the library's outputs' one field we use)."""

    logits: torch.Tensor


class Placeholder(nn.Module):
    """A weight not read yet: its shape on the meta device (no initialisation is run).

    The load replaces every placeholder by a kernel or a table; calling one is an error.
    """

    def __init__(self, *shape: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(shape, device="meta"), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise InvalidInput(f"a weight of shape {tuple(self.weight.shape)} was never loaded")


def _placeholder(out_features: int, in_features: int) -> nn.Module:
    return Placeholder(out_features, in_features)


class RMSNorm(nn.Module):
    """RMSNorm over the last dimension with a learnt scale (``weight``, ``variance_epsilon``).

    ``offset`` is added to the stored weight (Gemma's ``1 + w``; the weight keeps the
    checkpoint's value, as the library's module does).
    """

    def __init__(self, size: int, eps: float, offset: float = 0.0) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(size, device="meta"), requires_grad=False)
        self.variance_epsilon = eps
        self.offset = offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight + self.offset if self.offset else self.weight
        return F.rms_norm(x, (x.shape[-1],), scale.to(x.dtype), self.variance_epsilon)


class ScaledEmbedding(nn.Module):
    """A token table whose rows are multiplied by ``embed_scale`` (Gemma: ``sqrt(hidden)``),
    the factor cast to the table's dtype after the lookup, as the library applies it."""

    embed_scale: torch.Tensor

    def __init__(self, weight: nn.Parameter, scale: float) -> None:
        super().__init__()
        self.weight = weight
        self.register_buffer("embed_scale", torch.tensor(scale), persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(input_ids, self.weight) * self.embed_scale.to(self.weight.dtype)


class Attention(nn.Module):
    """Grouped-query self-attention with rotary positions (q/k/v/o projections)."""

    def __init__(self, config: LeanConfig) -> None:
        super().__init__()
        self.heads, self.kv_heads = config.num_attention_heads, config.num_key_value_heads
        self.head_dim = config.head_dim
        scalar = config.query_pre_attn_scalar
        self.scaling = (self.head_dim if scalar is None else scalar) ** -0.5
        hidden, q_size = config.hidden_size, self.heads * self.head_dim
        kv_size = self.kv_heads * self.head_dim
        self.q_proj = _placeholder(q_size, hidden)
        self.k_proj = _placeholder(kv_size, hidden)
        self.v_proj = _placeholder(kv_size, hidden)
        self.o_proj = _placeholder(hidden, q_size)
        # Per-head query / key norms (Gemma 3): the family's norms over the head dimension.
        family = config.family
        self.q_norm: nn.Module | None = None
        self.k_norm: nn.Module | None = None
        if family.norm_offset:
            self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps, family.norm_offset)
            self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps, family.norm_offset)

    def forward(
        self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        rows, new, _ = x.shape

        def split(t: torch.Tensor, heads: int) -> torch.Tensor:
            return t.view(rows, new, heads, self.head_dim).transpose(1, 2).to(cos.dtype)

        q = split(self.q_proj(x), self.heads)
        k = split(self.k_proj(x), self.kv_heads)
        v = split(self.v_proj(x), self.kv_heads)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=self.scaling, enable_gqa=True
        )
        attended: torch.Tensor = self.o_proj(out.transpose(1, 2).reshape(rows, new, -1).to(x.dtype))
        return attended


class MLP(nn.Module):
    """The gated feed-forward block (SiLU, or Gemma's tanh-approximated GELU)."""

    def __init__(self, config: LeanConfig) -> None:
        super().__init__()
        hidden, inner = config.hidden_size, config.intermediate_size
        self.gate_proj = _placeholder(inner, hidden)
        self.up_proj = _placeholder(inner, hidden)
        self.down_proj = _placeholder(hidden, inner)
        self.gelu = config.family.activations != ("silu",)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = self.gate_proj(x)
        gate = F.gelu(gate, approximate="tanh") if self.gelu else F.silu(gate)
        out: torch.Tensor = self.down_proj(gate * self.up_proj(x))
        return out


class DecoderLayer(nn.Module):
    """Pre-norm attention then pre-norm MLP, each added to the residual stream.

    Gemma's sandwich: ``post_attention_layernorm`` normalises the attention's output,
    ``pre_feedforward_layernorm`` the MLP's input, ``post_feedforward_layernorm`` its output.
    """

    def __init__(self, config: LeanConfig) -> None:
        super().__init__()
        self.self_attn = Attention(config)
        self.mlp = MLP(config)
        offset, size, eps = config.family.norm_offset, config.hidden_size, config.rms_norm_eps
        self.input_layernorm = RMSNorm(size, eps, offset)
        self.post_attention_layernorm = RMSNorm(size, eps, offset)
        self.sandwich = bool(offset)
        if self.sandwich:
            self.pre_feedforward_layernorm = RMSNorm(size, eps, offset)
            self.post_feedforward_layernorm = RMSNorm(size, eps, offset)

    def forward(
        self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        attended = self.self_attn(self.input_layernorm(h), cos, sin, mask)
        if not self.sandwich:
            h = h + attended
            out: torch.Tensor = h + self.mlp(self.post_attention_layernorm(h))
            return out
        h = h + self.post_attention_layernorm(attended)
        mlp = self.mlp(self.pre_feedforward_layernorm(h))
        out = h + self.post_feedforward_layernorm(mlp)
        return out


class LlamaBody(nn.Module):
    """Embedding, decoder layers, final norm and rotary table (the library's ``model.model``)."""

    def __init__(self, config: LeanConfig) -> None:
        super().__init__()
        self.embed_tokens: nn.Module = Placeholder(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, config.family.norm_offset)
        self.rotary_emb: nn.Module = (
            RotaryTable(config.head_dim, config.rope_theta)
            if config.rope_thetas is None
            else KindRotaryTable(config.head_dim, config.rope_thetas)
        )


class LeanCausalLM(nn.Module):
    """A Llama-family causal LM of our own modules (see the module docstring).

    ``directory`` is the model directory it was read from: the library view
    reads its ``config.json`` and ``generation_config.json`` from there.
    """

    def __init__(self, config: LeanConfig, directory: Path) -> None:
        super().__init__()
        self.config = config
        self.directory = directory
        self.model = LlamaBody(config)
        self.lm_head: nn.Module = _placeholder(config.vocab_size, config.hidden_size)

    @property
    def device(self) -> torch.device:
        """Where the weights are (the library model's attribute of that name)."""
        return next(self.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        """The activations' dtype: that of the norms (the library model's attribute of that name)."""
        return self.model.norm.weight.dtype

    def get_input_embeddings(self) -> nn.Module:
        return self.model.embed_tokens

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_values: Any = None,
        use_cache: bool = False,
        logits_to_keep: int = 0,
        **kwargs: Any,
    ) -> Any:
        """Logits of every position (the last ``logits_to_keep`` when given); see the module docstring."""
        if past_key_values is not None or use_cache or kwargs:
            from inference.lean.library import library_view

            view = library_view(self)
            # transformers 5.x names the cache ``cache`` (``past_key_values`` is deprecated).
            cache_kw = (
                "cache"
                if "cache" in inspect.signature(view.forward).parameters
                else ("past_key_values")
            )
            # The view's forward itself: this module's own call already runs its hooks.
            return view.forward(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                use_cache=use_cache,
                logits_to_keep=logits_to_keep,
                **{cache_kw: past_key_values},
                **kwargs,
            )
        rows, new = input_ids.shape
        device = input_ids.device
        padding = (
            torch.ones((rows, new), dtype=torch.bool, device=device)
            if attention_mask is None
            else attention_mask.bool()
        )
        if position_ids is None:
            position_ids = torch.arange(new, device=device).expand(rows, -1)
        # Causal, each layer over its window; a query always sees itself, so a padding query
        # stays finite (as the lean forward).
        windows = layer_windows(self.config)
        masks = {window: visible(padding, new, window) for window in set(windows)}
        h = self.model.embed_tokens(input_ids)
        # Attention in float32 on the CPU, the activations' dtype elsewhere (the lean forward's).
        attn_dtype = torch.float32 if device.type == "cpu" else h.dtype
        like = torch.empty(0, dtype=attn_dtype, device=device)
        kinds = self.config.layer_types if self.config.rope_thetas is not None else None
        tables = {
            kind: self.model.rotary_emb(like, position_ids, *(() if kind is None else (kind,)))
            for kind in set(kinds or (None,))
        }
        for index, (layer, window) in enumerate(zip(self.model.layers, windows)):
            cos, sin = tables[None if kinds is None else kinds[index]]
            h = layer(h, cos, sin, masks[window])
        if logits_to_keep:
            h = h[:, -logits_to_keep:, :]
        logits = self.lm_head(self.model.norm(h))
        cap = self.config.final_logit_softcapping
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        return CausalOutput(logits)

    def generate(self, *args: Any, **kwargs: Any) -> Any:
        """The library's ``generate`` over these modules (:func:`~inference.lean.library.library_view`)."""
        from inference.lean.library import library_view

        return library_view(self).generate(*args, **kwargs)
