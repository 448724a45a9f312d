"""Decode throughput: our beam search against ``model.generate(num_beams=k)``.

``python -m bench.throughput [--quick] [--limit N] [--width K] [--new-tokens T]
[--device auto|cpu|cuda] [--widths 1,4,16] [--threads N] [--library-forward] [--model REF]
[--lean-weights FORMAT]``

``--model`` takes any model reference ``TENET_MODEL`` takes (default the bundled model).
``forwards_width1`` times our unsteered width-1 decode of the first prompt through the
lean forward and through the library forward over the same (float32) weights, in the
same run; ``--lean-weights int4`` (or another format) also loads the model in that
format and times its lean forward, against the same library float32 figure (what a
model the lean forward could not compute was served with).

``--weights all`` (or a list such as ``float32,int4``) compares the weight
formats instead: speed per width, peak memory, KL divergence from float32,
HF ``generate`` and llama.cpp baselines (:mod:`bench.weight_formats`).

Prompts: every k-th row of ``bench/data/ifeval/input_data.jsonl`` (a fixed,
evenly spaced sample, no hand-picking), each wrapped by our prompt builder
with its IFEval constraints restated and, where ``compile_steering`` accepts
them, steered by the real token controllers; plus the AML scenario of
SCENARIOS.md with three evidence views (facts written into this file, not
retrieved) so that branches, evidence-chain pruning and counterfactual
scoring run.

Fairness: both decoders get the same prompt token ids, width, and exactly
``T`` new tokens (``min_new_tokens == max_new_tokens``, EOS masked in both;
a steering that ends a beam earlier only makes ours do less). Wall time
includes prefill for both. Tokens per second = new tokens of the returned
sequence / wall seconds, summed over prompts. Both run in the same process
with the same torch thread count (``--threads``, default 1: on a shared
2-core machine more threads oversubscribe and make timings noise).

Reported shares: ``constraint_check_share`` = seconds in steering
apply / advance and partial verification / decode seconds;
``forward_share`` = host seconds inside the decode forwards / decode seconds
(the rest is our selection and bookkeeping; on an accelerator the forward's
host time is its launch time); ``counterfactual_flops_share`` = counterfactual scoring FLOPs / (prefill +
decode FLOPs), with FLOPs = 2 x parameters x tokens per forward.

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from bench.datasets import IFEVAL_PROMPTS
from bench.model_cache import add_cache_option, model_cache
from bench.timed_decode import steered_prompts, steering_or_none, timed_decode, timed_generate

__all__ = ["AML_REQUEST", "aml_views", "main"]

DATA = IFEVAL_PROMPTS
AML_REQUEST = (
    "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated? "
    "Answer in under 80 words and cite the rules you rely on."
)


def aml_views() -> list[Any]:
    """Three evidence views of the AML scenario (fixed facts, for a reproducible benchmark)."""
    from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph

    def fact(
        fid: str, view: str, text: str, modified: str, stale: str | None = None
    ) -> EvidenceFact:
        return EvidenceFact(
            id=fid,
            subject="",
            predicate="",
            object="",
            text=text,
            view=view,
            score=1.0,
            hops=1,
            ontology_version="bench",
            modified=modified,
            stale_hint=stale,
        )

    return [
        EvidenceSubgraph(
            view="compliance",
            relevance=0.9,
            seeds=("Jon Doe",),
            facts=(
                fact(
                    "E1",
                    "compliance",
                    "Rule AML-7 requires escalation of transfers above EUR 1,000,000 to a PEP.",
                    "2021-03-01",
                ),
                fact(
                    "E2",
                    "compliance",
                    "Jon Doe is listed as a PEP.",
                    "2024-05-11",
                    "PEP list last updated 2024-05-11",
                ),
            ),
        ),
        EvidenceSubgraph(
            view="fund_flow",
            relevance=0.7,
            seeds=("Acme Ltd",),
            facts=(
                fact("E3", "fund_flow", "Acme Ltd sent EUR 2,000,000 to Jon Doe.", "2025-01-10"),
                fact("E4", "fund_flow", "Acme Ltd is registered in Cyprus.", "2023-06-30"),
            ),
        ),
        EvidenceSubgraph(
            view="entity_relations",
            relevance=0.5,
            seeds=("Acme Ltd", "Jon Doe"),
            facts=(
                fact("E5", "entity_relations", "Jon Doe is a director of Acme Ltd.", "2022-09-14"),
            ),
        ),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="3 prompts x 24 tokens (< 3 min on this CPU)"
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="number of IFEval prompts (default 12, quick 3)"
    )
    parser.add_argument("--width", type=int, default=4)
    parser.add_argument(
        "--new-tokens", type=int, default=None, help="new tokens per prompt (default 64, quick 32)"
    )
    parser.add_argument("--device", default="auto")
    parser.add_argument(
        "--widths", default="", help="also report our tokens/s at these widths, e.g. 1,4,16"
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--library-forward",
        action="store_true",
        help="decode ours through the model's library forward, as generate, not the packed one",
    )
    parser.add_argument("--data", type=Path, default=DATA, help="IFEval input_data.jsonl")
    parser.add_argument(
        "--model",
        default="bundled",
        help="the model: 'bundled', a model directory or a .gguf file (TENET_MODEL)",
    )
    parser.add_argument(
        "--weights",
        default="",
        help="compare weight formats instead (all, or e.g. float32,int4): see bench.weight_formats",
    )
    parser.add_argument(
        "--lean-weights",
        default="",
        help="also time the lean forward of the model loaded in this format (e.g. int4) at width 1",
    )
    add_cache_option(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.weights:
        from bench.weight_formats import compare_formats
        from inference.weights.formats import WEIGHT_FORMATS, check_weights

        names = WEIGHT_FORMATS if args.weights == "all" else args.weights.split(",")
        formats = [check_weights(name) for name in names]
        device = "cuda" if args.device == "cuda" else "cpu"
        report = compare_formats(
            formats,
            quick=args.quick,
            threads=args.threads,
            cache=model_cache(args.cache),
            data=args.data,
            device=device,
            widths=args.widths or "1,4,16",
        )
        print(json.dumps(report))
        return 0
    torch.manual_seed(0)

    from inference.decoder.packed_llama import packed_forward
    from inference.loader import load_model
    from inference.prompting import plan_prompt

    lm = load_model(args.model, device=args.device, cache_root=model_cache(args.cache))
    model, tok = lm.model, lm.tokenizer
    new = args.new_tokens or (24 if args.quick else 64)
    prompts = steered_prompts(args.limit or (3 if args.quick else 12), args.data)
    pad = int(tok.pad_token_id)
    warm = plan_prompt(tok, "Say hello.")
    packed = not args.library_forward
    forward = "packed" if packed and packed_forward(model) is not None else "library"
    timed_decode(model, tok, warm, None, [], args.width, 4, "", False, lm.device, packed)
    timed_generate(model, warm.branch_ids(0), args.width, 4, pad, lm.device)

    ours_tok = ours_s = gen_tok = gen_s = decode_s = check_s = forward_s = 0.0
    flops = {"prefill": 0.0, "decode": 0.0, "counterfactual": 0.0}
    per_prompt = []
    cf_scored = cf_skipped = 0
    for item in prompts:
        plan = plan_prompt(tok, item["prompt"], item["constraints"])
        steering = steering_or_none(item["constraints"], tok, item["prompt"], new, lm.device)
        n_ours, t_ours, result = timed_decode(
            model,
            tok,
            plan,
            steering,
            item["constraints"],
            args.width,
            new,
            item["prompt"],
            False,
            lm.device,
            packed,
        )
        n_gen, t_gen = timed_generate(model, plan.branch_ids(0), args.width, new, pad, lm.device)
        ours_tok, ours_s, gen_tok, gen_s = (
            ours_tok + n_ours,
            ours_s + t_ours,
            gen_tok + n_gen,
            gen_s + t_gen,
        )
        decode_s += result.timings.decode_s
        check_s += result.timings.constraint_check_s
        forward_s += result.timings.forward_s
        for key in flops:
            flops[key] += result.flops.get(key, 0.0)
        per_prompt.append(
            {
                "key": item["key"],
                "steered": steering is not None,
                "ours_tps": round(n_ours / t_ours, 2),
                "generate_tps": round(n_gen / t_gen, 2),
            }
        )

    aml = plan_prompt(tok, AML_REQUEST, [], aml_views())
    _, t_aml, aml_result = timed_decode(
        model, tok, aml, None, [], args.width, new, AML_REQUEST, True, lm.device, packed
    )
    for key in flops:
        flops[key] += aml_result.flops.get(key, 0.0)
    decode_s += aml_result.timings.decode_s
    check_s += aml_result.timings.constraint_check_s
    forward_s += aml_result.timings.forward_s
    cf_scored += aml_result.pruning.counterfactual_scored
    cf_skipped += aml_result.pruning.counterfactual_skipped

    widths = {}
    for width in [int(w) for w in args.widths.split(",") if w.strip()]:
        plan = plan_prompt(tok, prompts[0]["prompt"])
        n, t, _ = timed_decode(model, tok, plan, None, [], width, new, "", False, lm.device, packed)
        widths[str(width)] = round(n / t, 2)

    forwards: dict[str, float] = {}
    if packed_forward(model) is not None:  # the lean forward against the library's, width 1
        plan = plan_prompt(tok, prompts[0]["prompt"])
        for name, lean in (("lean", True), ("library", False)):
            n, t, _ = timed_decode(model, tok, plan, None, [], 1, new, "", False, lm.device, lean)
            forwards[name] = round(n / t, 2)
        forwards["ratio"] = round(forwards["lean"] / forwards["library"], 3)
        if args.lean_weights:
            other = load_model(
                args.model, device=args.device, cache_root=model_cache(args.cache), weights=args.lean_weights
            )
            timed_decode(other.model, tok, warm, None, [], 1, 4, "", False, other.device, True)
            n, t, _ = timed_decode(other.model, tok, plan, None, [], 1, new, "", False, other.device, True)
            fmt = other.identity.weights
            forwards[f"lean_{fmt}"] = round(n / t, 2)
            forwards[f"ratio_lean_{fmt}_vs_library"] = round(forwards[f"lean_{fmt}"] / forwards["library"], 3)
            del other

    tps_ours = ours_tok / ours_s if ours_s else 0.0
    tps_gen = gen_tok / gen_s if gen_s else 0.0
    base = flops["prefill"] + flops["decode"]
    report = {
        "model": lm.identity.name,
        "vocab_size": int(model.get_output_embeddings().out_features),
        "device": str(lm.device),
        "dtype": lm.identity.dtype,
        "forward": forward,
        "threads": args.threads,
        "width": args.width,
        "new_tokens": new,
        "n_prompts": len(prompts),
        "tokens_per_s_ours": round(tps_ours, 2),
        "tokens_per_s_generate": round(tps_gen, 2),
        "throughput_ratio": round(tps_ours / tps_gen, 3) if tps_gen else 0.0,
        "constraint_check_share": round(check_s / decode_s, 4) if decode_s else 0.0,
        "forward_share": round(forward_s / decode_s, 4) if decode_s else 0.0,
        "counterfactual_flops_share": round(flops["counterfactual"] / base, 4) if base else 0.0,
        "counterfactual_checks": {"scored": cf_scored, "skipped_by_flops_ration": cf_skipped},
        "aml_branches": len(aml.suffixes),
        "aml_seconds": round(t_aml, 2),
        "aml_pruned": dict(aml_result.pruning.pruned),
        "tokens_per_s_by_width": widths,
        "forwards_width1": forwards,
        "per_prompt": per_prompt,
        "note": "tokens/s: new tokens of the returned sequence per wall second incl. prefill, same prompt ids, "
        "exactly new_tokens each (EOS masked in both); ours includes steering where compile_steering "
        "accepts the prompt's IFEval constraints. forward: packed when ours runs the lean CPU forward with "
        "oneDNN-packed weights (generate always runs the library forward; --library-forward compares "
        "the search alone). forwards_width1: our unsteered decode of the first prompt at width 1 through the lean "
        "forward and through the library forward over the same weights, same run (empty without a lean forward); "
        "lean_<format>: the lean forward of the model loaded in --lean-weights, against the same library figure.",
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
