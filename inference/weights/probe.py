"""Measure each weight format against float32 on this machine, and pick the fastest that keeps quality.

Quality: the mean KL divergence ``KL(p_float32 || p_format)`` of next-token
distributions and the top-1 agreement, over every position of a few fixed,
teacher-forced texts (:data:`CALIBRATION`; general prose in the languages
the catalog supports, not any request's wording). Speed: the median time
of a width-4 decode step through the format's lean forward, the step the
steered decoder repeats (CPU time on the CPU, see :func:`step_seconds`).

Guarantees: :func:`choose` never picks a format whose KL exceeds
:data:`KL_GATE`; float32 is the reference (KL 0), so there is always a
choice; every measurement behind the choice is returned for the log and
``GET /v1/models``. The choice is stable between loads on one machine:
formats whose steps are within :data:`TIE_MARGIN` of the fastest eligible
one count as equally fast, and among them the one holding the fewest
weight bytes is taken (int4, then int8, bfloat16, float32), so two formats
within the timing noise of each other always resolve the same way; each
step time is the median of :data:`PROBE_ROUNDS` separately prefilled
rounds, so one busy moment does not decide.
"""

from __future__ import annotations

import gc
import hashlib
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from inference.decoder.kv_slab import SlabCache
from inference.decoder.packed_llama import LeanLlama
from inference.weights.formats import WEIGHT_FORMATS, FormatProbe

__all__ = [
    "CALIBRATION",
    "KL_GATE",
    "PROBE_ROUNDS",
    "PROBE_VERSION",
    "TIE_MARGIN",
    "calibration_ids",
    "choose",
    "distribution_gap",
    "format_gap",
    "machine_fingerprint",
    "measure_format",
    "probe_formats",
    "scored_rows",
    "step_seconds",
    "teacher_forced_logits",
]

#: A format whose mean KL divergence from float32 exceeds this (nats) is not chosen.
KL_GATE = 0.02
#: Part of the machine fingerprint: raised when the forward changes what a probe would
#: measure (2: attention over float32 KV slabs on the CPU; 3: CPU steps timed in CPU time;
#: 4: the median of several prefilled rounds), so kept measurements are retaken.
PROBE_VERSION = 4
#: Formats whose median step is at most this fraction slower than the fastest eligible
#: format's count as equally fast (repeated probes of one format on a shared 2-core machine
#: differ by up to about a tenth); the smallest of them is chosen.
TIE_MARGIN = 0.15
#: Separately prefilled rounds of decode steps per format; a step time is their median.
PROBE_ROUNDS = 3

CALIBRATION = (
    (
        "The committee met on Tuesday to review the quarterly figures. Revenue rose slightly, "
        "but costs grew faster, and the board asked for a plan to reduce spending before the "
        "end of the year."
    ),
    (
        "Water boils at a lower temperature at high altitude because the air pressure is lower. "
        "Cooking times therefore increase, and some recipes need more liquid."
    ),
    (
        "Please write a short summary of the report in three sentences, and list the two main "
        "risks it identifies."
    ),
    "会议讨论了明年的预算，并决定在下个月提交最终方案。",
)


def teacher_forced_logits(
    forward: LeanLlama, sequences: Sequence[Sequence[int]], device: torch.device
) -> torch.Tensor:
    """float32 logits ``[positions, V]`` of every position of every sequence, one prefill each."""
    rows = []
    with torch.inference_mode():
        for ids in sequences:
            x = torch.tensor([list(ids)], device=device)  # [1, S]
            cache = _cache(forward, 1, x.shape[1], device)
            positions = torch.arange(x.shape[1], device=device)[None]
            mask = torch.ones(x.shape, dtype=torch.bool, device=device)
            rows.append(forward(x, positions, mask, cache, last_only=False)[0].float())
    return torch.cat(rows)


def distribution_gap(reference: torch.Tensor, candidate: torch.Tensor) -> tuple[float, float]:
    """``(mean KL(ref || cand) in nats, top-1 agreement)`` over rows of logits ``[N, V]``."""
    kl, agree, count = _gap_sums(reference.float().log_softmax(-1), candidate)
    return kl / count, agree / count


def scored_rows(
    forward: LeanLlama,
    sequences: Sequence[Sequence[int]],
    starts: Sequence[int],
    device: torch.device,
) -> tuple[torch.Tensor, ...]:
    """Per sequence, the float32 log-probabilities ``[positions, V]`` a format is scored on.

    Row ``j`` predicts token ``starts[i] + j + 1`` of sequence ``i``: the rows
    from ``starts[i]`` to the sequence's second-last position (``starts`` 0:
    every prediction inside the sequence).
    """
    out = []
    for ids, start in zip(sequences, starts):
        logits = teacher_forced_logits(forward, [ids], device)
        out.append(logits[start : len(ids) - 1].log_softmax(-1))
    return tuple(out)


