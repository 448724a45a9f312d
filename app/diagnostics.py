"""Diagnostics of the five bottlenecks: KV cache, stage latency, layers, batching, the GPU.

:class:`Diagnostics` (one per app, on the service container) assembles what
``GET /v1/diagnostics`` and ``tenet diagnose`` report, from state the
service keeps anyway (the prefix cache's counters, the Prometheus stage
histograms, the scheduler's statistics), so collecting costs nothing on the
request path. :meth:`Diagnostics.probe_layers` takes one per-layer profile
(:func:`inference.diagnostics.profile_forward`) with a short forward pass
queued as a ``batch`` job and run on the model's forward thread between
merged decode steps (so the hooks time the probe alone), and keeps it as
the last profile. ``layers_svg`` draws the per-layer time as a bar chart.
"""

from __future__ import annotations

import html
import threading
from dataclasses import asdict
from typing import Any

from app.metrics import REGISTRY, model_bytes, resident_bytes
from app.runtime import Runtime
from inference.diagnostics import LayerTiming, gpu_utilisation, profile_forward
from inference.scheduler import JobHints, Priority

__all__ = ["Diagnostics", "layers_svg"]

STAGES = ("parse", "extract", "graph", "evidence", "rules", "prefill", "decode", "verify", "record")
#: Tokens of the probe forward pass.
PROBE_TOKENS = 64
#: A probe waits behind every interactive decode: its deadline only bounds an absurd queue.
PROBE_HINTS = JobHints(Priority.BATCH, deadline_s=3600.0)


class Diagnostics:
    """The diagnostics of one app's runtime, and its latest layer profile."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._lock = threading.Lock()
        self._last: list[LayerTiming] | None = None

    @property
    def last_profile(self) -> list[LayerTiming] | None:
        """The latest probe, if any."""
        with self._lock:
            return self._last

    async def probe_layers(self, tokens: int = PROBE_TOKENS) -> list[LayerTiming]:
        """Profile one ``tokens``-long forward pass on the model worker (503 while the model loads)."""
        runtime = self.runtime
        loaded = runtime.require_model()
        batcher = runtime.reasoner().batcher

        def probe() -> list[LayerTiming]:
            if batcher is None:
                return profile_forward(loaded, tokens)
            rows: list[LayerTiming] = batcher.run(lambda: profile_forward(loaded, tokens))
            return rows

        rows = await runtime.scheduler.submit(probe, PROBE_HINTS)
        with self._lock:
            self._last = rows
        return rows

    def collect(self, layers: list[LayerTiming] | None = None) -> dict[str, Any]:
        """The diagnostics document (layers: a fresh probe, else the last one, else none)."""
        return _collect(self.runtime, layers if layers is not None else self.last_profile)


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


def _collect(runtime: Runtime, layer_rows: list[LayerTiming] | None) -> dict[str, Any]:
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
