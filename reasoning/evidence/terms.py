"""RDF terms as plain strings in N-Triples syntax, and well-known IRIs.

The evidence core never keeps rdflib term objects past parsing: a term is the
string N-Triples would write for it (``<iri>``, ``_:b0``, ``"text"@en``,
``"5"^^<xsd:integer>`` with the datatype IRI in full). Strings hash and compare
fast, serialise compactly into the index, and keep a parsed graph of a million
triples within a few hundred megabytes.
"""

from __future__ import annotations

import re
from typing import Any, Final

from rdflib import BNode, Graph, Literal, URIRef

__all__ = [
    "DCTERMS_MODIFIED",
    "OWL_ANNOTATION_PROPERTY",
    "OWL_CLASS",
    "OWL_DATATYPE_PROPERTY",
    "OWL_DISJOINT_WITH",
    "OWL_IMPORTS",
    "OWL_NOTHING",
    "OWL_OBJECT_PROPERTY",
    "OWL_SAME_AS",
    "OWL_THING",
    "PROV_GENERATED_AT_TIME",
    "RDFS_CLASS",
    "RDFS_DOMAIN",
    "RDFS_LABEL",
    "RDFS_RANGE",
    "RDFS_SUBCLASSOF",
    "RDFS_SUBPROPERTYOF",
    "RDF_PROPERTY",
    "RDF_TYPE",
    "SKOS_ALT_LABEL",
    "SKOS_PREF_LABEL",
    "TV",
    "Triple",
    "encode_literal",
    "from_rdflib",
    "iri",
    "iri_value",
    "is_bnode",
    "is_iri",
    "is_literal",
    "literal_parts",
    "literal_value",
    "local_name",
    "to_rdflib_graph",
]

Triple = tuple[str, str, str]

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_OWL = "http://www.w3.org/2002/07/owl#"
_SKOS = "http://www.w3.org/2004/02/skos/core#"

TV: Final = "https://tenet.dev/ns/views#"
"""Namespace of the view annotation vocabulary (``ontologies/views.ttl``)."""


def iri(value: str) -> str:
    """The term string of an IRI."""
    return f"<{value}>"


RDF_TYPE: Final = iri(_RDF + "type")
RDF_PROPERTY: Final = iri(_RDF + "Property")
RDFS_LABEL: Final = iri(_RDFS + "label")
RDFS_SUBCLASSOF: Final = iri(_RDFS + "subClassOf")
RDFS_SUBPROPERTYOF: Final = iri(_RDFS + "subPropertyOf")
RDFS_DOMAIN: Final = iri(_RDFS + "domain")
RDFS_RANGE: Final = iri(_RDFS + "range")
RDFS_CLASS: Final = iri(_RDFS + "Class")
OWL_CLASS: Final = iri(_OWL + "Class")
OWL_THING: Final = iri(_OWL + "Thing")
OWL_NOTHING: Final = iri(_OWL + "Nothing")
OWL_IMPORTS: Final = iri(_OWL + "imports")
OWL_DISJOINT_WITH: Final = iri(_OWL + "disjointWith")
OWL_SAME_AS: Final = iri(_OWL + "sameAs")
OWL_OBJECT_PROPERTY: Final = iri(_OWL + "ObjectProperty")
OWL_DATATYPE_PROPERTY: Final = iri(_OWL + "DatatypeProperty")
OWL_ANNOTATION_PROPERTY: Final = iri(_OWL + "AnnotationProperty")
SKOS_PREF_LABEL: Final = iri(_SKOS + "prefLabel")
SKOS_ALT_LABEL: Final = iri(_SKOS + "altLabel")
DCTERMS_MODIFIED: Final = iri("http://purl.org/dc/terms/modified")
PROV_GENERATED_AT_TIME: Final = iri("http://www.w3.org/ns/prov#generatedAtTime")

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPE_RE = re.compile(r'[\\"\n\r\t]')
_UNESCAPE_RE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_SIMPLE_UNESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'",
                     "\\": "\\"}
_LITERAL_RE = re.compile(r'^"(?P<lex>(?:[^"\\]|\\.)*)"(?:@(?P<lang>[A-Za-z0-9-]+)|\^\^<(?P<dt>[^>]*)>)?$',
                         re.DOTALL)


def is_iri(term: str) -> bool:
    """True for an IRI term (``<...>``)."""
    return term.startswith("<")


def is_literal(term: str) -> bool:
    """True for a literal term."""
    return term.startswith('"')


def is_bnode(term: str) -> bool:
    """True for a blank node term (``_:...``)."""
    return term.startswith("_:")


def iri_value(term: str) -> str:
    """The IRI inside ``<...>`` (other terms are returned unchanged)."""
    return term[1:-1] if term.startswith("<") else term


def encode_literal(lexical: str, *, lang: str | None = None, datatype: str | None = None) -> str:
    """The N-Triples form of a literal; ``datatype`` is a bare IRI."""
    body = '"' + _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], lexical) + '"'
    if lang:
        return f"{body}@{lang.lower()}"
    if datatype and datatype != "http://www.w3.org/2001/XMLSchema#string":
        return f"{body}^^<{datatype}>"
    return body


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "uU" and len(code) > 1:
        return chr(int(code[1:], 16))
    return _SIMPLE_UNESCAPES.get(code, code)


def literal_parts(term: str) -> tuple[str, str | None, str | None]:
    """``(lexical value, language, datatype IRI)`` of a literal term.

    A term that is not a well-formed literal comes back as its own lexical
    value with neither language nor datatype, so rendering never fails.
    """
    match = _LITERAL_RE.match(term)
    if match is None:
        return term, None, None
    lexical = _UNESCAPE_RE.sub(_unescape, match.group("lex"))
    return lexical, match.group("lang"), match.group("dt")


def literal_value(term: str) -> str:
    """The lexical value of a literal term."""
    return literal_parts(term)[0]


_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def local_name(term: str) -> str:
    """A readable name from an IRI's last segment (``hasRiskLevel`` -> ``has Risk Level``).

    Used only when a term has no label.
    """
    value = iri_value(term)
    for sep in ("#", "/", ":"):
        if sep in value:
            tail = value.rsplit(sep, 1)[1]
            if tail:
                value = tail
                break
    return _CAMEL_RE.sub(" ", value).replace("_", " ").strip() or value


_BAD_IRI_CHARS: Final = frozenset('<>"{}|\\^`') | frozenset(chr(c) for c in range(0x21))


def from_rdflib(term: Any) -> str | None:
    """The term string of an rdflib term, or None for one N-Triples cannot hold.

    IRIs with characters N-Triples forbids (spaces, angle brackets, quotes)
    are refused here, so every term string downstream is well-formed.
    """
    if isinstance(term, URIRef):
        value = str(term)
        if not value or any(ch in _BAD_IRI_CHARS for ch in value):
            return None
        return f"<{value}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    if isinstance(term, Literal):
        datatype = str(term.datatype) if term.datatype is not None else None
        return encode_literal(str(term), lang=term.language, datatype=datatype)
    return None


def to_rdflib_graph(triples: list[Triple] | tuple[Triple, ...]) -> Graph:
    """An rdflib graph of term-string triples (they are valid N-Triples lines)."""
    graph = Graph()
    if triples:
        graph.parse(data="\n".join(f"{s} {p} {o} ." for s, p, o in triples), format="nt")
    return graph
