"""Is the compiled steering unchanged? Record it from one tree, compare another's.

``python -m bench.compile_identity --out FILE [--against FILE | --extracted FILE] [--every K]``

A change that moves compile code (no change of behaviour meant) must give
every request the same ``ConstraintSteering``: the same layout segments,
specs, controllers (in the composer's order, with their specs), controlled /
assisted / uncontrolled ids, or the same refusal (``ConflictError``,
``LimitExceeded``, ``InvalidInput`` with its message and ids). The corpus is
broad: the labelled constraints of IFEval (its kwargs, as ``bench.steering``
reads them), of the steering set and of the paraphrase set, and the
constraints extraction reads from every prompt of those sets and of every
held-out set (``bench/data``). Each request is compiled twice: with its token
budget alone, and with shown evidence (``E1``..``E4``) and a stated decision
(the routes where citations or a decision write text of their own).

Without ``--against`` the constraints are extracted here (or read from
``--extracted``, a file ``bench.extraction_identity`` wrote, whose prompts
without a row in the sets, the test literals, are compiled with their
sentences as the prompt) and written with the compiled result, one JSON
line per request. With ``--against`` (a file
an earlier run wrote) the constraints are read from that file, not extracted
again, so a change elsewhere in extraction does not show as a compile
difference; it reports how many results differ and the first differing ids.

``--every K`` keeps every K-th request of the corpus (a fixed, evenly spaced
sample; a compile takes about a quarter of a CPU second, so the whole corpus
of some 3,800 requests in two variants is half an hour of CPU).

The last stdout line is one JSON object: ``n``, ``identical``, ``differing``
(count), ``first_differences`` (ids) and ``digest`` (sha256 over all results,
in order), or with no ``--against`` ``n`` and ``digest``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.datasets import DATA_DIR, IFEVAL_PROMPTS
from bench.extraction import PARAPHRASES, load
from bench.steering import ifeval_constraints, token_budget
from bench.steering_set import SET_DATA, load_set
from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers.stating import Statement
from reasoning.constraints.extraction import extract, parse_english_many
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError, InvalidInput, LimitExceeded

__all__ = ["compare", "compiled", "corpus", "main"]

_BATCH = 32
_EXTRACTED_BUDGET = 256
_EVIDENCE = ("E1", "E2", "E3", "E4")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _never(_: str) -> bool:
    return False


#: A stated decision, as the rules stage hands one to the compile step.
_STATEMENT = Statement(text="Rule R1 applies [E1].", contradicts=_never, sources=("R1",))


def _labelled(items: Sequence[dict[str, Any]]) -> list[Constraint]:
    return [Constraint(id=f"c{i}", kind=Kind(item["kind"]), params=item.get("params", {}))
            for i, item in enumerate(items)]


def corpus(extracted: Path | None = None) -> list[dict[str, Any]]:
    """Every request compiled: ``id``, ``prompt``, ``budget`` and ``constraints`` (builtins)."""
    requests: list[tuple[str, str, list[Constraint], int]] = []
    ifeval = load(IFEVAL_PROMPTS)
    for row in ifeval:
        constraints = ifeval_constraints(row)
        if constraints is not None:
            requests.append((f"ifeval-kwargs:{row['key']}", row["prompt"], constraints, token_budget(constraints)))
    for row in load_set(SET_DATA):
        requests.append((f"set-labels:{row['key']}", row["prompt"], row["constraints"], _EXTRACTED_BUDGET))
    paraphrases = load(PARAPHRASES)
    for row in paraphrases:
        requests.append((f"para-labels:{row['id']}", row["prompt"], _labelled(row["expected"]), _EXTRACTED_BUDGET))
    prompts = [(f"para:{row['id']}", str(row["prompt"])) for row in paraphrases]
    prompts += [(f"ifeval:{row['key']}", str(row["prompt"])) for row in ifeval]
    for path in sorted(DATA_DIR.glob("*.jsonl")):
        prompts += [(f"{path.stem}:{row.get('key', i)}", str(row["prompt"])) for i, row in enumerate(load(path))]
    if extracted is not None:
        texts = dict(prompts)
        for row in load(extracted):
            result = row["result"]
            if "constraints" not in result:
                continue
            prompt = texts.get(row["id"]) or " ".join(s["text"] for s in result["sentences"])
            found = msgspec.convert(result["constraints"], list[Constraint])
            requests.append((f"extracted:{row['id']}", prompt, found, _EXTRACTED_BUDGET))
        prompts = []
    for first in range(0, len(prompts), _BATCH):
        chunk = prompts[first : first + _BATCH]
        docs = parse_english_many([prompt for _, prompt in chunk])
        for (key, prompt), doc in zip(chunk, docs):
            try:
                found = list(extract(prompt, english_doc=doc).constraints)
            except LimitExceeded:
                continue
            requests.append((f"extracted:{key}", prompt, found, _EXTRACTED_BUDGET))
    return [{"id": key, "prompt": prompt, "budget": budget, "constraints": msgspec.to_builtins(constraints)}
            for key, prompt, constraints, budget in requests]


def _text(value: Any) -> str:
    return _ADDRESS.sub("", repr(value))


def compiled(request: dict[str, Any], tokenizer: Any, *, inserts: bool) -> dict[str, Any]:
    """The compiled steering of one request as plain data (or the refusal)."""
    constraints = msgspec.convert(request["constraints"], list[Constraint])
    try:
        steering = compile_steering(
            constraints, tokenizer, prompt=request["prompt"], max_new_tokens=request["budget"],
            evidence_ids=_EVIDENCE if inserts else (), statement=_STATEMENT if inserts else None,
        )
    except (ConflictError, LimitExceeded, InvalidInput) as error:
        return {"refused": type(error).__name__, "message": str(error),
                "ids": sorted(getattr(error, "extra", {}).get("constraint_ids", []) or [])}
    return {
        "segments": _text(steering.layout.segments),
        "specs": [_text(s) for s in steering.specs],
        "controllers": [f"{type(c).__qualname__}:{_text(c.spec)}" for c in steering.controllers],
        "controlled": sorted(steering.controlled),
        "assisted": sorted(steering.assisted),
        "uncontrolled": sorted(steering.uncontrolled),
    }


def run(requests: Sequence[dict[str, Any]], tokenizer: Any) -> list[dict[str, Any]]:
    """One row per request and variant: the request and its compiled result."""
    out = []
    for request in requests:
        for inserts in (False, True):
            out.append({**request, "id": f"{request['id']}|{'inserts' if inserts else 'plain'}",
                        "result": compiled(request, tokenizer, inserts=inserts)})
    return out


def _digest(rows: Sequence[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps(row["result"], sort_keys=True, ensure_ascii=False).encode())
    return h.hexdigest()


def compare(ours: Sequence[dict[str, Any]], theirs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts of identical and differing results by id, and the first 20 differing ids."""
    earlier = {row["id"]: row["result"] for row in theirs}
    differing = [row["id"] for row in ours if earlier.get(row["id"]) != row["result"]]
    return {"n": len(ours), "identical": len(ours) - len(differing), "differing": len(differing),
            "first_differences": differing[:20], "digest": _digest(ours)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True, help="where to write this tree's results (JSONL)")
    parser.add_argument("--against", type=Path, help="an earlier run's file: compile its constraints, compare")
    parser.add_argument("--extracted", type=Path, help="a bench.extraction_identity file: its constraints, not extracted")
    parser.add_argument("--every", type=int, default=1, help="keep every K-th request (a fixed sample)")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    from bench.model_cache import model_cache
    from inference.loader import prepare_cache

    tokenizer = AutoTokenizer.from_pretrained(prepare_cache("bundled", model_cache(None)))
    if args.against is not None:
        earlier = load(args.against)
        requests = [{k: row[k] for k in ("prompt", "budget", "constraints")} | {"id": row["id"].rsplit("|", 1)[0]}
                    for row in earlier if row["id"].endswith("|plain")]
    else:
        earlier, requests = [], corpus(args.extracted)[:: max(1, args.every)]
    rows = run(requests, tokenizer)
    with args.out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    summary: dict[str, Any] = compare(rows, earlier) if args.against is not None else {
        "n": len(rows), "digest": _digest(rows)}
    print(json.dumps(summary, ensure_ascii=False))
    return 0 if summary.get("differing", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