def format_gap(
    reference: Sequence[torch.Tensor],
    forward: LeanLlama,
    sequences: Sequence[Sequence[int]],
    starts: Sequence[int],
    device: torch.device,
) -> tuple[float, float]:
    """``(mean KL(p_float32 || p_format) in nats, top-1 agreement)`` over every scored position.

    The one quality figure of a weight format, used by the start-up probe
    (:func:`measure_format`, on :data:`CALIBRATION`) and by
    ``bench.weight_formats`` (float32's greedy continuations of prompts).
    ``reference`` is :func:`scored_rows` of the float32 forward on the same
    ``sequences`` and ``starts``; ``forward`` must be the forward a load in
    the format serves (for a direct load its tied embedding reads the int8
    head's codes, which a conversion of the float32 model does not), so the
    figure is of the model requests will run on. Positions are pooled: a
    longer sequence weighs more.
    """
    kl = agree = count = 0.0
    for ref, rows in zip(reference, scored_rows(forward, sequences, starts, device)):
        k, a, n = _gap_sums(ref, rows)
        kl, agree, count = kl + k, agree + a, count + n
    return kl / count, agree / count


def _gap_sums(reference: torch.Tensor, candidate: torch.Tensor) -> tuple[float, float, int]:
    """Summed KL and top-1 matches of ``candidate`` (logits) against ``reference`` (log-probs)."""
    cand = candidate.float().log_softmax(-1)
    kl = (reference.exp() * (reference - cand)).sum(-1).clamp(min=0.0)
    agree = (reference.argmax(-1) == cand.argmax(-1)).sum()
    return float(kl.sum()), float(agree), int(reference.shape[0])


def step_seconds(
    forward: LeanLlama,
    device: torch.device,
    *,
    width: int = 4,
    prompt: int = 24,
    steps: int = 6,
    rounds: int = PROBE_ROUNDS,
) -> float:
    """Median over ``rounds`` of the median seconds of one ``width``-row decode step.

    Each round prefills a ``prompt``-token prompt afresh and times ``steps``
    steps after one warm-up step.

    On the CPU the seconds are the process's CPU time, not wall time: the
    probe runs at start-up, often beside other busy processes, and a choice
    taken from wall time there was kept for every later load (a loaded
    2-core machine timed every format at 1.6-1.9 s a step and picked
    float32). CPU time counts the format's own work whatever the neighbours
    do; on other devices the step is synchronised and timed by the wall clock.
    """
    clock = time.perf_counter if device.type != "cpu" else time.process_time
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(100, 1000, (1, prompt), generator=gen).expand(width, -1).to(device)
    mask = torch.ones((width, prompt + steps + 1), dtype=torch.bool, device=device)
    positions = torch.arange(prompt, device=device)[None].expand(width, -1)
    medians = []
    with torch.inference_mode():
        for _ in range(max(1, rounds)):
            cache = _cache(forward, width, prompt + steps + 1, device)
            forward(ids, positions, mask[:, :prompt], cache, last_only=True)
            times = []
            for step in range(steps + 1):
                token = torch.full((width, 1), 200 + step, device=device)
                position = torch.full((width, 1), prompt + step, device=device)
                _sync(device)
                start = clock()
                forward(token, position, mask[:, : prompt + step + 1], cache, last_only=True)
                _sync(device)
                if step:  # the first step warms the kernels' caches
                    times.append(clock() - start)
            medians.append(statistics.median(times))
    return statistics.median(medians)


def calibration_ids(tokenizer: Any) -> list[list[int]]:
    """The token ids of :data:`CALIBRATION` through ``tokenizer``."""
    return [list(tokenizer(text)["input_ids"]) for text in CALIBRATION]


def measure_format(
    weights: str,
    forward: LeanLlama,
    reference: Sequence[torch.Tensor],
    sequences: Sequence[Sequence[int]],
    device: torch.device,
) -> FormatProbe:
    """One format's probe: :func:`format_gap` over every position of ``sequences`` and its step.

    ``reference`` is :func:`scored_rows` of the float32 forward on ``sequences`` from 0.
    """
    kl, top1 = format_gap(reference, forward, sequences, [0] * len(sequences), device)
    seconds = step_seconds(forward, device)
    return FormatProbe(weights, round(kl, 5), round(top1, 4), round(seconds * 1e3, 2), kl <= KL_GATE)


