"""``bench.steering --set PATH``: steering on our own labelled prompts.

Each line of the set (``bench/data/steering_set.jsonl`` by default) is
``{"key", "prompt", "constraints": [{"kind", "params"}, ...]}``: a request
whose instructions are of the constraint form (counts of punctuation,
digits, emoji, numbers, filtered and distinct words, characters; counts per
sentence or line; no list; wrappers; first, last and middle positions;
tables, lists and copies), not IFEval's families, labelled with the
constraints it states.
The labels are the constraints decoded with (this measures steering, not
extraction). Every prompt is decoded twice with the same budget: plain
greedy ``model.generate`` on the raw prompt (steering off) and our decode
(steering on). IFEval's judge has no rule for these instructions, so the
answers are judged by our verifiers (``verify_all``, which decides generic
kinds with the form's verifiers; the JSON says so in ``judge``).
``violations_of_controlled`` counts steered failures of constraints that
``compile_steering`` reported controlled (the guarantee; the target is 0).
``complete_share`` (both arms) and ``steered_ends`` are as in bench.steering.

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.decoding import CHECK_SHARE_NOTE, run_generate, run_steered
from inference.decoder.compile import compile_steering
from inference.decoder.endings import ends_complete, required_closing
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.verifiers import verify_all
from reasoning.errors import ConflictError, LimitExceeded

__all__ = ["SET_DATA", "load_set", "run_set"]

SET_DATA = Path(__file__).resolve().parent / "data" / "steering_set.jsonl"
_BUDGET = 128
_QUICK_BUDGET = 72
_QUICK_STEP = 2  # --quick decodes every second prompt of the set


def load_set(path: Path) -> list[dict[str, Any]]:
    """The labelled prompts of ``path``, their constraints as ``Constraint`` objects."""
    rows: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        raw = json.loads(line)
        constraints = [
            Constraint(id=f"c{index}", kind=Kind(item["kind"]), params=item.get("params", {}))
            for index, item in enumerate(raw["constraints"])
        ]
        rows.append({"key": raw["key"], "prompt": raw["prompt"], "constraints": constraints})
    return rows


def _verdicts(constraints: list[Constraint], text: str) -> list[bool]:
    by_id = {v.constraint_id: v.satisfied for v in verify_all(constraints, text)}
    return [bool(by_id.get(c.id, False)) for c in constraints]


def _summary(verdicts: list[list[bool]]) -> dict[str, Any]:
    flat = [v for vs in verdicts for v in vs]
    return {
        "instruction_strict": round(sum(flat) / len(flat), 4) if flat else 0.0,
        "prompt_strict": round(sum(all(vs) for vs in verdicts) / len(verdicts), 4) if verdicts else 0.0,
        "n_prompts": len(verdicts),
        "n_instructions": len(flat),
    }


def run_set(args: argparse.Namespace, model: Any, tokenizer: Any) -> dict[str, Any]:
    """Decode the set steered and unsteered; the report (see the module doc)."""
    rows = load_set(args.set)
    budget = _QUICK_BUDGET if args.quick else _BUDGET
    if args.max_new_tokens is not None:
        budget = min(budget, args.max_new_tokens)
    if args.quick:
        rows = rows[::_QUICK_STEP]
    if args.limit is not None:
        rows = rows[: args.limit]
    steered_ok: list[list[bool]] = []
    plain_ok: list[list[bool]] = []
    excluded: dict[str, int] = {}
    details: list[dict[str, Any]] = []
    controlled_n = controlled_bad = 0
    check_s = decode_s = 0.0
    complete: dict[str, list[bool]] = {"steered": [], "unsteered": []}
    ends: Counter[str] = Counter()

    def build() -> dict[str, Any]:
        """The report over the prompts decoded so far."""
        return {
            "benchmark": "steering",
            "set": str(args.set),
            "quick": args.quick,
            "width": args.width,
            "max_new_tokens": budget,
            "pruning_enforced": args.prune,
            "judge": "our verifiers (verify_all; generic kinds by the constraint form's verifiers): "
            "IFEval's judge has no rule for these instruction types",
            "selection_rule": ("every second prompt of the set" if args.quick else "every prompt of the set")
            + " (the first --limit N of them); sets compile_steering refuses (needs_confirmation) excluded",
            "n_rows": len(rows),
            "excluded": excluded,
            "steered": _summary(steered_ok),
            "unsteered": _summary(plain_ok),
            "controlled_instructions": controlled_n,
            "violations_of_controlled": controlled_bad,
            "violation_details": details,
            # Answers that end on a sentence end or a closed structure (endings.ends_complete).
            "complete_share": {
                k: round(sum(v) / len(v), 4) if v else 0.0 for k, v in complete.items()
            },
            "steered_ends": dict(ends),
            "constraint_check_share": round(check_s / decode_s, 4) if decode_s else 0.0,
            "constraint_check_note": CHECK_SHARE_NOTE,
        }

    for index, row in enumerate(rows):
        constraints = row["constraints"]
        try:
            steering = compile_steering(constraints, tokenizer, prompt=row["prompt"], max_new_tokens=budget)
        except (ConflictError, LimitExceeded) as refused:
            excluded[type(refused).__name__] = excluded.get(type(refused).__name__, 0) + 1
            continue
        plain_text, _ = run_generate(model, tokenizer, row["prompt"], budget)
        steered = run_steered(model, tokenizer, {**row, "budget": budget}, args.width, args.prune)
        s_ok = _verdicts(constraints, steered["text"])
        p_ok = _verdicts(constraints, plain_text)
        steered_ok.append(s_ok)
        plain_ok.append(p_ok)
        closing = required_closing(constraints)
        complete["steered"].append(ends_complete(steered["text"], closing))
        complete["unsteered"].append(ends_complete(plain_text, closing))
        ends[steered["end"]] += 1
        check_s += steered["check_s"]
        decode_s += steered["decode_s"]
        controlled = [c.id in steering.controlled for c in constraints]
        controlled_n += sum(controlled)
        bad = [c.id for c, ok, ctl in zip(constraints, s_ok, controlled) if ctl and not ok]
        controlled_bad += len(bad)
        failed = [c.id for c, ok in zip(constraints, s_ok) if not ok]
        if failed:
            details.append({"key": row["key"], "failed": failed, "controlled_failed": bad,
                            "text": steered["text"][:300]})
        print(
            f"[{index + 1}/{len(rows)}] key={row['key']} steered={sum(s_ok)}/{len(s_ok)} "
            f"plain={sum(p_ok)}/{len(p_ok)} controlled={sum(controlled)} decode_s={steered['decode_s']:.1f}",
            file=sys.stderr,
            flush=True,
        )
        if args.verbose:
            print(steered["text"][:600], file=sys.stderr)
        if args.progress is not None:
            args.progress.write_text(json.dumps(build()) + "\n")
    return build()

