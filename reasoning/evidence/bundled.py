"""The sample domains shipped in ``ontologies/``."""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["ONTOLOGY_DIR", "bundled_domains"]

ONTOLOGY_DIR: Final = Path(__file__).resolve().parents[2] / "ontologies"
_DOMAINS: Final = (("aml", "aml.ttl"), ("clinical", "clinical.ttl"))


def bundled_domains() -> list[tuple[str, Path]]:
    """``(domain, path)`` of each bundled sample domain (Turtle), in a stable order."""
    return [(domain, ONTOLOGY_DIR / name) for domain, name in _DOMAINS]
