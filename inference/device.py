"""Device choice: CUDA when present, else the CPU (the dtype follows from ``TENET_WEIGHTS``)."""

from __future__ import annotations

import torch

from reasoning.errors import InvalidInput

__all__ = ["resolve_device"]


def resolve_device(requested: str = "auto") -> torch.device:
    """Return the device for ``requested`` ("auto", "cpu", "cuda", "cuda:N").

    Raises InvalidInput when CUDA is requested and absent, rather than falling
    back silently: an operator who asked for a GPU must learn they have none.
    """
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InvalidInput(f"TENET_DEVICE={requested} but no CUDA device is available")
        return torch.device(requested)
    if requested == "cpu":
        return torch.device("cpu")
    raise InvalidInput(f"unknown device {requested!r}: use auto, cpu, cuda or cuda:N")
