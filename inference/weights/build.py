"""Build a Llama-family model's lean forward in one weight format, and install it on the model.

:func:`build_forward` reads the model's weights (and, for ``int4``, the
GGUF's own Q4_1 blocks where the model came from one) and returns a
:class:`~inference.decoder.packed_llama.LeanLlama` over new kernels, leaving
the model untouched: the auto probe builds and discards candidates this way.
:func:`install` then makes the model itself run on the chosen kernels, so
that only one copy of the weights stays in memory:

- ``float32``: the model keeps its float32 weights (the reference, and what
  ``model.generate`` runs); the lean forward holds oneDNN-packed copies with
  fused q/k/v and gate/up projections where this build of torch packs
  correctly, else the model's own ``nn.Linear`` modules;
- ``bfloat16``: the model is cast to bfloat16 (a tied LM head stays tied);
  the lean forward runs on its modules and adds a fused q/k/v copy;
- ``int8`` / ``int4``: the model is cast to bfloat16 and every projection and
  the LM head are replaced by weight-only int8 / int4 modules
  (:mod:`inference.weights.kernels`); the lean forward shares them and adds a
  fused q/k/v copy (a sixth of the layer weights). ``int4`` takes the codes,
  scales and minimums of a Q4_1 GGUF as they are (``gguf_q4``), quantises
  other projections to int4 groups of 32, and keeps the LM head in int8: the
  head decides the next token directly, and its int4 rounding alone failed
  the quality gate on the bundled model.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from inference.decoder.packed_llama import LeanLayer, LeanLlama, Linear, attach, layer_norms
from inference.lean.family import Family, family_of
from inference.weights.dynamic_int8 import dynamic_head
from inference.weights.gguf_q4 import Q4Block, finer_names
from inference.weights.kernels import (
    INT4_GROUP,
    Int4Linear,
    Int8Embedding,
    Int8Linear,
    PackedLinear,
)

__all__ = ["build_forward", "convert", "install", "onednn_packs"]

_ATTENTION = ("q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj")
_MLP = ("gate_proj", "up_proj", "gate_up_proj", "down_proj")


def _family(model: Any) -> Family:
    return family_of(model.config.get_text_config(decoder=True)) or Family()


def _qkv_names(attn: Any) -> tuple[str, ...]:
    """The query / key / value projections' names: one fused module (Phi-3) or three."""
    return ("qkv_proj",) if hasattr(attn, "qkv_proj") else ("q_proj", "k_proj", "v_proj")


def _gate_up_names(mlp: Any) -> tuple[str, ...]:
    """The gate and up projections' names: one fused module (Phi-3, gate rows first) or two."""
    return ("gate_up_proj",) if hasattr(mlp, "gate_up_proj") else ("gate_proj", "up_proj")


@functools.cache
def onednn_packs() -> bool:
    """Whether this PyTorch build packs and multiplies a float32 weight through oneDNN correctly."""
    if not torch.backends.mkldnn.is_available():  # type: ignore[no-untyped-call]
        return False
    gen = torch.Generator().manual_seed(0)
    weight, x = torch.randn(24, 16, generator=gen), torch.randn(3, 16, generator=gen)
    try:
        with torch.no_grad():
            out = PackedLinear(weight, None)(x)
    except RuntimeError:
        return False
    return bool(torch.allclose(out, F.linear(x, weight), atol=1e-4, rtol=1e-4))


def _cat_bias(*linears: Any) -> torch.Tensor | None:
    """The concatenated biases of fused projections; None when none has one, zeros fill gaps."""
    biases = [getattr(lin, "bias", None) for lin in linears]
    if all(b is None for b in biases):
        return None
    return torch.cat(
        [
            b.detach().float() if b is not None else torch.zeros(int(lin.weight.shape[0]))
            for b, lin in zip(biases, linears)
        ]
    )


def _cat_weight(*linears: Any) -> torch.Tensor:
    return torch.cat([lin.weight.detach() for lin in linears])


def _dense(weight: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype) -> nn.Linear:
    """An ``nn.Linear`` holding ``weight`` in ``dtype`` (no copy when it already is)."""
    out, inp = (int(n) for n in weight.shape)
    layer = nn.Linear(inp, out, bias=bias is not None, device="meta")
    layer.weight = nn.Parameter(weight.detach().to(dtype), requires_grad=False)
    if bias is not None:
        layer.bias = nn.Parameter(bias.detach().to(dtype), requires_grad=False)
    return layer


def _int4(name: str, linear: Any, blocks: Mapping[str, Q4Block], dtype: torch.dtype) -> Int4Linear:
    bias = getattr(linear, "bias", None)
    block = blocks.get(name)
    if block is None:
        return Int4Linear.from_weight(linear.weight, bias, group=INT4_GROUP, dtype=dtype)
    device = linear.weight.device
    return Int4Linear(
        block.codes.to(device),
        block.scales.to(device),
        block.mins.to(device),
        bias,
        group=INT4_GROUP,
        dtype=dtype,
    )


