"""Load a Llama-family model straight into bfloat16, int8 or int4, one layer at a time.

Why: ``from_pretrained`` materialises every weight in float before the
conversion (:mod:`inference.weights.build`) keeps a fraction of it: the
bundled model's float32 cache is 538 MB, mapped and read whole, and a load
in int4 peaked at 1.3 GB resident for a model that decodes in about 100 MB.
Here the model is our own module tree (:mod:`inference.lean.model`, its
shape read from ``config.json``: transformers' modelling code is never
imported, about 125 MB resident saved), built on the meta device, and each
weight is read once, straight into its final kernel:

- projections: a layer's q/k/v and gate/up are each one fused kernel (what
  the lean forward multiplies by); the model's own ``q_proj``, ``k_proj``,
  ``v_proj``, ``gate_proj`` and ``up_proj`` are bands of those kernels that
  share their codes (``Int8Linear.rows`` / ``Int4Linear.rows``), so the
  tree's own forward, the library view over it (:mod:`inference.lean.library`)
  and the lean forward read one copy of the weights. ``int4``
  takes a Q4_1 GGUF's codes as they are (``gguf_q4``) and quantises other
  projections from their float values, as ``build`` does;
- the LM head: int8 per output row for ``int8`` and ``int4`` (as ``build``
  keeps it: the head decides the next token directly), bfloat16 otherwise;
  a head of a large vocabulary multiplies through fbgemm's dynamic int8
  product over the same codes (:mod:`inference.weights.dynamic_int8`).
  A tied input embedding reads the head's int8 codes
  (:class:`~inference.weights.kernels.Int8Embedding`) rather than keeping a
  bfloat16 table beside them;
- norms and every other parameter: bfloat16.

Weights are read from the model directory's safetensors files (the GGUF
cache is one), each file opened for one read and closed again, so no
mapping of the float file stays resident; the head is quantised 1024 rows
at a time, and each layer's conversion buffers are handed back to the
operating system before the next layer is read.

Guarantees: :func:`load_direct` returns the model and its attached lean
forward; no parameter or buffer is left on the meta device (checked);
:func:`direct_reason` says why a model cannot be loaded this way (it is then
loaded by ``from_pretrained`` and converted).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from inference.decoder.packed_llama import (
    LeanLayer,
    LeanLlama,
    attach,
    layer_norms,
    unsupported_reason,
)
from inference.lean.config import lean_reason, read_config
from inference.lean.model import LeanCausalLM, ScaledEmbedding
from inference.weights.dynamic_int8 import dynamic_head
from inference.weights.gguf_q4 import Q4Block, finer_names
from inference.weights.kernels import (
    INT4_GROUP,
    Int4Linear,
    Int8Embedding,
    Int8Linear,
)
from inference.weights.memory import return_freed_memory
from reasoning.errors import InvalidInput

__all__ = ["DIRECT_FORMATS", "SafetensorsSource", "direct_reason", "load_direct"]

#: The formats :func:`load_direct` builds (float32 is the library's own load).
DIRECT_FORMATS = ("bfloat16", "int8", "int4")
_HEAD_CHUNK = 1024


class SafetensorsSource:
    """Named tensors of a model directory's safetensors files, read one at a time.

    Each read opens the file, copies the tensor (or a band of its rows) out
    and closes it again: the pages it touched leave this process's resident
    set with the mapping.
    """

    def __init__(self, directory: Path) -> None:
        index = directory / "model.safetensors.index.json"
        if index.is_file():
            weight_map = json.loads(index.read_text())["weight_map"]
            self._files = {name: directory / file for name, file in weight_map.items()}
        elif (directory / "model.safetensors").is_file():
            from safetensors import safe_open

            path = directory / "model.safetensors"
            with safe_open(str(path), framework="pt") as handle:
                self._files = {name: path for name in handle.keys()}  # noqa: SIM118
        else:
            raise InvalidInput(f"no safetensors weights in {directory}")

    def __contains__(self, name: object) -> bool:
        return name in self._files

    def shape(self, name: str) -> tuple[int, ...]:
        from safetensors import safe_open

        with safe_open(str(self._files[name]), framework="pt") as handle:
            return tuple(int(n) for n in handle.get_slice(name).get_shape())

    def read(self, name: str, lo: int | None = None, hi: int | None = None) -> torch.Tensor:
        """The tensor ``name`` (rows ``lo:hi`` when given) in float32, as a private copy."""
        from safetensors import safe_open

        with safe_open(str(self._files[name]), framework="pt") as handle:
            tensor: torch.Tensor = (
                handle.get_tensor(name) if lo is None else handle.get_slice(name)[lo:hi]
            )
        return tensor.float().clone() if tensor.dtype == torch.float32 else tensor.float()


def direct_reason(directory: Path) -> str | None:
    """Why the model in ``directory`` cannot be loaded directly, or None when it can."""
    has_weights = (directory / "model.safetensors").is_file() or (
        directory / "model.safetensors.index.json"
    ).is_file()
    if not has_weights:
        return "its weights are not in safetensors files"
    return lean_reason(json.loads((directory / "config.json").read_text()))


def _kernel(weights: str, weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Module:
    """One projection's kernel in ``weights`` from its float weight."""
    if weights == "int8":
        return Int8Linear.from_weight(weight, bias)
    if weights == "int4":
        return Int4Linear.from_weight(weight, bias, group=INT4_GROUP)
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None, device="meta")
    layer.weight = nn.Parameter(weight.to(torch.bfloat16), requires_grad=False)
    if bias is not None:
        layer.bias = nn.Parameter(bias.to(torch.bfloat16), requires_grad=False)
    return layer


