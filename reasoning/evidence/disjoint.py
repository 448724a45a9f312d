"""``excludes`` edges between constraints from ``owl:disjointWith`` in the domain's ontology.

Some constraints confine the answer to one domain term: ``jurisdiction``
("rely only on the rules of jurisdiction EU") names the one body of rules
that may apply. When two such constraints name terms the ontology declares
disjoint, both cannot hold, and the constraint graph should say so with an
``excludes`` edge (``origin="ontology"``), exactly as it does for "in
English" against "in Chinese". The rules in :mod:`reasoning.graph` cannot
know this: only the domain ontology does.

What counts as disjoint: a term's classes are the term itself when it is a
class, with its superclasses, or the types of an individual (asserted and
inferred: the index holds the OWL 2 RL closure, so a subclass's instances
carry their superclass types). Two terms are disjoint when some class of one
is ``owl:disjointWith`` some class of the other, in either direction.
``owl:AllDisjointClasses`` axioms count only as far as materialisation has
turned them into pairwise ``owl:disjointWith``.

A constraint parameter is linked to the ontology like a prompt mention
(labels, ``skos:altLabel``; short keys such as "EU" must be in capitals), so
nothing here is specific to one domain.

Use: ``analyse(prompt, domain_index=index)`` adds these edges by itself; the
hook form is :func:`disjointness_hook`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Final

from reasoning.constraints.model import Constraint, Kind
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.linking import link_mentions
from reasoning.evidence.terms import OWL_DISJOINT_WITH, RDF_TYPE, RDFS_SUBCLASSOF, iri
from reasoning.graph import DomainHook, Edge, EdgeKind, ontology_edge

__all__ = ["TERM_PARAMETERS", "disjointness_edges", "disjointness_hook"]

TERM_PARAMETERS: Final[Mapping[Kind, tuple[str, ...]]] = {Kind.JURISDICTION: ("code",)}
"""The kinds whose parameters name the one domain term the answer is confined to."""

_MIN_LINK_SCORE: Final = 0.8


def _objects(index: OntologyIndex, node: int, predicate: int) -> set[int]:
    edges = index.out_edges[index.out_ptr[node]:index.out_ptr[node + 1]]
    return {int(o) for o in index.o[edges[index.p[edges] == predicate]]}


def _disjoint_pairs(index: OntologyIndex) -> set[tuple[int, int]]:
    predicate = index.term_id(OWL_DISJOINT_WITH)
    if predicate < 0:
        return set()
    mask = index.p == predicate
    pairs = set(zip(index.s[mask].tolist(), index.o[mask].tolist(), strict=True))
    return pairs | {(b, a) for a, b in pairs}


def _classes(index: OntologyIndex, node: int) -> set[int]:
    if bool(index.is_class[node]):
        return {node} | _objects(index, node, index.term_id(RDFS_SUBCLASSOF))
    return _objects(index, node, index.term_id(RDF_TYPE))


def _terms(index: OntologyIndex, constraint: Constraint) -> list[int]:
    """The ontology nodes a constraint's term parameters link to (best link per value)."""
    nodes: list[int] = []
    for name in TERM_PARAMETERS.get(constraint.kind, ()):
        value = constraint.params.get(name)
        if not isinstance(value, str) or not value.strip():
            continue
        links = [e for e in link_mentions(index, value.strip()) if e.score >= _MIN_LINK_SCORE]
        if links:
            best = max(links, key=lambda e: (e.end - e.start, e.score))
            node = index.term_id(iri(best.iri))
            if node >= 0:
                nodes.append(node)
    return nodes


def disjointness_edges(index: OntologyIndex, constraints: Sequence[Constraint]) -> list[Edge]:
    """One ``excludes`` edge per pair of constraints whose terms the ontology keeps disjoint.

    The edge runs from the earlier constraint to the later one and its
    reason names both terms and the two disjoint classes. Costs nothing
    unless two constraints have term parameters.
    """
    candidates = [c for c in constraints if c.kind in TERM_PARAMETERS]
    if len(candidates) < 2:
        return []
    pairs = _disjoint_pairs(index)
    if not pairs:
        return []
    terms = {c.id: [(n, _classes(index, n)) for n in _terms(index, c)] for c in candidates}
    edges: list[Edge] = []
    for a, b in combinations(candidates, 2):
        found = _first_disjoint(terms[a.id], terms[b.id], pairs)
        if found is None:
            continue
        (term_a, class_a), (term_b, class_b) = found
        version = f" (version {index.version})" if index.version else ""
        reason = (
            f"the domain ontology{version} declares {index.label(class_a)} owl:disjointWith "
            f"{index.label(class_b)}, so {index.label(term_a)} and {index.label(term_b)} "
            "cannot both apply"
        )
        edges.append(ontology_edge(a.id, b.id, EdgeKind.EXCLUDES, reason))
    return edges


def _first_disjoint(
    left: list[tuple[int, set[int]]],
    right: list[tuple[int, set[int]]],
    pairs: set[tuple[int, int]],
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    for term_a, classes_a in left:
        for term_b, classes_b in right:
            if term_a == term_b:
                continue
            for class_a in sorted(classes_a):
                for class_b in sorted(classes_b):
                    if (class_a, class_b) in pairs:
                        return (term_a, class_a), (term_b, class_b)
    return None


def disjointness_hook(index: OntologyIndex) -> DomainHook:
    """The :data:`~reasoning.graph.DomainHook` of ``index`` for ``analyse``."""

    def hook(constraints: Sequence[Constraint]) -> list[Edge]:
        return disjointness_edges(index, constraints)

    return hook

