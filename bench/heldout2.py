"""Second held-out end-to-end benchmark: a fresh set of instruction types and wordings, through the public API.

``python -m bench.heldout2 [--quick] [--limit N] [--max-new-tokens N] [--port N] [--progress PATH] [--concurrency N]``

``bench/data/heldout2.jsonl`` (62 prompts, 73 instructions, 22 prompts
Chinese or mixed Chinese/English) was written after the first held-out set
had been tuned against, by someone who read neither the product's extraction
nor its controllers, and was committed before the product first ran on it.
Its tasks are those of a compliance or analysis assistant (emails, summaries,
explanations, lists, short reports), each with one or two form instructions:
types IFEval has no family for (marks, digits and percentages counted;
sentences per paragraph; a word or sentence at a position; paragraphs ending
with a phrase; balanced lengths; a restated request; tables by columns;
line lengths; bold spans; words by suffix; repeats per word; the share of
questions ...) and familiar types in new wordings (sentences, paragraphs,
keywords, case, JSON, closing phrase, title, bullets, headings, commas).

Each row's shape, the two arms (``steering`` true and false, 160 tokens;
``--quick``: 16 prompts, 96 tokens), the extraction statuses and the report
are those of ``bench.heldout``, whose harness runs this set through its
``Suite``; the judges are ``bench.heldout2_judge``. The last stdout line is
one JSON object; ``per_judge[id].steered_failed`` splits the steered misses
into recognised-but-failed, unrecognised and missed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from bench import heldout
from bench.heldout2_judge import JUDGES

__all__ = ["DATA", "SUITE", "main"]

DATA = Path(__file__).resolve().parent / "data" / "heldout2.jsonl"
SUITE = heldout.Suite(
    "heldout2",
    DATA,
    JUDGES,
    "bench.heldout2_judge (written apart from the product's extraction and verifiers)",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve, run the second held-out set through both arms, print the report."""
    return heldout.main(argv, SUITE)


if __name__ == "__main__":
    sys.exit(main())
