"""Weight formats compared on the bundled model: speed, memory and quality against float32.

``python -m bench.throughput --weights all [--quick] [--threads N]`` runs this
(``--weights float32,int4`` for a subset). In one run, on the same prompts:

- quality, in this process: the float32 model's greedy continuation of each
  prompt (``steps`` tokens), teacher-forced through every format's lean
  forward as a load in that format serves it (the direct load for the
  low-precision formats, not a conversion of the float32 model); mean KL
  divergence ``KL(p_float32 || p_format)`` of the next-token distributions
  over prompts x steps (50 x 64 in full, 8 x 16 quick) and the top-1
  agreement;
- speed and memory, one subprocess per format (so that each peak resident
  memory is that format's alone): tokens per second of our steered decode
  (IFEval prompts whose constraints ``compile_steering`` accepts, 2 quick /
  4 in full) at widths 1, 4 and 16, wall time including prefill, exactly
  ``new`` tokens; the float32 process also times HF ``generate`` greedy and
  ``num_beams=4`` on the same prompt ids; one more process loads with
  ``auto`` to learn what it picks here, and one more (``paired``) times the
  chosen format's width-4 decode against float32 ``generate(num_beams=4)``
  prompt by prompt in one process, three rounds, reporting the round of
  median ratio and every round's; that median is the report's
  ``ratio_w4_vs_generate`` (both sides under the same load), and the ratio of
  the separate processes' figures is ``ratio_w4_vs_generate_separate``. Memory: peak resident (``rss_mb``,
  load and decode; ``rss_peak_load_mb`` up to the end of the load), resident
  after the load, and the bytes of the weights as held (``weights_mb``);
- llama.cpp's greedy tokens per second on the same GGUF, prompt ids and
  thread count when ``llama-cpp-python`` is installed (the ``llamacpp``
  extra), else null. It builds from source (about 5 minutes); a native build
  crashed with "Illegal instruction" on an AVX512/AMX machine, this one works:
  ``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
  -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
  -DGGML_AMX_BF16=OFF" pip install '.[llamacpp]'``;
- the steered-accuracy gate per format, as ``bench.steering --weights F
  --record-gate`` kept it (minutes per format: not run here); a format
  without a kept figure says ``not measured``. The machine's load average
  before and after is reported: timings on a shared machine are noisy, the
  ratios within one run are what compares.

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

from bench.timed_decode import steered_prompts, steering_or_none, timed_decode, timed_generate

__all__ = ["compare_formats", "worker"]

#: Rounds of the paired comparison (one quick round's ratio ranged 2.7-4.2 at load 1.4-2.7).
_PAIRED_ROUNDS = 3


def _prompts(data: Path, limit: int) -> list[str]:
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    step = max(1, len(rows) // limit)
    return [row["prompt"] for row in rows[::step][:limit]]


def _greedy(forward: Any, ids: list[int], new: int, device: torch.device) -> list[int]:
    from inference.decoder.kv_slab import SlabCache

    cache = SlabCache(len(forward.layers), len(ids) + new)
    cache.allocate(1, forward.kv_heads, forward.head_dim, forward.kv_dtype, device)
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
    """Per format: mean KL from float32 and top-1 agreement over the continuation positions.

    Each format is the model a load in it serves (``load_model(weights=F)``: for the
    low-precision formats the direct load, whose tied input embedding reads the int8 head's
    codes), not a conversion of the float32 model, scored by the start-up probe's own
    :func:`~inference.weights.probe.format_gap`.
    """
    from inference.decoder.packed_llama import packed_forward
    from inference.loader import load_model
    from inference.prompting import plan_prompt
    from inference.weights.probe import format_gap, scored_rows

    lm = load_model("bundled", device=device, cache_root=cache, weights="float32")
    reference = packed_forward(lm.model)
    assert reference is not None

    def served(weights: str) -> Any:
        if weights == "float32":
            return reference
        forward = packed_forward(
            load_model("bundled", device=device, cache_root=cache, weights=weights).model
        )
        assert forward is not None
        return forward

    sequences, starts = [], []
    for prompt in prompts:
        ids = list(plan_prompt(lm.tokenizer, prompt).branch_ids(0))
        sequences.append(ids + _greedy(reference, ids, steps, lm.device))
        starts.append(len(ids) - 1)
    rows = scored_rows(reference, sequences, starts, lm.device)
    report: dict[str, dict[str, float]] = {}
    for weights in formats:
        forward = served(weights)
        kl, top1 = format_gap(rows, forward, sequences, starts, lm.device)
        report[weights] = {"kl_vs_float32": round(kl, 5), "top1_agreement": round(top1, 4)}
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
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--generate", action="store_true")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--paired", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.paired:
        return _paired(args)
    import psutil

    from inference.loader import load_model
    from inference.prompting import plan_prompt
    from inference.weights.kernels import stored_bytes

    lm = load_model("bundled", device=args.device, cache_root=args.cache, weights=args.worker)
    out: dict[str, Any] = {
        "weights": lm.weights.weights,
        "reason": lm.weights.reason,
        "rss_loaded_mb": round(psutil.Process().memory_info().rss / 2**20, 1),
        "rss_peak_load_mb": _peak_rss_mb(),
        "weights_mb": round(stored_bytes(lm.model) / 2**20, 1),
    }
    if args.worker != "auto":
        tok = lm.tokenizer
        plans = []
        # The first prompts of an evenly spaced sample whose constraints steer.
        for item in steered_prompts(40, args.data):
            if steering_or_none(item["constraints"], tok, item["prompt"], args.new, lm.device) is None:
                continue
            plans.append((item, plan_prompt(tok, item["prompt"], item["constraints"])))
            if len(plans) == args.prompts:
                break
        warm = plans[0][1]
        timed_decode(lm.model, tok, warm, None, [], 4, 4, "", False, lm.device)  # warm up
        steered = 0
        for width in [int(w) for w in args.widths.split(",") if w]:
            tokens = seconds = 0.0
            for item, plan in plans:
                n, t, was_steered = _steered_decode(lm, item, plan, width, args.new)
                steered += was_steered
                tokens, seconds = tokens + n, seconds + t
            out[f"tokens_per_s_w{width}"] = round(tokens / seconds, 2)
        out["steered_decodes"] = steered
        if args.generate:
            pad = int(tok.pad_token_id)
            timed_generate(lm.model, warm.branch_ids(0), 1, 4, pad, lm.device)
            for beams, key in ((1, "greedy"), (4, "beam4")):
                tokens = seconds = 0.0
                for _, plan in plans:
                    n, t = timed_generate(lm.model, plan.branch_ids(0), beams, args.new, pad, lm.device)
                    tokens, seconds = tokens + n, seconds + t
                out[f"tokens_per_s_generate_{key}"] = round(tokens / seconds, 2)
    out["rss_mb"] = _peak_rss_mb()
    out["rss_after_decode_mb"] = round(psutil.Process().memory_info().rss / 2**20, 1)
    print(json.dumps(out))
    return 0


def _paired(args: Any) -> int:
    """Width-4 steered decode in ``args.worker`` and float32 ``generate(num_beams=4)``, alternated.

    Both models in one process, prompt by prompt in turn, so that the
    ratio sees the same load on a shared machine (separate processes run
    minutes apart), over :data:`_PAIRED_ROUNDS` rounds of the prompts; the
    figures are the round of median ratio's (every round's ratio is listed).
    Prints one JSON line.
    """
    from inference.loader import load_model
    from inference.prompting import plan_prompt

    reference = load_model("bundled", device=args.device, cache_root=args.cache)
    lm = load_model("bundled", device=args.device, cache_root=args.cache, weights=args.worker)
    tok = lm.tokenizer
    pad = int(tok.pad_token_id)
    items = [
        item
        for item in steered_prompts(40, args.data)
        if steering_or_none(item["constraints"], tok, item["prompt"], args.new, lm.device) is not None
    ][: args.prompts]
    warm = plan_prompt(tok, items[0]["prompt"])
    timed_decode(lm.model, tok, warm, None, [], 4, 4, "", False, lm.device)
    timed_generate(reference.model, warm.branch_ids(0), 4, 4, pad, reference.device)

    rounds: list[tuple[float, float]] = []  # (ours, generate) tokens per second, per round
    for _ in range(_PAIRED_ROUNDS):
        ours_n = ours_s = gen_n = gen_s = 0.0
        for item in items:
            plan = plan_prompt(tok, item["prompt"], item["constraints"])
            n, t, _ = _steered_decode(lm, item, plan, 4, args.new)
            ours_n, ours_s = ours_n + n, ours_s + t
            n, t = timed_generate(
                reference.model, plan.branch_ids(0), 4, args.new, pad, reference.device
            )
            gen_n, gen_s = gen_n + n, gen_s + t
        rounds.append((ours_n / ours_s, gen_n / gen_s))
    # The round of median ratio: one busy moment on a shared machine does not decide.
    ours, gen = sorted(rounds, key=lambda r: r[0] / r[1])[len(rounds) // 2]
    out: dict[str, Any] = {
        "weights": lm.weights.weights,
        "tokens_per_s_w4": round(ours, 2),
        "tokens_per_s_generate_beam4": round(gen, 2),
        "ratio_w4_vs_generate": round(ours / gen, 3),
        "ratios_by_round": [round(o / g, 3) for o, g in rounds],
        "prompts": len(items),
    }
    del reference
    # Width 1 against llama.cpp's greedy decode, alternated the same way (when installed).
    from inference.loader import bundled_gguf_path

    w1_n = w1_s = 0.0
    peer: list[float] = []
    for item in items:
        plan = plan_prompt(tok, item["prompt"], item["constraints"])
        ids = list(plan.branch_ids(0))
        speed = _llamacpp(bundled_gguf_path(), [ids], args.new, args.threads)
        if speed is None:
            break
        peer.append(speed)
        n, t, _ = _steered_decode(lm, item, plan, 1, args.new)
        w1_n, w1_s = w1_n + n, w1_s + t
    if peer and w1_s:
        w1, llama = w1_n / w1_s, sum(peer) / len(peer)
        out.update(
            tokens_per_s_w1=round(w1, 2),
            tokens_per_s_llamacpp=round(llama, 2),
            ratio_w1_vs_llamacpp=round(w1 / llama, 3),
        )
    print(json.dumps(out))
    return 0


def _steered_decode(lm: Any, item: dict[str, Any], plan: Any, width: int, new: int) -> tuple[int, float, bool]:
    """Our decode of ``item``'s ``plan`` at ``width``, ``new`` tokens, under its steering compiled
    anew (none when its constraints steer nothing): tokens, seconds, whether it was steered."""
    steering = steering_or_none(item["constraints"], lm.tokenizer, item["prompt"], new, lm.device)
    n, t, _ = timed_decode(
        lm.model, lm.tokenizer, plan, steering, item["constraints"], width, new, item["prompt"], False, lm.device
    )
    return n, t, steering is not None


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


def _llamacpp(gguf: Path, prompts: Sequence[Sequence[int]], new: int, threads: int) -> float | None:
    """llama.cpp's greedy tokens per second on the same GGUF, prompt ids and thread count.

    None without ``llama-cpp-python``. Each prompt is evaluated from an empty
    context and exactly ``new`` tokens are taken (EOS does not stop it, as
    it does not stop ours); wall time includes the prompt's evaluation.
    """
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    llm: Any = Llama(
        model_path=str(gguf), n_threads=threads, n_threads_batch=threads, n_ctx=2048, verbose=False
    )

    def greedy(ids: Sequence[int], count: int) -> int:
        taken = 0
        llm.reset()  # an empty context: generate() would otherwise reuse a matching prefix
        for _ in llm.generate(list(ids), top_k=1, top_p=1.0, min_p=0.0, temp=0.0, reset=True):
            taken += 1
            if taken >= count:
                break
        return taken

    greedy(prompts[0], 4)  # warm up
    tokens, seconds = 0, 0.0
    for ids in prompts:
        start = time.perf_counter()
        tokens += greedy(ids, new)
        seconds += time.perf_counter() - start
    return round(tokens / seconds, 2)


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
    from transformers import AutoTokenizer

    from inference.loader import bundled_gguf_path, file_sha256, prepare_cache, probe_directory
    from inference.prompting import plan_prompt
    from inference.weights.gate import excluded, read_gate

    torch.set_num_threads(threads)
    load_before = os.getloadavg()
    n_prompts, steps = (8, 16) if quick else (50, 64)
    new = 24 if quick else 64
    speed_prompts = 2 if quick else 4
    quality = _quality(formats, _prompts(data, n_prompts), steps, cache, device)
    extra = ["--new", str(new), "--threads", str(threads), "--widths", widths]
    extra += ["--cache", str(cache), "--device", device, "--data", str(data)]
    extra += ["--prompts", str(speed_prompts)]
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
    paired = _run_worker(chosen, [*extra, "--paired"]) if chosen else {}
    # The same prompt ids as our decode and generate, through the bundled tokenizer.
    tokenizer = AutoTokenizer.from_pretrained(prepare_cache("bundled", cache))
    ids = []
    for item in steered_prompts(40, data):
        if steering_or_none(item["constraints"], tokenizer, item["prompt"], new, torch.device("cpu")):
            ids.append(
                list(plan_prompt(tokenizer, item["prompt"], item["constraints"]).branch_ids(0))
            )
        if len(ids) == speed_prompts:
            break
    llamacpp = _llamacpp(bundled_gguf_path(), ids, new, threads)
    kept = read_gate(probe_directory(cache, file_sha256(bundled_gguf_path())))
    gate_excluded = excluded(kept)
    for name, figures in report_formats.items():
        row = kept.get(name)
        figures["steered_instruction_strict"] = None if row is None else row.instruction_strict
        figures["steered_sample"] = None if row is None else row.sample
        figures["steered_gate"] = (
            "not measured" if row is None else ("fails" if name in gate_excluded else "passes")
        )
    beam4 = generate.get("tokens_per_s_generate_beam4")
    chosen_figures = report_formats.get(chosen or "", {})
    w4, w1 = chosen_figures.get("tokens_per_s_w4"), chosen_figures.get("tokens_per_s_w1")
    return {
        "formats": report_formats,
        "chosen": chosen,
        "chosen_reason": auto.get("reason"),
        "tokens_per_s_generate_greedy": generate.get("tokens_per_s_generate_greedy"),
        "tokens_per_s_generate_beam4": beam4,
        # The figure is the paired one: the chosen format's width 4 and float32
        # generate alternated prompt by prompt in one process, so the load they see is the
        # same; the separate processes' ratio stays beside it for comparison.
        "ratio_w4_vs_generate": paired.get("ratio_w4_vs_generate"),
        "ratio_w4_vs_generate_separate": round(w4 / beam4, 3) if w4 and beam4 else None,
        "paired": paired,
        "tokens_per_s_llamacpp": llamacpp,
        "ratio_w1_vs_llamacpp": round(w1 / llamacpp, 3) if w1 and llamacpp else None,
        "llamacpp_lib": os.environ.get("LLAMA_CPP_LIB_PATH") or "installed package",
        "steered_accuracy": "per format: steered_instruction_strict as kept by "
        "bench.steering --weights F --record-gate (steered_sample says on which prompts); a "
        "format more than 0.01 below float32 on the same sample fails the gate and is not chosen",
        "load_average": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "speed_prompts": speed_prompts,
        "threads": threads,
        "device": device,
        "new_tokens": new,
        "quality_prompts": n_prompts,
        "quality_steps": steps,
        "note": "tokens/s: our steered decode (IFEval constraints that compile_steering accepts) "
        "over speed_prompts prompts, wall time incl. prefill, exactly new_tokens; generate: HF "
        "float32 library forward on the same prompt ids; llamacpp: greedy on the same GGUF, ids "
        "and threads; rss_mb: peak resident memory of the format's own process (load + decode "
        "at every width), rss_peak_load_mb: peak up to the end of the load, rss_loaded_mb: "
        "resident after load, weights_mb: bytes of the weights as held; kl_vs_float32: mean "
        "KL(p_float32 || p_format) over prompts x steps of float32's greedy continuation.",
    }


if __name__ == "__main__":
    raise SystemExit(worker(sys.argv[1:]))
