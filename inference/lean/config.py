"""A Llama-family model's shape, read from its ``config.json`` without transformers.

Guarantees: :func:`read_config` accepts exactly what the own module tree
(:mod:`inference.lean.model`) computes like the library: model types
``llama``, ``mistral`` and ``qwen2``, SiLU, the default rotary embedding
over the whole head; :func:`lean_reason` says why any other configuration
is refused (such models are loaded by the library). The attribute names are
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
from reasoning.errors import InvalidInput

__all__ = ["LeanConfig", "lean_reason", "read_config"]

_FAMILY = ("llama", "mistral", "qwen2")


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

    @property
    def _attn_implementation(self) -> str:
        # The lean forward attends over grouped caches itself: a micro-batcher may merge steps.
        return GROUPED_ATTENTION

    def get_text_config(self, decoder: bool = True) -> LeanConfig:
        """This config (a decoder-only model is its own text config), as the library's answers."""
        return self


def _rope(raw: dict[str, Any]) -> tuple[float | None, str | None]:
    """The rotary base and, when it is not the default rotary embedding, why not."""
    params = raw.get("rope_parameters") or {}
    scaling = raw.get("rope_scaling") or {}
    kind = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    theta = params.get("rope_theta", raw.get("rope_theta"))
    if kind != "default":
        return None, f"rotary embedding {kind!r} is computed by the library"
    if float(params.get("partial_rotary_factor", raw.get("partial_rotary_factor", 1.0))) != 1.0:
        return None, "a partial rotary embedding is computed by the library"
    return (None, "config.json names no rope_theta") if theta is None else (float(theta), None)


def lean_reason(raw: dict[str, Any]) -> str | None:
    """Why the configuration ``raw`` (a parsed ``config.json``) is not built here, or None."""
    if raw.get("model_type") not in _FAMILY:
        return f"model type {raw.get('model_type')!r} is not of the Llama family"
    if raw.get("hidden_act", "silu") != "silu":
        return f"activation {raw.get('hidden_act')!r} is not Llama's"
    return _rope(raw)[1]


def _qwen2_layer_types(raw: dict[str, Any]) -> list[str] | None:
    """Qwen2's layer kinds as the library derives them when ``config.json`` names none: with its
    sliding switch on, layers from ``max_window_layers`` on are windowed."""
    if raw.get("model_type") != "qwen2" or not raw.get("use_sliding_window") or not raw.get(
        "sliding_window"
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
    heads = int(raw["num_attention_heads"])
    layer_types = raw.get("layer_types") or _qwen2_layer_types(raw)
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
        # transformers' default for these families: tied only when the config says so.
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
        hidden_act=str(raw.get("hidden_act", "silu")),
        max_position_embeddings=int(raw.get("max_position_embeddings", 2048)),
        sliding_window=raw.get("sliding_window"),
        # As the library reads them: a window applies unless Qwen2's switch (off by default) is off.
        use_sliding_window=bool(raw.get("use_sliding_window", raw["model_type"] != "qwen2")),
        layer_types=None if layer_types is None else tuple(str(t) for t in layer_types),
    )
