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
- only models of the Llama family (``llama``, ``mistral``, ``qwen2``, and by
  configuration ``qwen3``, ``phi3`` and ``gemma3_text``: :mod:`inference.lean.family`;
  their sliding-window layers included: each layer attends over its window of the
  rows' logical positions, :func:`~inference.decoder.kv_slab.visible`) qualify: :func:`unsupported_reason` says why any other
  does not, and such models keep the library forward;
- :func:`attach` registers one forward per model object; the runner finds it
  with :func:`packed_forward`;
- a step calls each kernel's ``direct()`` function (its product without the
  module call's dispatch, the same result: ``inference.weights.kernels``),
  taken when the forward is built: kernels are not replaced afterwards;
- attention runs in the dtype of the slab it writes to: new keys and values
  are stored in it and the queries cast to it. ``kv_dtype`` is the dtype a
  slab for this forward should have: float32 on the CPU whatever the weights
  (torch's CPU attention over bfloat16 was measured 7-15x slower than over
  float32 for a beam's few rows, and the rest of the step is the weights'
  kernels), the activations' dtype elsewhere;
- a one-token step attends by two products and a softmax over an additive
  mask built once per call (not per layer); where the slab says that spans
  of rows hold their first columns alike (:meth:`SlabCache.share`: a
  branch's beams and its prompt), those keys and values are read once per
  span, not once per row, in place (one product per span over its first
  row's columns: no copy of them is made). Prefills take torch's fused attention.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from inference.decoder.grouped_attention import GroupedCache
from inference.decoder.kv_slab import SlabCache, layer_windows, supports_slab_cache, visible
from inference.lean.family import Family, family_of, norm_eps, norm_weight

__all__ = [
    "LeanLayer",
    "LeanLlama",
    "Linear",
    "attach",
    "layer_norms",
    "packed_forward",
    "unsupported_reason",
]

#: ``x [..., in] -> [..., out]``: one projection in some weight format.
Linear = Callable[[torch.Tensor], torch.Tensor]

_FORWARDS: weakref.WeakKeyDictionary[Any, LeanLlama] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Group:
    """The rows of one call that attend over one slab, and how they see its columns.

    ``mask`` is the boolean mask ``[n, 1, S, C]`` (True: attend) a prefill's
    fused attention takes; a one-token step reads ``bias`` instead, the same
    mask as ``0`` / ``-inf`` ``[n, 1, 1, C]`` in the slab's dtype. ``shared``
    and ``span``: the slab's claim (:attr:`SlabCache.shared`) where its rows
    are exactly these, else ``(0, 1)``. ``windowed``: per sliding window of the
    model's layers, that window's ``(mask, bias)`` (:func:`~inference.decoder.kv_slab.visible`).
    """

    slab: SlabCache
    lo: int
    hi: int
    mask: torch.Tensor
    bias: torch.Tensor | None
    shared: int
    span: int
    windowed: dict[int, tuple[torch.Tensor, torch.Tensor | None]]

    def view(self, window: int | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The ``(mask, bias)`` a layer attending over ``window`` (None: every column) reads."""
        return (self.mask, self.bias) if window is None else self.windowed[window]


@dataclass(frozen=True)
class LeanLayer:
    """One decoder layer's norms and projections; a fused projection is a one-element tuple.

    Norm weights are the scales multiplied by (a family's offset folded in:
    :func:`~inference.lean.family.norm_weight`). ``post_norm`` is the norm before the MLP;
    the optional ones: per-head query / key norms (Qwen 3, Gemma 3) and the norms of the
    attention's and the MLP's outputs before the residual add (Gemma 3's sandwich).
    """

    input_norm: torch.Tensor
    post_norm: torch.Tensor
    eps: float
    qkv: tuple[Linear, ...]  # (fused [(H + 2 KV) D, hidden],) or (q, k, v)
    o: Linear
    gate_up: tuple[Linear, ...]  # (fused [2 I, hidden],) or (gate, up)
    down: Linear
    q_norm: torch.Tensor | None = None
    k_norm: torch.Tensor | None = None
    attn_out_norm: torch.Tensor | None = None
    mlp_out_norm: torch.Tensor | None = None


def layer_norms(layer: Any, family: Family, dtype: torch.dtype | None = None) -> dict[str, Any]:
    """A library decoder layer's norms as :class:`LeanLayer` fields (in ``dtype`` when given).

    Llama's layout: ``input_layernorm`` and ``post_attention_layernorm`` (before the MLP).
    Gemma's sandwich (a ``pre_feedforward_layernorm``): ``post_attention_layernorm`` is then
    the attention output's norm and ``post_feedforward_layernorm`` the MLP output's.
    """

    def weight(norm: Any) -> torch.Tensor | None:
        if norm is None:
            return None
        w = norm_weight(norm, family)
        return w if dtype is None else w.to(dtype)

    attn = layer.self_attn
    sandwich = hasattr(layer, "pre_feedforward_layernorm")
    norms: dict[str, Any] = {
        "input_norm": weight(layer.input_layernorm),
        "eps": norm_eps(layer.input_layernorm),
        "q_norm": weight(getattr(attn, "q_norm", None)),
        "k_norm": weight(getattr(attn, "k_norm", None)),
    }
    if sandwich:
        norms["post_norm"] = weight(layer.pre_feedforward_layernorm)
        norms["attn_out_norm"] = weight(layer.post_attention_layernorm)
        norms["mlp_out_norm"] = weight(layer.post_feedforward_layernorm)
    else:
        norms["post_norm"] = weight(layer.post_attention_layernorm)
    return norms


@dataclass(frozen=True)
class _Calls:
    """One layer's projections as the functions a step calls (a kernel's ``direct()`` where it
    offers one: its product without the module's dispatch, the same result)."""

    qkv: tuple[Linear, ...]
    o: Linear
    gate_up: tuple[Linear, ...]
    down: Linear

    @classmethod
    def of(cls, layer: LeanLayer) -> _Calls:
        return cls(
            tuple(_direct(p) for p in layer.qkv),
            _direct(layer.o),
            tuple(_direct(p) for p in layer.gate_up),
            _direct(layer.down),
        )


def _direct(linear: Linear) -> Linear:
    """``linear``'s product as a plain function where it offers one (or is an ``nn.Linear``)."""
    direct = getattr(linear, "direct", None)
    if callable(direct):
        out: Linear = direct()
        return out
    if isinstance(linear, torch.nn.Linear):
        return functools.partial(F.linear, weight=linear.weight, bias=linear.bias)
    return linear


def unsupported_reason(model: Any) -> str | None:
    """Why ``model`` cannot take the lean forward, or None when it can."""
    config = model.config.get_text_config(decoder=True)
    family = family_of(config)
    if family is None:
        return f"model type {getattr(config, 'model_type', None)!r} is not of the Llama family"
    if getattr(config, family.activation_key, None) not in family.activations or not (
        supports_slab_cache(model.config)
    ):
        return "the model's activation or attention differs from Llama's"
    if getattr(config, "attn_logit_softcapping", None) is not None:
        return "the attention soft-caps its scores"
    if float(getattr(config, "partial_rotary_factor", 1.0) or 1.0) != 1.0:
        return "the rotary embedding turns part of each head"
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
        if hasattr(attn, "sinks"):
            return "the attention has sinks"
        fused_qkv = hasattr(attn, "qkv_proj") or all(hasattr(attn, p) for p in _QKV)
        fused_mlp = hasattr(mlp, "gate_up_proj") or all(hasattr(mlp, p) for p in _GATE_UP)
        if not (fused_qkv and fused_mlp and hasattr(attn, "o_proj") and hasattr(mlp, "down_proj")):
            return "a layer's projections are not laid out as Llama's"
    return None


_QKV = ("q_proj", "k_proj", "v_proj")
_GATE_UP = ("gate_proj", "up_proj")


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
        family = family_of(config) or Family()
        inner = model.model
        self.weights = weights
        self.dtype = dtype
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", self.heads))
        self.head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // self.heads)
        self.hidden = int(config.hidden_size)
        self.intermediate = int(config.intermediate_size)
        self.scaling = float(inner.layers[0].self_attn.scaling)
        #: Per layer, how far back it attends (None: the whole row; a window: sliding layers).
        self.windows = layer_windows(config)
        embedding = inner.embed_tokens
        scale = getattr(embedding, "embed_scale", None)  # Gemma: embeddings times sqrt(hidden)
        if isinstance(embedding, torch.nn.Embedding) and scale is None:
            table = embedding.weight.detach().to(dtype)  # [V, hidden]
            self.embed: Callable[[torch.Tensor], torch.Tensor] = lambda ids: F.embedding(ids, table)
        else:  # a lookup over quantised codes (``Int8Embedding``), a scaled one: the model's own
            self.embed = embedding
        self.rotary = inner.rotary_emb
        #: Per layer, the rotary table it reads (Gemma 3: each layer kind has its own base).
        self._rotary_kinds: tuple[str | None, ...] = (
            tuple(config.layer_types)
            if "layer_type" in inspect.signature(self.rotary.forward).parameters
            else (None,) * len(layers)
        )
        self.norm = norm_weight(inner.norm, family).to(dtype)
        device = self.norm.device
        self.kv_dtype = torch.float32 if device.type == "cpu" else dtype
        # The rotary module reads only the dtype and device of its first argument.
        self._angles_like = torch.empty(0, dtype=self.kv_dtype, device=device)
        self.norm_eps = norm_eps(inner.norm)
        self.activation: Callable[[torch.Tensor], torch.Tensor] = (
            F.silu
            if family.activations == ("silu",)
            else functools.partial(F.gelu, approximate="tanh")
        )
        #: Gemma's final soft-capping of the logits (``cap * tanh(logits / cap)``), if any.
        self.softcap: float | None = getattr(config, "final_logit_softcapping", None)
        self.layers = tuple(layers)
        self.lm_head = lm_head
        self._calls = tuple(_Calls.of(layer) for layer in self.layers)
        self._head = _direct(lm_head)

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
        h = self.embed(input_ids).to(self.dtype)  # [B, S, hidden]
        angles = {}
        for kind in set(self._rotary_kinds):
            extra = () if kind is None else (kind,)
            cos, sin = self.rotary(self._angles_like, position_ids, *extra)  # [B, S, D]
            angles[kind] = (cos.unsqueeze(2), sin.unsqueeze(2))  # [B, S, 1, D]: every head alike
        heads, kv_heads, dim = self.heads, self.kv_heads, self.head_dim
        half = dim // 2
        for index, (layer, calls) in enumerate(zip(self.layers, self._calls)):
            x = F.rms_norm(h, (self.hidden,), layer.input_norm, layer.eps)
            if len(calls.qkv) == 1:
                qkv = calls.qkv[0](x).to(self.kv_dtype)
            else:
                qkv = torch.cat([proj(x).to(self.kv_dtype) for proj in calls.qkv], dim=-1)
            qkv = qkv.view(rows, new, heads + 2 * kv_heads, dim)
            qk = qkv[:, :, : heads + kv_heads]  # queries and keys rotate alike: one product
            if layer.q_norm is not None and layer.k_norm is not None:
                qk = torch.cat(
                    (
                        F.rms_norm(qk[:, :, :heads], (dim,), layer.q_norm.to(qk.dtype), layer.eps),
                        F.rms_norm(qk[:, :, heads:], (dim,), layer.k_norm.to(qk.dtype), layer.eps),
                    ),
                    dim=2,
                )
            cos, sin = angles[self._rotary_kinds[index]]
            qk = qk * cos + torch.cat((-qk[..., half:], qk[..., :half]), dim=-1) * sin
            attended = self._attend(
                index, qk[:, :, :heads], qk[:, :, heads:], qkv[:, :, heads + kv_heads :], groups
            )  # [B, S, H * D]
            out = calls.o(attended.to(h.dtype))
            if layer.attn_out_norm is not None:
                out = F.rms_norm(out, (self.hidden,), layer.attn_out_norm, layer.eps)
            h = h + out
            x = F.rms_norm(h, (self.hidden,), layer.post_norm, layer.eps)
            if len(calls.gate_up) == 1:
                gate, up = torch.split(
                    calls.gate_up[0](x), [self.intermediate, self.intermediate], dim=-1
                )
            else:
                gate, up = (proj(x) for proj in calls.gate_up)
            out = calls.down(self.activation(gate).mul_(up))
            if layer.mlp_out_norm is not None:
                out = F.rms_norm(out, (self.hidden,), layer.mlp_out_norm, layer.eps)
            h = h + out
        if last_only:
            h = h[:, -1:, :]
        logits = self._head(F.rms_norm(h, (self.hidden,), self.norm, self.norm_eps))
        if self.softcap is not None:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return logits

    def _attend(
        self,
        index: int,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        groups: Sequence[_Group],
    ) -> torch.Tensor:
        """Write each group's new keys and values into its slab and attend over its used columns.

        ``q: [B, S, H, D]``, ``k, v: [B, S, KV, D]``; returns ``[B, S, H * D]``.
        """
        new = q.shape[1]
        outputs = []
        window = self.windows[index]
        for g in groups:
            layer: Any = g.slab.layers[index]
            keys, values = layer.update(  # stored in the slab's dtype: [n, KV, C, D]
                k[g.lo : g.hi].transpose(1, 2), v[g.lo : g.hi].transpose(1, 2)
            )
            mask, bias = g.view(window)
            held = int(getattr(layer, "held_from", 0))  # a held sliding layer's first column
            if held:
                mask = mask[..., held:]
                bias = None if bias is None else bias[..., held:]
            if bias is None:
                out = F.scaled_dot_product_attention(
                    q[g.lo : g.hi].transpose(1, 2).to(keys.dtype),
                    keys,
                    values,
                    attn_mask=mask,
                    scale=self.scaling,
                    enable_gqa=True,
                ).transpose(1, 2)  # [n, S, H, D]
            else:
                out = self._attend_one(
                    q[g.lo : g.hi].to(keys.dtype), keys, values, g, bias, max(0, g.shared - held)
                )
            outputs.append(out.reshape(g.hi - g.lo, new, self.heads * self.head_dim))
        return outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=0)

    def _attend_one(
        self,
        q: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor,
        g: _Group,
        bias: torch.Tensor,
        shared: int,
    ) -> torch.Tensor:
        """One new token per row: ``q [n, 1, H, D]`` over ``keys, values [n, KV, C, D]`` -> ``[n, KV, G, D]``.

        Each key head serves ``G = H / KV`` query heads (torch's ``enable_gqa``
        grouping: query head ``h`` reads key head ``h // G``), so the queries are
        viewed as ``[n, KV, G, D]`` and multiplied against the keys unrepeated.
        Over a span's shared columns the queries of all its rows are stacked
        (``[KV, span * G, D]`` per span) against the span's first row's keys.
        """
        n, kv_heads, dim = g.hi - g.lo, self.kv_heads, self.head_dim
        rep = self.heads // kv_heads
        qg = q.view(n, kv_heads, rep, dim)
        span = g.span  # ``shared``: the span's shared columns among ``keys`` (g.shared, less
        if shared == 0:  # any a held sliding layer gave up)
            scores = torch.matmul(qg, keys.transpose(-1, -2))  # [n, KV, G, C]
            weights = torch.softmax(torch.add(bias, scores, alpha=self.scaling), dim=-1)
            return torch.matmul(weights, values)
        spans = n // span

        def by_span(t: torch.Tensor) -> torch.Tensor:  # [n, KV, G, X] -> [spans, KV, span * G, X]
            t = t.reshape(spans, span, kv_heads, rep, t.shape[-1]).transpose(1, 2)
            return t.reshape(spans, kv_heads, span * rep, -1)

        def by_row(t: torch.Tensor) -> torch.Tensor:  # the inverse of ``by_span``
            t = t.reshape(spans, kv_heads, span, rep, t.shape[-1]).transpose(1, 2)
            return t.reshape(n, kv_heads, rep, -1)

        # One product per span against its first row's keys ``[KV, shared, D]``: a single
        # product over ``[spans, KV]`` would first copy every span's keys into one tensor
        # (the two batch dimensions do not merge into one stride), which measured costlier
        # than the products themselves.
        queries = by_span(qg)  # [spans, KV, span * G, D]
        common = queries.new_empty((spans, kv_heads, span * rep, shared))
        for s in range(spans):
            torch.matmul(queries[s], keys[s * span, :, :shared].transpose(-1, -2), out=common[s])
        own = torch.matmul(qg, keys[:, :, shared:].transpose(-1, -2))  # [n, KV, G, C - shared]
        scores = torch.add(bias, torch.cat((by_row(common), own), dim=-1), alpha=self.scaling)
        weights = torch.softmax(scores, dim=-1)
        out = torch.matmul(weights[..., shared:], values[:, :, shared:])
        spread = by_span(weights[..., :shared])  # [spans, KV, span * G, shared]
        mixed = queries.new_empty((spans, kv_heads, span * rep, dim))
        for s in range(spans):
            torch.matmul(spread[s], values[s * span, :, :shared], out=mixed[s])
        return out.add_(by_row(mixed))

    def _groups(
        self, attention_mask: torch.Tensor, cache: SlabCache | GroupedCache, rows: int, new: int
    ) -> list[_Group]:
        """Every slab the call writes to, with its rows and how they see its columns."""
        if isinstance(cache, GroupedCache):
            return [
                self._group(slab, padding, lo, hi, 1)
                for (slab, padding), (lo, hi) in zip(cache.groups, cache.bounds)
            ]
        columns = cache.get_seq_length() + new
        return [self._group(cache, attention_mask[:, :columns], 0, rows, new)]

    def _group(self, slab: SlabCache, padding: torch.Tensor, lo: int, hi: int, new: int) -> _Group:
        """One group's view of its slab from its padding mask ``[n, C]``: the mask of each
        window its layers attend over, and for one-token steps their biases and the shared span.

        Causal over the new tokens; a query always sees itself, so a padding query (whose
        own column is masked) attends to something and stays finite.
        """
        views = {w: self._view(visible(padding, new, w), new) for w in set(self.windows)}
        windowed = {w: view for w, view in views.items() if w is not None}
        mask, bias = views[None] if None in views else (visible(padding, new, None), None)
        if new != 1:
            return _Group(slab, lo, hi, mask, None, 0, 1, windowed)
        shared, span = slab.shared
        if shared == 0 or (hi - lo) % span or (hi - lo) == span == 1:
            shared, span = 0, 1
        return _Group(slab, lo, hi, mask, bias, shared, span, windowed)

    def _view(self, mask: torch.Tensor, new: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``mask`` and, for a one-token step, the same as an additive bias in the slab's dtype."""
        if new != 1:
            return mask, None
        bias = torch.zeros(mask.shape, dtype=self.kv_dtype, device=mask.device)
        return mask, bias.masked_fill_(~mask, float("-inf"))


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
