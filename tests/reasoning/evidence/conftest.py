"""Shared fixtures of the evidence tests: the bundled domains ingested once per session."""

from __future__ import annotations

import pytest

from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import IngestResult, ingest_ontology


def _ingest(domain: str) -> IngestResult:
    path = dict(bundled_domains())[domain]
    return ingest_ontology(path.read_bytes(), "text/turtle")


@pytest.fixture(scope="session")
def aml_result() -> IngestResult:
    return _ingest("aml")


@pytest.fixture(scope="session")
def clinical_result() -> IngestResult:
    return _ingest("clinical")


@pytest.fixture(scope="session")
def aml(aml_result: IngestResult) -> OntologyIndex:
    return aml_result.index.with_version("aml-v1")


@pytest.fixture(scope="session")
def clinical(clinical_result: IngestResult) -> OntologyIndex:
    return clinical_result.index.with_version("clinical-v1")
