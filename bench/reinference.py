"""Partial against full re-run latency when a premise is retracted (or amended).

Run ``python -m bench.reinference [--quick]``.

Scenario: SCENARIOS.md flow 1 on the bundled AML domain with the bundled
model, greedy (one beam). The first run decodes every branch (one per
evidence view with facts, plus ``assumptions`` for premises no view's
evidence relates to). Then the tax-rate premise -- used by exactly one
branch -- is retracted, and the same re-planned request is answered twice in
the same process, alternately, ``repeats`` times:

- partial: ``Reasoner.rerun(first, plan)``, which decodes only the branches
  whose prompt changed and reuses the others (what a session turn does);
- full: ``Reasoner.run(plan)``, every branch decoded again.

Both include re-planning (analysis, evidence, branch layout), as a session
turn does; both share one prefix KV cache, as the service does. Reported:
medians ``partial_ms`` and ``full_ms``, ``ratio`` (partial / full), and
``same_answer`` (the partial answer equals the full re-run's, every repeat).
Without ``--quick`` the same figures for an amendment of the premise (20% ->
25%, which recomputes the branch instead of dropping it) are reported under
``amendment``. ``--quick``: 32 new tokens, one repeat, no amendment. The last
stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["PROMPT", "main", "measure"]

PROMPT = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on "
    "our PEP list. Should this be escalated? Answer in under 80 words, cite the rules you rely "
    "on, and do not cite rules in force before 2020."
)


def _timed(work: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    out = work()
    return out, (time.perf_counter() - started) * 1000.0


def _compare(reasoner: Any, first: Any, index: Any, options: Any, repeats: int, **change: Any) -> dict[str, Any]:
    """Alternate partial and full re-runs of the changed request; medians and agreement.

    ``rerun`` decodes exactly the branches whose prompt changed (an amended
    premise's new text changes the branch key) and reuses the rest.
    """
    partial_ms: list[float] = []
    full_ms: list[float] = []
    same: list[bool] = []
    partial = full = None
    for _ in range(repeats):
        partial, p_ms = _timed(lambda: reasoner.rerun(
            first, reasoner.plan(PROMPT, options=options, domain_index=index, **change), tenant="bench"))
        full, f_ms = _timed(lambda: reasoner.run(
            reasoner.plan(PROMPT, options=options, domain_index=index, **change), tenant="bench"))
        partial_ms.append(p_ms)
        full_ms.append(f_ms)
        same.append(partial.answer == full.answer)
    assert partial is not None and full is not None
    p, f = statistics.median(partial_ms), statistics.median(full_ms)
    return {
        "partial_ms": round(p, 1),
        "full_ms": round(f, 1),
        "ratio": round(p / f, 3) if f > 0 else None,
        "same_answer": all(same),
        "recomputed": list(partial.recomputed),
        "reused": list(partial.reused),
        "branches_full": [b.view for b in full.branch_specs],
        "partial_decode_ms": partial.timings.get("decode", 0.0),
        "full_decode_ms": full.timings.get("decode", 0.0),
        "runs_ms": {"partial": [round(x, 1) for x in partial_ms], "full": [round(x, 1) for x in full_ms]},
    }


def measure(*, quick: bool, cache_root: Path) -> dict[str, Any]:
    from inference.loader import load_model
    from inference.pipeline import Reasoner, ReasonOptions
    from inference.prefix_cache import PrefixCache
    from reasoning.evidence.bundled import bundled_domains
    from reasoning.evidence.ingest import ingest_ontology

    started = time.perf_counter()
    loaded = load_model("bundled", device="cpu", cache_root=cache_root)
    aml = dict(bundled_domains())["aml"]
    index = ingest_ontology(aml.read_bytes(), "text/turtle").index
    reasoner = Reasoner(model=loaded, prefix_cache=PrefixCache())
    options = ReasonOptions(num_beams=1, max_new_tokens=32 if quick else 96)
    repeats = 1 if quick else 3

    plan = reasoner.plan(PROMPT, options=options, domain_index=index)
    [tax] = [p for p in plan.premises if "tax" in p.topic]
    users = [b.view for b in plan.branches if tax.id in b.premise_ids]
    first, first_ms = _timed(lambda: reasoner.run(plan, tenant="bench"))

    retraction = _compare(reasoner, first, index, options, repeats, excluded_premise_ids=(tax.id,))
    amendment = None
    if not quick:
        amendment = _compare(reasoner, first, index, options, repeats,
                             premise_overrides={tax.id: tax.text.replace("20%", "25%")})
    return {
        "benchmark": "reinference",
        "quick": quick,
        "model": loaded.identity.name,
        "device": str(loaded.device),
        "scenario": "SCENARIOS.md flow 1, bundled aml domain, retract the tax-rate premise",
        "decode": {"num_beams": options.num_beams, "max_new_tokens": options.max_new_tokens, "repeats": repeats},
        "branches": [b.view for b in plan.branches],
        "premise_branches": users,
        "first_run_ms": round(first_ms, 1),
        "partial_ms": retraction["partial_ms"],
        "full_ms": retraction["full_ms"],
        "ratio": retraction["ratio"],
        "same_answer": retraction["same_answer"],
        "target_ratio": 0.40,
        "retraction": retraction,
        "amendment": amendment,
        "wall_s": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter generations, one repeat (< 5 minutes)")
    parser.add_argument("--cache-root", type=Path, default=Path("var/models"),
                        help="safetensors cache of the bundled model (built on first use)")
    args = parser.parse_args(argv)
    print(json.dumps(measure(quick=args.quick, cache_root=args.cache_root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