def _fused_int4(
    names: tuple[str, ...],
    linears: tuple[Any, ...],
    blocks: Mapping[str, Q4Block],
    dtype: torch.dtype,
) -> Int4Linear:
    """One int4 kernel over stacked projections: their rows' codes and groups side by side."""
    parts = [blocks.get(n) for n in names]
    bias = _cat_bias(*linears)
    if all(p is not None for p in parts):
        present = [p for p in parts if p is not None]
        device = linears[0].weight.device
        return Int4Linear(
            torch.cat([p.codes for p in present]).to(device),
            torch.cat([p.scales for p in present]).to(device),
            torch.cat([p.mins for p in present]).to(device),
            bias,
            group=INT4_GROUP,
            dtype=dtype,
        )
    return Int4Linear.from_weight(_cat_weight(*linears), bias, group=INT4_GROUP, dtype=dtype)


def _projections(layer: Any) -> dict[str, Any]:
    """A layer's projections by their path inside the layer (``self_attn.q_proj``...)."""
    attn, mlp = layer.self_attn, layer.mlp
    found = {f"self_attn.{n}": getattr(attn, n) for n in _ATTENTION if hasattr(attn, n)}
    found.update({f"mlp.{n}": getattr(mlp, n) for n in _MLP if hasattr(mlp, n)})
    return found


def _kernel(weights: str, name: str, linear: Any, blocks: Mapping[str, Q4Block]) -> nn.Module:
    """One projection's kernel in ``weights`` (bfloat16 activations); in int4, a projection
    the GGUF holds finer than four bits takes the int8 kernel (``gguf_q4.finer_names``)."""
    bias = getattr(linear, "bias", None)
    if weights == "int8" or (weights == "int4" and name in finer_names(blocks)):
        return Int8Linear.from_weight(linear.weight, bias, torch.bfloat16)
    if weights == "int4":
        return _int4(name, linear, blocks, torch.bfloat16)
    return _dense(linear.weight, bias, torch.bfloat16)


def _fused_qkv(
    weights: str, prefix: str, attn: Any, blocks: Mapping[str, Q4Block]
) -> tuple[Linear, ...]:
    """The query, key and value projections as one kernel, or in int4 one per run of
    projections of one kind (four-bit codes, or int8 for those the GGUF holds finer)."""
    linears = (attn.q_proj, attn.k_proj, attn.v_proj)
    bias = _cat_bias(*linears)
    if weights == "int8":
        return (Int8Linear.from_weight(_cat_weight(*linears), bias),)
    if weights == "int4":
        names = tuple(f"{prefix}.self_attn.{n}" for n in ("q_proj", "k_proj", "v_proj"))
        finer = finer_names(blocks)
        runs: list[list[int]] = []
        for index, name in enumerate(names):
            if runs and (names[runs[-1][0]] in finer) == (name in finer):
                runs[-1].append(index)
            else:
                runs.append([index])
        kernels: list[Linear] = []
        for run in runs:
            part = tuple(linears[i] for i in run)
            if names[run[0]] in finer:
                kernels.append(
                    Int8Linear.from_weight(_cat_weight(*part), _cat_bias(*part), torch.bfloat16)
                )
            else:
                kernels.append(
                    _fused_int4(tuple(names[i] for i in run), part, blocks, torch.bfloat16)
                )
        return tuple(kernels)
    return (_dense(_cat_weight(*linears), bias, torch.bfloat16),)


def _float32_forward(model: Any) -> LeanLlama:
    """The float32 lean forward: packed fused copies where oneDNN packs, else the model's modules."""
    layers = []
    pack = onednn_packs() and next(model.parameters()).device.type == "cpu"
    family = _family(model)
    for layer in model.model.layers:
        attn, mlp = layer.self_attn, layer.mlp
        qkv_parts = tuple(getattr(attn, n) for n in _qkv_names(attn))
        gate_up_parts = tuple(getattr(mlp, n) for n in _gate_up_names(mlp))
        if pack:
            qkv: tuple[Linear, ...] = (
                PackedLinear(_cat_weight(*qkv_parts), _cat_bias(*qkv_parts)),
            )
            gate_up: tuple[Linear, ...] = (
                PackedLinear(_cat_weight(*gate_up_parts), _cat_bias(*gate_up_parts)),
            )
            o: Linear = PackedLinear(attn.o_proj.weight, _cat_bias(attn.o_proj))
            down: Linear = PackedLinear(mlp.down_proj.weight, _cat_bias(mlp.down_proj))
        else:
            qkv, gate_up = qkv_parts, gate_up_parts
            o, down = attn.o_proj, mlp.down_proj
        layers.append(
            LeanLayer(**layer_norms(layer, family), qkv=qkv, o=o, gate_up=gate_up, down=down)
        )
    head: Linear = (
        PackedLinear(model.lm_head.weight, _cat_bias(model.lm_head)) if pack else model.lm_head
    )
    return LeanLlama(model, layers, head, dtype=torch.float32, weights="float32")


