"""The one citation syntax of Tenet, for prompts, decoders and verifiers.

The steered decoder numbers the evidence facts it shows the model ``E1``,
``E2``, ... (``EvidenceFact.id``) and asks the model to cite them in square
brackets:

- ``[E3]`` cites one fact; ``[E3, E5]`` or ``[E3; E5]`` cites several;
- a citation of a published source may carry its year in brackets or
  parentheses: ``(Basel Committee, 2019)``, ``[FATF 2021]``, ``(2018)``.

:func:`evidence_ids` and :func:`cited_years` read both forms; the verifiers of
``cite_sources`` and ``citation_time_window`` use nothing else, so changing the
syntax means changing this module only.
"""

from __future__ import annotations

import re

__all__ = [
    "EVIDENCE_CITATION",
    "YEAR_CITATION",
    "cited_years",
    "evidence_ids",
    "format_citation",
]

EVIDENCE_CITATION = re.compile(r"\[\s*(E\d+(?:\s*[,;]\s*E\d+)*)\s*\]")
"""``[E3]`` or ``[E3, E5]``: group 1 holds the comma/semicolon separated ids."""

YEAR_CITATION = re.compile(r"[\[(]([^\[\]()\n]{0,80}?\b(1[5-9]\d\d|20\d\d)\b[^\[\]()\n]{0,20})[\])]")
"""A bracketed or parenthesised reference holding a year (group 2)."""

_ID = re.compile(r"E\d+")


def format_citation(ids: list[str] | tuple[str, ...]) -> str:
    """The citation the model is asked to write for ``ids``: ``[E1, E4]``."""
    return "[" + ", ".join(ids) + "]"


def evidence_ids(text: str) -> list[str]:
    """Evidence ids cited in ``text``, in order of first citation, without repeats."""
    seen: dict[str, None] = {}
    for match in EVIDENCE_CITATION.finditer(text):
        for evidence_id in _ID.findall(match.group(1)):
            seen.setdefault(evidence_id, None)
    return list(seen)


def cited_years(text: str) -> list[int]:
    """Years written inside bracketed or parenthesised references, in order."""
    return [int(match.group(2)) for match in YEAR_CITATION.finditer(text)]
