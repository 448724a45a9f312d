"""Is extraction's output unchanged? Record it from one tree, compare another's.

``python -m bench.extraction_identity --out FILE [--against FILE]``

A change that moves or folds extraction code (no change of behaviour meant)
must give every prompt the same :class:`~reasoning.constraints.extraction.ExtractionResult`.
This runs :func:`~reasoning.constraints.extraction.extract` in process (what
``POST /v1/constraints`` runs, without the HTTP layer and the graph) over a
broad corpus: the paraphrase set (``tests/data``), IFEval, every held-out set
and the steering set (``bench/data``), and the prompt-like string literals of
the extraction tests (``tests/reasoning/constraints``: every literal with a
space in it, docstrings aside, so the wordings the tests were written for are covered without
listing them). It writes one JSON line per prompt: its id and the whole result
without ``features["parse_ms"]`` (a wall-clock figure, never equal twice).
With ``--against`` (a file an earlier run wrote) it reports how many results
differ and the first differing ids.

The last stdout line is one JSON object: ``n``, ``identical``, ``differing``
(count) among the prompts both runs have, ``first_differences`` (ids),
``only_in_against`` and ``only_here`` (prompts one run has and the other has
not: a test literal edited or added since), or with no ``--against`` just ``n``. Test docstrings are no prompts and are left out.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.datasets import DATA_DIR, IFEVAL_PROMPTS
from bench.extraction import PARAPHRASES, load
from reasoning.constraints.extraction import extract, parse_english_many
from reasoning.errors import LimitExceeded

__all__ = ["compare", "corpus", "run"]

_TESTS = Path(__file__).resolve().parent.parent / "tests" / "reasoning" / "constraints"
_BATCH = 32


def _test_literals() -> list[tuple[str, str]]:
    """(id, text) of every string literal with a space in the extraction tests, first occurrence only.

    The id is the file and a digest of the text, so that moving a literal within its file keeps its id.
    """
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for path in sorted(_TESTS.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                text = node.value
                if " " in text.strip() and text not in seen:
                    seen.add(text)
                    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]
                    out.append((f"test:{path.stem}:{digest}", text))
    return out


def corpus() -> list[tuple[str, str]]:
    """(id, prompt) of every prompt the comparison extracts, in a fixed order."""
    prompts = [(f"para:{row['id']}", str(row["prompt"])) for row in load(PARAPHRASES)]
    prompts += [(f"ifeval:{row['key']}", str(row["prompt"])) for row in load(IFEVAL_PROMPTS)]
    for path in sorted(DATA_DIR.glob("*.jsonl")):
        prompts += [(f"{path.stem}:{row.get('key', i)}", str(row["prompt"])) for i, row in enumerate(load(path))]
    return prompts + _test_literals()


def _result(prompt: str, doc: Any) -> Any:
    try:
        result = extract(prompt, english_doc=doc)
    except LimitExceeded as error:
        return {"error": str(error)}
    body = msgspec.to_builtins(result)
    body["features"].pop("parse_ms", None)
    return body


def run(prompts: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """One ``{"id", "result"}`` per prompt, parsed in batches as the service does."""
    out: list[dict[str, Any]] = []
    for first in range(0, len(prompts), _BATCH):
        chunk = prompts[first : first + _BATCH]
        docs = parse_english_many([prompt for _, prompt in chunk])
        out += [{"id": key, "result": _result(prompt, doc)} for (key, prompt), doc in zip(chunk, docs)]
    return out


def _canonical(value: Any) -> str:
    """``value`` as JSON with sorted keys: equal for a result and its round trip through a file."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def compare(ours: Sequence[dict[str, Any]], theirs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts of identical and differing results among the ids both runs have, the first 20 differing ids,
    and how many ids only one run has."""
    earlier = {row["id"]: _canonical(row["result"]) for row in theirs}
    shared = [row for row in ours if row["id"] in earlier]
    differing = [row["id"] for row in shared if earlier[row["id"]] != _canonical(row["result"])]
    missing = set(earlier) - {row["id"] for row in ours}
    return {"n": len(shared), "identical": len(shared) - len(differing), "differing": len(differing),
            "first_differences": differing[:20], "only_in_against": len(missing),
            "only_here": len(ours) - len(shared)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True, help="where to write this tree's results (JSONL)")
    parser.add_argument("--against", type=Path, help="an earlier run's file to compare with")
    args = parser.parse_args(argv)
    rows = run(corpus())
    with args.out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    summary: dict[str, Any] = {"n": len(rows)}
    if args.against is not None:
        summary = compare(rows, load(args.against))
    print(json.dumps(summary, ensure_ascii=False))
    return 0 if summary.get("differing", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
