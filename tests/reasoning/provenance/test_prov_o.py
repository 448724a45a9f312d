"""The fast PROV-O writers give exactly the graph the ``prov`` package's rdflib route gives.

The reference is ``ProvDocument.serialize(format="rdf")`` (prov's encoder into an
rdflib ``Dataset``, then rdflib's serializer), read back by rdflib; the
writers under test must agree triple for triple (blank nodes up to renaming),
graph by graph, on runs with every kind of record and on awkward text.
"""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest
import rdflib
from prov.model import ProvDocument
from prov_samples import T0, aml_record
from rdflib.compare import isomorphic

from reasoning.provenance import (
    OntologyArtifact,
    ProvFormat,
    RunKind,
    RunRecord,
    build_run_document,
    serialize,
)
from reasoning.provenance.formats import export_to_string


def _odd_text_record() -> RunRecord:
    record = aml_record(tenant_id="Tenant A/ü #1", key_id="k y")
    return msgspec.structs.replace(
        record,
        prompt='Quote "this" \\ and\ttab\nnew line\r\x07 — 中文 <tag> {x}',
        answer="Answer with \"quotes\", a backslash \\ and é.",
        reinferences=(),
    )


def _upload_record() -> RunRecord:
    return RunRecord(
        tenant_id="clinic", key_id=None, kind=RunKind.ONTOLOGY_UPLOAD, status="ok", prompt="",
        started_at=T0, finished_at=T0 + timedelta(seconds=2),
        ontologies=(OntologyArtifact(version="clin-v2", domain="clinical", sha256="ef" * 32,
                                     triples=1200, generated=True),),
    )


def _hand_made(*, beyond_fast_path: bool) -> ProvDocument:
    """Relations with extra attributes (qualified nodes), and, optionally, records only
    prov's own encoder maps (identified relations, a revision, a location, a specialisation)."""
    document = ProvDocument()
    document.add_namespace("ex", "https://example.org/#")
    bundle = document.bundle("ex:hand")
    report, draft, act, other, bob = (bundle.entity("ex:report", {"prov:label": "Report"}),
                                      bundle.entity("ex:draft"), bundle.activity("ex:write", T0),
                                      bundle.activity("ex:review"), bundle.agent("ex:bob"))
    bundle.wasGeneratedBy(report, act, T0, other_attributes={"prov:role": "ex:author"})
    bundle.used(act, draft, T0, other_attributes={"ex:note": "first pass"})
    bundle.wasInformedBy(other, act, other_attributes={"ex:channel": "email"})
    bundle.actedOnBehalfOf(bob, "ex:org", act)
    bundle.wasAttributedTo(report, bob, other_attributes={"ex:share": 0.5})
    bundle.wasAssociatedWith(act, bob, "ex:plan")
    bundle.wasDerivedFrom(report, draft, act)
    bundle.wasStartedBy(act, draft, None, T0)
    if beyond_fast_path:
        bundle.used(other, report, identifier="ex:use1")
        bundle.wasDerivedFrom(report, draft, other_attributes={"prov:type": "prov:Revision"})
        bundle.entity("ex:copy", {"prov:location": "ex:archive"})
        bundle.specializationOf("ex:copy", report)
    return document


DOCUMENTS = {
    "aml": build_run_document("run-1", aml_record(), service_version="0.1.0"),
    "odd-text": build_run_document("run 7/ä", _odd_text_record(), service_version="1.2.3"),
    "upload": build_run_document("run-9", _upload_record(), service_version="0.1.0"),
    "qualified-relations": _hand_made(beyond_fast_path=False),
    "prov-encoder-fallback": _hand_made(beyond_fast_path=True),
}


def _graphs(text: str, fmt: str) -> dict[str, rdflib.Graph]:
    dataset = rdflib.Dataset()
    dataset.parse(data=text, format=fmt)
    graphs: dict[str, rdflib.Graph] = {}
    for graph in dataset.graphs():
        if len(graph):
            copy = rdflib.Graph()
            for triple in graph:
                copy.add(triple)
            graphs[str(graph.identifier)] = copy
    return graphs


def _union(graphs: dict[str, rdflib.Graph]) -> rdflib.Graph:
    union = rdflib.Graph()
    for graph in graphs.values():
        union += graph
    return union


def _reference(document: ProvDocument) -> dict[str, rdflib.Graph]:
    return _graphs(str(document.serialize(format="rdf", rdf_format="trig")), "trig")


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_turtle_is_the_graph_prov_itself_writes(name: str) -> None:
    document = DOCUMENTS[name]
    ours = _union(_graphs(serialize(document, ProvFormat.TURTLE), "turtle"))
    reference = _union(_reference(document))
    assert len(ours) == len(reference) > 10
    assert isomorphic(ours, reference)


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_json_ld_is_the_graph_prov_itself_writes_bundle_by_bundle(name: str) -> None:
    document = DOCUMENTS[name]
    ours = _graphs(serialize(document, ProvFormat.JSONLD), "json-ld")
    reference = _reference(document)
    assert set(ours) == set(reference)
    for graph_name, graph in reference.items():
        assert isomorphic(ours[graph_name], graph), graph_name


def test_a_streamed_turtle_export_keeps_blank_nodes_of_different_runs_apart() -> None:
    documents = [build_run_document(f"run-{i}", aml_record(), service_version="0.1.0")
                 for i in range(3)]
    text = export_to_string(iter(documents), ProvFormat.TURTLE)
    reference = rdflib.Graph()
    for document in documents:
        reference += _union(_reference(document))
    exported = rdflib.Graph().parse(data=text, format="turtle")
    assert len(exported) == len(reference)
    assert isomorphic(exported, reference)


@pytest.mark.parametrize(
    ("name", "fast"),
    [("aml", True), ("upload", True), ("qualified-relations", True),
     ("prov-encoder-fallback", False)],
)
def test_the_documents_above_cover_both_the_fast_mapping_and_prov_s_encoder(
    name: str, fast: bool,
) -> None:
    from prov.serializers.provrdf import ProvRDFSerializer

    from reasoning.provenance.prov_o import _Collector, _FastEncoder

    document = DOCUMENTS[name]
    encoder = _FastEncoder(ProvRDFSerializer(document))
    assert [encoder.encode(b, _Collector()) for b in document.bundles] == [fast]
