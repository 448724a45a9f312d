"""The weight formats a model can be loaded in, and the record of which one a load chose."""

from __future__ import annotations

from dataclasses import dataclass

from reasoning.errors import InvalidInput

__all__ = ["WEIGHTS_CHOICES", "WEIGHT_FORMATS", "FormatProbe", "WeightsChoice", "check_weights"]

#: Formats a model's linear weights can be stored in, most precise (and largest) first:
#: ``auto`` prefers the later of two formats as fast as each other (``probe.choose``).
WEIGHT_FORMATS = ("float32", "bfloat16", "int8", "int4")
#: What ``TENET_WEIGHTS`` accepts: a format, or ``auto`` (probe this machine).
WEIGHTS_CHOICES = ("auto", *WEIGHT_FORMATS)


@dataclass(frozen=True)
class FormatProbe:
    """One format's measurements on this machine (``inference.weights.probe``)."""

    weights: str
    kl_vs_float32: float
    top1_agreement: float
    step_ms: float
    passed: bool


@dataclass(frozen=True)
class WeightsChoice:
    """Which format a load runs in, through which forward, and why.

    ``forward`` is ``packed`` (the lean Llama-family forward over the format's
    kernels) or ``library`` (the model's own forward: the fallback for other
    architectures, or ``TENET_PACKED_FORWARD=false``). ``probes`` holds the
    auto probe's measurements (empty when a format was named).
    """

    requested: str
    weights: str
    forward: str
    reason: str
    probes: tuple[FormatProbe, ...] = ()


def check_weights(value: str) -> str:
    """The normalised format name; InvalidInput naming the accepted values otherwise."""
    normalised = value.strip().lower()
    if normalised not in WEIGHTS_CHOICES:
        raise InvalidInput(f"weights {value!r}: use one of {', '.join(WEIGHTS_CHOICES)}")
    return normalised
