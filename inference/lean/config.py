"""A Llama-family model's shape, read from its ``config.json`` without transformers.

Guarantees: :func:`read_config` accepts exactly what the own module tree
(:mod:`inference.lean.model`) computes like the library: model types
``llama``, ``mistral``, ``qwen2`` and ``gemma3_text`` (Gemma 3: GELU, ``1 + w``
norms, q / k norms, sandwich norms, scaled embeddings, a rotary base per
layer kind, soft-capped logits), each family's activation (:mod:`inference.lean.family`),
the default rotary embedding over the whole head; :func:`lean_reason` says
why any other configuration is refused (such models are loaded by the library). The attribute names are
transformers' own, so code written against a library config
(``inference.decoder.runner``, ``kv_slab.supports_slab_cache``) reads this
one unchanged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.decoder.grouped_attention import GROUPED_ATTENTION
from inference.lean.family import FAMILIES, Family
from reasoning.errors import InvalidInput

__all__ = ["LeanConfig", "lean_reason", "read_config"]

#: The families the tree builds, by ``model_type`` (a subset of what the lean forward computes).
_FAMILY = {name: FAMILIES[name] for name in ("llama", "mistral", "qwen2", "gemma3_text")}


@dataclass(frozen=True)
class LeanConfig:
    """The numbers the module tree and the lean forward are built from (transformers' names)."""

    model_type: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    tie_word_embeddings: bool
    hidden_act: str = "silu"
    max_position_embeddings: int = 2048
    sliding_window: int | None = None
    use_sliding_window: bool = True
    layer_types: tuple[str, ...] | None = None
    #: Gemma's activation key (``hidden_act`` is Llama's), its attention's query scale
    #: (``query_pre_attn_scalar ** -0.5`` in place of ``head_dim ** -0.5``), the logits'
    #: soft-capping, and the rotary base of each layer kind (None: ``rope_theta`` for all).
    hidden_activation: str | None = None
    query_pre_attn_scalar: float | None = None
    final_logit_softcapping: float | None = None
    rope_thetas: tuple[tuple[str, float], ...] | None = None

    @property
    def family(self) -> Family:
        """How this model type's computation departs from Llama's."""
        return _FAMILY[self.model_type]

    @property
    def _attn_implementation(self) -> str:
        # The lean forward attends over grouped caches itself: a micro-batcher may merge steps.
        return GROUPED_ATTENTION

    def get_text_config(self, decoder: bool = True) -> LeanConfig:
        """This config (a decoder-only model is its own text config), as the library's answers."""
        return self


def _rope(raw: dict[str, Any]) -> tuple[float | None, str | None]:
    """The rotary base and, when it is not the default rotary embedding, why not.

    A configuration with a rotary table per layer kind (Gemma 3's ``rope_parameters``
    keyed by ``sliding_attention`` / ``full_attention``) is read by :func:`_kind_thetas`.
    """
    kinds = _kind_thetas(raw)
    if kinds is not None:
        return kinds
    params = raw.get("rope_parameters") or {}
    scaling = raw.get("rope_scaling") or {}
    kind = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    theta = params.get("rope_theta", raw.get("rope_theta"))
    if kind != "default":
        return None, f"rotary embedding {kind!r} is computed by the library"
    if float(params.get("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0))) != 1.0:
        return None, "a partial rotary embedding is computed by the library"
    return (None, "config.json names no rope_theta") if theta is None else (float(theta), None)


def _kind_thetas(raw: dict[str, Any]) -> tuple[float | None, str | None] | None:
    """For rotary parameters per layer kind: (None, why not), or (the first kind's base, None)
    when every kind's table is the default one; None when one table serves every layer."""
    params = raw.get("rope_parameters")
    kinds = raw.get("layer_types")
    if (
        not isinstance(params, dict)
        or not kinds
        or not all(isinstance(params.get(kind), dict) for kind in set(kinds))
    ):
        return None
    for kind in set(kinds):
        table = params[kind]
        if table.get("rope_type", "default") != "default" or "rope_theta" not in table:
            return None, f"rotary embedding {table.get('rope_type')!r} is computed by the library"
        if float(table.get("partial_rotary_factor", 1.0)) != 1.0:
            return None, "a partial rotary embedding is computed by the library"
    return float(params[min(set(kinds))]["rope_theta"]), None


def lean_reason(raw: dict[str, Any]) -> str | None:
    """Why the configuration ``raw`` (a parsed ``config.json``) is not built here, or None."""
    family = _FAMILY.get(str(raw.get("model_type")))
    if family is None:
        return f"model type {raw.get('model_type')!r} is not of the Llama family"
    activation = raw.get(family.activation_key, family.activations[0])
    if activation not in family.activations:
        return f"activation {activation!r} is not the {raw['model_type']} family's"
    if raw.get("attn_logit_softcapping") is not None:
        return "the attention soft-caps its scores"
    if raw.get("use_bidirectional_attention"):
        return "the attention is bidirectional"
    if family.scaled_embedding and not raw.get("layer_types"):
        return "config.json names no layer_types"
    return _rope(raw)[1]


def _qwen2_layer_types(raw: dict[str, Any]) -> list[str] | None:
    """Qwen2's layer kinds as the library derives them when ``config.json`` names none: with its
    sliding switch on, layers from ``max_window_layers`` on are windowed."""
    if (
        raw.get("model_type") != "qwen2"
        or not raw.get("use_sliding_window")
        or not raw.get("sliding_window")
    ):
        return None
    first = int(raw.get("max_window_layers", 28))
    return [
        "sliding_attention" if index >= first else "full_attention"
        for index in range(int(raw["num_hidden_layers"]))
    ]


def read_config(directory: Path) -> LeanConfig:
    """The shape of the model in ``directory``; InvalidInput saying why when it is not built here."""
    raw: dict[str, Any] = json.loads((directory / "config.json").read_text())
    reason = lean_reason(raw)
    if reason is not None:
        raise InvalidInput(f"the model in {directory} is loaded by the library: {reason}")
    theta, _ = _rope(raw)
    assert theta is not None
    family = _FAMILY[str(raw["model_type"])]
    heads = int(raw["num_attention_heads"])
    layer_types = raw.get("layer_types") or _qwen2_layer_types(raw)
    thetas = (
        None
        if _kind_thetas(raw) is None
        else tuple(
            (kind, float(raw["rope_parameters"][kind]["rope_theta"]))
            for kind in sorted(set(layer_types or ()))
        )
    )
    scalar, softcap = raw.get("query_pre_attn_scalar"), raw.get("final_logit_softcapping")
    return LeanConfig(
        model_type=str(raw["model_type"]),
        hidden_size=int(raw["hidden_size"]),
        intermediate_size=int(raw["intermediate_size"]),
        num_hidden_layers=int(raw["num_hidden_layers"]),
        num_attention_heads=heads,
        num_key_value_heads=int(raw.get("num_key_value_heads") or heads),
        head_dim=int(raw.get("head_dim") or int(raw["hidden_size"]) // heads),
        vocab_size=int(raw["vocab_size"]),
        rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
        rope_theta=theta,
        # transformers' default for the family (Llama's: tied only when the config says so).
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", family.tied_by_default)),
        hidden_act=str(raw.get("hidden_act", "silu")),
        max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
        sliding_window=raw.get("sliding_window"),
        # As the library reads them: a window applies unless Qwen2's switch (off by default) is off.
        use_sliding_window=bool(raw.get("use_sliding_window", raw["model_type"] != "qwen2")),
        layer_types=None if layer_types is None else tuple(str(t) for t in layer_types),
        hidden_activation=raw.get("hidden_activation"),
        query_pre_attn_scalar=None if scalar is None else float(scalar),
        final_logit_softcapping=None if softcap is None else float(softcap),
        rope_thetas=thetas,
    )