def probe_formats(
    formats: Sequence[str],
    serve: Callable[[str], LeanLlama],
    sequences: Sequence[Sequence[int]],
    device: torch.device,
    measured: Callable[[FormatProbe], None] | None = None,
) -> tuple[FormatProbe, ...]:
    """Measure every format on the forward ``serve(format)`` returns, float32 first, one at a time.

    ``serve`` must return the forward a load in that format would serve
    (:func:`format_gap`); float32 is the reference (KL 0, agreement 1).
    ``measured`` hears each probe once its format is measured, before the
    next format is served (the caller may keep that format's model, or let
    it go); the probe itself keeps no forward.
    """
    reference = serve("float32")
    rows = scored_rows(reference, sequences, [0] * len(sequences), device)
    probes = [
        FormatProbe("float32", 0.0, 1.0, round(step_seconds(reference, device) * 1e3, 2), True)
    ]
    del reference
    if measured is not None:
        measured(probes[0])
    for weights in [f for f in formats if f != "float32"]:
        forward = serve(weights)
        probes.append(measure_format(weights, forward, rows, sequences, device))
        del forward
        gc.collect()
        if measured is not None:
            measured(probes[-1])
    return tuple(probes)


def choose(
    probes: Sequence[FormatProbe],
    excluded: Mapping[str, str] | None = None,
    unmeasured: Sequence[str] = (),
) -> tuple[str, str]:
    """``(format, reason)``: the smallest format among the fastest width-4 steps within the gates.

    Eligible: within the KL gate and not ruled out by ``excluded`` (the
    steered-accuracy gate, :mod:`inference.weights.gate`, mapping a format to
    why; float32 is never ruled out). Among the eligible formats whose step is
    within :data:`TIE_MARGIN` of the fastest one, the one holding the fewest
    weight bytes is chosen (the last in ``WEIGHT_FORMATS``' order); the
    reason states that rule and every measurement. ``unmeasured`` names
    formats with no steered figure, judged by KL alone.
    """
    excluded = {k: v for k, v in (excluded or {}).items() if k != "float32"}
    passing = [p for p in probes if p.passed and p.weights not in excluded]
    fastest = min(passing, key=lambda p: p.step_ms)
    window = fastest.step_ms * (1.0 + TIE_MARGIN)
    tied = [p for p in passing if p.step_ms <= window]
    best = max(tied, key=_smallness)

    def why_not(p: FormatProbe) -> str:
        if not p.passed:
            return f" (KL {p.kl_vs_float32} > {KL_GATE})"
        if p.weights in excluded:
            return f" ({excluded[p.weights]})"
        if p in tied:
            return " (as fast, larger weights)"
        return ""

    others = ", ".join(f"{p.weights} {p.step_ms} ms{why_not(p)}" for p in probes if p is not best)
    speed = (
        "the fastest width-4 decode step here"
        if best is fastest
        else f"the smallest weights among the width-4 decode steps within {TIE_MARGIN:.0%} of the "
        f"fastest ({fastest.weights} {fastest.step_ms} ms)"
    )
    reason = (
        f"{best.weights} ({best.step_ms} ms a width-4 step, KL {best.kl_vs_float32} nats from "
        f"float32, top-1 agreement {best.top1_agreement}): {speed}, among the formats within the "
        f"KL gate {KL_GATE} and the steered-accuracy gate (rule: among steps within "
        f"{TIE_MARGIN:.0%} of the fastest, the fewest weight bytes); {others}"
    )
    if unmeasured:
        reason += f"; steered accuracy not measured for {', '.join(unmeasured)} (KL gate only)"
    return best.weights, reason


def _smallness(probe: FormatProbe) -> tuple[int, float]:
    """Order of preference among formats as fast as each other: fewer weight bytes, then lower KL."""
    rank = WEIGHT_FORMATS.index(probe.weights) if probe.weights in WEIGHT_FORMATS else -1
    return rank, -probe.kl_vs_float32


def machine_fingerprint(device: torch.device) -> str:
    """A short digest of what the probe's timings depend on: processor, torch build, threads,
    device, and the probe's own version."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            lines = [ln for ln in info if ln.startswith(("model name", "flags"))]
        cpu = "".join(sorted(set(lines)))
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else ""
    parts = [cpu, gpu, torch.__version__, str(torch.get_num_threads()), str(device)]
    text = "|".join([*parts, f"probe {PROBE_VERSION}"])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cache(forward: LeanLlama, rows: int, columns: int, device: torch.device) -> SlabCache:
    cache = SlabCache(len(forward.layers), columns)
    cache.allocate(rows, forward.kv_heads, forward.head_dim, forward.kv_dtype, device)
    return cache


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
