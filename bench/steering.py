"""Steering benchmark: IFEval accuracy with token controllers on and off.

``python -m bench.steering [--quick] [--skip N] [--limit N] [--width K] [--set PATH]
[--weights F] [--record-gate [--ship]] [--steered-only] [--model REF] [--dump-answers PATH]``

``--dump-answers PATH`` writes each decoded prompt's key and answer texts
(steered, and unsteered unless ``--steered-only``) as JSON lines, so two
trees' answers can be compared as text (a refactor must not change them).

``--model`` takes any model reference ``TENET_MODEL`` takes (a model
directory, a ``.gguf`` file; default the bundled model); the report names
it and its vocabulary size, so ``constraint_check_share`` and the steering
time per step can be compared across vocabularies (49,152 tokens bundled,
262,144 for Gemma 3).

``--weights`` loads the model in a weight format (``TENET_WEIGHTS``; default
float32, the reference); ``--record-gate`` keeps the steered
instruction-strict accuracy for that format in the model cache, where
``auto`` reads the steered-accuracy gate (``inference.weights.gate``: a
format more than one point below float32 on the same sample is not chosen).

``--ship`` (with ``--record-gate``) also writes the figure into the
repository's ``inference/weights/steering_gate.json``, which ``auto``
reads where the model cache holds no figure for a format.

``--steered-only`` decodes only the steered answers (no plain ``generate``,
no throughput pairs; ``unsteered`` and the throughput figures are then
empty): the steered accuracy the gate keeps, in a fraction of the time.

``--set PATH`` runs our own labelled prompts instead (``bench.steering_set``:
instructions of the constraint form, judged by our verifiers).

Selection rule (no hand-picking): every prompt of
``bench/data/ifeval/input_data.jsonl`` whose instructions all map to a
kind of our catalog and for which ``compile_steering`` reports *every*
constraint as controlled (built from IFEval's own kwargs, so this measures
steering, not extraction). Prompts whose constraints contradict each other
(``ConflictError``: the product answers ``needs_confirmation``) are counted
in ``excluded`` and not decoded. ``--quick`` keeps every k-th selected prompt
(a fixed, evenly spaced sample) whose token budget fits the quick cap.

Each selected prompt is decoded twice with the same token budget (large
enough for the prompt's own length bounds): plain greedy ``model.generate``
on the raw prompt (steering off) and our decode (``inference.decoder.decode``:
constraints restated in the prompt, beam search of width K, token
controllers). Answers are judged by IFEval's own rules from the
``if-verifiable`` package, never by our verifiers. Throughput compares our
beam search with ``generate(num_beams=K)`` on the same prompts and budget.

The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from bench.datasets import IFEVAL_PROMPTS
from bench.decoding import CHECK_SHARE_NOTE, run_generate, run_steered
from bench.extraction import label_params
from bench.model_cache import add_cache_option, model_cache
from bench.steering_set import SET_DATA, run_set
from inference.decoder.compile import compile_steering
from inference.decoder.endings import ends_complete, required_closing
from inference.decoder.packed_llama import packed_forward
from inference.decoder.vocab import vocab_tables
from reasoning.constraints.catalog import IFEVAL_TO_KIND
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError, LimitExceeded

__all__ = ["ifeval_constraints", "judge", "main", "select", "token_budget"]

DATA = IFEVAL_PROMPTS
_BASE_BUDGET = 160
_QUICK_CAP = 200
_QUICK_SAMPLE = 10
_FULL_CAP = 700
_TOKENS_PER_WORD = 1.5


def ifeval_constraints(row: dict[str, Any]) -> list[Constraint] | None:
    """Our constraints for an IFEval row, from its kwargs; None if an id has no kind."""
    out: list[Constraint] = []
    for index, (ifeval_id, kwargs) in enumerate(zip(row["instruction_id_list"], row["kwargs"])):
        kind = IFEVAL_TO_KIND.get(ifeval_id)
        if kind is None:
            return None
        params = label_params(ifeval_id, kwargs or {})
        if kind == Kind.CONSTRAINED_RESPONSE:
            from if_verifiable.ifeval.instructions import _CONSTRAINED_RESPONSE_OPTIONS

            params = {"options": list(_CONSTRAINED_RESPONSE_OPTIONS)}
        out.append(Constraint(id=f"c{index}", kind=kind, params=params))
    return out


def token_budget(constraints: Sequence[Constraint]) -> int:
    """Enough new tokens for the prompt's own minimum lengths (and a normal answer)."""
    need = _BASE_BUDGET
    for c in constraints:
        n = int(c.params.get("n", 0) or 0)
        relation = str(c.params.get("relation", ""))
        if c.kind == Kind.WORD_COUNT and relation in ("at least", "more than", "exactly"):
            need = max(need, int(n * _TOKENS_PER_WORD) + 60)
        elif c.kind == Kind.SENTENCE_COUNT and relation in ("at least", "more than", "exactly"):
            need = max(need, n * 24 + 60)
        elif c.kind in (
            Kind.PARAGRAPH_COUNT,
            Kind.NTH_PARAGRAPH_FIRST_WORD,
            Kind.SECTIONS,
            Kind.BULLET_COUNT,
        ):
            need = max(need, n * 48 + 60)
        elif c.kind == Kind.PLACEHOLDERS:
            need = max(need, n * 12 + 120)
        elif c.kind == Kind.REPEAT_PROMPT:
            need = max(need, len(str(c.params.get("prompt_to_repeat", ""))) // 3 + 160)
    return need


def select(
    rows: Sequence[dict[str, Any]], tokenizer: Any, *, cap: int
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The rows whose every constraint is controlled (see the module doc), with budgets."""
    chosen: list[dict[str, Any]] = []
    excluded: Counter[str] = Counter()
    for row in rows:
        constraints = ifeval_constraints(row)
        if constraints is None:
            excluded["instruction_without_kind"] += 1
            continue
        budget = token_budget(constraints)
        try:
            steering = compile_steering(
                constraints, tokenizer, prompt=row["prompt"], max_new_tokens=budget
            )
        except ConflictError:
            excluded["conflicting_constraints"] += 1
            continue
        except LimitExceeded:
            excluded["budget"] += 1
            continue
        if steering.controlled != {c.id for c in constraints}:
            excluded["not_all_controlled"] += 1
            continue
        if budget > cap:
            excluded["budget_over_cap"] += 1
            continue
        chosen.append({**row, "constraints": constraints, "budget": budget})
    return chosen, excluded


JUDGE_NOTES = {
    "judge": "if-verifiable 0.1.2, IFEval registry, strict mode (evaluate_instructions)",
    "datasets": "if_verifiable imports `datasets` at import time; it is imported but never "
    "called: prompts and kwargs are read from the local input_data.jsonl, nothing is downloaded",
    "punkt": "no package ships nltk punkt data; the sentence counter uses nltk's "
    "PunktSentenceTokenizer with default (untrained) parameters, installed by replacing "
    "instructions_util._get_sentence_tokenizer; nltk.word_tokenize (capital-word count) runs "
    "with preserve_line=True, which needs no punkt data",
    "langdetect": "DetectorFactory.seed = 0 so language checks are deterministic",
}


def _prepare_judge() -> Any:
    import functools

    import nltk
    from if_verifiable.ifeval import instructions_util
    from langdetect import DetectorFactory
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    DetectorFactory.seed = 0
    untrained = PunktSentenceTokenizer()
    instructions_util._get_sentence_tokenizer = lambda: untrained
    instructions_util.nltk = _NltkView(
        nltk, functools.partial(nltk.word_tokenize, preserve_line=True)
    )
    from if_verifiable.common import evaluate_instructions
    from if_verifiable.ifeval.instructions_registry import INSTRUCTION_DICT

    return lambda row, text: evaluate_instructions(
        response=text,
        instruction_id_list=row["instruction_id_list"],
        kwargs_list=row["kwargs"],
        prompt=row["prompt"],
        instruction_registry=INSTRUCTION_DICT,
    )


class _NltkView:
    """``nltk`` as the IFEval utilities see it, with a punkt-free ``word_tokenize``."""

    def __init__(self, module: Any, word_tokenize: Any) -> None:
        self._module = module
        self.word_tokenize = word_tokenize

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def judge(evaluate: Any, row: dict[str, Any], text: str) -> list[bool]:
    """IFEval strict verdicts, one per instruction (an empty answer fails them all)."""
    results, _ = evaluate(row, text)
    if not results:
        return [False] * len(row["instruction_id_list"])
    return [r.strict_pass for r in results]


def _ratio(num: float, den: float) -> float:
    return round(num / den, 4) if den else 0.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="a fixed sample with short budgets (< 10 min on CPU)"
    )
    parser.add_argument("--limit", type=int, default=None, help="decode at most N selected prompts")
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="cap every prompt's token budget at N (a smoke run; the report records the cap)",
    )
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N selected prompts (continue a run)",
    )
    parser.add_argument(
        "--width", type=int, default=4, help="beam width of our decode and of generate(num_beams)"
    )
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--set",
        type=Path,
        nargs="?",
        const=SET_DATA,
        default=None,
        help="our labelled prompts (default bench/data/steering_set.jsonl), judged by our verifiers",
    )
    parser.add_argument("--verbose", action="store_true", help="print each answer to stderr")
    parser.add_argument(
        "--dump-answers",
        type=Path,
        default=None,
        help="write each prompt's key and answer texts here (JSON lines), to compare trees as text",
    )
    parser.add_argument(
        "--no-prune",
        dest="prune",
        action="store_false",
        help="do not enforce step pruning (default: enforced, as POST /v1/reason runs)",
    )
    parser.add_argument(
        "--progress",
        type=Path,
        default=None,
        help="rewrite the JSON over the prompts done so far here after each prompt",
    )
    add_cache_option(parser)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 on a shared 2-core box)"
    )
    parser.add_argument(
        "--model",
        default="bundled",
        help="the model to steer: 'bundled', a model directory or a .gguf file (TENET_MODEL)",
    )
    parser.add_argument(
        "--weights",
        default="float32",
        help="the model's weight format (TENET_WEIGHTS: float32, bfloat16, int8, int4 or auto)",
    )
    parser.add_argument(
        "--steered-only",
        action="store_true",
        help="decode only the steered answers (no plain generate, no throughput pairs): the "
        "steered accuracy, which is all the gate keeps, in about a third of the time",
    )
    parser.add_argument(
        "--record-gate",
        action="store_true",
        help="keep the steered accuracy for this format in the model cache, where auto reads "
        "the steered-accuracy gate (inference.weights.gate)",
    )
    parser.add_argument(
        "--ship",
        action="store_true",
        help="with --record-gate, also keep it in the repository's figures "
        "(inference/weights/steering_gate.json), which a fresh clone's auto reads",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    from inference.loader import load_model

    torch.manual_seed(0)
    cache = model_cache(args.cache)
    lm = load_model(args.model, cache_root=cache, weights=args.weights)
    model, tokenizer = lm.model, lm.tokenizer
    # As the service warms up: the vocabulary tables (and those derived later) kept in the cache.
    vocab_tables(tokenizer, model.device, int(model.config.vocab_size), cache_dir=cache)
    if args.set is not None:
        print(json.dumps(run_set(args, model, tokenizer)))
        return 0
    rows = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    cap = _QUICK_CAP if args.quick else _FULL_CAP
    chosen, excluded = select(rows, tokenizer, cap=cap)
    n_selected = len(chosen)
    if args.quick:
        step = max(1, len(chosen) // _QUICK_SAMPLE)
        chosen = chosen[::step][:_QUICK_SAMPLE]
    chosen = chosen[max(0, args.skip) :]
    if args.limit is not None:
        chosen = chosen[: args.limit]
    if args.max_new_tokens is not None:
        chosen = [{**r, "budget": min(r["budget"], args.max_new_tokens)} for r in chosen]
    evaluate = _prepare_judge()
    forward = "packed" if packed_forward(model) is not None else "library"

    steered_ok: list[list[bool]] = []
    plain_ok: list[list[bool]] = []
    complete: dict[str, list[bool]] = {"steered": [], "unsteered": []}
    ends: Counter[str] = Counter()
    violations = 0
    violation_details: list[dict[str, Any]] = []
    check_s = decode_s = forward_s = 0.0
    steps = 0
    cf_shares: list[float] = []
    per_kind: dict[str, list[int]] = {}
    pruned: Counter[str] = Counter()
    repairs = unrepaired = 0

    def build() -> dict[str, Any]:
        """The report over the prompts decoded so far."""
        pairs = [r["throughput_pair"] for r in chosen if "throughput_pair" in r]
        ours_t, gen_t = [p[0] for p in pairs], [p[1] for p in pairs]
        tp_ours = _ratio(sum(t.positions for t in ours_t), sum(t.seconds for t in ours_t))
        tp_gen = _ratio(sum(t.positions for t in gen_t), sum(t.seconds for t in gen_t))
        library_t = [r["library_timed"] for r in chosen if "library_timed" in r]
        tp_library = _ratio(sum(t.positions for t in library_t), sum(t.seconds for t in library_t))
        step_ours = _ratio(
            sum(t.positions - 1 for t in ours_t), sum(t.seconds - t.prefill_s for t in ours_t)
        )
        step_gen = _ratio(
            sum(t.positions - 1 for t in gen_t), sum(t.seconds - t.prefill_s for t in gen_t)
        )

        def summary(verdicts: list[list[bool]]) -> dict[str, Any]:
            flat = [v for vs in verdicts for v in vs]
            return {
                "instruction_strict": _ratio(sum(flat), len(flat)),
                "prompt_strict": _ratio(sum(all(vs) for vs in verdicts), len(verdicts)),
                "n_prompts": len(verdicts),
                "n_instructions": len(flat),
            }

        report = {
            "benchmark": "steering",
            "model": lm.identity.name,
            "vocab_size": int(model.get_output_embeddings().out_features),
            "quick": args.quick,
            "steered_only": args.steered_only,
            "weights": lm.weights.weights,
            "width": args.width,
            "max_new_tokens": args.max_new_tokens,
            "pruning_enforced": args.prune,
            "selection_rule": "IFEval prompts whose instructions all map to catalog kinds and are all reported "
            "controlled by compile_steering (IFEval kwargs as parameters); conflicting sets excluded; "
            + (
                f"quick: every {max(1, n_selected // _QUICK_SAMPLE)}-th selected prompt with budget <= {_QUICK_CAP}"
                if args.quick
                else f"budget <= {_FULL_CAP}"
            ),
            "n_rows": len(rows),
            "n_selected": n_selected,
            "excluded": dict(excluded),
            "steered": summary(steered_ok),
            "unsteered": summary(plain_ok),
            # Answers that end on a sentence end or a closed structure (endings.ends_complete).
            "complete_share": {k: _ratio(sum(v), len(v)) for k, v in complete.items()},
            "steered_ends": dict(ends),
            "hard_violations": violations,
            "pruning": {"pruned": dict(pruned), "repairs": repairs, "unrepaired": unrepaired},
            "violation_details": violation_details,
            "per_instruction_steered": {k: f"{v[0]}/{v[1]}" for k, v in sorted(per_kind.items())},
            "tokens_per_s_ours": tp_ours,
            "tokens_per_s_generate": tp_gen,
            "throughput_ratio": _ratio(tp_ours, tp_gen),
            "forward": forward,
            "tokens_per_s_ours_library_forward": tp_library if library_t else None,
            "throughput_ratio_library_forward": _ratio(tp_library, tp_gen) if library_t else None,
            "after_prefill_ratio": _ratio(step_ours, step_gen),
            "throughput_note": f"our decode (width {args.width}, steered, pruning as configured) vs "
            f"generate(num_beams={args.width}) on the first {len(pairs)} prompts: decided token positions "
            "per second of the whole call (prefill, decode, our checks and final verification included); "
            "after_prefill_ratio compares the same calls from the end of their prefill on; "
            "forward: packed when our decode steps run the lean CPU forward with oneDNN-packed "
            "weights (generate always runs the library forward), and then "
            "throughput_ratio_library_forward is our search on the library forward, as generate",
            "constraint_check_share": _ratio(check_s, decode_s),
            "constraint_check_note": CHECK_SHARE_NOTE,
            # The steering's seconds per decode step (every branch's beams in one step), in ms.
            "check_ms_per_step": round(1000 * check_s / steps, 3) if steps else 0.0,
            "decode_steps": steps,
            "forward_share": _ratio(forward_s, decode_s),
            "counterfactual_flops_share": round(sum(cf_shares) / len(cf_shares), 4)
            if cf_shares
            else 0.0,
            "judge_notes": JUDGE_NOTES,
        }
        return report

    dump = args.dump_answers.open("w", encoding="utf-8") if args.dump_answers is not None else None
    for index, row in enumerate(chosen):
        steered = run_steered(model, tokenizer, row, args.width, args.prune)
        s_ok = judge(evaluate, row, steered["text"])
        steered_ok.append(s_ok)
        closing = required_closing(row["constraints"])  # an end phrase closes the answer
        complete["steered"].append(ends_complete(steered["text"], closing))
        p_ok: list[bool] = []
        plain_text: str | None = None
        if not args.steered_only:
            plain_text, _ = run_generate(model, tokenizer, row["prompt"], row["budget"])
            p_ok = judge(evaluate, row, plain_text)
            plain_ok.append(p_ok)
            complete["unsteered"].append(ends_complete(plain_text, closing))
        if dump is not None:
            answer = {"key": row["key"], "steered": steered["text"], "unsteered": plain_text}
            dump.write(json.dumps(answer, ensure_ascii=False) + "\n")
            dump.flush()
        ends[steered["end"]] += 1
        for ifeval_id, ok in zip(row["instruction_id_list"], s_ok):
            tally = per_kind.setdefault(ifeval_id, [0, 0])
            tally[0] += int(ok)
            tally[1] += 1
        failed = [i for i, ok in zip(row["instruction_id_list"], s_ok) if not ok]
        if failed:
            violations += len(failed)
            violation_details.append(
                {"key": row["key"], "failed": failed, "reported": steered["violations"]}
            )
        pruned.update(steered["pruned"])
        repairs += steered["repairs"]
        unrepaired += steered["unrepaired"]
        check_s += steered["check_s"]
        forward_s += steered["forward_s"]
        decode_s += steered["decode_s"]
        steps += steered["steps"]
        cf_shares.append(steered["counterfactual_flops_share"])
        if index < (2 if args.quick else 10) and not args.steered_only:
            _, timed = run_generate(
                model, tokenizer, row["prompt"], row["budget"], beams=args.width
            )
            row["throughput_pair"] = (steered["timed"], timed)
            if forward == "packed":
                library = run_steered(model, tokenizer, row, args.width, args.prune, packed=False)
                row["library_timed"] = library["timed"]
        print(
            f"[{index + 1}/{len(chosen)}] key={row['key']} steered={sum(s_ok)}/{len(s_ok)} "
            f"plain={sum(p_ok)}/{len(p_ok)} failed={failed} pruned={steered['pruned']} "
            f"repairs={steered['repairs']} decode_s={steered['decode_s']:.1f}",
            file=sys.stderr,
            flush=True,
        )
        if args.progress is not None:
            args.progress.write_text(json.dumps(build()) + "\n")
        if args.verbose:
            print(
                f"--- {row['key']} {row['instruction_id_list']} steered={s_ok} plain={p_ok}",
                file=sys.stderr,
            )
            print(steered["text"][:600], file=sys.stderr)

    if dump is not None:
        dump.close()
    report = build()
    if args.record_gate and args.set is None:
        report["gate_recorded"] = str(_record_gate(args, lm, report))
    print(json.dumps(report))
    return 0


def _record_gate(args: argparse.Namespace, lm: Any, report: dict[str, Any]) -> Path:
    """Keep this run's steered accuracy for its weight format where ``auto`` reads it."""
    from inference.loader import probe_directory
    from inference.weights.gate import SteeredAccuracy, measured_now, record, ship

    sample = "quick" if args.quick else "full"
    if args.limit is not None or args.skip or args.max_new_tokens is not None:
        sample += f" skip {args.skip} limit {args.limit} cap {args.max_new_tokens}"
    steered = report["steered"]
    probe_dir = probe_directory(model_cache(args.cache), lm.identity.sha256)
    result = SteeredAccuracy(
        lm.weights.weights,
        sample,
        float(steered["instruction_strict"]),
        int(steered["n_prompts"]),
        int(steered["n_instructions"]),
        measured_now(),
    )
    record(probe_dir, result)
    if args.ship:
        ship(probe_dir, result)
    return probe_dir


if __name__ == "__main__":
    raise SystemExit(main())
