"""Diagnostics of the five bottlenecks: KV cache, stage latency, layers, batching, the GPU.

``collect`` assembles what ``GET /v1/diagnostics`` and ``tenet diagnose``
report, from state the service keeps anyway (the prefix cache's counters,
the Prometheus stage histograms, the scheduler's statistics), so collecting
costs nothing on the request path. Per-layer forward time comes from
:class:`LayerProfiler`: forward hooks on each transformer layer, attached
only while a profile is being taken (``enable`` / ``disable``), so they cost
nothing when off. ``probe_layers`` takes one profile with a short forward
pass queued as a ``batch`` job and run on the model's forward thread between
merged decode steps (so the hooks time the probe alone). ``layers_svg`` draws the per-layer time as a bar chart.

FLOPs per layer are an estimate: ``2 * parameters * tokens`` for the
matrix products plus ``2 * tokens^2 * hidden`` for causal attention scores
and their weighted sum (a prefill without cache, as the probe runs).
"""

from __future__ import annotations

import html
import threading
import time
import weakref
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import torch

from app.metrics import REGISTRY, model_bytes, resident_bytes
from app.scheduler import JobHints, Priority

if TYPE_CHECKING:
    from app.runtime import Runtime
    from inference.loader import LoadedModel

__all__ = [
    "LayerProfiler",
    "LayerTiming",
    "collect",
    "gpu_utilisation",
    "layers_svg",
    "probe_layers",
    "transformer_layers",
]

STAGES = ("parse", "extract", "graph", "evidence", "prefill", "decode", "verify", "record")
#: Tokens of the probe forward pass.
PROBE_TOKENS = 64


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
        def hook(_: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], __: Any) -> None:
            if self._cuda:
                torch.cuda.synchronize()
            self._seconds[i] += time.perf_counter() - self._started.pop(i, time.perf_counter())
            self._calls[i] += 1
            hidden = args[0] if args else kwargs.get("hidden_states")
            if isinstance(hidden, torch.Tensor) and hidden.dim() == 3:
                batch, tokens, width = hidden.shape  # hidden: [B, T, H]
                self._flops[i] += batch * (2.0 * self._params[i] * tokens + 2.0 * tokens * tokens * width)

        return hook

    def timings(self) -> list[LayerTiming]:
        return [
            LayerTiming(
                index=i, name=name, calls=self._calls[i], seconds=round(self._seconds[i], 6),
                flops=self._flops[i], parameters=self._params[i],
            )
            for i, (name, _) in enumerate(self.layers)
        ]


def _probe(loaded: LoadedModel, tokens: int) -> list[LayerTiming]:
    profiler = LayerProfiler(loaded.model)
    vocab = int(loaded.model.get_input_embeddings().weight.shape[0])
    ids = torch.arange(tokens, device=loaded.device).remainder(vocab).unsqueeze(0)  # ids: [1, T]
    profiler.enable()
    try:
        with torch.inference_mode():
            loaded.model(input_ids=ids, use_cache=False)
    finally:
        profiler.disable()
    return profiler.timings()


async def probe_layers(runtime: Runtime, tokens: int = PROBE_TOKENS) -> list[LayerTiming]:
    """Profile one ``tokens``-long forward pass on the model worker; the hooks are gone afterwards."""
    loaded = runtime.require_model()
    batcher = runtime.reasoner().batcher
    probe = (lambda: batcher.run(lambda: _probe(loaded, tokens))) if batcher else (lambda: _probe(loaded, tokens))
    rows: list[LayerTiming] = await runtime.scheduler.submit(
        probe, JobHints(Priority.BATCH, deadline_s=3600.0)
    )
    with _last_lock:
        _last_profile[runtime] = rows
    return rows


_last_lock = threading.Lock()
_last_profile: weakref.WeakKeyDictionary[Runtime, list[LayerTiming]] = weakref.WeakKeyDictionary()


def last_profile(runtime: Runtime) -> list[LayerTiming] | None:
    """The latest probe of this runtime, if any."""
    with _last_lock:
        return _last_profile.get(runtime)


def gpu_utilisation(device: str) -> dict[str, Any]:
    """SM and memory utilisation through NVML on CUDA; ``{"available": False, ...}`` elsewhere."""
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return {"available": False, "reason": "not available: the model runs on the CPU"}
    try:
        import pynvml
    except ImportError:
        return {"available": False, "reason": "not available: pynvml (nvidia-ml-py) is not installed"}
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


def _sample(name: str, labels: dict[str, str] | None = None) -> float:
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def _stage_attribution() -> dict[str, Any]:
    stages = {
        s: {"seconds": _sample("tenet_stage_seconds_sum", {"stage": s}),
            "count": int(_sample("tenet_stage_seconds_count", {"stage": s}))}
        for s in STAGES
    }
    total = sum(v["seconds"] for v in stages.values())
    for value in stages.values():
        value["share"] = round(value["seconds"] / total, 4) if total else 0.0
        value["mean_ms"] = round(1000 * value["seconds"] / value["count"], 3) if value["count"] else 0.0
        value["seconds"] = round(value["seconds"], 6)
    return {"total_seconds": round(total, 6), "stages": stages}


