"""Fifth held-out end-to-end benchmark: instruction families no earlier set judges, written blind, through the public API.

``python -m bench.heldout5 [--quick] [--limit N] [--max-new-tokens N] [--port N] [--progress PATH] [--concurrency N]``

``bench/data/heldout5.jsonl`` (60 prompts, 93 instructions, 22 prompts
Chinese or mixed Chinese/English) was written on 2026-12-07 for issue 36, blind:
by someone who read none of the product (no ``reasoning/``, ``inference/``,
``app/`` or ``store/``, no extraction, controller, verifier or reader wording),
only the fourth set's data, runner, judges and tests and the earlier judges'
one-line readings; it was committed before the product first ran on it. Its
tasks are everyday ones (messages and letters, school, food, travel, sport,
small adverts, newsletters, speech practice), each with one to three form
instructions; every prompt was checked against a hand-written answer (a few
dozen words, kept out of the repository) that meets all its instructions, so
none asks for more than a 160-token answer can give. 44 of the 93
instructions (47%) are of families none of the four earlier sets judges
(``bench.heldout5_judge.NEW_FAMILIES``): positions counted from the start or
the end on paragraphs and lines (a keyword in the k-th paragraph, the k-th
paragraph's number of sentences, the k-th line from the end being a given
text), balances and ratios between counts (kinds of sentences in exact
numbers, in equal numbers or in a repeated pattern; one keyword exactly r
times another; one paragraph's sentences r times another's; one list's items
r times another's), custom list markers instead of bullets, sub-items under
every item with named markers or ``n.m`` numbering, quotation marks nested to
a depth, every n-th word in capitals, sentences alternating between Han and
Latin script or each mixing both, an emoji ending every sentence, letter rules
(vowel kinds per word, vowel- or consonant-initial sentences or words,
consonant clusters) and a closing sentence echoing the opening one; the other
instructions are of familiar types in new wordings. The judges' table
(``bench.heldout5_judge.JUDGES``) names each type; which prompt carries which
is in the data file alone, which those tuning the product do not open.

Each row's shape, the two arms (``steering`` true and false, 160 tokens;
``--quick``: 16 prompts, 96 tokens), the extraction statuses and the report
are those of ``bench.heldout``, whose harness runs this set through its
``Suite``; the judges are ``bench.heldout5_judge``. The last stdout line is
one JSON object; ``per_judge[id].steered_failed`` splits the steered misses
into recognised-but-failed, unrecognised and missed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from bench import heldout
from bench.heldout5_judge import JUDGES

__all__ = ["DATA", "SUITE", "main"]

DATA = Path(__file__).resolve().parent / "data" / "heldout5.jsonl"
SUITE = heldout.Suite(
    "heldout5",
    DATA,
    JUDGES,
    "bench.heldout5_judge (written blind, apart from the product's extraction, controllers, verifiers and readers)",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve, run the fifth held-out set through both arms, print the report."""
    return heldout.main(argv, SUITE)


if __name__ == "__main__":
    sys.exit(main())
