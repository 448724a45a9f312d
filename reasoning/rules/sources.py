"""The decision rules an ontology declares, read from its triples as written.

One :class:`RuleSource` per SHACL rule node (typed ``sh:SPARQLRule`` or
``sh:TripleRule``, or the object of an ``sh:rule``), with its CONSTRUCT texts, the
prefixes it declares, what it implements and the inputs it requires. Nothing is
parsed or evaluated here: both the upload checks and the rule loader start from
these sources.

:func:`read_sparql_texts` reads every SPARQL text the ontology carries, wherever
it sits (``sh:construct`` of rules, ``sh:select`` of SPARQL targets, constraints
and functions, ``sh:ask`` of validators and functions, ``sh:update``), and
:func:`read_patterns` every ``sh:pattern``: pyshacl may evaluate any of them
(targets select focus nodes, ``sh:condition`` shapes are validated), so the
upload checks look at all of them, not only at the rules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Final

from reasoning.case.vocabulary import (
    SH,
    SH_CONSTRUCT,
    SH_DECLARE,
    SH_NAMESPACE,
    SH_OBJECT,
    SH_PREDICATE,
    SH_PREFIX,
    SH_PREFIXES,
    SH_RULE,
    SH_SPARQL_RULE,
    SH_SUBJECT,
    SH_TRIPLE_RULE,
    TV_IMPLEMENTS,
    TV_REQUIRES_INPUT,
)
from reasoning.evidence.terms import RDF_TYPE, Triple, iri, is_literal, literal_value

__all__ = [
    "SPARQL_PREDICATES",
    "RuleSource",
    "SparqlText",
    "prefix_block",
    "read_patterns",
    "read_rule_sources",
    "read_sparql_texts",
]

#: The SHACL properties whose value is a SPARQL text, with the query form each must have
#: (``update``: a SPARQL Update, never accepted).
SPARQL_PREDICATES: Final = {
    iri(SH + "construct"): "construct",
    iri(SH + "select"): "select",
    iri(SH + "ask"): "ask",
    iri(SH + "update"): "update",
}
_SH_PATTERN: Final = iri(SH + "pattern")
_SH_FLAGS: Final = iri(SH + "flags")


class RuleSource:
    """One declared rule as read from the triples (no parsing yet)."""

    __slots__ = (
        "constructs",
        "implements",
        "inputs",
        "kind",
        "node",
        "prefixes",
        "shape",
        "triple_parts",
    )

    def __init__(self, node: str, shape: str | None, kind: str) -> None:
        self.node, self.shape, self.kind = node, shape, kind
        self.constructs: list[str] = []
        self.prefixes: dict[str, str] = {}
        self.implements: str | None = None
        self.inputs: list[str] = []
        self.triple_parts: dict[str, str] = {}


def read_rule_sources(triples: Iterable[Triple]) -> list[RuleSource]:
    """The rules declared in ``triples``, in a stable order (by node)."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    kinds: dict[str, str] = {}
    shapes: dict[str, str] = {}
    for s, p, o in triples:
        out[s].append((p, o))
        if p == RDF_TYPE and o in (SH_SPARQL_RULE, SH_TRIPLE_RULE):
            kinds[s] = "sparql" if o == SH_SPARQL_RULE else "triple"
        elif p == SH_RULE:
            shapes.setdefault(o, s)
    sources: list[RuleSource] = []
    for node in sorted(set(kinds) | set(shapes)):
        source = RuleSource(node, shapes.get(node), kinds.get(node, "unknown"))
        for p, o in out.get(node, ()):
            if p == SH_CONSTRUCT and is_literal(o):
                source.constructs.append(literal_value(o))
            elif p == SH_PREFIXES:
                source.prefixes.update(_declared_prefixes(out, o))
            elif p == TV_IMPLEMENTS and source.implements is None:
                source.implements = o
            elif p == TV_REQUIRES_INPUT:
                source.inputs.append(o)
            elif p in (SH_SUBJECT, SH_PREDICATE, SH_OBJECT):
                source.triple_parts[p] = o
        source.inputs.sort()
        sources.append(source)
    return sources


class SparqlText:
    """One SPARQL text as written: the node holding it, its property, its declared prefixes.

    ``text`` is None when the property's value is not a literal (pyshacl
    would refuse it at evaluation, so the upload refuses it first).
    """

    __slots__ = ("form", "node", "prefixes", "property", "text")

    def __init__(self, node: str, property_: str, form: str, text: str | None,
                 prefixes: dict[str, str]) -> None:
        self.node, self.property, self.form, self.text = node, property_, form, text
        self.prefixes = prefixes


def read_sparql_texts(triples: Iterable[Triple]) -> list[SparqlText]:
    """Every SPARQL text in ``triples`` (see the module doc), in a stable order."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for s, p, o in triples:
        out[s].append((p, o))
    texts: list[SparqlText] = []
    for node in sorted(out):
        edges = out[node]
        held = [(p, o) for p, o in edges if p in SPARQL_PREDICATES]
        if not held:
            continue
        prefixes: dict[str, str] = {}
        for p, o in edges:
            if p == SH_PREFIXES:
                prefixes.update(_declared_prefixes(out, o))
        for p, o in sorted(held):
            text = literal_value(o) if is_literal(o) else None
            texts.append(SparqlText(node, p, SPARQL_PREDICATES[p], text, prefixes))
    return texts


def read_patterns(triples: Iterable[Triple]) -> list[tuple[str, str, str]]:
    """``(node, pattern, flags)`` of every ``sh:pattern`` (a regular expression pyshacl runs)."""
    patterns: dict[str, list[str]] = defaultdict(list)
    flags: dict[str, str] = {}
    for s, p, o in triples:
        if p == _SH_PATTERN and is_literal(o):
            patterns[s].append(literal_value(o))
        elif p == _SH_FLAGS and is_literal(o):
            flags[s] = literal_value(o)
    return [(node, pattern, flags.get(node, "")) for node in sorted(patterns)
            for pattern in patterns[node]]


def _declared_prefixes(out: dict[str, list[tuple[str, str]]], node: str) -> dict[str, str]:
    prefixes: dict[str, str] = {}
    for p, declaration in out.get(node, ()):
        if p != SH_DECLARE:
            continue
        values = dict(out.get(declaration, ()))
        prefix, namespace = values.get(SH_PREFIX), values.get(SH_NAMESPACE)
        if (
            prefix is not None
            and namespace is not None
            and is_literal(prefix)
            and is_literal(namespace)
        ):
            prefixes[literal_value(prefix)] = literal_value(namespace)
    return prefixes


def prefix_block(prefixes: dict[str, str]) -> str:
    """SPARQL ``PREFIX`` lines for declared prefixes (sorted, so the text is stable)."""
    return "".join(f"PREFIX {name}: <{ns}>\n" for name, ns in sorted(prefixes.items()))