def _kv_cache(runtime: Runtime) -> dict[str, Any]:
    hit_tokens = _sample("tenet_prompt_tokens_total", {"cache": "hit"})
    miss_tokens = _sample("tenet_prompt_tokens_total", {"cache": "miss"})
    out: dict[str, Any] = {
        "prompt_tokens_on_hits": int(hit_tokens),
        "prompt_tokens_on_misses": int(miss_tokens),
        "prompt_token_share_on_hits": round(hit_tokens / (hit_tokens + miss_tokens), 4)
        if hit_tokens + miss_tokens else 0.0,
    }
    if runtime.model is None:
        return {**out, "available": False}
    cache = runtime.reasoner().prefix_cache
    if cache is None:
        return {**out, "available": False}
    s = cache.stats()
    lookups = s.hits + s.misses
    return {
        **out, "available": True, "hits": s.hits, "misses": s.misses,
        "hit_rate": round(s.hits / lookups, 4) if lookups else 0.0,
        "evictions": s.evictions, "entries": s.entries, "bytes": s.bytes, "max_bytes": s.max_bytes,
    }


def _batching(runtime: Runtime) -> dict[str, Any]:
    stats = runtime.scheduler.stats()
    forwards = _sample("tenet_batch_size_count")
    mean = _sample("tenet_batch_size_sum") / forwards if forwards else 0.0
    batcher = runtime.batcher.stats() if runtime.batcher is not None else None
    return {
        "max_batch": stats.max_batch,
        "mean_batch_size": round(mean, 3),
        "occupancy": round(mean / stats.max_batch, 4) if stats.max_batch else 0.0,
        "cross_request_batching": bool(batcher and batcher.mergeable and stats.max_batch > 1),
        "forwards": {
            "decode_steps": batcher.forwards if batcher else 0,
            "merged": batcher.merged_forwards if batcher else 0,
            "mean_rows": round(batcher.rows / batcher.forwards, 3) if batcher and batcher.forwards else 0.0,
            "max_rows": batcher.max_rows if batcher else 0,
            "unmerged_calls": batcher.solo_calls if batcher else 0,
        },
        "queue": {
            "interactive": stats.queued_interactive, "batch": stats.queued_batch,
            "running": stats.running, "max_queue": stats.max_queue,
            "accepted": stats.accepted, "completed": stats.completed, "refused": stats.refused,
            "job_mean_s": round(stats.job_mean_s, 4), "job_p99_s": round(stats.job_p99_s, 4),
            "closing": stats.closing,
        },
    }


def collect(runtime: Runtime, layers: list[LayerTiming] | None = None) -> dict[str, Any]:
    """The diagnostics document (layers: a fresh probe, else the last one, else none)."""
    layer_rows = layers if layers is not None else last_profile(runtime)
    total = sum(r.seconds for r in layer_rows or [])
    model = runtime.model
    return {
        "model": {
            "state": runtime.model_state,
            "name": model.identity.name if model else None,
            "device": str(model.device) if model else runtime.settings.device,
            "parameter_bytes": model_bytes(model.model) if model else 0,
        },
        "process_resident_bytes": resident_bytes(),
        "kv_cache": _kv_cache(runtime),
        "latency": _stage_attribution(),
        "layers": {
            "profiled": layer_rows is not None,
            "probe_tokens": PROBE_TOKENS,
            "total_seconds": round(total, 6),
            "rows": [asdict(r) for r in layer_rows or []],
            "hint": "GET /v1/diagnostics?profile_layers=true runs one probe forward pass with layer hooks",
        },
        "batching": _batching(runtime),
        "gpu": gpu_utilisation(str(model.device) if model else runtime.settings.device),
    }


def layers_svg(rows: list[LayerTiming], title: str = "Forward time per transformer layer") -> str:
    """A horizontal bar chart of ``rows``' milliseconds (self-contained SVG, escaped text)."""
    bar_h, gap, left, width, top = 14, 4, 150, 420, 40
    height = top + len(rows) * (bar_h + gap) + 20
    longest = max((r.seconds for r in rows), default=0.0) or 1.0
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{height}" '
            'font-family="sans-serif" font-size="11">'
        ),
        f'<text x="10" y="20" font-size="14">{html.escape(title)}</text>',
    ]
    if not rows:
        parts.append('<text x="10" y="40">no layer profile yet</text>')
    for n, r in enumerate(rows):
        y = top + n * (bar_h + gap)
        w = max(1.0, width * r.seconds / longest)
        parts.append(f'<text x="10" y="{y + bar_h - 3}">{html.escape(r.name)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="#4a78b5"/>')
        parts.append(f'<text x="{left + w + 5:.1f}" y="{y + bar_h - 3}">{1000 * r.seconds:.2f} ms</text>')
    parts.append("</svg>")
    return "\n".join(parts)
