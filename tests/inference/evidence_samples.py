"""Evidence facts written by hand for the prompt and decoder tests.

The tests look at a fact's id, view, text and date; its triple and
provenance are fixed placeholders.
"""

from __future__ import annotations

from reasoning.evidence.model import EvidenceFact

__all__ = ["fact"]


def fact(fid: str, view: str, text: str, *, modified: str | None = None) -> EvidenceFact:
    """A fact of ``view`` saying ``text``, cited as ``fid`` (dated ``modified`` when given)."""
    return EvidenceFact(
        id=fid,
        subject="s",
        predicate="p",
        object="o",
        text=text,
        view=view,
        score=1.0,
        hops=1,
        ontology_version="v1",
        modified=modified,
    )
