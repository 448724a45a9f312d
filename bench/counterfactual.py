"""Counterfactual check coverage: how many of the claims the judge meets get a contrast.

``python -m bench.counterfactual [--share 0.05] [--width 4] [--tokens 96] [--flagship]``

A fixed set of evidence-backed requests (facts with companies, people,
countries, amounts and dates, a lexicon for entity swaps) is decoded with
counterfactual checks on and the FLOPs cap at ``--share``. Printed (one JSON
object on the last line): the checks the judge wanted (a complete claim that
states a domain fact with evidence shown), how many were scored or skipped,
and how often a scored claim was met again; the share of the answers'
fact-stating steps that carry a contrast (each one without is named on
stderr); and the counterfactual FLOPs share actually spent (over every other
FLOPs purpose counted: prefill, decode, forced runs).

A step states a fact as the judge decides it wants a check
(``pruning.step_states_fact``): it names a label, a number or a date and is
no junk (a fragment, a repetition the entropy rule flagged).

``--flagship`` runs the AML analyst's request of the acceptance
walk-throughs instead (SCENARIOS.md flow 1, ``bench.latency.ANALYST_PROMPT``)
through the service's ``Reasoner`` on the bundled ``aml`` ontology, steered,
with the service's own budget and options (``--tokens`` new tokens): the
JSON line says whether the budget turned the checks on, the answer's
fact-stating steps (decision and grounds included), how many carry a
contrast, and the request's ``counterfactual_scored`` / skipped / share.

Checks are counted once per (branch, claim): ``checks_wanted`` distinct
claims, of which ``checks_scored`` got a contrast and ``checks_skipped``
none (``skip_reasons``: why); ``checks_reused`` counts the later meetings of
an already scored claim by other beams.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import torch

from bench.model_cache import add_cache_option, model_cache
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph

__all__ = ["CASES", "main"]

LEXICON = {
    "Malta": "Country",
    "Cyprus": "Country",
    "Ireland": "Country",
    "Acme Ltd": "Company",
    "Globex Corp": "Company",
    "Initech": "Company",
    "Jon Doe": "Person",
    "Mary Major": "Person",
}


def _fact(fid: str, subject: str, obj: str, text: str, view: str) -> EvidenceFact:
    return EvidenceFact(
        id=fid,
        subject=subject,
        predicate="related",
        object=obj,
        text=text,
        view=view,
        score=1.0,
        hops=1,
        ontology_version="v1",
        modified="2024-05-11",
    )


def _case(request: str, view: str, facts: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    made = tuple(_fact(f"E{i + 1}", s, o, t, view) for i, (s, o, t) in enumerate(facts))
    return {
        "request": request,
        "evidence": [EvidenceSubgraph(view=view, relevance=1.0, seeds=(), facts=made)],
    }


CASES = [
    _case(
        "Where did Acme Ltd send the money, and how much?",
        "fund_flow",
        [
            ("Acme Ltd", "Jon Doe", "Acme Ltd sent EUR 2,000,000 to Jon Doe on 2024-03-02."),
            ("Jon Doe", "Malta", "Jon Doe holds an account in Malta."),
        ],
    ),
    _case(
        "Which company owns Initech and where is it registered?",
        "ownership",
        [
            ("Globex Corp", "Initech", "Globex Corp owns 75 percent of Initech."),
            ("Globex Corp", "Cyprus", "Globex Corp is registered in Cyprus since 2019-07-01."),
        ],
    ),
    _case(
        "Summarise the payments made by Mary Major.",
        "payments",
        [
            ("Mary Major", "Acme Ltd", "Mary Major paid EUR 12,500 to Acme Ltd on 2023-11-20."),
            ("Mary Major", "Initech", "Mary Major paid EUR 4,000 to Initech on 2024-01-15."),
            ("Mary Major", "Ireland", "Mary Major lives in Ireland."),
        ],
    ),
    _case(
        "Is Jon Doe connected to Globex Corp?",
        "links",
        [
            ("Jon Doe", "Globex Corp", "Jon Doe was a director of Globex Corp until 2022-12-31."),
            ("Globex Corp", "Malta", "Globex Corp has a subsidiary in Malta."),
        ],
    ),
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--share", type=float, default=0.05, help="counterfactual FLOPs cap")
    parser.add_argument("--width", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--flagship", action="store_true", help="the AML analyst's request instead")
    add_cache_option(parser)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.flagship:
        print(json.dumps(_flagship(args.tokens, args.cache), ensure_ascii=False))
        return 0

    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.loader import load_model
    from inference.prompting import plan_prompt

    lm = load_model("bundled", cache_root=model_cache(args.cache))
    scored = skipped = reused = wanted = fact_steps = contrasted = 0
    reasons: dict[str, int] = {}
    cf_flops = base_flops = 0.0
    for case in CASES:
        plan = plan_prompt(lm.tokenizer, case["request"], [], case["evidence"])
        result = decode(
            lm.model,
            lm.tokenizer,
            plan,
            options=DecodeOptions(
                width=args.width,
                max_new_tokens=args.tokens,
                counterfactual_checks=True,
                counterfactual_flops_share=args.share,
                prune=False,
            ),
            lexicon=LEXICON,
            request_text=case["request"],
        )
        p = result.pruning
        scored += p.counterfactual_scored
        skipped += p.counterfactual_skipped
        reused += p.counterfactual_reused
        wanted += p.counterfactual_wanted
        for reason, n in p.counterfactual_skip_reasons.items():
            reasons[reason] = reasons.get(reason, 0) + n
        labels = _labels(case)
        for step in result.steps:
            if _states_fact(step, labels):
                fact_steps += 1
                contrasted += int(step.contrast is not None)
                if step.contrast is None:
                    print(f"no contrast: {step.text!r} ({step.violation})", file=sys.stderr)
            elif step.contrast is not None:
                print(f"contrast on a step stating no fact: {step.text!r}", file=sys.stderr)
        cf_flops += result.flops.get("counterfactual", 0.0)
        base_flops += sum(v for k, v in result.flops.items() if k != "counterfactual")
    report = {
        "benchmark": "counterfactual_coverage",
        "share_cap": args.share,
        "width": args.width,
        "max_new_tokens": args.tokens,
        "n_requests": len(CASES),
        "checks_wanted": wanted,
        "checks_scored": scored,
        "checks_reused": reused,
        "checks_skipped": skipped,
        "skip_reasons": reasons,
        "check_share": round(scored / wanted, 4) if wanted else 0.0,
        "answer_fact_steps": fact_steps,
        "answer_fact_steps_with_contrast": contrasted,
        "counterfactual_flops_share": round(cf_flops / base_flops, 4) if base_flops else 0.0,
    }
    print(json.dumps(report))
    return 0


def _flagship(tokens: int, cache: Path | None) -> dict[str, Any]:
    """The analyst's request through the service's reasoner (see the module doc)."""
    from bench.latency import ANALYST_PROMPT, _index
    from inference.loader import load_model
    from inference.pipeline import Reasoner, ReasonOptions
    from inference.prefix_cache import PrefixCache

    lm = load_model("bundled", cache_root=model_cache(cache))
    reasoner = Reasoner(lm, prefix_cache=PrefixCache())
    index = _index("aml")
    plan = reasoner.plan(
        ANALYST_PROMPT,
        options=ReasonOptions(max_new_tokens=tokens, steering=True),
        domain_index=index,
        tenant="bench-counterfactual",
    )
    result = reasoner.run(plan, tenant="bench-counterfactual")
    decoded = result.decode
    labels = _step_labels(
        [*plan.entities, *(x for b in plan.branches for f in b.facts for x in (f.subject, f.object))]
    )
    steps = result.answer_steps
    facts = [s for s in steps if _states_fact(s, labels)]
    for step in facts:
        if step.contrast is None:
            print(f"no contrast: [{step.kind}] {step.text!r}", file=sys.stderr)
    pruning = decoded.pruning if decoded is not None else None
    return {
        "benchmark": "counterfactual_flagship",
        "scenario": "analyst/aml",
        "max_new_tokens": tokens,
        "width": plan.decode_options.width,
        "checks_on_by_budget": plan.budget.counterfactual_checks,
        "answer_steps": len(steps),
        "answer_fact_steps": len(facts),
        "answer_fact_steps_with_contrast": sum(1 for s in facts if s.contrast is not None),
        "fact_steps_by_kind": {k: sum(1 for s in facts if s.kind == k) for k in sorted({s.kind for s in facts})},
        "counterfactual_wanted": pruning.counterfactual_wanted if pruning else 0,
        "counterfactual_scored": pruning.counterfactual_scored if pruning else 0,
        "counterfactual_skipped": pruning.counterfactual_skipped if pruning else 0,
        "skip_reasons": dict(pruning.counterfactual_skip_reasons) if pruning else {},
        "counterfactual_flops_share": round(decoded.counterfactual_flops_share, 4) if decoded else 0.0,
        "contrasts": [[s.kind, s.text.strip(), round(s.contrast, 3) if s.contrast is not None else None,
                       s.contrast_variant] for s in facts],
        "answer": result.answer,
    }


def _states_fact(step: Any, labels: Sequence[str]) -> bool:
    """The step states a fact (``pruning.step_states_fact``, the judge's own test): it names
    one of ``labels``, a number or a date, and is no junk (a fragment, a repetition)."""
    from inference.decoder.pruning import step_states_fact

    return step_states_fact(step.text, step.violation, labels)


def _labels(case: dict[str, Any]) -> list[str]:
    """The labels a step of ``case`` may name: the lexicon's and its evidence's (as the judge)."""
    return _step_labels(
        [*LEXICON, *(x for g in case["evidence"] for f in g.facts for x in (f.subject, f.object))]
    )


def _step_labels(names: Iterable[str]) -> list[str]:
    """The names a fact-stating step is matched against (``_states_fact``), longest first: each
    once, none shorter than three characters, no IRI."""
    found = {n for n in names if len(n) >= 3 and not n.startswith(("http", "urn:"))}
    return sorted(found, key=len, reverse=True)


if __name__ == "__main__":
    raise SystemExit(main())
