"""Held-out end-to-end benchmark: unseen instruction types and wordings, through the public API.

``python -m bench.heldout [--set NAME] [--quick] [--limit N] [--max-new-tokens N] [--port N] [--progress PATH] [--concurrency N] [--ready-timeout S] [--extraction-only]``

``--set`` names one of the held-out sets of ``bench/data/heldout_sets.json``
(``heldout``, the default, to ``heldout5``; ``bench/data/README.md`` says who
wrote each, when and how); ``python -m bench.heldout2`` ... are the same as
``--set heldout2`` .... Each line of a set's data file (``bench/data/heldout.jsonl``
...) is ``{"key", "language", "prompt", "instructions": [{"judge", "args",
"span"}]}``: a user task with one to three form instructions, of types IFEval
has no family for (counts of marks, numbers, emoji, unique words, hashtags; a
word at a position; words by their initial letter; nested or no lists;
wrappers and quoted spans; lengths per sentence; a request restated with a
change ...) or of familiar types, in wordings written for the set. ``span`` is
where the prompt states the instruction. The answers are judged by
``bench.heldout_judge``, which is written apart from the product (no
self-grading), with the set's table of instruction ids (:mod:`bench.heldout_judge.sets`).

The bench starts ``tenet serve`` in a subprocess (``bench.service``) and, per
prompt, sends:

1. ``POST /v1/constraints``: an instruction is *recognised* when an extracted
   constraint's source span overlaps its ``span``, *unrecognised* when only an
   ``unrecognised`` span does, else *missed*; a recognised instruction is also
   *misread* when its reading contradicts the judge's parameters
   (:mod:`bench.misread`: a unit, position, number, text or bound of the
   judge that the reading does not carry), with the reason in its row;
2. ``POST /v1/reason`` with ``options.steering`` true, then false, the same
   ``max_new_tokens`` (160; ``--quick``: 96 on every third prompt, 16 or
   fewer). A refused request (not 200) or a ``needs_confirmation`` answer
   (empty) is judged like any answer: it fails.

The report: instruction-level and prompt-level strict accuracy per arm,
``gain_points`` (instruction-level, steered minus plain, in points),
per-judge accuracy, the extraction counts (``recognised``, ``unrecognised``,
``missed``, ``misread``) and ``misread_share`` (misread instructions over all
instructions), ``needs_confirmation`` and refusal counts, and per instruction
its extraction and both verdicts (``rows``). The last stdout line is one JSON
object.

``--extraction-only`` runs no server and no model: each prompt is extracted
in-process (what ``POST /v1/constraints`` returns) and the report holds the
extraction counts, ``misread_share``, per-judge extraction and, per misread
instruction, its reading and the reason (seconds for a whole set).

Every set runs through this harness as a ``Suite`` (its name, data file and
judges): ``load``, ``run`` and ``main`` take one, ``HELDOUT`` (the first set) by default.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.heldout_judge import Judge, sets
from bench.heldout_judge.sets import Suite
from bench.misread import misread
from bench.service import free_port, start_server, stop_server, wait_ready

__all__ = ["DATA", "HELDOUT", "Suite", "extraction_report", "extraction_status", "instruction_rows", "load", "main",
           "run", "select"]

HELDOUT = sets.suite("heldout")
DATA = HELDOUT.data
_BUDGET = 160
_QUICK_BUDGET = 96
_QUICK_STEP = 3
_QUICK_MAX = 16
_ARMS = ("steered", "plain")
#: A first load on a busy 2-core machine measures the weight formats before it is ready (minutes).
_READY_TIMEOUT_S = 900.0


def load(
    path: Path = DATA, judges: Mapping[str, tuple[Judge, str]] = HELDOUT.judges
) -> list[dict[str, Any]]:
    """The set's rows; each instruction's judge must be in ``judges`` and its span in the prompt."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        for item in row["instructions"]:
            if item["judge"] not in judges:
                raise ValueError(f"{path}:{number}: unknown judge {item['judge']!r}")
            if item["span"] not in row["prompt"]:
                raise ValueError(f"{path}:{number}: span {item['span']!r} is not in the prompt")
        rows.append(row)
    return rows


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def extraction_status(
    prompt: str, span: str, report: Mapping[str, Any]
) -> tuple[str, list[dict[str, Any]]]:
    """``recognised`` / ``unrecognised`` / ``missed`` for the instruction at ``span``, with its constraints.

    ``report`` is a ``POST /v1/constraints`` answer; the constraints listed are
    those whose source overlaps the span (their kind and params, to tell a
    wrong parameter from a right one by reading).
    """
    start = prompt.index(span)
    where = (start, start + len(span))
    found = [
        {"kind": c["kind"], "params": c["params"]}
        for c in report.get("constraints", [])
        if c.get("source") and _overlaps(where, (c["source"]["start"], c["source"]["end"]))
    ]
    if found:
        return "recognised", found
    if any(_overlaps(where, (s["start"], s["end"])) for s in report.get("unrecognised", [])):
        return "unrecognised", []
    return "missed", []


