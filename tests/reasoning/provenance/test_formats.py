"""Every export format parses back to the same records (prov and rdflib)."""

from __future__ import annotations

import json
from datetime import timedelta

import msgspec
import pytest
import rdflib
from lxml import etree
from prov.model import ProvDocument
from prov_samples import T0, aml_record
from rdflib.compare import isomorphic
from rdflib.namespace import PROV as PROV_O
from rdflib.namespace import RDF

from reasoning.errors import InvalidInput
from reasoning.provenance import ExportWriter, ProvFormat, build_run_document, parse, serialize
from reasoning.provenance.formats import export_to_string

DOCUMENT = build_run_document("run-1", aml_record(), service_version="0.1.0")


@pytest.mark.parametrize("fmt", list(ProvFormat))
def test_one_run_round_trips_through_the_prov_package(fmt: ProvFormat) -> None:
    text = serialize(DOCUMENT, fmt)
    expected = DOCUMENT.flattened() if fmt is ProvFormat.TURTLE else DOCUMENT
    assert parse(text, fmt) == expected


def _rdf(text: str, fmt: str) -> rdflib.Graph:
    dataset = rdflib.Dataset(default_union=True)
    dataset.parse(data=text, format=fmt)
    union = rdflib.Graph()
    for triple in dataset.triples((None, None, None)):
        union.add(triple)
    return union


def test_turtle_and_json_ld_read_by_rdflib_are_the_same_prov_o_graph() -> None:
    turtle = _rdf(serialize(DOCUMENT, ProvFormat.TURTLE), "turtle")
    jsonld = _rdf(serialize(DOCUMENT, ProvFormat.JSONLD), "json-ld")
    assert isomorphic(turtle, jsonld)
    run = rdflib.URIRef("urn:tenet:run:run-1/run")
    assert (run, RDF.type, PROV_O.Activity) in turtle
    activities = {s for s in turtle.subjects(RDF.type, PROV_O.Activity)}
    expected = {
        str(r.identifier)
        for r in DOCUMENT.flattened().get_records()
        if r.get_type().localpart == "Activity"
    }
    assert len(activities) == len(expected)
    answer = rdflib.URIRef("urn:tenet:run:run-1/answer")
    assert set(turtle.objects(answer, PROV_O.wasDerivedFrom)) >= {
        rdflib.URIRef("urn:tenet:run:run-1/step/S1"),
        rdflib.URIRef("urn:tenet:run:run-1/step/S2"),
    }


def test_json_ld_keeps_the_run_bundle_as_a_named_graph() -> None:
    dataset = rdflib.Dataset()
    dataset.parse(data=serialize(DOCUMENT, ProvFormat.JSONLD), format="json-ld")
    names = {str(g.identifier) for g in dataset.graphs()}
    assert "urn:tenet:bundle:run-1" in names
    assert "@context" not in serialize(DOCUMENT, ProvFormat.JSONLD)


def test_xml_is_prov_xml() -> None:
    root = etree.fromstring(serialize(DOCUMENT, ProvFormat.XML).encode("utf-8"))
    assert root.tag == "{http://www.w3.org/ns/prov#}document"
    assert root[0].tag == "{http://www.w3.org/ns/prov#}bundleContent"


def _documents(n: int) -> list[ProvDocument]:
    """``n`` runs, each re-inferring from the sample's earlier run ``run-0``."""
    return [
        build_run_document(
            f"run-{i + 1}",
            msgspec.structs.replace(
                aml_record(key_id=f"key-{i % 2}"), started_at=T0 + timedelta(minutes=i)
            ),
            service_version="0.1.0",
        )
        for i in range(n)
    ]


def _merged(documents: list[ProvDocument]) -> ProvDocument:
    merged = ProvDocument()
    for document in documents:
        merged.update(document)
    return merged


@pytest.mark.parametrize("fmt", list(ProvFormat))
def test_a_streamed_export_of_many_runs_is_one_document_of_all_bundles(fmt: ProvFormat) -> None:
    documents = _documents(3)
    text = export_to_string(iter(documents), fmt)
    parsed = parse(text, fmt)
    merged = _merged(documents)
    if fmt is ProvFormat.TURTLE:
        union = rdflib.Graph()
        for document in documents:
            union += _rdf(serialize(document, ProvFormat.TURTLE), "turtle")
        assert isomorphic(_rdf(text, "turtle"), union)
        assert {r.identifier.uri for r in parsed.get_records() if r.identifier} == {
            r.identifier.uri for r in merged.flattened().get_records() if r.identifier
        }
    else:
        assert {b.identifier.uri for b in parsed.bundles} == {f"urn:tenet:bundle:run-{i}" for i in (1, 2, 3)}
        assert parsed == merged
    if fmt is ProvFormat.JSON:
        assert set(json.loads(text)["bundle"]) == {"bundle:run-1", "bundle:run-2", "bundle:run-3"}


@pytest.mark.parametrize("fmt", list(ProvFormat))
def test_an_empty_export_is_still_a_valid_document(fmt: ProvFormat) -> None:
    text = export_to_string(iter([]), fmt)
    if fmt is ProvFormat.TURTLE:
        assert len(_rdf(text, "turtle")) == 0
    else:
        assert not list(parse(text, fmt).bundles) and not parse(text, fmt).get_records()


def test_the_writer_emits_header_chunks_and_footer_in_order() -> None:
    writer = ExportWriter(ProvFormat.PROVN)
    parts = list(writer.export(iter(_documents(2))))
    assert len(parts) == 4
    assert parts[0].startswith("document") and parts[-1] == "endDocument\n"
    assert "bundle bundle:run-1" in parts[1] and "bundle bundle:run-2" in parts[2]


@pytest.mark.parametrize("fmt", ["rdf", "TTL", "", "n3"])
def test_unknown_formats_are_invalid_input(fmt: str) -> None:
    with pytest.raises(InvalidInput, match="provn, json, xml, ttl, jsonld"):
        serialize(DOCUMENT, fmt)


@pytest.mark.parametrize("fmt", list(ProvFormat))
def test_stored_prov_json_exports_like_the_document(fmt: ProvFormat) -> None:
    documents = _documents(2)
    direct = export_to_string(iter(documents), fmt)
    writer = ExportWriter(fmt)
    parts = [writer.header()]
    parts += [writer.chunk_from_prov_json(serialize(d, ProvFormat.JSON)) for d in documents]
    parts.append(writer.footer())
    assert parse("".join(parts), fmt) == parse(direct, fmt)


@pytest.mark.parametrize("fmt", [ProvFormat.JSON, ProvFormat.JSONLD])
def test_documents_without_bundles_do_not_break_the_separators(fmt: ProvFormat) -> None:
    documents = [ProvDocument(), *_documents(2), ProvDocument()]
    json.loads(export_to_string(iter(documents), fmt))


def test_prov_json_is_byte_for_byte_what_prov_writes() -> None:
    odd = build_run_document(
        "run 7/ä", msgspec.structs.replace(aml_record(tenant_id="Tenant ü/1"), reinferences=()),
        service_version="1.2.3",
    )
    for document in (DOCUMENT, odd):
        assert serialize(document, ProvFormat.JSON) == str(document.serialize(format="json"))
