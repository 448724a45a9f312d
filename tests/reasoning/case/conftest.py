"""The bundled AML lexicon, built once per session."""

from __future__ import annotations

import pytest

from reasoning.case.lexicon import CaseLexicon
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology


@pytest.fixture(scope="session")
def aml_lexicon() -> CaseLexicon:
    data = dict(bundled_domains())["aml"].read_bytes()
    return CaseLexicon(ingest_ontology(data, "text/turtle").index.with_version("aml-v1"))
