"""Weight formats compared on the bundled model: speed, memory and quality against float32.

``python -m bench.throughput --weights all [--quick] [--threads N]`` runs this
(``--weights float32,int4`` for a subset). In one run, on the same prompts:

- quality, in this process: the float32 model's greedy continuation of each
  prompt (``steps`` tokens), teacher-forced through every format's lean
  forward; mean KL divergence ``KL(p_float32 || p_format)`` of the next-token
  distributions over prompts x steps (50 x 64 in full, 8 x 16 quick) and the
  top-1 agreement;
- speed and memory, one subprocess per format (so that each peak resident
  memory is that format's alone): tokens per second of our unsteered decode
  at widths 1, 4 and 16, wall time including prefill, exactly ``new`` tokens;
  the float32 process also times HF ``generate`` greedy and ``num_beams=4``;
  one more process loads with ``auto`` to learn what it picks here;
- llama.cpp's greedy tokens per second on the same GGUF and thread count
  when ``llama-cpp-python`` is installed (the ``llamacpp`` extra), else null.
  It builds from source (about 5 minutes); a native build crashed with
  "Illegal instruction" on an AVX512/AMX machine, this one works:
  ``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
  -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
  -DGGML_AMX_BF16=OFF" pip install '.[llamacpp]'``.

The steered-accuracy part of the issue's gate (``bench.steering --limit 40``
per format) is not run here: it is reported as not measured.

The last stdout line is one JSON object.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

__all__ = ["compare_formats", "worker"]


def _prompts(data: Path, limit: int) -> list[str]:
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    step = max(1, len(rows) // limit)
    return [row["prompt"] for row in rows[::step][:limit]]


def _greedy(forward: Any, ids: list[int], new: int, device: torch.device) -> list[int]:
    from inference.decoder.kv_slab import SlabCache

    cache = SlabCache(len(forward.layers), len(ids) + new)
    cache.allocate(1, forward.kv_heads, forward.head_dim, forward.dtype, device)
    mask = torch.ones((1, len(ids) + new), dtype=torch.bool, device=device)
    out: list[int] = []
    with torch.inference_mode():
        x = torch.tensor([ids], device=device)
        positions = torch.arange(len(ids), device=device)[None]
        logits = forward(x, positions, mask[:, : len(ids)], cache, last_only=True)
        for step in range(new):
            out.append(int(logits[0, -1].argmax()))
            logits = forward(
                torch.tensor([[out[-1]]], device=device),
                torch.tensor([[len(ids) + step]], device=device),
                mask[:, : len(ids) + step + 1],
                cache,
                last_only=True,
            )
    return out


def _quality(
    formats: Sequence[str], prompts: Sequence[str], steps: int, cache: Path, device: str
) -> dict[str, dict[str, float]]:
    """Per format: mean KL from float32 and top-1 agreement over the continuation positions."""
    from inference.decoder.packed_llama import packed_forward
    from inference.loader import bundled_gguf_path, load_model
    from inference.prompting import plan_prompt
    from inference.weights.build import build_forward
    from inference.weights.gguf_q4 import q4_1_blocks
    from inference.weights.probe import teacher_forced_logits

    lm = load_model("bundled", device=device, cache_root=cache, weights="float32")
    reference = packed_forward(lm.model)
    assert reference is not None
    config = lm.model.config
    blocks = q4_1_blocks(
        bundled_gguf_path(),
        heads=int(config.num_attention_heads),
        kv_heads=int(config.num_key_value_heads),
    )
    sequences, starts = [], []
    for prompt in prompts:
        ids = list(plan_prompt(lm.tokenizer, prompt).branch_ids(0))
        sequences.append(ids + _greedy(reference, ids, steps, lm.device))
        starts.append(len(ids) - 1)

    def continuation(forward: Any) -> list[torch.Tensor]:
        out = []
        for seq, start in zip(sequences, starts):
            logits = teacher_forced_logits(forward, [seq], lm.device)
            out.append(logits[start : len(seq) - 1].log_softmax(-1))  # [steps, V]
        return out

    ref = continuation(reference)
    report: dict[str, dict[str, float]] = {}
    for weights in formats:
        forward = reference if weights == "float32" else build_forward(lm.model, weights, blocks)[0]
        kl_sum = agree = count = 0.0
        for r, c in zip(ref, continuation(forward)):
            kl_sum += float((r.exp() * (r - c)).sum(-1).clamp(min=0).sum())
            agree += float((r.argmax(-1) == c.argmax(-1)).sum())
            count += r.shape[0]
        report[weights] = {
            "kl_vs_float32": round(kl_sum / count, 5),
            "top1_agreement": round(agree / count, 4),
        }
        del forward
    return report


def worker(argv: Sequence[str]) -> int:
    """One format's speed and memory, in its own process; prints one JSON line."""
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--new", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--widths", default="1,4,16")
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--data", type=Path, required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    import psutil

    from bench.throughput import _generate, _ours
    from inference.loader import load_model
    from inference.prompting import plan_prompt

    lm = load_model("bundled", device=args.device, cache_root=args.cache, weights=args.worker)
    out: dict[str, Any] = {
        "weights": lm.weights.weights,
        "reason": lm.weights.reason,
        "rss_loaded_mb": round(psutil.Process().memory_info().rss / 2**20, 1),
    }
    if args.worker != "auto":
        plan = plan_prompt(lm.tokenizer, _prompts(args.data, 1)[0])
        _ours(lm.model, lm.tokenizer, plan, None, [], 4, 4, "", False, lm.device)  # warm up
        for width in [int(w) for w in args.widths.split(",") if w]:
            n, seconds, _ = _ours(
                lm.model, lm.tokenizer, plan, None, [], width, args.new, "", False, lm.device
            )
            out[f"tokens_per_s_w{width}"] = round(n / seconds, 2)
        if args.generate:
            pad = int(lm.tokenizer.pad_token_id)
            ids = plan.branch_ids(0)
            _generate(lm.model, ids, 1, 4, pad, lm.device)
            for beams, key in ((1, "greedy"), (4, "beam4")):
                n, seconds = _generate(lm.model, ids, beams, args.new, pad, lm.device)
                out[f"tokens_per_s_generate_{key}"] = round(n / seconds, 2)
    out["rss_mb"] = _peak_rss_mb()
    out["rss_after_decode_mb"] = round(psutil.Process().memory_info().rss / 2**20, 1)
    print(json.dumps(out))
    return 0


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: ru_maxrss would carry the parent's over exec)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _run_worker(weights: str, extra: Sequence[str]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.weight_formats", "--worker", weights, *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ), check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"error": (done.stderr or done.stdout)[-400:]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _llamacpp(gguf: Path, prompt: str, new: int, threads: int) -> float | None:
    """llama.cpp greedy tokens per second on the same GGUF, or None without llama-cpp-python."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    llm = Llama(model_path=str(gguf), n_threads=threads, n_ctx=1024, verbose=False)
    llm(prompt, max_tokens=4, temperature=0.0)
    start = time.perf_counter()
    result: Any = llm(prompt, max_tokens=new, temperature=0.0, top_k=1)
    seconds = time.perf_counter() - start
    return round(int(result["usage"]["completion_tokens"]) / seconds, 2)


def compare_formats(
    formats: Sequence[str],
    *,
    quick: bool,
    threads: int,
    cache: Path,
    data: Path,
    device: str = "cpu",
    widths: str = "1,4,16",
) -> dict[str, Any]:
    """Everything the module docstring lists, as one report."""
    from inference.loader import bundled_gguf_path

    torch.set_num_threads(threads)
    n_prompts, steps = (8, 16) if quick else (50, 64)
    new = 24 if quick else 64
    quality = _quality(formats, _prompts(data, n_prompts), steps, cache, device)
    extra = ["--new", str(new), "--threads", str(threads), "--widths", widths]
    extra += ["--cache", str(cache), "--device", device, "--data", str(data)]
    report_formats: dict[str, dict[str, Any]] = {}
    generate: dict[str, Any] = {}
    for weights in formats:
        run = _run_worker(weights, [*extra, *(["--generate"] if weights == "float32" else [])])
        for key in ("tokens_per_s_generate_greedy", "tokens_per_s_generate_beam4"):
            if key in run:
                generate[key] = run.pop(key)
        report_formats[weights] = {**run, **quality.get(weights, {})}
    auto = _run_worker("auto", extra)
    chosen = auto.get("weights")
    llamacpp = _llamacpp(bundled_gguf_path(), _prompts(data, 1)[0], new, threads)
    beam4 = generate.get("tokens_per_s_generate_beam4")
    chosen_figures = report_formats.get(chosen or "", {})
    w4, w1 = chosen_figures.get("tokens_per_s_w4"), chosen_figures.get("tokens_per_s_w1")
    return {
        "formats": report_formats,
        "chosen": chosen,
        "chosen_reason": auto.get("reason"),
        "tokens_per_s_generate_greedy": generate.get("tokens_per_s_generate_greedy"),
        "tokens_per_s_generate_beam4": beam4,
        "ratio_w4_vs_generate": round(w4 / beam4, 3) if w4 and beam4 else None,
        "tokens_per_s_llamacpp": llamacpp,
        "ratio_w1_vs_llamacpp": round(w1 / llamacpp, 3) if w1 and llamacpp else None,
        "steered_accuracy": "not measured (run bench.steering --limit 40 per TENET_WEIGHTS)",
        "threads": threads,
        "device": device,
        "new_tokens": new,
        "quality_prompts": n_prompts,
        "quality_steps": steps,
        "note": "tokens/s: our unsteered decode, wall time incl. prefill, exactly new_tokens; "
        "generate: HF float32 library forward; rss_mb: peak resident memory of the format's own "
        "process (load + decode), rss_loaded_mb: resident after load; kl_vs_float32: mean "
        "KL(p_float32 || p_format) over prompts x steps of float32's greedy continuation.",
    }


if __name__ == "__main__":
    raise SystemExit(worker(sys.argv[1:]))
