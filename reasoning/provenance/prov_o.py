"""PROV-O as Turtle and expanded JSON-LD, written straight from the ``prov`` encoder's triples.

Why: ``ProvDocument.serialize(format="rdf")`` builds an rdflib ``Dataset``
(every triple through the in-memory store's indexes) and then runs rdflib's
pretty Turtle or JSON-LD serializer over it; for a run bundle of a few
hundred triples that took about 30 ms, most of an export's time.

What stays the same: the triples. They come from the ``prov`` package's own
PROV-O encoder (``ProvRDFSerializer.encode_container``, the code behind
``serialize(format="rdf")``) writing into a plain collector instead of a
graph, so the mapping of every record, qualified relation and literal is
prov's. Only the writing differs: Turtle is grouped by subject (prefixed
names where the local part is plainly safe, full IRIs otherwise) and JSON-LD
is the expanded form (full IRIs, no ``@context``, each bundle a named
graph), both read back by rdflib and ``prov`` to the same graph.

Blank node labels are prov's (rdflib ``BNode`` ids, unique per process run),
so chunks of a streamed export never share a label by accident.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Final

from prov.model import ProvBundle, ProvDocument
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
    serializer.encode_container(bundle, container=collector)  # type: ignore[arg-type]
    return collector


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


def _nodes(triples: list[Triple]) -> list[dict[str, object]]:
    nodes: dict[URIRef | BNode, dict[str, object]] = {}
    for s, p, o in triples:
        node = nodes.get(s)
        if node is None:
            node = nodes[s] = {"@id": f"_:{s}" if isinstance(s, BNode) else str(s)}
        if p == _RDF_TYPE and isinstance(o, URIRef):
            node.setdefault("@type", []).append(str(o))  # type: ignore[union-attr]
        else:
            node.setdefault(str(p), []).append(_value(o))  # type: ignore[union-attr]
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
