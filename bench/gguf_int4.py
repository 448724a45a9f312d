"""How close a GGUF model's int4 format stays to its float32 weights, and what it holds.

``python -m bench.gguf_int4 [--model REF] [--prompts N] [--cache DIR] [--threads N] [--no-memory]``

The model (``--model``: a ``.gguf`` file or ``bundled``; any model reference
``TENET_MODEL`` takes) is loaded in float32 (the GGUF's values, dequantised),
then the int4 lean forward is built from it twice, on the same GGUF blocks:
as served (four-bit blocks read as they are, projections the file holds finer
than four bits on the int8 kernel: ``inference.weights.gguf_q4``) and with
every projection in four bits (the finer ones rounded again). For each, over
the first ``--prompts`` of a fixed list of short prompts, teacher-forced: the
mean ``KL(p_float32 || p_int4)`` of the next-token distributions over every
prompt position, the top-1 agreement, and the bytes of the projection
kernels (the embedding and the head are the same in both). The GGUF's
projection types are counted (``q4_projections``: read as they are;
``finer_projections``).

``memory_after_load``: for float32 and int4, the model loaded as the service
loads it (``load_model``), each in a fresh process: the resident set after
the load (``rss_mb``), its peak during the load (``peak_rss_mb``) and the
bytes of the weights as held (``weights_mb``: the model's storages and the
lean forward's kernels, each counted once). ``--no-memory`` leaves it out.

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from bench.model_cache import add_cache_option, model_cache

__all__ = ["PROMPTS", "main"]

PROMPTS = (
    "The capital of France is Paris. The capital of Italy is",
    "Write a short poem about the sea and the wind,",
    "In compliance work, a rule applies when",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
)


def _kernel_bytes(forward: Any) -> int:
    """Bytes of the lean forward's projection kernels (each tensor counted once)."""
    seen: set[int] = set()
    total = 0
    for layer in forward.layers:
        for module in (*layer.qkv, layer.o, *layer.gate_up, layer.down):
            for tensor in [*module.buffers(), *module.parameters()]:
                if id(tensor) not in seen:
                    seen.add(id(tensor))
                    total += tensor.nbytes
    return total


def _gap(model: Any, forward: Any, references: list[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, Any]:
    from inference.decoder.runner import ModelRunner

    kl, agree, positions = 0.0, 0, 0
    for ids, reference in references:
        length = ids.shape[1]
        cache = ModelRunner(model, packed=False).new_cache(1, length)
        mask = torch.ones((1, length), dtype=torch.bool)
        logits = forward(ids, torch.arange(length)[None], mask, cache, last_only=False)[0].float()
        kl += float(
            F.kl_div(F.log_softmax(logits, -1), F.log_softmax(reference, -1), log_target=True, reduction="sum")
        )
        agree += int((logits.argmax(-1) == reference.argmax(-1)).sum())
        positions += length
    return {
        "kl_vs_float32": round(kl / positions, 5),
        "top1_agreement": round(agree / positions, 4),
        "projection_mb": round(_kernel_bytes(forward) / 2**20, 1),
        "positions": positions,
    }


def _memory_after_load(model: str, cache: Path, weights: str) -> dict[str, Any]:
    """The resident memory and held weight bytes after loading ``model`` in ``weights`` (this
    process: run it in a fresh one, :func:`_memory_in_fresh_process`)."""
    import psutil
    from torch import nn

    from bench.weight_formats import _peak_rss_mb
    from inference.decoder.packed_llama import packed_forward
    from inference.loader import load_model
    from inference.weights.kernels import stored_bytes

    loaded = load_model(model, cache_root=cache, weights=weights)
    forward = packed_forward(loaded.model)
    held: list[nn.Module] = [loaded.model]
    if forward is not None:  # the lean forward's fused kernels, where it holds its own
        held += [m for layer in forward.layers for m in (*layer.qkv, layer.o, *layer.gate_up, layer.down)
                 if isinstance(m, nn.Module)]
    return {
        "weights": loaded.identity.weights,
        "forward": "lean" if forward is not None else "library",
        "rss_mb": round(psutil.Process().memory_info().rss / 2**20, 1),
        "peak_rss_mb": _peak_rss_mb(),  # VmHWM: ru_maxrss would carry the parent's peak over exec
        "weights_mb": round(stored_bytes(nn.ModuleList(held)) / 2**20, 1),
    }


def _memory_in_fresh_process(model: str, cache: Path, weights: str, threads: int) -> dict[str, Any]:
    """:func:`_memory_after_load` in a child process (a load's memory is not another's)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.gguf_int4", "--model", model, "--cache", str(cache),
         "--threads", str(threads), "--memory-of", weights],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        return {"weights": weights, "error": done.stderr.strip().splitlines()[-1:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="bundled", help="a .gguf file or 'bundled' (TENET_MODEL)")
    parser.add_argument("--prompts", type=int, default=len(PROMPTS), help="how many of the prompts")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--no-memory", action="store_true", help="leave out memory_after_load")
    parser.add_argument("--memory-of", default="", help=argparse.SUPPRESS)  # the child's one load
    add_cache_option(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.memory_of:
        print(json.dumps(_memory_after_load(args.model, model_cache(args.cache), args.memory_of)))
        return 0

    from inference.loader import load_model
    from inference.weights.build import build_forward
    from inference.weights.gguf_q4 import Q4Blocks, finer_names
    from inference.weights.select import gguf_blocks

    cache = model_cache(args.cache)
    loaded = load_model(args.model, cache_root=cache, weights="float32")
    model, tokenizer = loaded.model, loaded.tokenizer
    gguf = Path(args.model) if str(args.model).endswith(".gguf") else _bundled_gguf(args.model)
    blocks = gguf_blocks(model.config, gguf)
    if not isinstance(blocks, Q4Blocks):
        print(json.dumps({"benchmark": "gguf_int4", "model": loaded.identity.name, "error": "not a GGUF model"}))
        return 1
    with torch.inference_mode():
        references = []
        for prompt in PROMPTS[: max(1, args.prompts)]:
            ids = tokenizer(prompt, return_tensors="pt").input_ids
            references.append((ids, model(input_ids=ids).logits[0].float()))
        report: dict[str, Any] = {
            "benchmark": "gguf_int4",
            "model": loaded.identity.name,
            "q4_projections": len(blocks),
            "finer_projections": len(finer_names(blocks)),
        }
        four_bit = {name: blocks[name] for name in blocks}  # a plain mapping names nothing finer
        for label, variant in (("int4_served", blocks), ("int4_all_four_bit", four_bit)):
            forward, _ = build_forward(model, "int4", variant)
            report[label] = _gap(model, forward, references)
            del forward
    if not args.no_memory:
        report["memory_after_load"] = {
            weights: _memory_in_fresh_process(args.model, cache, weights, args.threads)
            for weights in ("float32", "int4")
        }
    print(json.dumps(report))
    return 0


def _bundled_gguf(reference: str) -> Path:
    """The bundled model's GGUF file (the only non-file reference this bench takes)."""
    if reference != "bundled":
        raise SystemExit(f"--model takes a .gguf file or 'bundled', not {reference!r}")
    from inference.loader import bundled_gguf_path

    return Path(bundled_gguf_path())


if __name__ == "__main__":
    sys.exit(main())
