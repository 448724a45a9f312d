"""The ``cg:`` vocabulary in code: namespace, class per kind, property per parameter.

``ontologies/constraint-graph.ttl`` declares the same terms with labels and
comments; a test keeps the two in step.
"""

from __future__ import annotations

from pathlib import Path

from reasoning.constraints.model import Kind

__all__ = ["CG_NS", "PARAM_PROPERTIES", "VOCABULARY_PATH", "class_name", "param_property"]

CG_NS = "https://tenet.dev/ns/cg#"

#: The Turtle file that declares the vocabulary.
VOCABULARY_PATH = Path(__file__).resolve().parents[2] / "ontologies" / "constraint-graph.ttl"

#: Constraint parameter name -> cg: property local name (typed literal values).
PARAM_PROPERTIES: dict[str, str] = {
    "language": "language",
    "keywords": "keyword",
    "keyword": "keyword",
    "words": "forbiddenWord",
    "relation": "relation",
    "n": "count",
    "letter": "letter",
    "nth": "nth",
    "first_word": "firstWord",
    "splitter": "splitter",
    "marker": "marker",
    "pattern": "pattern",
    "options": "option",
    "phrase": "phrase",
    "prompt_to_repeat": "promptToRepeat",
    "not_before": "notBefore",
    "not_after": "notAfter",
    "min": "minSources",
    "code": "jurisdictionCode",
    "decimals": "decimals",
}


def class_name(kind: Kind) -> str:
    """The cg: class local name of a kind: ``response_language`` -> ``ResponseLanguage``."""
    return "".join(part.capitalize() for part in kind.value.split("_"))


def param_property(name: str) -> str | None:
    """The cg: property for a parameter, or None (then only ``cg:params`` carries it)."""
    return PARAM_PROPERTIES.get(name)
