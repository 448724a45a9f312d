"""Model-side diagnostics: per-layer forward time and FLOPs, and GPU utilisation.

:class:`LayerProfiler` puts forward hooks on each transformer layer only
while a profile is being taken (``enable`` / ``disable``), so they cost
nothing when off; :func:`profile_forward` takes one profile of a short
forward pass. FLOPs per layer are an estimate: ``2 * parameters * tokens``
for the matrix products plus ``2 * tokens^2 * hidden`` for causal attention
scores and their weighted sum (a prefill without cache, as the probe runs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from inference.loader import LoadedModel

__all__ = [
    "LayerProfiler",
    "LayerTiming",
    "gpu_utilisation",
    "profile_forward",
    "transformer_layers",
]


@dataclass(frozen=True)
class LayerTiming:
    """One transformer layer's share of a profiled forward pass."""

    index: int
    name: str
    calls: int
    seconds: float
    flops: float
    parameters: int


def transformer_layers(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """The decoder blocks of a Hugging Face causal LM (``model.layers``, ``transformer.h`` or ``layers``)."""
    for path in ("model.layers", "transformer.h", "gpt_neox.layers", "layers"):
        node: Any = model
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                break
        if isinstance(node, torch.nn.ModuleList) and len(node) > 0:
            return [(f"{path}.{i}", layer) for i, layer in enumerate(node)]
    return []


class LayerProfiler:
    """Forward hooks timing each transformer layer; attached by ``enable``, removed by ``disable``.

    On CUDA the hooks synchronise so the time is the layer's own, not the
    launch's. Not reentrant: one profile at a time (callers hold the decode lock).
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.layers = transformer_layers(model)
        self._handles: list[Any] = []
        self._started: dict[int, float] = {}
        self._seconds = [0.0] * len(self.layers)
        self._calls = [0] * len(self.layers)
        self._flops = [0.0] * len(self.layers)
        self._params = [sum(p.numel() for p in layer.parameters()) for _, layer in self.layers]
        self._cuda = any(p.is_cuda for p in model.parameters())

    @property
    def enabled(self) -> bool:
        return bool(self._handles)

    def enable(self) -> None:
        if self._handles:
            return
        for i, (_, layer) in enumerate(self.layers):
            self._handles.append(layer.register_forward_pre_hook(self._pre(i), with_kwargs=True))
            self._handles.append(layer.register_forward_hook(self._post(i), with_kwargs=True))

    def disable(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _pre(self, i: int) -> Any:
        def hook(_: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            if self._cuda:
                torch.cuda.synchronize()
            self._started[i] = time.perf_counter()

        return hook

    def _post(self, i: int) -> Any:
        def hook(
            _: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], __: Any
        ) -> None:
            if self._cuda:
                torch.cuda.synchronize()
            self._seconds[i] += time.perf_counter() - self._started.pop(i, time.perf_counter())
            self._calls[i] += 1
            hidden = args[0] if args else kwargs.get("hidden_states")
            if isinstance(hidden, torch.Tensor) and hidden.dim() == 3:
                batch, tokens, width = hidden.shape  # hidden: [B, T, H]
                self._flops[i] += batch * (
                    2.0 * self._params[i] * tokens + 2.0 * tokens * tokens * width
                )

        return hook

    def timings(self) -> list[LayerTiming]:
        return [
            LayerTiming(
                index=i,
                name=name,
                calls=self._calls[i],
                seconds=round(self._seconds[i], 6),
                flops=self._flops[i],
                parameters=self._params[i],
            )
            for i, (name, _) in enumerate(self.layers)
        ]


def profile_forward(loaded: LoadedModel, tokens: int) -> list[LayerTiming]:
    """Time each layer over one ``tokens``-long forward pass without cache; the hooks are gone afterwards.

    The caller runs it where no other forward pass runs at the same time (the
    model's forward thread), so the hooks time this pass alone.
    """
    profiler = LayerProfiler(loaded.model)
    vocab = int(loaded.model.get_input_embeddings().num_embeddings)  # no table read (int8 codes)
    ids = torch.arange(tokens, device=loaded.device).remainder(vocab).unsqueeze(0)  # ids: [1, T]
    profiler.enable()
    try:
        with torch.inference_mode():
            loaded.model(input_ids=ids, use_cache=False)
    finally:
        profiler.disable()
    return profiler.timings()


def gpu_utilisation(device: str) -> dict[str, Any]:
    """SM and memory utilisation through NVML on CUDA; ``{"available": False, ...}`` elsewhere."""
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return {"available": False, "reason": "not available: the model runs on the CPU"}
    try:
        import pynvml
    except ImportError:
        return {
            "available": False,
            "reason": "not available: pynvml (nvidia-ml-py) is not installed",
        }
    try:
        pynvml.nvmlInit()
        index = torch.device(device).index or 0
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        rates = pynvml.nvmlDeviceGetUtilizationRates(handle)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        return {
            "available": True,
            "sm_utilisation_percent": int(rates.gpu),
            "memory_utilisation_percent": int(rates.memory),
            "memory_used_bytes": int(memory.used),
            "memory_total_bytes": int(memory.total),
        }
    except pynvml.NVMLError as exc:
        return {"available": False, "reason": f"not available: NVML error {exc}"}
