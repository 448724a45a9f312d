"""Are ``POST /v1/constraints`` answers unchanged? Record them from one tree, compare another's.

``python -m bench.constraints_identity --out FILE [--against FILE] [--concurrency N]``

A speed change to the prompt-check path (parsing, batching, extraction,
graph, middleware) must not change any answer. This starts the real
``tenet serve`` of the checkout it runs from (no model: the route needs
none), sends every prompt of the paraphrase set (``tests/data``) and of
IFEval (``bench/data/ifeval``) with the node-link graph, then the first
``--formats-limit`` of them again with Turtle and JSON-LD, ``--concurrency``
at a time so the batched parse is exercised as under load, and writes one
JSON line per request: its id and the whole response body without
``timings`` (wall-clock figures, never equal twice), a JSON-LD graph with
its arrays sorted (rdflib writes its nodes in an order that changes from one
process to the next; JSON-LD arrays other than ``@list`` are unordered, and
the graphs here have no ``@list``). With ``--against``
(a file an earlier run wrote, e.g. from a copy of the old tree), it reports
how many answers differ and the first differing ids.

The last stdout line is one JSON object: ``n``, ``identical``, ``differing``
(count) and ``first_differences`` (ids), or with no ``--against`` just ``n``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.datasets import IFEVAL_PROMPTS
from bench.extraction import PARAPHRASES, load
from bench.service import free_port, start_server, stop_server, wait_ready

__all__ = ["compare", "requests_to_send", "run"]


def _canonical_jsonld(value: Any) -> Any:
    """``value`` with every array sorted (by its members' canonical JSON), recursively."""
    if isinstance(value, dict):
        return {k: _canonical_jsonld(v) for k, v in value.items()}
    if isinstance(value, list):
        members = [_canonical_jsonld(v) for v in value]
        return sorted(members, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))
    return value


def requests_to_send(formats_limit: int) -> list[tuple[str, dict[str, Any]]]:
    """(id, body) of every request: each prompt with the JSON graph, then the first
    ``formats_limit`` prompts with Turtle and with JSON-LD."""
    prompts = [(f"para:{row['id']}", str(row["prompt"])) for row in load(PARAPHRASES)]
    prompts += [(f"ifeval:{row['key']}", str(row["prompt"])) for row in load(IFEVAL_PROMPTS)]
    out = [(key, {"prompt": prompt}) for key, prompt in prompts]
    for graph_format in ("turtle", "jsonld"):
        out += [(f"{key}:{graph_format}", {"prompt": prompt, "graph_format": graph_format})
                for key, prompt in prompts[:formats_limit]]
    return out


async def _send_all(
    base: str, headers: dict[str, str], requests: Sequence[tuple[str, dict[str, Any]]], concurrency: int
) -> list[dict[str, Any]]:
    answers: list[dict[str, Any]] = [{} for _ in requests]
    position = 0
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120.0) as client:

        async def worker() -> None:
            nonlocal position
            while position < len(requests):
                index, position = position, position + 1
                key, body = requests[index]
                for _ in range(20):  # an admission refusal is retried: it is not an answer
                    response = await client.post("/v1/constraints", json=body)
                    if response.status_code != 429:
                        break
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))
                answer: dict[str, Any] = {"status": response.status_code, "body": response.json()}
                if isinstance(answer["body"], dict):
                    answer["body"].pop("timings", None)
                    if answer["body"].get("graph_format") == "jsonld":
                        answer["body"]["graph"] = _canonical_jsonld(json.loads(answer["body"]["graph"]))
                answers[index] = {"id": key, **answer}

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return answers


def run(concurrency: int, formats_limit: int) -> list[dict[str, Any]]:
    """Every request's answer from a fresh server of this checkout, in request order."""
    data_dir = Path(tempfile.mkdtemp(prefix="tenet-constraints-identity-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(data_dir, port, data_dir / "server.log", load_model=False)
    try:
        wait_ready(base, process, timeout_s=240.0, model=False)
        key = (data_dir / "admin-key.txt").read_text(encoding="utf-8").strip()
        return asyncio.run(
            _send_all(base, {"Authorization": f"Bearer {key}"}, requests_to_send(formats_limit), concurrency)
        )
    finally:
        stop_server(process)


def compare(answers: Sequence[dict[str, Any]], reference: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How many of ``answers`` equal ``reference``'s answer of the same id."""
    expected = {row["id"]: row for row in reference}
    differing = [row["id"] for row in answers if expected.get(row["id"]) != row]
    return {
        "n": len(answers),
        "identical": len(answers) - len(differing),
        "differing": len(differing),
        "first_differences": differing[:20],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where to write this tree's answers (JSONL)")
    parser.add_argument("--against", type=Path, default=None, help="answers of another tree to compare with")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight at once (default 16)")
    parser.add_argument("--formats-limit", type=int, default=100,
                        help="prompts also sent with the Turtle and JSON-LD graphs (default 100)")
    args = parser.parse_args(argv)
    answers = run(max(1, args.concurrency), max(0, args.formats_limit))
    with args.out.open("w", encoding="utf-8") as handle:
        for row in answers:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    if args.against is None:
        print(json.dumps({"n": len(answers)}))
        return 0
    print(json.dumps(compare(answers, load(args.against))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
