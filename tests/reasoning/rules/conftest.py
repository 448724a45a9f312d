"""Decision engines over the bundled domains and the permits test domain, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology
from reasoning.rules.decide import DecisionEngine

PERMITS_TTL = Path(__file__).resolve().parents[2] / "data" / "permits.ttl"


def _engine(data: bytes, version: str) -> DecisionEngine:
    return DecisionEngine(ingest_ontology(data, "text/turtle").index.with_version(version))


@pytest.fixture(scope="session")
def aml_engine() -> DecisionEngine:
    return _engine(dict(bundled_domains())["aml"].read_bytes(), "aml-v1")


@pytest.fixture(scope="session")
def clinical_engine() -> DecisionEngine:
    return _engine(dict(bundled_domains())["clinical"].read_bytes(), "clinical-v1")


@pytest.fixture(scope="session")
def permits_engine() -> DecisionEngine:
    return _engine(PERMITS_TTL.read_bytes(), "permits-v1")