def _band(fused: nn.Module, lo: int, hi: int) -> nn.Module | None:
    """The kernel of output rows ``lo:hi`` of ``fused`` sharing its storage, or None."""
    if isinstance(fused, (Int8Linear, Int4Linear)):
        return fused.rows(lo, hi)
    assert isinstance(fused, nn.Linear)
    band = nn.Linear(fused.in_features, hi - lo, bias=fused.bias is not None, device="meta")
    band.weight = nn.Parameter(fused.weight[lo:hi], requires_grad=False)
    if fused.bias is not None:
        band.bias = nn.Parameter(fused.bias[lo:hi], requires_grad=False)
    return band


class _Reader:
    """Reads one model's projections in float32 (or as Q4_1 blocks) by module name."""

    def __init__(
        self,
        source: SafetensorsSource,
        blocks: Mapping[str, Q4Block],
        weights: str,
        device: torch.device,
    ) -> None:
        self.source, self.blocks, self.weights = source, blocks, weights
        # Kernels are built where they run: the int4 layouts of the CPU and CUDA differ.
        self.device = device

    def bias(self, name: str) -> torch.Tensor | None:
        key = f"{name}.bias"
        return self.source.read(key) if key in self.source else None

    def fused(self, names: tuple[str, ...]) -> tuple[nn.Module, list[int]]:
        """One kernel over the stacked projections ``names`` and their row counts."""
        biases = [self.bias(n) for n in names]
        parts = [self.blocks.get(n) for n in names] if self.weights == "int4" else [None]
        shapes = [self.source.shape(f"{n}.weight") for n in names]
        sizes = [int(s[0]) for s in shapes]
        bias = None
        if any(b is not None for b in biases):
            bias = torch.cat(
                [b if b is not None else torch.zeros(n) for b, n in zip(biases, sizes)]
            )
        present = [p for p in parts if p is not None]
        if len(present) == len(names):
            kernel: nn.Module = Int4Linear(
                torch.cat([p.codes for p in present]).to(self.device),
                torch.cat([p.scales for p in present]).to(self.device),
                torch.cat([p.mins for p in present]).to(self.device),
                None if bias is None else bias.to(self.device),
                group=INT4_GROUP,
            )
        else:
            weight = torch.cat([self.source.read(f"{n}.weight") for n in names]).to(self.device)
            # int4 rounds no projection the GGUF holds finer than four bits again: int8 keeps it.
            finer = self.weights == "int4" and any(n in finer_names(self.blocks) for n in names)
            kernel = _kernel(
                "int8" if finer else self.weights,
                weight,
                None if bias is None else bias.to(self.device),
            )
            del weight
        return kernel, sizes

    def single(self, name: str) -> nn.Module:
        kernel, _ = self.fused((name,))
        return kernel


def _bands(fused: nn.Module, sizes: list[int], build: Any) -> list[nn.Module]:
    """The model's own modules over ``fused``'s row bands (built anew where a band cannot share)."""
    out, lo = [], 0
    for index, size in enumerate(sizes):
        band = _band(fused, lo, lo + size)
        out.append(band if band is not None else build(index))
        lo += size
    return out


def _head(
    weights: str,
    source: SafetensorsSource,
    name: str,
    shape: tuple[int, ...],
    device: torch.device,
) -> nn.Module:
    """The LM head: int8 per row (built in bands of rows) for int8 / int4, else bfloat16; a
    large head that will run on the CPU multiplies through the dynamic int8 product."""
    rows, cols = int(shape[0]), int(shape[1])
    if weights in ("int8", "int4"):
        head = Int8Linear.from_rows(
            lambda lo, hi: source.read(name, lo, hi), (rows, cols), chunk=_HEAD_CHUNK
        )
        # Built on the CPU and moved with the model: fbgemm's packed copy stays on the CPU.
        return dynamic_head(head) if device.type == "cpu" else head
    table = torch.empty((rows, cols), dtype=torch.bfloat16)
    for lo in range(0, rows, _HEAD_CHUNK):
        table[lo : lo + _HEAD_CHUNK] = source.read(name, lo, min(rows, lo + _HEAD_CHUNK))
    layer = nn.Linear(cols, rows, bias=False, device="meta")
    layer.weight = nn.Parameter(table, requires_grad=False)
    return layer


