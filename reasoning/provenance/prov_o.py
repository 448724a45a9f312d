"""PROV-O as Turtle and expanded JSON-LD, written straight from the ``prov`` encoder's triples.

Why: ``ProvDocument.serialize(format="rdf")`` builds an rdflib ``Dataset``
(every triple through the in-memory store's indexes) and then runs rdflib's
pretty Turtle or JSON-LD serializer over it; for a run bundle of a few
hundred triples that took about 30 ms, most of an export's time.

What stays the same: the triples. The records our builder writes (elements,
and unidentified relations of the kinds in :data:`_FAST_RELATIONS` without
derivation subtypes) are mapped here by the rules of ``prov``'s PROV-O
encoder (``ProvRDFSerializer``: binary triple, ``prov:qualified*`` node when
the relation carries more than its two main attributes), with prov's own
term encoding and qualified-attribute predicates; anything else in a bundle
sends the whole bundle through prov's encoder itself, writing into a plain
collector instead of an rdflib graph. ``tests/reasoning/provenance/test_prov_o.py``
checks the result against ``serialize(format="rdf")``, graph by graph. Only
the writing differs: Turtle is grouped by subject (prefixed names where the
local part is plainly safe, full IRIs otherwise) and JSON-LD is the expanded
form (full IRIs, no ``@context``, each bundle a named graph), both read back
by rdflib and ``prov`` to the same graph.

Blank node labels are rdflib ``BNode`` ids (random per node),
so chunks of a streamed export never share a label by accident.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Final, cast

from prov.constants import (
    PROV,
    PROV_ASSOCIATION,
    PROV_ATTRIBUTION,
    PROV_COMMUNICATION,
    PROV_DELEGATION,
    PROV_DERIVATION,
    PROV_END,
    PROV_GENERATION,
    PROV_INVALIDATION,
    PROV_LOCATION,
    PROV_N_MAP,
    PROV_START,
    PROV_TYPE,
    PROV_USAGE,
)
from prov.identifier import QualifiedName
from prov.model import ProvBundle, ProvDocument, ProvRecord
from prov.serializers.provrdf import ProvRDFSerializer
from rdflib import BNode, Literal, URIRef
from rdflib.namespace import RDF, XSD

__all__ = ["Triple", "document_triples", "jsonld_items", "turtle"]

Triple = tuple[URIRef | BNode, URIRef, URIRef | BNode | Literal]

_STANDARD_PREFIXES: Final = {
    "prov": "http://www.w3.org/ns/prov#",
    "xsd": str(XSD),
    "rdf": str(RDF),
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
}
_SAFE_LOCAL: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_IRI_ESCAPES: Final = {c: f"\\u{ord(c):04X}" for c in '<>"{}|^`\\'} | {
    chr(i): f"\\u{i:04X}" for i in range(0x21)
}
_STRING_ESCAPES: Final = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"} | {
    chr(i): f"\\u{i:04X}" for i in range(0x20) if chr(i) not in "\n\r\t"
}
_NEEDS_IRI_ESCAPE: Final = re.compile(r'[<>"{}|^`\\\x00-\x20]')
_NEEDS_STRING_ESCAPE: Final = re.compile(r'[\\"\x00-\x1f]')
_RDF_TYPE: Final = RDF.type
_XSD_STRING: Final = XSD.string


class _Collector:
    """What ``encode_container`` writes into: triples in first-seen order and prefixes."""

    def __init__(self) -> None:
        self.triples: dict[Triple, None] = {}
        self.prefixes: dict[str, str] = {}

    def add(self, triple: Triple) -> None:
        self.triples[triple] = None

    def remove(self, triple: Triple) -> None:
        self.triples.pop(triple, None)

    def bind(self, prefix: str, uri: object, override: bool = True) -> None:
        if prefix:
            self.prefixes.setdefault(prefix, str(uri))


def _encode(serializer: ProvRDFSerializer, bundle: ProvBundle) -> _Collector:
    collector = _Collector()
    if not _FastEncoder(serializer).encode(bundle, collector):
        collector = _Collector()
        serializer.encode_container(bundle, container=collector)  # type: ignore[arg-type]
    return collector


# --- the records our builder writes, mapped without prov's per-attribute re-walks -----

_FAST_RELATIONS: Final = frozenset({
    PROV_USAGE, PROV_GENERATION, PROV_INVALIDATION, PROV_START, PROV_END, PROV_DERIVATION,
    PROV_ASSOCIATION, PROV_ATTRIBUTION, PROV_COMMUNICATION, PROV_DELEGATION,
})
"""Relation kinds the fast path maps (unidentified ones only); others go through prov."""
_QUALIFIED_ONLY: Final = frozenset({
    PROV_END, PROV_START, PROV_USAGE, PROV_GENERATION, PROV_DERIVATION, PROV_ASSOCIATION,
    PROV_INVALIDATION,
})
"""Kinds whose binary triple is written only when it is all the relation says."""
_INFLUENCER_ON_NODE: Final = frozenset({PROV_COMMUNICATION, PROV_ATTRIBUTION, PROV_DELEGATION})
"""Kinds whose qualification node repeats the influencer (the binary triple's object)."""
_DERIVATION_SUBTYPES: Final = frozenset(
    {PROV["Revision"], PROV["Quotation"], PROV["PrimarySource"]})
_ELEMENT_PREDICATES: Final = {
    PROV_TYPE: RDF.type,
    PROV["label"]: URIRef("http://www.w3.org/2000/01/rdf-schema#label"),
    PROV["startTime"]: URIRef(PROV["startedAtTime"].uri),
    PROV["endTime"]: URIRef(PROV["endedAtTime"].uri),
}


class _Unsupported(Exception):
    """A record outside the fast path's shapes: the bundle goes through prov's encoder."""


class _FastEncoder:
    def __init__(self, serializer: ProvRDFSerializer) -> None:
        self._serializer = serializer
        self._value = serializer.encode_rdf_representation
        self._predicates: dict[tuple[QualifiedName, QualifiedName], object] = {}

    def encode(self, bundle: ProvBundle, collector: _Collector) -> bool:
        """Map every record of ``bundle`` into ``collector``; False when one is unsupported."""
        for namespace in bundle.get_registered_namespaces():
            collector.bind(namespace.prefix, namespace.uri)
        if bundle.get_default_namespace() is not None:
            return False
        try:
            for record in bundle.get_records():
                if record.is_relation():
                    self._relation(record, collector)
                else:
                    self._element(record, collector)
        except _Unsupported:
            return False
        return True

    def _element(self, record: ProvRecord, collector: _Collector) -> None:
        if record.identifier is None:
            raise _Unsupported
        subject = URIRef(record.identifier.uri)
        collector.add((subject, RDF.type, URIRef(record.get_type().uri)))
        for attr, value in (*record.formal_attributes, *record.attributes):
            if value is None:
                continue
            if isinstance(value, ProvRecord) or attr == PROV_LOCATION:
                raise _Unsupported
            predicate = _ELEMENT_PREDICATES.get(attr) if isinstance(attr, QualifiedName) else None
            collector.add((subject, predicate or cast(URIRef, self._value(attr)), self._value(value)))

    def _relation(self, record: ProvRecord, collector: _Collector) -> None:
        kind = record.get_type()
        formal = record.formal_attributes
        extra = record.extra_attributes
        if (record.identifier is not None or kind not in _FAST_RELATIONS
                or any(a == PROV_TYPE and v in _DERIVATION_SUBTYPES for a, v in extra)):
            raise _Unsupported
        (_, subject_name), (object_attr, object_value) = formal[0], formal[1]
        if subject_name is None or object_value is None:
            raise _Unsupported
        subject = URIRef(subject_name.uri)
        qualified = bool(extra) or any(v is not None for _, v in formal[2:])
        written = {formal[0][0]}
        if kind not in _QUALIFIED_ONLY or not qualified:
            collector.add((subject, URIRef(PROV[PROV_N_MAP[kind]].uri), self._value(object_value)))
            if not (kind in _INFLUENCER_ON_NODE and qualified):
                written.add(object_attr)
        if not qualified:
            return
        node = BNode()
        collector.add((subject, URIRef(PROV["qualified" + kind.localpart].uri), node))
        collector.add((node, RDF.type, URIRef(kind.uri)))
        names = [name for name, _ in formal]
        for attr, value in (*formal, *record.attributes):
            if value is not None and attr not in written:
                collector.add((node, self._predicate(kind, attr, names), self._value(value)))

    def _predicate(self, kind: QualifiedName, attr: QualifiedName, names: list[QualifiedName]
                   ) -> URIRef:
        key = (kind, attr)
        found = self._predicates.get(key)
        if found is None:
            found = self._predicates[key] = self._serializer._qualified_attr_predicate(
                kind, attr, names)
        return found  # type: ignore[return-value]


def document_triples(
    document: ProvDocument,
) -> Iterator[tuple[str | None, list[Triple], dict[str, str]]]:
    """``(graph name, triples, prefixes)``: the document's own records, then each bundle.

    The graph name is None for the document's own records (skipped when it
    has none) and the bundle IRI for a bundle.
    """
    serializer = ProvRDFSerializer(document)
    if document.records:
        own = _encode(serializer, document)
        yield None, list(own.triples), own.prefixes
    for bundle in document.bundles:
        encoded = _encode(serializer, bundle)
        yield bundle.identifier.uri, list(encoded.triples), encoded.prefixes  # type: ignore[union-attr]


# --- Turtle -----------------------------------------------------------------------------


def _iri(value: str) -> str:
    if _NEEDS_IRI_ESCAPE.search(value):
        value = "".join(_IRI_ESCAPES.get(c, c) for c in value)
    return f"<{value}>"


def _string(value: str) -> str:
    if _NEEDS_STRING_ESCAPE.search(value):
        value = "".join(_STRING_ESCAPES.get(c, c) for c in value)
    return f'"{value}"'


class _Names:
    """IRIs as prefixed names where the local part is plainly safe, else ``<...>``."""

    def __init__(self, prefixes: dict[str, str]) -> None:
        self._by_length = sorted(prefixes.items(), key=lambda item: -len(item[1]))
        self._cache: dict[str, str] = {}

    def iri(self, value: str) -> str:
        shown = self._cache.get(value)
        if shown is None:
            shown = self._cache[value] = self._shorten(value)
        return shown

    def _shorten(self, value: str) -> str:
        for prefix, namespace in self._by_length:
            if value.startswith(namespace) and _SAFE_LOCAL.fullmatch(value[len(namespace):]):
                return f"{prefix}:{value[len(namespace):]}"
        return _iri(value)

    def term(self, term: URIRef | BNode | Literal) -> str:
        if isinstance(term, URIRef):
            return self.iri(str(term))
        if isinstance(term, BNode):
            return f"_:{term}"
        text = _string(str(term))
        if term.language:
            return f"{text}@{term.language}"
        if term.datatype is not None and term.datatype != _XSD_STRING:
            return f"{text}^^{self.iri(str(term.datatype))}"
        return text


def turtle(parts: Iterable[tuple[str | None, list[Triple], dict[str, str]]]) -> str:
    """All triples of ``parts`` as one Turtle document (graph names dropped: flattened)."""
    prefixes = dict(_STANDARD_PREFIXES)
    grouped: dict[URIRef | BNode, list[tuple[URIRef, URIRef | BNode | Literal]]] = {}
    for _, triples, bound in parts:
        for prefix, namespace in bound.items():
            prefixes.setdefault(prefix, namespace)
        for s, p, o in triples:
            grouped.setdefault(s, []).append((p, o))
    names = _Names(prefixes)
    lines = [f"@prefix {prefix}: {_iri(namespace)} ." for prefix, namespace in prefixes.items()]
    for subject, pairs in grouped.items():
        statements = [
            ("a" if p == _RDF_TYPE else names.iri(str(p))) + " " + names.term(o) for p, o in pairs
        ]
        lines.append("")
        lines.append(names.term(subject) + " " + " ;\n    ".join(statements) + " .")
    return "\n".join(lines) + "\n"


# --- expanded JSON-LD -----------------------------------------------------------------------


def _value(term: URIRef | BNode | Literal) -> dict[str, str]:
    if isinstance(term, URIRef):
        return {"@id": str(term)}
    if isinstance(term, BNode):
        return {"@id": f"_:{term}"}
    if term.language:
        return {"@value": str(term), "@language": term.language}
    if term.datatype is not None:
        return {"@type": str(term.datatype), "@value": str(term)}
    return {"@value": str(term)}


def _values(node: dict[str, object], key: str) -> list[object]:
    """The list under ``key`` in a JSON-LD node, created empty on first use."""
    found = node.setdefault(key, [])
    assert isinstance(found, list)
    return found


def _nodes(triples: list[Triple]) -> list[dict[str, object]]:
    nodes: dict[URIRef | BNode, dict[str, object]] = {}
    for s, p, o in triples:
        node = nodes.get(s)
        if node is None:
            node = nodes[s] = {"@id": f"_:{s}" if isinstance(s, BNode) else str(s)}
        if p == _RDF_TYPE and isinstance(o, URIRef):
            _values(node, "@type").append(str(o))
        else:
            _values(node, str(p)).append(_value(o))
    return list(nodes.values())


def jsonld_items(parts: Iterable[tuple[str | None, list[Triple], dict[str, str]]]) -> list[str]:
    """Top-level items of an expanded JSON-LD array, each already JSON text.

    The document's own records are top-level node objects (default graph);
    each bundle is ``{"@id": <bundle IRI>, "@graph": [...]}``.
    """
    items: list[str] = []
    for name, triples, _ in parts:
        nodes = _nodes(triples)
        if name is None:
            items.extend(json.dumps(node, ensure_ascii=False) for node in nodes)
        elif nodes:
            items.append(json.dumps({"@id": name, "@graph": nodes}, ensure_ascii=False))
    return items
