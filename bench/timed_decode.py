"""Timed decodes shared by the throughput benchmarks: our steered decode and HF ``generate``.

``bench.throughput`` and ``bench.weight_formats`` both time the same two
calls on the same prompts: our decode (``decode`` with the prompt's IFEval
constraints compiled into steering where ``compile_steering`` accepts them)
and the library's ``generate``. Both take exactly ``new`` tokens
(``min_new_tokens == max_new_tokens``) and are timed by the wall clock
including prefill, synchronised on CUDA.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = ["steered_prompts", "steering_or_none", "timed_decode", "timed_generate"]


def steered_prompts(limit: int, data: Path) -> list[dict[str, Any]]:
    """Every k-th IFEval row (``limit`` of them, evenly spaced): key, prompt, our constraints."""
    from bench.steering import ifeval_constraints

    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    step = max(1, len(rows) // limit)
    out = []
    for row in rows[::step][:limit]:
        out.append(
            {
                "key": row["key"],
                "prompt": row["prompt"],
                "constraints": ifeval_constraints(row) or [],
            }
        )
    return out


def steering_or_none(
    constraints: Sequence[Any], tokenizer: Any, prompt: str, budget: int, device: torch.device
) -> Any:
    """The prompt's compiled steering, or None (no constraints, or ``compile_steering`` refuses)."""
    from inference.decoder.compile import compile_steering
    from reasoning.errors import TenetError

    if not constraints:
        return None
    try:
        return compile_steering(
            constraints, tokenizer, prompt=prompt, device=device, max_new_tokens=budget
        )
    except TenetError:
        return None


def timed_generate(
    model: Any, ids: Sequence[int], width: int, new: int, pad: int, device: torch.device
) -> tuple[int, float]:
    """``generate`` with ``width`` beams (greedy at 1), exactly ``new`` tokens: (tokens, seconds)."""
    x = torch.tensor([list(ids)], device=device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            x,
            attention_mask=torch.ones_like(x),
            num_beams=width,
            do_sample=False,
            max_new_tokens=new,
            min_new_tokens=new,
            pad_token_id=pad,
        )
    if device.type == "cuda":
        torch.cuda.synchronize()
    return int(out.shape[1] - x.shape[1]), time.perf_counter() - start


def timed_decode(
    model: Any,
    tokenizer: Any,
    plan: Any,
    steering: Any,
    constraints: Sequence[Any],
    width: int,
    new: int,
    request: str,
    counterfactual: bool,
    device: torch.device,
    packed: bool = True,
) -> tuple[int, float, Any]:
    """Our decode of ``plan`` at ``width``, exactly ``new`` tokens: (tokens, seconds, result)."""
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions

    options = DecodeOptions(
        width=width,
        max_new_tokens=new,
        min_new_tokens=new,
        counterfactual_checks=counterfactual,
        packed_forward=packed,
    )
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = decode(
        model,
        tokenizer,
        plan,
        steering=steering,
        options=options,
        constraints=constraints,
        request_text=request,
    )
    if device.type == "cuda":
        torch.cuda.synchronize()
    return result.generated_tokens, time.perf_counter() - start, result
