"""The stored index: round trip, adjacency, labels, dates and view masks."""

from __future__ import annotations

import pytest

from reasoning.errors import InvalidInput
from reasoning.evidence.index import OntologyIndex, parse_date
from reasoning.evidence.ingest import IngestResult, ingest_ontology

AML = "https://tenet.dev/ontologies/aml#"
CLIN = "https://tenet.dev/ontologies/clinical#"


def test_blob_round_trip_preserves_everything(aml_result: IngestResult) -> None:
    loaded = OntologyIndex.from_bytes(aml_result.index_blob, version="v9")
    original = aml_result.index
    assert loaded.version == "v9"
    assert loaded.terms == original.terms
    assert (loaded.s == original.s).all() and (loaded.o == original.o).all()
    assert loaded.en_keys == original.en_keys and loaded.zh_keys == original.zh_keys
    assert loaded.views == original.views
    assert loaded.triple_count == aml_result.triples_materialised
    assert loaded.inferred_count == aml_result.triples_materialised - aml_result.triples_asserted


def test_csr_slices_are_the_node_triples(aml: OntologyIndex) -> None:
    node = aml.term_id(f"<{AML}JonDoe>")
    out = aml.out_edges[aml.out_ptr[node]:aml.out_ptr[node + 1]]
    assert set(out.tolist()) == set((aml.s == node).nonzero()[0].tolist())
    incoming = aml.in_edges[aml.in_ptr[node]:aml.in_ptr[node + 1]]
    assert set(incoming.tolist()) == set((aml.o == node).nonzero()[0].tolist())
    assert int(aml.degree[node]) == len(out) + len(incoming)
    # out_of / into are those slices, in document order (the order a scan of every triple finds).
    for n in (node, aml.type_id, aml.term_id(f"<{AML}PoliticallyExposedPerson>")):
        assert aml.out_of(n).tolist() == (aml.s == n).nonzero()[0].tolist()
        assert aml.into(n).tolist() == (aml.o == n).nonzero()[0].tolist()


def test_labels_dates_and_classes(aml: OntologyIndex, clinical: OntologyIndex) -> None:
    jon = aml.term_id(f"<{AML}JonDoe>")
    pep_list = aml.term_id(f"<{AML}pepList>")
    assert aml.label(jon) == "Jon Doe" and aml.label(jon, "zh") == "乔恩·多伊"
    assert aml.modified[jon] == ("2024-05-11", pep_list)
    assert aml.effective[aml.term_id(f"<{AML}AML-R-017>")] == "2021-03-01"
    assert aml.modified[aml.term_id(f"<{AML}sanctionsList>")][0] == "2026-09-15"
    assert bool(aml.is_class[aml.term_id(f"<{AML}PoliticallyExposedPerson>")])
    assert not bool(aml.is_class[jon])
    recommendation = clinical.term_id(f"<{CLIN}rec-F2017-pure-ggn>")
    assert clinical.effective[recommendation] == "2017-02-23"


def test_view_masks_follow_the_declarations(aml: OntologyIndex) -> None:
    mask = aml.view_mask("fund_flow")
    predicates = {aml.terms[int(p)] for p in aml.p[mask]}
    assert f"<{AML}sentFundsTo>" in predicates
    assert f"<{AML}listedOn>" not in predicates
    assert "<http://www.w3.org/2000/01/rdf-schema#label>" not in predicates
    with pytest.raises(InvalidInput, match="compliance"):
        aml.view("nope")


def test_unlabelled_typed_resources_link_by_local_name() -> None:
    data = (b"@prefix ex: <https://example.org/x#> .\n"
            b"ex:CounterpartyBank a ex:Bank .\nex:CounterpartyBank ex:in ex:Here .\n")
    index = ingest_ontology(data, "text/turtle").index
    assert "counterparty bank" in index.en_keys
    assert [v.name for v in index.views] == ["all"]


def test_a_corrupt_blob_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match="re-upload"):
        OntologyIndex.from_bytes(b"not an index", version="x")


@pytest.mark.parametrize(
    ("term", "expected"),
    [('"2024-05-11"^^<http://www.w3.org/2001/XMLSchema#date>', "2024-05-11"),
     ('"2026-09-15T06:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>', "2026-09-15"),
     ('"2017"^^<http://www.w3.org/2001/XMLSchema#gYear>', "2017-01-01"),
     ('"soon"', None), ("<https://example.org/2020-01-01>", None)],
)
def test_parse_date(term: str, expected: str | None) -> None:
    assert parse_date(term) == expected
