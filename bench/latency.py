"""Latency of the analyst's question: one ``POST /v1/reason`` on the ``aml`` domain, end to end.

``python -m bench.latency [--runs 5] [--new-tokens 96] [--beams N] [--threads N] [--reference] [--no-drafts] [--cache DIR]``

The request is the AML analyst's of the acceptance walk-throughs (a
transfer to a PEP, asked whether to escalate, with a length limit, cited
rules and a citation window), steered, 96 new tokens, every other option
as the service's defaults decide. It runs in process through the same
objects the service's ``/v1/reason`` uses (``inference.pipeline.Reasoner``
over one loaded model behind a ``MicroBatcher`` and a tenant's prefix
cache, the bundled ``aml`` ontology ingested as an upload is), so what is
timed is planning (analysis, evidence, decision), prefill, decode and
verification, without HTTP, authentication and the database row.

One warm-up run (it loads spaCy and the query machinery and fills the
prefix cache, as the service's first request does), then ``--runs`` timed
runs; the figures are medians. ``answer_identical`` says whether every
timed run gave the same answer text (the decode is deterministic). With
``--reference`` each round also runs the path before the fast paths of
issue 35, before the default run, so both see the same load: the one-token
decode loop (``DecodeOptions.forced_runs`` off: every forced token its own
forward pass) and each branch prefilling all of its evidence
(``DecodeOptions.shared_evidence`` off: no block of the facts every branch
shows, prefilled once and forked), every row fed every step
(``DecodeOptions.drop_finished`` off) and no shared evidence kept in the
prefix cache (``DecodeOptions.reuse_parts`` off), on a ``Reasoner`` that compacts no
evidence (``Reasoner.evidence_compact_tokens`` None: every fact the evidence
stage chose, ``reasoning.evidence.compact``).

The last stdout line is one JSON object: ``p50_s`` (wall seconds of a
run), ``runs_s``, ``stages_ms`` (median per stage: the plan's stages,
``prefill``, ``decode``, ``verify``), ``decode`` (forward seconds,
positions decoded, forward passes, positions the steering forced and
positions prompt lookup guessed that the search took (``forced_tokens``,
``draft_tokens``), guessed positions fed (``draft_fed``), their share taken
(``draft_acceptance``), positions per forward pass (``tokens_per_forward``),
generated tokens, prompt tokens, ``prefill_gflop`` (the
prefill's work: shared parts count once), prefix cache hit, the steps
pruned per rule (``pruned``), ``repairs``, ``unrepaired`` and how the
answer ended (``end``): what decides whether an answer stops after its
grounds),
``evidence_tokens`` (estimated tokens of the facts the branches show, summed
over branches; ``subgraph.estimate_tokens``),
``num_beams``, ``answer``, ``answer_identical``; with ``--reference``
also ``reference`` (the same figures of the one-token loop),
``speedup_p50`` and ``answer_same_as_reference``; with ``--no-drafts`` also
``no_drafts`` (the fast path with ``DecodeOptions.draft_tokens`` 0, run
after the reference in each round), ``drafts_speedup_p50`` and
``answer_same_without_drafts``; then
``max_new_tokens``, ``threads`` and ``weights``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from typing import Any

import msgspec
import torch

from bench.model_cache import add_cache_option, model_cache
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.runner import ModelRunner
from inference.loader import load_model
from inference.pipeline import Reasoner, ReasonOptions, ReasonResult
from inference.prefix_cache import PrefixCache
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.compact import fact_tokens
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology

__all__ = ["ANALYST_PROMPT", "main"]

#: The analyst's question (SCENARIOS.md, flow 1), word for word.
ANALYST_PROMPT = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our "
    "PEP list. Should this be escalated? Answer in under 80 words, cite the rules you rely on, and "
    "do not cite rules in force before 2020."
)
_DOMAIN = "aml"
_TENANT = "bench-latency"


def _index(domain: str) -> OntologyIndex:
    for name, path in bundled_domains():
        if name == domain:
            return ingest_ontology(path.read_bytes(), "text/turtle").index.with_version(f"{domain}-bench")
    raise SystemExit(f"no bundled domain {domain!r}")


def _run(
    reasoner: Reasoner,
    index: OntologyIndex,
    options: ReasonOptions,
    *,
    reference: bool = False,
    drafts: bool = True,
) -> tuple[float, int, ReasonResult, int]:
    """Wall seconds of one run (plan and decode), its beam width, its result and its evidence
    tokens (estimated, over every branch).

    ``reference`` decodes as before issue 35's fast paths: the one-token loop
    (``DecodeOptions.forced_runs``), every branch prefilling all its evidence
    (``DecodeOptions.shared_evidence``), every row fed every step
    (``drop_finished``), no evidence part kept in the prefix cache (``reuse_parts``). ``drafts`` False decodes the fast path
    without prompt-lookup guesses (``DecodeOptions.draft_tokens`` 0).
    """
    t0 = time.perf_counter()
    plan = reasoner.plan(ANALYST_PROMPT, options=options, domain_index=index, tenant=_TENANT)
    if reference:
        plan = dataclasses.replace(
            plan,
            decode_options=msgspec.structs.replace(
                plan.decode_options,
                forced_runs=False,
                shared_evidence=False,
                drop_finished=False,
                reuse_parts=False,
            ),
        )
    elif not drafts:
        plan = dataclasses.replace(
            plan, decode_options=msgspec.structs.replace(plan.decode_options, draft_tokens=0)
        )
    result = reasoner.run(plan, tenant=_TENANT)
    evidence = sum(fact_tokens(spec.facts) for spec in plan.branches)
    return time.perf_counter() - t0, plan.decode_options.width, result, evidence


def _summary(runs: list[tuple[float, int, ReasonResult, int]]) -> dict[str, Any]:
    """Median wall seconds and stages of ``runs``, the last run's decode figures and answer."""
    walls = [w for w, _, _, _ in runs]
    results = [r for _, _, r, _ in runs]
    stages = sorted({k for r in results for k in r.timings})
    last = results[-1]
    return {
        "p50_s": round(statistics.median(walls), 3),
        "runs_s": [round(w, 3) for w in walls],
        "stages_ms": {k: round(statistics.median(r.timings.get(k, 0.0) for r in results), 1) for k in stages},
        "decode": _decode_figures(last),
        "num_beams": runs[-1][1],
        "evidence_tokens": runs[-1][3],
        "status": str(last.status),
        "answer": last.answer,
        "answer_identical": all(r.answer == last.answer for r in results),
    }


