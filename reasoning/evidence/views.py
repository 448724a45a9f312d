"""Read the view declarations (``ontologies/views.ttl`` vocabulary) of a domain.

A view is a named subgraph: triples whose predicate it includes, plus
``rdf:type`` triples naming a class it includes. A domain without any
``tv:View`` gets one view, ``all``, over every property except labels and
OWL/RDFS schema terms, so an ontology uploaded without annotations still
yields evidence.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Final

import msgspec

from reasoning.evidence.terms import (
    DCTERMS_MODIFIED,
    PROV_GENERATED_AT_TIME,
    RDF_TYPE,
    TV,
    Triple,
    iri,
    iri_value,
    is_iri,
    is_literal,
    literal_parts,
    local_name,
)

__all__ = ["DEFAULT_VIEW", "DomainProfile", "ViewSpec", "read_profile", "read_views"]

DEFAULT_VIEW: Final = "all"
_NAME_RE: Final = re.compile(r"[^a-z0-9_]+")

_TV_VIEW = iri(TV + "View")
_TV_NAME = iri(TV + "name")
_TV_INCLUDES_PROPERTY = iri(TV + "includesProperty")
_TV_INCLUDES_CLASS = iri(TV + "includesClass")
_TV_RELATION_WEIGHT = iri(TV + "relationWeight")
_TV_ON_PROPERTY = iri(TV + "onProperty")
_TV_WEIGHT = iri(TV + "weight")
_TV_DEFAULT_WEIGHT = iri(TV + "defaultWeight")
_TV_FRESHNESS_PROPERTY = iri(TV + "freshnessProperty")
_TV_FRESHNESS_VIA = iri(TV + "freshnessVia")
_TV_EFFECTIVE_DATE_PROPERTY = iri(TV + "effectiveDateProperty")
_RDFS_LABEL = iri("http://www.w3.org/2000/01/rdf-schema#label")
_RDFS_COMMENT = iri("http://www.w3.org/2000/01/rdf-schema#comment")


class ViewSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One declared view: its name, members and relation weights (term strings)."""

    name: str
    iri: str
    label: str
    label_zh: str | None = None
    description: str | None = None
    properties: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    weights: dict[str, float] = msgspec.field(default_factory=dict)
    default_weight: float = 0.5
    all_properties: bool = False

    def weight(self, predicate: str) -> float:
        """The ranking weight of ``predicate`` in this view."""
        return self.weights.get(predicate, self.default_weight)

    def summary(self) -> dict[str, object]:
        """A JSON-friendly description with bare IRIs, for reports and APIs."""
        return {
            "name": self.name,
            "iri": iri_value(self.iri),
            "label": self.label,
            "label_zh": self.label_zh,
            "description": self.description,
            "properties": [iri_value(p) for p in self.properties],
            "classes": [iri_value(c) for c in self.classes],
            "weights": {iri_value(p): w for p, w in self.weights.items()},
            "default_weight": self.default_weight,
        }


class DomainProfile(msgspec.Struct, frozen=True, kw_only=True):
    """Domain-wide dating rules: which properties date a resource, directly or via another."""

    freshness_properties: tuple[str, ...] = (DCTERMS_MODIFIED, PROV_GENERATED_AT_TIME)
    freshness_via: tuple[str, ...] = ()
    effective_properties: tuple[str, ...] = ()


def read_views(triples: Sequence[Triple] | Iterable[Triple]) -> tuple[ViewSpec, ...]:
    """The views declared in ``triples``, sorted by name; ``all`` when none are."""
    triples = triples if isinstance(triples, (list, tuple)) else list(triples)
    views = [s for s, p, o in triples if p == RDF_TYPE and o == _TV_VIEW]
    weight_nodes = {o for _, p, o in triples if p == _TV_RELATION_WEIGHT}
    wanted = set(views) | weight_nodes
    by_subject: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for s, p, o in triples:
        if s in wanted:
            by_subject[s][p].append(o)
    if not views:
        return (ViewSpec(name=DEFAULT_VIEW, iri=iri(TV + "all"), label="All relations",
                         label_zh="全部关系", all_properties=True),)
    specs: dict[str, ViewSpec] = {}
    for view in dict.fromkeys(views):
        facts = by_subject[view]
        labels = _labels(facts.get(_RDFS_LABEL, []))
        name = _view_name(facts.get(_TV_NAME, []), view)
        weights: dict[str, float] = {}
        for node in facts.get(_TV_RELATION_WEIGHT, []):
            weight_facts = by_subject.get(node, {})
            prop = next(iter(weight_facts.get(_TV_ON_PROPERTY, [])), None)
            value = _number(next(iter(weight_facts.get(_TV_WEIGHT, [])), None))
            if prop is not None and value is not None:
                weights[prop] = value
        default = _number(next(iter(facts.get(_TV_DEFAULT_WEIGHT, [])), None))
        properties = tuple(dict.fromkeys(p for p in facts.get(_TV_INCLUDES_PROPERTY, []) if is_iri(p)))
        specs[name] = ViewSpec(
            name=name,
            iri=view,
            label=labels.get("en") or labels.get("") or name.replace("_", " "),
            label_zh=labels.get("zh"),
            description=_first_literal(facts.get(_RDFS_COMMENT, [])),
            properties=properties,
            classes=tuple(dict.fromkeys(c for c in facts.get(_TV_INCLUDES_CLASS, []) if is_iri(c))),
            weights=weights,
            default_weight=default if default is not None else 0.5,
        )
    return tuple(specs[name] for name in sorted(specs))


def read_profile(triples: Iterable[Triple]) -> DomainProfile:
    """The freshness and effective-date properties declared anywhere in ``triples``."""
    freshness = [DCTERMS_MODIFIED, PROV_GENERATED_AT_TIME]
    via: list[str] = []
    effective: list[str] = []
    for _, p, o in triples:
        if not is_iri(o):
            continue
        if p == _TV_FRESHNESS_PROPERTY:
            freshness.append(o)
        elif p == _TV_FRESHNESS_VIA:
            via.append(o)
        elif p == _TV_EFFECTIVE_DATE_PROPERTY:
            effective.append(o)
    return DomainProfile(
        freshness_properties=tuple(dict.fromkeys(freshness)),
        freshness_via=tuple(dict.fromkeys(via)),
        effective_properties=tuple(dict.fromkeys(effective)),
    )


def _labels(terms: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for term in terms:
        if is_literal(term):
            value, lang, _ = literal_parts(term)
            key = (lang or "").split("-")[0].lower()
            out.setdefault(key, value)
    return out


def _view_name(terms: list[str], view: str) -> str:
    raw = _first_literal(terms) or local_name(view)
    name = _NAME_RE.sub("_", raw.strip().lower()).strip("_")
    return name or "view"


def _first_literal(terms: list[str]) -> str | None:
    for term in terms:
        if is_literal(term):
            return literal_parts(term)[0]
    return None


def _number(term: str | None) -> float | None:
    if term is None or not is_literal(term):
        return None
    try:
        value = float(literal_parts(term)[0])
    except ValueError:
        return None
    return min(max(value, 0.0), 1.0) if value > 0 else None
