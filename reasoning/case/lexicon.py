"""What the case builder and the claim checker need from one ontology version.

Built once per version from its :class:`~reasoning.evidence.index.OntologyIndex`
(asserted and inferred triples): the object properties with their labels in
every language (``rdfs:label``, ``skos:prefLabel``, ``skos:altLabel``),
domains and ranges; the types of each individual; superclasses and
disjoint classes; the ``tv:CaseInput`` properties with their kinds; the
``tv:DecisionProperty`` predicates, the actions they can conclude (the
individuals of their ranges) with all their labels, and the conflicts
declared between actions. Nothing here knows a domain word.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Final

import numpy as np

from reasoning.case.vocabulary import (
    INPUT_KINDS,
    TV_CASE_INPUT,
    TV_CONFLICTS_WITH,
    TV_DECISION_PROPERTY,
    TV_DEFAULTS_TO_EVALUATION_DATE,
    TV_INPUT_KIND,
    TV_UNIT,
)
from reasoning.evidence.index import LABEL_PREDICATES, OntologyIndex
from reasoning.evidence.terms import (
    OWL_DISJOINT_WITH,
    OWL_OBJECT_PROPERTY,
    RDF_TYPE,
    RDFS_DOMAIN,
    RDFS_RANGE,
    RDFS_SUBCLASSOF,
    TV,
    iri,
    is_iri,
    is_literal,
    literal_parts,
)

__all__ = ["CaseInputSpec", "CaseLexicon", "Label", "PropertySpec"]

_CJK_RE: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_GAP_RE: Final = re.compile(r"\s*(?:\.\.\.|…)\s*")
_OWL: Final = "http://www.w3.org/2002/07/owl#"
OWL_INVERSE_OF: Final = iri(_OWL + "inverseOf")
_RELATION_TYPES: Final = frozenset(
    {
        OWL_OBJECT_PROPERTY,
        *(
            iri(_OWL + n)
            for n in (
                "TransitiveProperty",
                "SymmetricProperty",
                "AsymmetricProperty",
                "FunctionalProperty",
                "InverseFunctionalProperty",
            )
        ),
    }
)
_SCHEMA: Final = ("<http://www.w3.org/", f"<{TV}")


class Label:
    """One label of a property, split at its gap: ``parts`` is one or two word runs."""

    __slots__ = ("parts", "text", "zh")

    def __init__(self, text: str, zh: bool, parts: tuple[str, ...]) -> None:
        self.text, self.zh, self.parts = text, zh, parts


class PropertySpec:
    """An object property a request can state between two entities."""

    __slots__ = ("domains", "labels", "ranges", "term")

    def __init__(
        self, term: str, labels: list[Label], domains: frozenset[str], ranges: frozenset[str]
    ) -> None:
        self.term, self.labels, self.domains, self.ranges = term, labels, domains, ranges


class CaseInputSpec:
    """A ``tv:CaseInput``: the property, its kind name, unit and labels."""

    __slots__ = ("defaults_to_today", "kind", "label_en", "label_zh", "term", "unit")

    def __init__(
        self,
        term: str,
        kind: str,
        unit: str | None,
        defaults_to_today: bool,
        label_en: str,
        label_zh: str,
    ) -> None:
        self.term, self.kind, self.unit = term, kind, unit
        self.defaults_to_today = defaults_to_today
        self.label_en, self.label_zh = label_en, label_zh


class CaseLexicon:
    """The read-only lexicon of one ontology version (see the module doc)."""

    def __init__(self, index: OntologyIndex) -> None:
        self.index = index
        terms = index.terms
        by_predicate: dict[str, list[tuple[str, str]]] = defaultdict(list)
        wanted = {
            RDF_TYPE,
            RDFS_DOMAIN,
            RDFS_RANGE,
            RDFS_SUBCLASSOF,
            OWL_DISJOINT_WITH,
            OWL_INVERSE_OF,
            TV_INPUT_KIND,
            TV_UNIT,
            TV_DEFAULTS_TO_EVALUATION_DATE,
            TV_CONFLICTS_WITH,
            *LABEL_PREDICATES,
        }
        for term in wanted:
            pid = index.term_id(term)
            if pid < 0:
                continue
            rows = np.nonzero(index.p == pid)[0]
            by_predicate[term] = [
                (terms[s], terms[o])
                for s, o in zip(index.s[rows].tolist(), index.o[rows].tolist(), strict=True)
            ]
        self.types: dict[str, set[str]] = defaultdict(set)
        typed: dict[str, set[str]] = defaultdict(set)
        for s, o in by_predicate[RDF_TYPE]:
            self.types[s].add(o)
            typed[o].add(s)
        self.superclasses: dict[str, set[str]] = defaultdict(set)
        for s, o in by_predicate[RDFS_SUBCLASSOF]:
            if s != o and is_iri(o):
                self.superclasses[s].add(o)
        self.disjoint: dict[str, set[str]] = defaultdict(set)
        for s, o in by_predicate[OWL_DISJOINT_WITH]:
            self.disjoint[s].add(o)
            self.disjoint[o].add(s)
        #: ``owl:inverseOf`` both ways: a stated relation states its inverses too.
        self.inverses: dict[str, set[str]] = defaultdict(set)
        for s, o in by_predicate[OWL_INVERSE_OF]:
            if is_iri(s) and is_iri(o) and s != o:
                self.inverses[s].add(o)
                self.inverses[o].add(s)
        self.labels: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
        for predicate in LABEL_PREDICATES:
            for s, o in by_predicate[predicate]:
                if is_literal(o):
                    text, lang, _ = literal_parts(o)
                    text = " ".join(text.split())
                    if text:
                        self.labels[s].append((text, lang))
        domains = _grouped(by_predicate[RDFS_DOMAIN])
        ranges = _grouped(by_predicate[RDFS_RANGE])
        self.properties: list[PropertySpec] = []
        for term in sorted(set().union(*(typed[t] for t in _RELATION_TYPES))):
            if not is_iri(term) or term.startswith(_SCHEMA):
                continue
            labels = [_label(text, lang) for text, lang in self.labels.get(term, ())]
            if labels:
                self.properties.append(
                    PropertySpec(
                        term,
                        labels,
                        frozenset(domains.get(term, ())),
                        frozenset(ranges.get(term, ())),
                    )
                )
        self.classes = frozenset(
            c
            for c in set(typed.get(iri(_OWL + "Class"), ())) | set(self.superclasses)
            if is_iri(c) and not c.startswith(_SCHEMA)
        )
        self.property_terms = frozenset(typed[OWL_OBJECT_PROPERTY]) | frozenset(
            s for s, o in by_predicate[RDF_TYPE] if o.endswith("Property>")
        )
        kinds = dict(by_predicate[TV_INPUT_KIND])
        units = {s: literal_parts(o)[0] for s, o in by_predicate[TV_UNIT] if is_literal(o)}
        defaults = {
            s
            for s, o in by_predicate[TV_DEFAULTS_TO_EVALUATION_DATE]
            if literal_parts(o)[0].strip().lower() in ("true", "1")
        }
        self.inputs: list[CaseInputSpec] = []
        for term in sorted(typed[TV_CASE_INPUT]):
            kind = INPUT_KINDS.get(kinds.get(term, ""))
            if kind is not None:
                self.inputs.append(
                    CaseInputSpec(
                        term,
                        kind,
                        units.get(term),
                        term in defaults,
                        index.label(index.term_id(term), "en"),
                        index.label(index.term_id(term), "zh"),
                    )
                )
        self.decision_properties = frozenset(typed[TV_DECISION_PROPERTY])
        self.actions: set[str] = set()
        for prop in self.decision_properties:
            for range_class in ranges.get(prop, ()):
                if not range_class.startswith(_SCHEMA):
                    self.actions.update(typed.get(range_class, ()))
        self.conflicts: dict[str, set[str]] = defaultdict(set)
        for s, o in by_predicate[TV_CONFLICTS_WITH]:
            self.conflicts[s].add(o)
            self.conflicts[o].add(s)
            self.actions.update((s, o))

    # --- lookups ---------------------------------------------------------------------

    def label(self, term: str, lang: str = "en") -> str:
        """The display label of a term in ``lang`` (English, then the local name, as fallback)."""
        node = self.index.term_id(term)
        if node >= 0:
            return self.index.label(node, lang)
        for text, label_lang in self.labels.get(term, ()):
            if (label_lang or "").startswith(lang):
                return text
        return term.strip("<>").rsplit("#", 1)[-1].rsplit("/", 1)[-1]

    def all_labels(self, term: str) -> list[tuple[str, bool]]:
        """Every label of a term as ``(text, is_chinese)``."""
        return [(text, _is_zh(text, lang)) for text, lang in self.labels.get(term, ())]

    def closure(self, classes: set[str]) -> set[str]:
        """The classes with all their superclasses."""
        out = set(classes)
        for cls in classes:
            out.update(self.superclasses.get(cls, ()))
        return out


def _grouped(pairs: list[tuple[str, str]]) -> dict[str, set[str]]:
    """Domains or ranges by property; schema classes (``owl:Thing``, ...) say nothing."""
    grouped: dict[str, set[str]] = defaultdict(set)
    for s, o in pairs:
        if is_iri(o) and not o.startswith(_SCHEMA):
            grouped[s].add(o)
    return grouped


def _is_zh(text: str, lang: str | None) -> bool:
    return (lang or "").lower().startswith("zh") or bool(_CJK_RE.search(text))


def _label(text: str, lang: str | None) -> Label:
    zh = _is_zh(text, lang)
    parts = tuple(part.strip() for part in _GAP_RE.split(text) if part.strip())[:2]
    if not zh:
        parts = tuple(" ".join(re.findall(r"[^\W_]+", part.lower())) for part in parts)
    return Label(text, zh, parts or (text,))