def _decode_figures(result: ReasonResult) -> dict[str, Any]:
    d = result.decode
    if d is None:
        return {}
    return {
        "forward_s": round(d.timings.forward_s, 4),
        "constraint_check_s": round(d.timings.constraint_check_s, 4),
        "decode_steps": d.decode_steps,
        "decode_forwards": d.decode_forwards,
        "forced_tokens": d.forced_tokens,
        "draft_tokens": d.draft_tokens,
        "draft_fed": d.draft_fed,
        "draft_acceptance": round(d.draft_tokens / d.draft_fed, 3) if d.draft_fed else None,
        "tokens_per_forward": round(d.decode_steps / d.decode_forwards, 3) if d.decode_forwards else None,
        "generated_tokens": d.generated_tokens,
        "prompt_tokens": d.prompt_tokens,
        "prefill_gflop": round(d.flops.get("prefill", 0.0) / 1e9, 1),
        "prefix_cache_hit": d.prefix_cache_hit,
        "branches": len(d.branches),
        "violations": list(d.violations),
        # Why an answer ends where it does: steps pruned per rule, repaired, left out.
        "pruned": dict(d.pruning.pruned),
        "repairs": d.pruning.repairs,
        "unrepaired": d.pruning.unrepaired,
        "end": str(d.end),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs after the warm-up (default 5)")
    parser.add_argument("--new-tokens", type=int, default=96, help="options.max_new_tokens (default 96)")
    parser.add_argument("--beams", type=int, default=None, help="options.num_beams (default: the budget's)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--weights", default="auto", help="weight format (default auto, as the service)")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also time the path before issue 35 (forced runs and shared evidence off), paired run by run",
    )
    parser.add_argument(
        "--no-drafts",
        action="store_true",
        help="also time the fast path without prompt-lookup drafts (draft_tokens 0), paired run by run",
    )
    add_cache_option(parser)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_model("bundled", cache_root=model_cache(args.cache), weights=args.weights)
    batcher = MicroBatcher(model.model, ModelRunner(model.model).call, max_rows=128, max_wait_s=0.002)
    reasoner = Reasoner(model, prefix_cache=PrefixCache(), batcher=batcher)
    index = _index(_DOMAIN)
    options = ReasonOptions(max_new_tokens=args.new_tokens, num_beams=args.beams, steering=True)
    before = Reasoner(model, prefix_cache=reasoner.prefix_cache, batcher=batcher, evidence_compact_tokens=None)
    fast: list[tuple[float, int, ReasonResult, int]] = []
    reference: list[tuple[float, int, ReasonResult, int]] = []
    undrafted: list[tuple[float, int, ReasonResult, int]] = []
    try:
        _run(reasoner, index, options)  # warm-up: loads, caches the shared prefix
        for _ in range(args.runs):
            if args.reference:  # paired: the same load for both, round by round
                reference.append(_run(before, index, options, reference=True))
            if args.no_drafts:
                undrafted.append(_run(reasoner, index, options, drafts=False))
            fast.append(_run(reasoner, index, options))
    finally:
        batcher.close()
    out: dict[str, Any] = {"bench": "latency", "scenario": "analyst/aml", **_summary(fast)}
    if reference:
        ref = _summary(reference)
        out["reference"] = ref
        out["speedup_p50"] = round(ref["p50_s"] / out["p50_s"], 3) if out["p50_s"] else None
        out["answer_same_as_reference"] = ref["answer"] == out["answer"]
    if undrafted:
        plain = _summary(undrafted)
        out["no_drafts"] = plain
        out["drafts_speedup_p50"] = round(plain["p50_s"] / out["p50_s"], 3) if out["p50_s"] else None
        out["answer_same_without_drafts"] = plain["answer"] == out["answer"]
    out.update(
        max_new_tokens=args.new_tokens,
        threads=torch.get_num_threads(),
        weights=model.weights.weights,
    )
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