def load_direct(
    directory: Path,
    weights: str,
    *,
    blocks: Mapping[str, Q4Block] | None,
    device: torch.device,
) -> tuple[LeanCausalLM, LeanLlama]:
    """The model in ``directory`` built in ``weights``, on ``device``, with its lean forward attached.

    The model is our own module tree (:class:`~inference.lean.model.LeanCausalLM`,
    configured from ``config.json``): no transformers modelling code is imported.
    """
    if weights not in DIRECT_FORMATS:
        raise InvalidInput(f"weights {weights!r} are not loaded directly")
    model = LeanCausalLM(read_config(directory), directory)
    reason = unsupported_reason(model)
    if reason is not None:
        raise InvalidInput(f"weights {weights} need a Llama-family model: {reason}")
    source = SafetensorsSource(directory)
    reader = _Reader(source, {} if blocks is None else blocks, weights, device)
    with torch.no_grad():
        layers = []
        for index in range(len(model.model.layers)):
            layers.append(_load_layer(model, index, reader))
            # Each layer's conversion buffers are freed; hand them back so they are not
            # counted on top of the next layer's (glibc keeps them otherwise).
            return_freed_memory(collect=False)
        _load_rest(model, source, weights, device)
    model.to(device)
    model.eval()
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise InvalidInput(f"the checkpoint in {directory} lacks {', '.join(left[:5])}")
    forward = LeanLlama(model, layers, model.lm_head, dtype=torch.bfloat16, weights=weights)
    attach(model, forward)
    return model, forward


def _load_layer(model: Any, index: int, reader: _Reader) -> LeanLayer:
    """Read layer ``index``'s weights into its kernels, install them; the lean layer over them."""
    prefix = f"model.layers.{index}"
    layer = model.model.layers[index]
    attn, mlp = layer.self_attn, layer.mlp
    qkv_names = tuple(f"{prefix}.self_attn.{n}" for n in ("q_proj", "k_proj", "v_proj"))
    qkv, qkv_sizes = reader.fused(qkv_names)
    q, k, v = _bands(qkv, qkv_sizes, lambda i: reader.single(qkv_names[i]))
    gate_up_names = (f"{prefix}.mlp.gate_proj", f"{prefix}.mlp.up_proj")
    gate_up, gate_up_sizes = reader.fused(gate_up_names)
    gate, up = _bands(gate_up, gate_up_sizes, lambda i: reader.single(gate_up_names[i]))
    o = reader.single(f"{prefix}.self_attn.o_proj")
    down = reader.single(f"{prefix}.mlp.down_proj")
    attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj = q, k, v, o
    mlp.gate_proj, mlp.up_proj, mlp.down_proj = gate, up, down
    # The layer's norms (Gemma's q / k and sandwich norms among them), each as stored.
    _read_left(layer, reader.source, f"{prefix}.")
    family = model.config.family
    return LeanLayer(**layer_norms(layer, family), qkv=(qkv,), o=o, gate_up=(gate_up,), down=down)


def _read_left(module: nn.Module, source: SafetensorsSource, prefix: str) -> None:
    """Every parameter of ``module`` still on the meta device, read (bfloat16) from ``source``."""
    for name, param in list(module.named_parameters()):
        if param.is_meta and f"{prefix}{name}" in source:
            parent_name, _, child = name.rpartition(".")
            setattr(
                module.get_submodule(parent_name),
                child,
                nn.Parameter(
                    source.read(f"{prefix}{name}").to(torch.bfloat16), requires_grad=False
                ),
            )


def _embedding(weight: torch.Tensor, scale: float | None) -> nn.Module:
    """An embedding whose table is ``weight`` itself (a tied head's parameter stays one object),
    its rows multiplied by ``scale`` when given (Gemma's scaled embedding)."""
    if scale is not None:
        assert isinstance(weight, nn.Parameter)
        return ScaledEmbedding(weight, scale)
    rows, cols = (int(n) for n in weight.shape)
    embedding = nn.Embedding(rows, cols, _weight=weight.detach(), _freeze=True)
    embedding.weight = weight
    return embedding


def _load_rest(model: Any, source: SafetensorsSource, weights: str, device: torch.device) -> None:
    """The embedding, the LM head and every parameter outside the layers' kernels."""
    inner = model.model
    embed_name = "model.embed_tokens.weight"
    tied = model.config.tie_word_embeddings
    head_name = embed_name if tied or "lm_head.weight" not in source else "lm_head.weight"
    head = _head(weights, source, head_name, source.shape(head_name), device)
    model.lm_head = head
    config = model.config
    scale = float(config.hidden_size) ** 0.5 if config.family.scaled_embedding else None
    if tied and isinstance(head, Int8Linear):
        inner.embed_tokens = Int8Embedding(head, None if scale is None else torch.tensor(scale))
    elif tied:
        assert isinstance(head, nn.Linear)
        inner.embed_tokens = _embedding(head.weight, scale)
    else:
        table = source.read(embed_name).to(torch.bfloat16)
        inner.embed_tokens = _embedding(nn.Parameter(table, requires_grad=False), scale)
    _read_left(model, source, "")
