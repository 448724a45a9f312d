"""KV memory of sliding-window layers: a slab that keeps every column against one that holds only
the window (``SlabCache(hold=margin)``, ``inference.decoder.kv_slab.WindowLayer``).

``python -m bench.kv_window [--quick] [--model REF] [--prompt N] [--new N] [--width W]
[--margin M] [--chunk C] [--rounds R] [--cache DIR]``

The same prompt (random token ids, fixed seed) is prefilled in chunks of ``--chunk`` tokens into
``--width`` rows, then ``--new`` one-token steps follow (every row fed its own argmax), once into
each slab, in the same process (``--rounds`` times each, alternating, the order swapped each
round). Reported per slab: the KV bytes at the end (``nbytes``), the columns its sliding layers
hold, seconds of the steps in each round; and the largest absolute difference
between the two runs' logits (the held slab attends over fewer columns, so the sums may differ in
their last bits). ``--quick`` builds a tiny random-weight Gemma 3 (window 16) in process; without
it ``--model`` (any reference ``TENET_MODEL`` takes; a sliding-window model, such as Gemma 3 270M
from the ``models`` extra) is loaded. The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

import torch

from bench.model_cache import add_cache_option, model_cache
from inference.decoder.kv_slab import ROLLBACK_MARGIN, SlabCache
from inference.decoder.runner import ModelRunner


def _tiny() -> Any:
    from transformers import AutoModelForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=6,
        vocab_size=300,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=16,
    )
    config._attn_implementation = "sdpa"
    return AutoModelForCausalLM.from_config(config).eval()


def _run(
    runner: ModelRunner, prompt: torch.Tensor, width: int, new: int, chunk: int, hold: int | None
) -> tuple[SlabCache, torch.Tensor, float]:
    """Prefill ``prompt`` into ``width`` rows, then ``new`` greedy steps: the cache, every
    step's logits ``[new, width, V]`` and the steps' seconds."""
    length = int(prompt.shape[0])
    cache = runner.new_cache(width, length + new, hold=hold)
    mask = torch.ones((width, length + new), dtype=torch.bool)
    ids = prompt[None].expand(width, -1)
    for lo in range(0, length, chunk):
        hi = min(length, lo + chunk)
        pos = torch.arange(lo, hi)[None].expand(width, -1)
        logits = runner.forward(
            ids[:, lo:hi], pos, mask[:, :hi], cache, purpose="prefill", last_only=True
        )
    steps = []
    started = time.perf_counter()
    for step in range(new):
        feed = logits[:, -1].argmax(-1, keepdim=True)
        feed[1:] = (feed[1:] + torch.arange(1, width)[:, None]) % logits.shape[-1]  # rows differ
        pos = torch.full((width, 1), length + step)
        logits = runner.forward(
            feed, pos, mask[:, : length + step + 1], cache, purpose="decode", last_only=True
        )
        steps.append(logits[:, -1])
    return cache, torch.stack(steps), time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny random Gemma 3 (window 16)")
    parser.add_argument("--model", default=None, help="model reference (as TENET_MODEL)")
    parser.add_argument("--prompt", type=int, default=None, help="prompt tokens")
    parser.add_argument("--new", type=int, default=None, help="one-token steps after the prompt")
    parser.add_argument("--width", type=int, default=4, help="rows (a beam's width)")
    parser.add_argument("--margin", type=int, default=ROLLBACK_MARGIN, help="rollback margin")
    parser.add_argument("--chunk", type=int, default=128, help="prefill chunk (tokens)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="runs of each slab, alternating (steps_s: each)"
    )
    add_cache_option(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.quick or args.model is None:
        model = _tiny()
        name = "tiny-gemma3-window16"
    else:
        from inference.loader import load_model

        model = load_model(args.model, device="cpu", cache_root=model_cache(args.cache)).model
        name = str(args.model)
    runner = ModelRunner(model)
    windows = sorted({w for w in runner.windows if w is not None})
    if not windows:
        raise SystemExit(f"{name} has no sliding-window layer")
    smallest = windows[0]
    length = args.prompt or 6 * smallest + 2 * args.margin
    new = args.new or (8 if args.quick else 16)
    vocab = int(model.get_output_embeddings().out_features)
    prompt = torch.randint(1, vocab, (length,), generator=torch.Generator().manual_seed(0))
    report: dict[str, Any] = {
        "model": name,
        "forward": "packed" if runner.packed is not None else "library",
        "windows": windows,
        "layers": len(runner.windows),
        "sliding_layers": sum(w is not None for w in runner.windows),
        "prompt_tokens": length,
        "new_tokens": new,
        "width": args.width,
        "margin": args.margin,
    }
    runs: dict[str, tuple[SlabCache, torch.Tensor, float]] = {}
    seconds: dict[str, list[float]] = {"full": [], "held": []}
    with torch.inference_mode():
        for turn in range(args.rounds):  # alternating, the order swapped each round
            kinds = (("full", None), ("held", args.margin))
            for kind, hold in kinds if turn % 2 == 0 else kinds[::-1]:
                runs[kind] = _run(runner, prompt, args.width, new, args.chunk, hold)
                seconds[kind].append(runs[kind][2])
    for kind, (cache, _, _) in runs.items():
        report[f"{kind}_kv_bytes"] = cache.nbytes()
        report[f"{kind}_steps_s"] = [round(t, 4) for t in seconds[kind]]
        report[f"{kind}_sliding_columns"] = sorted(
            {layer.used()[0].shape[2] for layer in cache.held_layers}
        ) or [length + new]
    report["held_over_full_bytes"] = round(report["held_kv_bytes"] / report["full_kv_bytes"], 4)
    # Projected, not measured: the bytes one row's slab takes at longer lengths, from this run's
    # layer kinds and the held layers' steady buffer.
    held = runs["held"][0]
    column = report["full_kv_bytes"] // (args.width * (length + new) * len(runner.windows))
    steady = [layer.base for layer in held.held_layers]
    full_layers = len(runner.windows) - len(steady)
    report["projected_row_bytes"] = {
        str(n): {
            "full": column * n * len(runner.windows),
            "held": column * (full_layers * n + sum(min(b, n) for b in steady)),
        }
        for n in (4096, 32768)
    }
    report["max_abs_logit_diff"] = float((runs["full"][1] - runs["held"][1]).abs().max())
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
