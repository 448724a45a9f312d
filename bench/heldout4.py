"""Fourth held-out end-to-end benchmark: instruction types and wordings the product has not been shown, through the public API.

``python -m bench.heldout4 [--quick] [--limit N] [--max-new-tokens N] [--port N] [--progress PATH] [--concurrency N]``

``bench/data/heldout4.jsonl`` (60 prompts, 83 instructions, 20 prompts
Chinese or mixed Chinese/English) was written on 2026-12-02, after the first
three held-out sets had been measured and tuned against, by someone who read
neither the product's extraction nor its controllers nor its verifiers, and
it was committed before the product first ran on it. Its tasks are everyday
ones away from the earlier sets' compliance domain (cooking, travel, pets,
gardening, sport, school, weather, small adverts and notes), each with one
to three form instructions; every prompt was checked against a hand-written
answer (under 130 tokens of the bundled model's tokenizer, kept out of the
repository) that meets all its instructions, so none asks for more than a
160-token answer can give. About half the instructions are of types IFEval
has no family for (shares of stop words and distinct words, kinds of
conjunctions, pronouns, palindromes, alphabet-chained words, sentences
chained last word to first word, a word at a position in a sentence,
growing sentence lengths, emoji per sentence, punctuation allowed or
required, custom separators, templates, title case, CSV, nested brackets,
one word per line, a request repeated with a change); the other half are of
familiar types in wordings neither IFEval nor the earlier sets use. The
judges' table (``bench.heldout4_judge.JUDGES``) names each type; which prompt
carries which is in the data file alone, which those tuning the product do
not open.

Each row's shape, the two arms (``steering`` true and false, 160 tokens;
``--quick``: 16 prompts, 96 tokens), the extraction statuses and the report
are those of ``bench.heldout``, whose harness runs this set through its
``Suite``; the judges are ``bench.heldout4_judge``. The last stdout line is
one JSON object; ``per_judge[id].steered_failed`` splits the steered misses
into recognised-but-failed, unrecognised and missed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from bench import heldout
from bench.heldout4_judge import JUDGES

__all__ = ["DATA", "SUITE", "main"]

DATA = Path(__file__).resolve().parent / "data" / "heldout4.jsonl"
SUITE = heldout.Suite(
    "heldout4",
    DATA,
    JUDGES,
    "bench.heldout4_judge (written apart from the product's extraction, controllers and verifiers)",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve, run the fourth held-out set through both arms, print the report."""
    return heldout.main(argv, SUITE)


if __name__ == "__main__":
    sys.exit(main())
