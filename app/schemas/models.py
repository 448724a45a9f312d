"""The loaded model's identity, in an OpenAI-compatible list envelope."""

from __future__ import annotations

import msgspec

__all__ = ["ModelInfo", "ModelList"]


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
    #: ``packed``: decode steps run the lean CPU forward with oneDNN-packed
    #: weights (``TENET_PACKED_FORWARD``); ``library``: the model's own forward.
    forward: str


class ModelList(msgspec.Struct, frozen=True, kw_only=True):
    object: str = "list"
    data: list[ModelInfo]
