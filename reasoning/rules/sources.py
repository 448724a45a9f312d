"""The decision rules an ontology declares, read from its triples as written.

One :class:`RuleSource` per SHACL rule node (typed ``sh:SPARQLRule`` or
``sh:TripleRule``, or the object of an ``sh:rule``), with its CONSTRUCT texts, the
prefixes it declares, what it implements and the inputs it requires. Nothing is
parsed or evaluated here: both the upload checks and the rule loader start from
these sources.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from reasoning.case.vocabulary import (
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
from reasoning.evidence.terms import RDF_TYPE, Triple, is_literal, literal_value

__all__ = ["RuleSource", "prefix_block", "read_rule_sources"]


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
