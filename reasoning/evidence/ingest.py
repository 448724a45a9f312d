"""Everything done once per uploaded ontology version, never per request.

:func:`ingest_ontology` parses the bytes safely, checks the declared
decision rules and every SPARQL text the file carries (a rule, target or
condition that does not parse, or that would reach outside the case, refuses
the whole upload), reads the declared views, materialises OWL
2 RL under a time limit, validates, and builds the linking and expansion
index. It is pure computation (no database, no clock inside
the result except measured durations), CPU-bound and blocking: the HTTP
layer runs it in a worker thread.
"""

from __future__ import annotations

import hashlib
import time
from typing import Final

import msgspec

from reasoning.errors import InvalidInput, UnsafeContent
from reasoning.evidence.index import OntologyIndex, build_index
from reasoning.evidence.lemmas import NounLemmatizer
from reasoning.evidence.materialise import Engine, materialise
from reasoning.evidence.report import (
    ImportReport,
    MaterialisationReport,
    RuleReport,
    SparqlReport,
    ValidationReport,
)
from reasoning.evidence.safe_parse import ParseLimits, parse_rdf
from reasoning.evidence.validation import (
    disjointness_violations,
    undeclared_terms,
    unsatisfiable_individuals,
)
from reasoning.evidence.views import ViewSpec, read_profile, read_views
from reasoning.rules.check import check_rules, check_sparql_texts

__all__ = ["IngestLimits", "IngestResult", "content_hash", "ingest_ontology"]

_LISTED: Final = 50


class IngestLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Caps for one upload: parsing caps and the materialisation time limit."""

    parse: ParseLimits = msgspec.field(default_factory=ParseLimits)
    materialise_timeout_s: float = 60.0


class IngestResult(msgspec.Struct, frozen=True, kw_only=True):
    """One ingested version: sizes, report, views and the serialised index.

    ``index`` is the in-memory index (version id empty until the caller
    stores the version and calls ``index.with_version``); ``index_blob`` is
    its stored form.
    """

    content_hash: str
    media_type: str
    size_bytes: int
    triples_asserted: int
    triples_materialised: int
    report: ValidationReport
    views: tuple[ViewSpec, ...]
    index: OntologyIndex
    index_blob: bytes
    seconds: float


def content_hash(data: bytes) -> str:
    """The SHA-256 of the uploaded bytes, hex: the identity of a version."""
    return hashlib.sha256(data).hexdigest()


def ingest_ontology(
    data: bytes,
    media_type: str,
    *,
    limits: IngestLimits | None = None,
    engine: Engine = "auto",
    lemmatizer: NounLemmatizer | None = None,
) -> IngestResult:
    """Parse, materialise, validate and index one ontology file.

    Raises the parse errors of :func:`~reasoning.evidence.safe_parse.parse_rdf`
    (nothing is produced for a refused file); a refused decision rule raises
    :class:`~reasoning.errors.UnsafeContent` when it would reach outside the
    case (SERVICE, FROM, LOAD, updates), else
    :class:`~reasoning.errors.InvalidInput`, both with ``rules`` (every rule's
    report) in their extra members. Materialisation problems do not
    raise: they are reported and the asserted triples are indexed.
    """
    limits = limits or IngestLimits()
    started = time.perf_counter()
    parsed = parse_rdf(data, media_type, limits=limits.parse)
    rules = check_rules(parsed.triples)
    sparql = check_sparql_texts(parsed.triples)
    _refuse_broken_rules(rules, sparql)
    views = read_views(parsed.triples)
    profile = read_profile(parsed.triples)
    materialised = materialise(parsed.triples, timeout_s=limits.materialise_timeout_s,
                               engine=engine, max_triples=limits.parse.max_triples)
    index_started = time.perf_counter()
    index = build_index(parsed.triples, materialised.inferred, views=views, profile=profile,
                        lemmatizer=lemmatizer)
    blob = index.to_bytes()
    index_seconds = time.perf_counter() - index_started
    everything = list(parsed.triples) + list(materialised.inferred)
    classes, properties = undeclared_terms(parsed.triples)
    violations = disjointness_violations(everything)
    unsatisfiable = unsatisfiable_individuals(everything)
    report = ValidationReport(
        media_type=parsed.media_type,
        size_bytes=len(data),
        parse_seconds=round(parsed.seconds, 4),
        index_seconds=round(index_seconds, 4),
        warnings=parsed.warnings,
        imports=tuple(ImportReport(iri=i) for i in parsed.imports),
        undeclared_classes=tuple(classes[:_LISTED]),
        undeclared_class_count=len(classes),
        undeclared_properties=tuple(properties[:_LISTED]),
        undeclared_property_count=len(properties),
        disjointness_violations=tuple(violations[:_LISTED]),
        unsatisfiable_individuals=tuple(unsatisfiable[:_LISTED]),
        materialisation=MaterialisationReport(
            engine=materialised.engine,
            seconds=round(materialised.seconds, 4),
            timed_out=materialised.timed_out,
            triples_before=len(parsed.triples),
            triples_after=index.triple_count,
            note=materialised.note,
        ),
        views=tuple(v.name for v in views),
        consistent=not violations and not unsatisfiable,
        rules=rules,
        sparql=sparql,
    )
    return IngestResult(
        content_hash=content_hash(data),
        media_type=parsed.media_type,
        size_bytes=len(data),
        triples_asserted=len(parsed.triples),
        triples_materialised=index.triple_count,
        report=report,
        views=views,
        index=index,
        index_blob=blob,
        seconds=time.perf_counter() - started,
    )


def _refuse_broken_rules(rules: tuple[RuleReport, ...], sparql: tuple[SparqlReport, ...]) -> None:
    """Refuse the upload when a rule or any SPARQL text is refused (the reports in ``extra``)."""
    refused = [rule for rule in rules if not rule.ok]
    texts = [text for text in sparql if not text.ok]
    if not refused and not texts:
        return
    if refused:
        first = refused[0]
        detail = (f"decision rule {first.id} is refused: {first.error}"
                  + (f" ({len(refused) - 1} more refused rule(s) in 'rules')"
                     if len(refused) > 1 else ""))
    else:
        text = texts[0]
        detail = (f"the {text.property} of {text.node} is refused: {text.error}"
                  + (f" ({len(texts) - 1} more refused SPARQL text(s) in 'sparql')"
                     if len(texts) > 1 else ""))
    listed = [msgspec.to_builtins(rule) for rule in rules]
    checked = [msgspec.to_builtins(text) for text in sparql]
    if any(rule.hostile for rule in refused) or any(text.hostile for text in texts):
        raise UnsafeContent(detail, rules=listed, sparql=checked)
    raise InvalidInput(detail, rules=listed, sparql=checked)