def build_forward(
    model: Any, weights: str, blocks: Mapping[str, Q4Block] | None = None
) -> tuple[LeanLlama, dict[str, nn.Module]]:
    """The lean forward of ``model`` in ``weights``, and the modules :func:`install` swaps in.

    The model is not changed. The second value maps module names
    (``model.layers.0.self_attn.q_proj``, ``lm_head``) to their replacement
    kernels (empty for ``float32``). ``blocks`` are a Q4_1 GGUF's projections
    for ``int4`` (:func:`inference.weights.gguf_q4.q4_1_blocks`).
    """
    if weights == "float32":
        return _float32_forward(model), {}
    blocks = {} if blocks is None else blocks  # an empty table may still name finer projections
    dtype = torch.bfloat16
    replacements: dict[str, nn.Module] = {}
    layers = []
    family = _family(model)
    with torch.no_grad():
        for index, layer in enumerate(model.model.layers):
            prefix = f"model.layers.{index}"
            kernels = {
                path.rpartition(".")[2]: _kernel(weights, f"{prefix}.{path}", linear, blocks)
                for path, linear in _projections(layer).items()
            }
            for path in _projections(layer) if weights != "bfloat16" else ():
                replacements[f"{prefix}.{path}"] = kernels[path.rpartition(".")[2]]
            layers.append(
                LeanLayer(
                    **layer_norms(layer, family, dtype),
                    qkv=(
                        (kernels["qkv_proj"],)  # already one module (Phi-3)
                        if "qkv_proj" in kernels
                        else _fused_qkv(weights, prefix, layer.self_attn, blocks)
                    ),
                    o=kernels["o_proj"],
                    gate_up=tuple(kernels[n] for n in _gate_up_names(layer.mlp)),
                    down=kernels["down_proj"],
                )
            )
        head_bias = getattr(model.lm_head, "bias", None)
        head: nn.Module
        if weights in ("int8", "int4"):
            # int4 groups re-rounding the bundled head (stored as Q8_0) cost 20x the
            # KL divergence of an int8 head (0.059 against 0.0026 nats measured).
            head = dynamic_head(Int8Linear.from_weight(model.lm_head.weight, head_bias, dtype))
        else:
            head = _dense(model.lm_head.weight, head_bias, dtype)
        if weights != "bfloat16":
            replacements["lm_head"] = head
    return LeanLlama(model, layers, head, dtype=dtype, weights=weights), replacements


def install(model: Any, forward: LeanLlama, replacements: Mapping[str, nn.Module]) -> LeanLlama:
    """Run ``model`` on ``forward``'s kernels: swap the modules in, cast the rest, attach a forward.

    Returns the attached forward, which reads the model's own (cast)
    embedding and norms, so no second copy of them stays alive. In int8 and
    int4 an input embedding tied to the LM head becomes a lookup over the
    head's int8 codes (:class:`~inference.weights.kernels.Int8Embedding`, a
    scaled embedding's factor kept), so the table is held once.
    """
    if forward.dtype != torch.float32:
        embedding = model.model.embed_tokens
        tied = getattr(model.lm_head, "weight", None) is getattr(embedding, "weight", None)
        for name, module in replacements.items():
            parent_name, _, child = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, module)
        rotary = model.model.rotary_emb
        # The rotary angles stay float32, as the library computes them (Gemma 3 has one
        # table per layer kind).
        tables = {n: b for n, b in rotary.named_buffers(recurse=False) if n.endswith("inv_freq")}
        model.to(forward.dtype)
        for name, table in tables.items():
            setattr(rotary, name, table)
        if tied and isinstance(forward.lm_head, Int8Linear):
            # A tied input embedding reads the head's int8 codes (as a direct load does) rather
            # than keeping its float table beside them: Gemma 3 270M's is 320 MB in bfloat16.
            scale = getattr(embedding, "embed_scale", None)
            model.model.embed_tokens = Int8Embedding(
                forward.lm_head, scale if isinstance(scale, torch.Tensor) else None
            )
        # bfloat16 runs on the model's own cast modules (a tied LM head stays
        # tied); the quantised formats on the swapped-in kernels.
        own = forward.weights == "bfloat16"
        family = _family(model)
        layers = [
            LeanLayer(
                **layer_norms(layer, family),
                qkv=(
                    (layer.self_attn.qkv_proj,)
                    if own and hasattr(layer.self_attn, "qkv_proj")
                    else lean.qkv
                ),
                o=layer.self_attn.o_proj if own else lean.o,
                gate_up=(
                    tuple(getattr(layer.mlp, n) for n in _gate_up_names(layer.mlp))
                    if own
                    else lean.gate_up
                ),
                down=layer.mlp.down_proj if own else lean.down,
            )
            for layer, lean in zip(model.model.layers, forward.layers)
        ]
        head = model.lm_head if own else forward.lm_head
        forward = LeanLlama(model, layers, head, dtype=forward.dtype, weights=forward.weights)
    attach(model, forward)
    return forward


def convert(
    model: Any, weights: str = "float32", blocks: Mapping[str, Q4Block] | None = None
) -> LeanLlama:
    """:func:`build_forward` then :func:`install`: ``model`` now runs in ``weights``; its forward."""
    forward, replacements = build_forward(model, weights, blocks)
    return install(model, forward, replacements)
