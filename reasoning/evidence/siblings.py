"""The entity lexicon of counterfactual swaps: a case's individuals and their siblings.

A claim that names an individual the request mentions (``Cyprus``, ``Jon Doe``)
is contrasted with the same claim naming a sibling: another individual of
the same ontology class (``Malta``). :func:`sibling_lexicon` gives
``label -> class`` for the linked individuals and up to ``per_class``
siblings of each, the class being the most specific one (fewest members)
that has a sibling at all; ``reasoning.counterfactual.swap_entity`` reads it.
Everything comes from the ontology: no domain's names in code.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasoning.evidence.index import IntArray, OntologyIndex
from reasoning.evidence.model import LinkedEntity

__all__ = ["sibling_lexicon"]

_GENERIC = (
    "<http://www.w3.org/2002/07/owl#",
    "<http://www.w3.org/2000/01/rdf-schema#",
    "<http://www.w3.org/1999/02/22-rdf-syntax-ns#",
)


def sibling_lexicon(
    index: OntologyIndex, linked: Sequence[LinkedEntity], per_class: int = 4, lang: str = "en"
) -> dict[str, str]:
    """``label -> class IRI`` of the linked individuals and their siblings (see the module doc);
    a linked individual without a sibling keeps its own IRI (no swap is made for it)."""
    out: dict[str, str] = {}
    if index.type_id < 0:
        return {e.label: e.iri for e in linked if e.label}
    for entity in linked:
        if not entity.label:
            continue
        node = index.term_id(f"<{entity.iri}>")
        if entity.is_class or node < 0:
            out.setdefault(entity.label, entity.iri)
            continue
        classes = index.o[_typed(index, index.out_of(node))].tolist()
        best: tuple[int, int, list[int]] | None = None
        for cls in classes:
            members = [m for m in index.s[_typed(index, index.into(cls))].tolist() if m != node]
            if members and not _generic(index.terms[cls]) and (best is None or len(members) < best[0]):
                best = (len(members), cls, members)
        if best is None:
            out.setdefault(entity.label, entity.iri)
            continue
        _, cls, members = best
        name = index.terms[cls].strip("<>")
        out[entity.label] = name
        for member in sorted(members, key=lambda m: index.label(m, lang))[:per_class]:
            label = (index.label_zh if lang == "zh" else index.label_en).get(member) or index.label_en.get(member)
            if label and label not in out:
                out[label] = name
    return out


def _typed(index: OntologyIndex, edges: IntArray) -> IntArray:
    """The ``rdf:type`` triples among ``edges`` (triple ids, their order kept)."""
    typed: IntArray = edges[index.p[edges] == index.type_id]
    return typed


def _generic(term: str) -> bool:
    """A class of the modelling languages (owl:NamedIndividual, owl:Thing, rdfs:Resource):
    its members are not siblings of each other in the domain's sense."""
    return term.startswith(_GENERIC)