async def _reason(
    client: httpx.AsyncClient, headers: Mapping[str, str], prompt: str, budget: int, steering: bool
) -> dict[str, Any]:
    """One run: its status (``refused:<code>`` when not 200), answer and seconds."""
    body = {"prompt": prompt, "options": {"max_new_tokens": budget, "steering": steering}}
    started = time.perf_counter()
    try:
        response = await client.post("/v1/reason", json=body, headers=dict(headers))
    except httpx.HTTPError as error:
        return {
            "status": f"refused:{type(error).__name__}",
            "answer": "",
            "s": time.perf_counter() - started,
        }
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        return {"status": f"refused:{response.status_code}", "answer": "", "s": seconds}
    out = response.json()
    return {"status": out["status"], "answer": out["answer"], "s": seconds, "end": out.get("end")}


def _share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def instruction_rows(row: Mapping[str, Any], report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each instruction of ``row`` with its extraction status, its reading and, when misread, why.

    ``report`` is a ``POST /v1/constraints`` answer (or its in-process equivalent).
    """
    prompt_constraints = [{"kind": c["kind"], "params": c["params"]} for c in report.get("constraints", [])]
    instructions = []
    for item in row["instructions"]:
        status, found = extraction_status(row["prompt"], item["span"], report)
        why = misread(item["judge"], item["args"], found, prompt_constraints) if status == "recognised" else None
        instructions.append(
            {
                "judge": item["judge"],
                "args": item["args"],
                "extraction": status,
                "extracted": found,
                "misread": why,
            }
        )
    return instructions


def extraction_report(rows: Sequence[Mapping[str, Any]], suite: Suite) -> dict[str, Any]:
    """The extraction figures of ``rows`` without a server or a model (``--extraction-only``)."""
    import msgspec

    from reasoning.constraints.extraction import extract

    started = time.perf_counter()
    counts: Counter[str] = Counter()
    by_judge: dict[str, Counter[str]] = defaultdict(Counter)
    misreadings: list[dict[str, Any]] = []
    total = 0
    for row in rows:
        result = extract(row["prompt"])
        report = {
            "constraints": [msgspec.to_builtins(c) for c in result.constraints],
            "unrecognised": [msgspec.to_builtins(s) for s in result.unrecognised],
        }
        for item, source in zip(instruction_rows(row, report), row["instructions"], strict=True):
            total += 1
            counts[item["extraction"]] += 1
            by_judge[item["judge"]][item["extraction"]] += 1
            if item["misread"]:
                counts["misread"] += 1
                by_judge[item["judge"]]["misread"] += 1
                misreadings.append({"key": row["key"], "judge": item["judge"], "args": item["args"],
                                    "span": source["span"], "extracted": item["extracted"],
                                    "why": item["misread"]})
    return {
        "benchmark": suite.name,
        "data": suite.data.name,
        "mode": "extraction_only",
        "n_prompts": len(rows),
        "n_instructions": total,
        "extraction": {k: counts.get(k, 0) for k in ("recognised", "unrecognised", "missed", "misread")},
        "misread_share": _share(counts.get("misread", 0), total),
        "per_judge": {name: dict(c) for name, c in sorted(by_judge.items())},
        "misreadings": misreadings,
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def _accuracy(values: Sequence[bool]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def _summary(
    results: Sequence[dict[str, Any]], budget: int, quick: bool, elapsed: float, suite: Suite
) -> dict[str, Any]:
    arms: dict[str, Any] = {}
    for arm in _ARMS:
        flat = [ok for r in results for ok in r[arm]["verdicts"]]
        arms[arm] = {
            "instruction_strict": _accuracy(flat),
            "prompt_strict": _accuracy([all(r[arm]["verdicts"]) for r in results]),
            "needs_confirmation": sum(r[arm]["status"] == "needs_confirmation" for r in results),
            "refused": sum(r[arm]["status"].startswith("refused") for r in results),
            "mean_s": round(sum(r[arm]["s"] for r in results) / len(results), 2)
            if results
            else 0.0,
        }
    per_judge: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {arm: [] for arm in _ARMS})
    extraction: Counter[str] = Counter()
    extraction_by_judge: dict[str, Counter[str]] = defaultdict(Counter)
    steered_failed_by_judge: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        for index, item in enumerate(r["instructions"]):
            for arm in _ARMS:
                per_judge[item["judge"]][arm].append(r[arm]["verdicts"][index])
            extraction[item["extraction"]] += 1
            extraction_by_judge[item["judge"]][item["extraction"]] += 1
            if item.get("misread"):
                extraction["misread"] += 1
                extraction_by_judge[item["judge"]]["misread"] += 1
            if not r["steered"]["verdicts"][index]:
                steered_failed_by_judge[item["judge"]][item["extraction"]] += 1
    return {
        "benchmark": suite.name,
        "data": suite.data.name,
        "quick": quick,
        "max_new_tokens": budget,
        "judge": suite.judged_by,
        "n_prompts": len(results),
        "n_instructions": sum(len(r["instructions"]) for r in results),
        "steered": arms["steered"],
        "plain": arms["plain"],
        "gain_points": round(
            100 * (arms["steered"]["instruction_strict"] - arms["plain"]["instruction_strict"]), 1
        ),
        "extraction": {k: extraction.get(k, 0) for k in ("recognised", "unrecognised", "missed", "misread")},
        "misread_share": _share(extraction.get("misread", 0), sum(len(r["instructions"]) for r in results)),
        "per_judge": {
            name: {
                "n": len(v["steered"]),
                "steered": _accuracy(v["steered"]),
                "plain": _accuracy(v["plain"]),
                "extraction": dict(extraction_by_judge[name]),
                "steered_failed": dict(steered_failed_by_judge[name]),
            }
            for name, v in sorted(per_judge.items())
        },
        "elapsed_s": round(elapsed, 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "rows": list(results),
    }


def select(rows: Sequence[dict[str, Any]], quick: bool, limit: int | None) -> list[dict[str, Any]]:
    """The prompts a run decodes: all, or with ``quick`` every third (at most 16); then the first ``limit``."""
    chosen = list(rows[::_QUICK_STEP][:_QUICK_MAX]) if quick else list(rows)
    return chosen[:limit] if limit is not None else chosen


async def _one(
    row: Mapping[str, Any],
    client: httpx.AsyncClient,
    headers: Mapping[str, str],
    budget: int,
    suite: Suite,
) -> dict[str, Any]:
    """One row: its extraction statuses, then both arms' answers and verdicts."""
    extracted = await client.post(
        "/v1/constraints", json={"prompt": row["prompt"]}, headers=dict(headers)
    )
    report = extracted.json() if extracted.status_code == 200 else {}
    instructions = instruction_rows(row, report)
    result: dict[str, Any] = {
        "key": row["key"],
        "instructions": instructions,
        "unrecognised": [s["text"] for s in report.get("unrecognised", [])],
    }
    for arm in _ARMS:
        answer = await _reason(
            client, headers, row["prompt"], budget, steering=arm == "steered"
        )
        answer["verdicts"] = [
            suite.grade(i["judge"], i["args"], answer["answer"]) for i in row["instructions"]
        ]
        answer["s"] = round(answer["s"], 2)
        result[arm] = answer
    return result


async def run(
    rows: Sequence[dict[str, Any]],
    client: httpx.AsyncClient,
    headers: Mapping[str, str],
    budget: int,
    *,
    quick: bool = False,
    progress: Path | None = None,
    suite: Suite = HELDOUT,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Every row through the API ``client`` reaches, with ``headers`` (the key), judged by ``suite``; the report (module doc).

    ``concurrency`` rows are in flight at once (their decodes share the
    service's merged forward passes); the report keeps the rows' order.
    ``per_judge[id].steered_failed`` counts the steered misses by their extraction
    status (recognised but failed, unrecognised, missed).
    """
    done: dict[int, dict[str, Any]] = {}
    gate = asyncio.Semaphore(max(1, concurrency))
    started = time.perf_counter()

    def ordered() -> list[dict[str, Any]]:
        return [done[index] for index in sorted(done)]

    async def one(index: int, row: Mapping[str, Any]) -> None:
        async with gate:
            result = await _one(row, client, headers, budget, suite)
        done[index] = result
        instructions = result["instructions"]
        print(
            f"[{len(done)}/{len(rows)}] {row['key']} extraction="
            f"{','.join(i['extraction'] for i in instructions)} steered={result['steered']['verdicts']} "
            f"({result['steered']['status']}, {result['steered']['s']} s) plain={result['plain']['verdicts']}",
            file=sys.stderr,
            flush=True,
        )
        if progress is not None:
            progress.write_text(
                json.dumps(_summary(ordered(), budget, quick, time.perf_counter() - started, suite))
                + "\n"
            )

    await asyncio.gather(*(one(index, row) for index, row in enumerate(rows)))
    return _summary(ordered(), budget, quick, time.perf_counter() - started, suite)


async def _serve_and_run(
    rows: Sequence[dict[str, Any]],
    base: str,
    key: str,
    budget: int,
    args: argparse.Namespace,
    suite: Suite,
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"}
    if args.concurrency > 1:
        # Rows in flight queue behind each other's decodes: past the default
        # predicted-wait limit the service would refuse them (429).
        headers["X-Tenet-Deadline-S"] = "900"
    async with httpx.AsyncClient(base_url=base, timeout=900.0) as client:
        return await run(
            rows,
            client,
            headers,
            budget,
            quick=args.quick,
            progress=args.progress,
            suite=suite,
            concurrency=args.concurrency,
        )


def main(argv: Sequence[str] | None = None, suite: Suite = HELDOUT) -> int:
    """Serve, run ``suite`` (or the ``--set`` named, or its ``--data``) through both arms, print the report."""
    parser = argparse.ArgumentParser(description=f"Held-out end-to-end benchmark: {suite.name}")
    parser.add_argument(
        "--set",
        choices=sets.names(),
        default=None,
        help=f"the held-out set of bench/data/heldout_sets.json (default: {suite.name})",
    )
    parser.add_argument(
        "--quick", action="store_true", help="every third prompt (16 at most), 96 tokens"
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N selected prompts")
    parser.add_argument(
        "--max-new-tokens", type=int, default=None, help="override the token budget"
    )
    parser.add_argument(
        "--data", type=Path, default=None, help="the set's data file (default: the set's own)"
    )
    parser.add_argument(
        "--port", type=int, default=None, help="loopback port (default: a free one)"
    )
    parser.add_argument(
        "--progress", type=Path, default=None, help="write the report so far after each prompt"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=1,
        help="prompts in flight at once (their decodes share merged forward passes; default 1)",
    )
    parser.add_argument(
        "--ready-timeout",
        type=float,
        default=_READY_TIMEOUT_S,
        help=f"seconds the server may take to get ready (default {_READY_TIMEOUT_S:.0f}; a loaded machine needs more)",
    )
    parser.add_argument(
        "--extraction-only",
        action="store_true",
        help="no server or model: extract each prompt in-process and report the extraction counts and misread",
    )
    args = parser.parse_args(argv)
    if args.set is not None:
        suite = sets.suite(args.set)
    if args.data is None:
        args.data = suite.data
    if args.extraction_only:
        loaded = load(args.data, suite.judges)
        rows = loaded[: args.limit] if args.limit is not None else loaded
        print(json.dumps(extraction_report(rows, suite), ensure_ascii=False))
        return 0
    rows = select(load(args.data, suite.judges), args.quick, args.limit)
    budget = args.max_new_tokens or (_QUICK_BUDGET if args.quick else _BUDGET)
    with tempfile.TemporaryDirectory(prefix=f"tenet-bench-{suite.name}-") as data_dir:
        port = args.port or free_port()
        base = f"http://127.0.0.1:{port}"
        process = start_server(Path(data_dir), port, Path(data_dir) / "server.log")
        try:
            wait_ready(base, process, timeout_s=args.ready_timeout)
            key = (Path(data_dir) / "admin-key.txt").read_text(encoding="utf-8").strip()
            report = asyncio.run(_serve_and_run(rows, base, key, budget, args, suite))
        finally:
            report_exit = stop_server(process)
    report["server_exit_status"] = report_exit
    report["concurrency"] = args.concurrency
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
