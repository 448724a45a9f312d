"""``GET /v1/models``: the identity of the loaded model (any valid key)."""

from __future__ import annotations

from litestar import Controller, get

from app.runtime import Runtime
from app.schemas.models import ModelInfo, ModelList, WeightsProbe
from inference.decoder.packed_llama import packed_forward

__all__ = ["ModelsController"]


class ModelsController(Controller):
    path = "/v1/models"
    tags = ("models",)

    @get(operation_id="list_models", summary="The loaded model's identity (503 while it loads)")
    async def list_models(self, runtime: Runtime) -> ModelList:
        loaded = runtime.require_model()
        ident = loaded.identity
        return ModelList(
            data=[
                ModelInfo(
                    id=ident.name,
                    created=runtime.model_loaded_at,
                    name=ident.name,
                    source=ident.source,
                    sha256=ident.sha256,
                    dtype=ident.dtype,
                    device=ident.device,
                    parameters=ident.parameters,
                    forward="packed" if packed_forward(loaded.model) is not None else "library",
                    weights=loaded.weights.weights,
                    weights_requested=loaded.weights.requested,
                    weights_reason=loaded.weights.reason,
                    weights_probe=[
                        WeightsProbe(
                            weights=p.weights,
                            kl_vs_float32=p.kl_vs_float32,
                            top1_agreement=p.top1_agreement,
                            step_ms=p.step_ms,
                            passed=p.passed,
                        )
                        for p in loaded.weights.probes
                    ],
                    prompt_format=loaded.prompt_format,
                )
            ]
        )
