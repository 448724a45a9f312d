"""PROV serialisations: PROV-N, PROV-JSON, PROV-XML and PROV-O (Turtle, JSON-LD).

Two uses:

- one run: ``serialize(document, fmt)`` / ``parse(text, fmt)``;
- many runs streamed as one document: ``ExportWriter`` yields a header, one
  chunk per run bundle and a footer, so an export of any length holds one run
  in memory at a time. The concatenation is a single valid document of the
  format: a PROV-N ``document`` with one ``bundle`` per run, a PROV-JSON
  object whose ``bundle`` member maps run bundles, a ``prov:document`` with
  one ``prov:bundleContent`` per run, a Turtle file, or an expanded JSON-LD
  array with one named graph per run.

Turtle has no named graphs, so the Turtle form is the flattened document:
every record of every bundle in the default graph (ids are run-scoped, so
nothing collides); its round trip is therefore compared with
``document.flattened()``. JSON-LD keeps each bundle as a named graph and is
expanded (full IRIs, no ``@context``), so reading it never fetches anything.
Both PROV-O forms are written by :mod:`reasoning.provenance.prov_o` from the
``prov`` package's own PROV-O triples (several times faster than its rdflib
round).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import StrEnum
from io import StringIO

from lxml import etree
from prov.model import ProvDocument
from prov.serializers.provjson import encode_json_document
from prov.serializers.provxml import ProvXMLSerializer

from reasoning.errors import InvalidInput
from reasoning.provenance.builder import BUNDLE
from reasoning.provenance.prov_o import document_triples, jsonld_items, turtle

__all__ = [
    "MEDIA_TYPES",
    "ExportWriter",
    "ProvFormat",
    "export_to_string",
    "from_prov_json",
    "parse",
    "serialize",
]


class ProvFormat(StrEnum):
    """The export formats, named as the ``format`` query parameter spells them."""

    PROVN = "provn"
    JSON = "json"
    XML = "xml"
    TURTLE = "ttl"
    JSONLD = "jsonld"


MEDIA_TYPES: dict[ProvFormat, str] = {
    ProvFormat.PROVN: "text/provenance-notation; charset=utf-8",
    ProvFormat.JSON: "application/json",
    ProvFormat.XML: "application/xml",
    ProvFormat.TURTLE: "text/turtle; charset=utf-8",
    ProvFormat.JSONLD: "application/ld+json",
}

_PROV_NS = "http://www.w3.org/ns/prov#"
_XSD_NS = "http://www.w3.org/2001/XMLSchema"
_XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"


def _as_format(fmt: ProvFormat | str) -> ProvFormat:
    try:
        return ProvFormat(fmt)
    except ValueError:
        allowed = ", ".join(f.value for f in ProvFormat)
        raise InvalidInput(f"unknown provenance format {fmt!r}; use one of {allowed}") from None


def serialize(document: ProvDocument, fmt: ProvFormat | str) -> str:
    """One document in the chosen format (Turtle: flattened, see module doc)."""
    fmt = _as_format(fmt)
    if fmt is ProvFormat.PROVN:
        return str(document.get_provn()) + "\n"
    if fmt is ProvFormat.JSON:
        # prov's own serializer, byte for byte, but through the C JSON encoder:
        # ``document.serialize(format="json")`` streams with ``json.dump``,
        # which takes the pure-Python encoder (twice as slow on every recorded run).
        return json.dumps(encode_json_document(document))
    if fmt is ProvFormat.XML:
        return str(document.serialize(format="xml"))
    if fmt is ProvFormat.TURTLE:
        return turtle(document_triples(document))
    return "[" + ",".join(jsonld_items(document_triples(document))) + "]"


def parse(text: str, fmt: ProvFormat | str) -> ProvDocument:
    """Read a document back with the ``prov`` package (the round-trip check)."""
    fmt = _as_format(fmt)
    if fmt is ProvFormat.PROVN:
        return ProvDocument.deserialize(content=text, format="provn")
    if fmt is ProvFormat.JSON:
        return ProvDocument.deserialize(content=text, format="json")
    if fmt is ProvFormat.XML:
        return ProvDocument.deserialize(content=text, format="xml")
    rdf_format = "turtle" if fmt is ProvFormat.TURTLE else "json-ld"
    return ProvDocument.deserialize(content=text, format="rdf", rdf_format=rdf_format)


def from_prov_json(text: str) -> ProvDocument:
    """A stored PROV-JSON bundle document, as a ``ProvDocument``."""
    return ProvDocument.deserialize(content=text, format="json")


class ExportWriter:
    """Streams many run documents as one document of ``fmt``.

    Call ``header()`` once, ``chunk(doc)`` per run (a document holding that
    run's bundle), ``footer()`` once; join the strings in order.
    """

    def __init__(self, fmt: ProvFormat | str) -> None:
        self.fmt = _as_format(fmt)
        self._first = True

    def header(self) -> str:
        if self.fmt is ProvFormat.PROVN:
            return f"document\n  prefix {BUNDLE.prefix} <{BUNDLE.uri}>\n\n"
        if self.fmt is ProvFormat.JSON:
            return json.dumps({"prefix": {BUNDLE.prefix: BUNDLE.uri}})[:-1] + ', "bundle": {'
        if self.fmt is ProvFormat.XML:
            return (
                "<?xml version='1.0' encoding='UTF-8'?>\n"
                f'<prov:document xmlns:prov="{_PROV_NS}" xmlns:xsd="{_XSD_NS}" '
                f'xmlns:xsi="{_XSI_NS}" xmlns:{BUNDLE.prefix}="{BUNDLE.uri}">\n'
            )
        if self.fmt is ProvFormat.JSONLD:
            return "["
        return ""

    def footer(self) -> str:
        if self.fmt is ProvFormat.PROVN:
            return "endDocument\n"
        if self.fmt is ProvFormat.JSON:
            return "}}"
        if self.fmt is ProvFormat.XML:
            return "</prov:document>\n"
        if self.fmt is ProvFormat.JSONLD:
            return "]"
        return ""

    def chunk(self, document: ProvDocument) -> str:
        """The text of one run's bundle(s), separators included."""
        if self.fmt is ProvFormat.PROVN:
            return "".join(str(b.get_provn(_indent_level=1)) + "\n" for b in document.bundles)
        if self.fmt is ProvFormat.JSON:
            return self._json_members(serialize(document, ProvFormat.JSON))
        if self.fmt is ProvFormat.XML:
            return "".join(self._xml_bundles(document))
        if self.fmt is ProvFormat.TURTLE:
            return turtle(document_triples(document)) + "\n"
        return self._separated(",".join(jsonld_items(document_triples(document))))

    def chunk_from_prov_json(self, prov_json: str) -> str:
        """``chunk`` of a stored PROV-JSON document.

        PROV-JSON is copied through without rebuilding the document (the
        stored bundle is already in that format); other formats convert it.
        """
        if self.fmt is ProvFormat.JSON:
            return self._json_members(prov_json)
        return self.chunk(from_prov_json(prov_json))

    def _json_members(self, prov_json: str) -> str:
        bundles = json.loads(prov_json).get("bundle", {})
        return self._separated(
            ", ".join(
                f"{json.dumps(name)}: {json.dumps(content, ensure_ascii=False)}"
                for name, content in bundles.items()
            )
        )

    def _separated(self, body: str) -> str:
        """``body`` preceded by a comma unless it is the first non-empty one."""
        if not body:
            return ""
        if self._first:
            self._first = False
            return body
        return "," + body

    @staticmethod
    def _xml_bundles(document: ProvDocument) -> Iterator[str]:
        serializer = ProvXMLSerializer(document)
        root = etree.Element(f"{{{_PROV_NS}}}document")
        for bundle in document.bundles:
            element = serializer.serialize_bundle(bundle, element=root)
            yield etree.tostring(element, encoding="unicode", pretty_print=True)

    def export(self, documents: Iterator[ProvDocument]) -> Iterator[str]:
        """Header, one chunk per document, footer."""
        yield self.header()
        for document in documents:
            yield self.chunk(document)
        yield self.footer()


def export_to_string(documents: Iterator[ProvDocument], fmt: ProvFormat | str) -> str:
    """The whole export in memory: for tests and small exports only."""
    out = StringIO()
    for part in ExportWriter(fmt).export(documents):
        out.write(part)
    return out.getvalue()
