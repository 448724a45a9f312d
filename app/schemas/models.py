"""The loaded model's identity, in an OpenAI-compatible list envelope."""

from __future__ import annotations

import msgspec

__all__ = ["ModelInfo", "ModelList", "WeightsProbe"]


class WeightsProbe(msgspec.Struct, frozen=True, kw_only=True):
    """One weight format measured against float32 when ``TENET_WEIGHTS=auto`` loaded the model."""

    weights: str
    #: Mean KL divergence (nats) of next-token distributions from float32 on fixed calibration texts.
    kl_vs_float32: float
    top1_agreement: float
    #: Width-4 decode step through this format's forward: the median of three prefilled
    #: rounds (CPU time on the CPU); formats within 15% of the fastest count as equally fast.
    step_ms: float
    #: Within the quality gate (KL <= 0.02), so eligible for auto.
    passed: bool


class ModelInfo(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    object: str = "model"
    created: int
    owned_by: str = "tenet"
    name: str
    source: str
    sha256: str
    dtype: str
    device: str
    parameters: int
    #: ``packed``: decode steps run the lean Llama-family forward over the
    #: ``weights`` kernels (``TENET_PACKED_FORWARD``); ``library``: the model's
    #: own forward (the fallback for other architectures).
    forward: str
    #: The linear weights' format in use: float32, bfloat16, int8 or int4.
    weights: str
    #: What ``TENET_WEIGHTS`` asked for (a format or ``auto``).
    weights_requested: str
    #: Why this format (for ``auto``: the measurement that decided).
    weights_reason: str
    #: The auto probe's measurements per format, this machine, at load (empty when a format was named).
    weights_probe: list[WeightsProbe]
    #: How prompts are laid out: ``chat_template`` (the model's own) or ``plain`` (a base
    #: model without one: system text, ``Request:``, ``Answer:``; docs/reasoning.md).
    prompt_format: str = "chat_template"


class ModelList(msgspec.Struct, frozen=True, kw_only=True):
    object: str = "list"
    data: list[ModelInfo]
