"""The held-out sets' judge: one verifier per instruction type, written apart from the product.

Nothing here imports ``reasoning``, ``inference``, ``app`` or ``store``: the
product's own extraction, controllers and verifiers would grade themselves.
Each verifier reads an answer as a strict human reader of the instruction
would, and says how in one line (``VERIFIERS``: verifier id -> (function,
reading)). The verifiers were written set by set, each set's by someone who
had read none of the product (``bench/data/README.md`` says who, when and
how); a later set reuses an earlier verifier where its instruction means the
same. They live by what they read:

- :mod:`.readings`: what a word, a sentence, a paragraph, a line, a list
  item, a keyword and a count's bound are (the readings every verifier shares);
- :mod:`.words`: words, letters and keywords (counts, positions, vocabularies);
- :mod:`.characters`: characters and marks (counts, scripts, case, spans,
  nesting, language);
- :mod:`.sentences`: sentences (counts, lengths, starts and ends, kinds, chains);
- :mod:`.layout`: paragraphs and lines;
- :mod:`.lists`: list items, numbering and outlines;
- :mod:`.formats`: the whole answer's form (JSON, CSV, tables, headings,
  wrapping, a fixed opening or ending).

A set (:mod:`.sets`, described in ``bench/data/heldout_sets.json``) names the
instruction ids its data uses, the verifier of each where the id alone does
not say it (two sets read ``wrapped`` and the keyword counts differently),
and whether an empty answer fails every instruction (every set since the
second). Adding a verifier is a function and one line of its module's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.heldout_judge import characters, formats, layout, lists, sentences, words
from bench.heldout_judge.readings import Judge

__all__ = ["VERIFIERS", "Judge", "judge"]


def _merged(*tables: Mapping[str, tuple[Judge, str]]) -> dict[str, tuple[Judge, str]]:
    merged: dict[str, tuple[Judge, str]] = {}
    for table in tables:
        for verifier_id, entry in table.items():
            if verifier_id in merged:
                raise ValueError(f"verifier {verifier_id!r} is defined twice")
            merged[verifier_id] = entry
    return merged


#: verifier id -> (function, how a strict reader decides it), for every family.
VERIFIERS: dict[str, tuple[Judge, str]] = _merged(
    words.VERIFIERS,
    characters.VERIFIERS,
    sentences.VERIFIERS,
    layout.VERIFIERS,
    lists.VERIFIERS,
    formats.VERIFIERS,
)


def judge(verifier_id: str, args: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` meets verifier ``verifier_id`` with ``args``; an unknown id is a ``KeyError``.

    The empty-answer rule is a set's (:meth:`bench.heldout_judge.sets.Suite.grade`), not applied here.
    """
    function, _ = VERIFIERS[verifier_id]
    return function(args, text)
