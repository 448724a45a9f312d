"""Third held-out end-to-end benchmark: instruction types and wordings the product has not been shown, through the public API.

``python -m bench.heldout3 [--quick] [--limit N] [--max-new-tokens N] [--port N] [--progress PATH] [--concurrency N]``

``bench/data/heldout3.jsonl`` (60 prompts, 78 instructions, 23 prompts
Chinese or mixed Chinese/English) was written on 2026-12-02, after the first
two held-out sets had been tuned against (the categories of their misses were
handed to the product's engineers), by someone who read neither the product's
extraction nor its controllers nor its verifiers, and it was committed before
the product first ran on it. Its tasks are those of a compliance or analysis
assistant and of everyday users (emails, summaries, explanations, lists,
short reports, product notes), each with one to three form instructions;
every prompt was checked against a hand-written answer (under 110 tokens of
the bundled model's tokenizer, kept out of the repository) that meets all
its instructions, so none asks for more than a 160-token answer can give.
About half the instructions are of types IFEval has no family for
(counts of given marks, words by their letters, positions of words and
sentences, structures, wrapped text, rules per piece, ratios, repeats,
tables, orderings, casing of parts); the other half are of familiar types in
wordings neither IFEval nor the earlier sets use. The judges' table
(``bench.heldout3_judge.JUDGES``) names each type; which prompt carries
which is in the data file alone, which those tuning the product do not open.

Each row's shape, the two arms (``steering`` true and false, 160 tokens;
``--quick``: 16 prompts, 96 tokens), the extraction statuses and the report
are those of ``bench.heldout``, whose harness runs this set through its
``Suite``; the judges are ``bench.heldout3_judge``. The last stdout line is
one JSON object; ``per_judge[id].steered_failed`` splits the steered misses
into recognised-but-failed, unrecognised and missed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from bench import heldout
from bench.heldout3_judge import JUDGES

__all__ = ["DATA", "SUITE", "main"]

DATA = Path(__file__).resolve().parent / "data" / "heldout3.jsonl"
SUITE = heldout.Suite(
    "heldout3",
    DATA,
    JUDGES,
    "bench.heldout3_judge (written apart from the product's extraction, controllers and verifiers)",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve, run the third held-out set through both arms, print the report."""
    return heldout.main(argv, SUITE)


if __name__ == "__main__":
    sys.exit(main())
