"""Stages 1-3 of the pipeline as one call: parse + extract, graph, entropy and budget.

``POST /v1/constraints`` returns an :class:`Analysis` as is; ``POST /v1/reason``
runs the same function before it spends a generation.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from enum import StrEnum

import msgspec
from spacy.tokens import Doc

from reasoning.budget import DEFAULT_LIMITS, Budget, BudgetLimits, budget_for
from reasoning.constraints.extract.accounting import Reading
from reasoning.constraints.extraction import ExtractionResult, extract, parse_english_many
from reasoning.constraints.model import Constraint, Premise, Span
from reasoning.entropy import Entropy, cognitive_entropy
from reasoning.evidence.disjoint import disjointness_hook
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.linking import link_mentions
from reasoning.evidence.model import LinkedEntity
from reasoning.graph import ConstraintGraph, DomainHook, build_graph
from reasoning.graph.facets import facets_of
from reasoning.nlp import english

__all__ = [
    "Analysis",
    "ExtractionCache",
    "Status",
    "analyse",
    "count_unlinked_terms",
    "extraction_cached",
    "link_domain",
    "required_tokens",
]

#: Tokens per word and per sentence the bundled tokenizer needs on average
#: (English prose); used only to keep a budget from cutting a length
#: requirement short.
TOKENS_PER_WORD = 1.5
TOKENS_PER_SENTENCE = 20
_HEADROOM = 32


class ExtractionCache:
    """A thread-safe LRU of extraction results keyed by scope, prompt and profile defaults.

    Extraction is a pure function of the prompt and the defaults (the NLP
    pipelines are fixed for the process), and results are frozen value
    objects, so a hit is exact. Applications typically check the same
    prompt with ``/v1/constraints`` and then send it to ``/v1/reason``;
    the second call skips parsing.

    A hit is observable (``Analysis.cached``, and the time saved), so it
    tells the caller that the prompt was seen before *in the same scope*.
    A service for several tenants passes the tenant as the scope: one
    tenant's entries are never hits for another.
    """

    def __init__(self, capacity: int = 2048) -> None:
        self._capacity = capacity
        self._items: OrderedDict[tuple[str, str, bytes], ExtractionResult] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_extract(
        self, prompt: str, defaults: Sequence[Constraint], scope: str = "", english_doc: Doc | None = None
    ) -> tuple[ExtractionResult, bool]:
        """The extraction of ``prompt`` with ``defaults`` and whether it came from ``scope``'s entries.

        ``english_doc``: the prompt's parse, when the caller parsed it already (see ``extract``).
        """
        key = (scope, prompt, msgspec.json.encode(tuple(defaults)))
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit, True
        result = extract(prompt, defaults=defaults, english_doc=english_doc)
        with self._lock:
            self._items[key] = result
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)
        return result, False

    def contains(self, prompt: str, defaults: Sequence[Constraint], scope: str = "") -> bool:
        """True when ``scope`` holds the extraction of ``prompt`` with ``defaults`` now (it may be evicted later)."""
        key = (scope, prompt, msgspec.json.encode(tuple(defaults)))
        with self._lock:
            return key in self._items

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_CACHE = ExtractionCache()


def extraction_cached(prompt: str, defaults: Sequence[Constraint] = (), scope: str = "") -> bool:
    """True when :func:`analyse` with its default cache and ``cache_scope=scope`` would now skip
    parsing and extraction.

    Callers use it to run a cheap analysis inline rather than on a worker thread.
    """
    return _CACHE.contains(prompt, defaults, scope)


class Status(StrEnum):
    OK = "ok"
    NEEDS_CONFIRMATION = "needs_confirmation"


class Analysis(msgspec.Struct, frozen=True, kw_only=True):
    """Everything stages 1-3 know about a prompt.

    ``status`` is ``needs_confirmation`` exactly when ``graph.conflicts`` is
    non-empty. ``timings`` holds wall milliseconds of ``parse``, ``extract``
    and ``graph`` (graph includes entropy and budget) spent by this call;
    ``cached`` is True when the extraction came from the cache (then parse
    and extract took next to nothing). ``parse`` is present only when the
    extraction stage reports its parse time (``features["parse_ms"]``) or
    the extraction was cached; otherwise ``extract`` includes parsing. With
    a domain index, ``linked`` holds the prompt's mentions linked to it,
    ``unlinked_terms`` the named entities it could not link, and
    ``timings["link"]`` the time both took. ``unrecognised`` holds the
    prompt's sentences that read as requirements on the answer's form but
    map to no constraint kind (never silently dropped), and the clauses whose
    readings did not account for all they say. ``readings`` says which words
    of its clause each constraint's reading used, and what a dropped reading
    left unaccounted (:class:`reasoning.constraints.extract.accounting.Reading`).
    """

    status: Status
    language: str
    constraints: tuple[Constraint, ...]
    premises: tuple[Premise, ...]
    sentences: tuple[Span, ...]
    graph: ConstraintGraph
    entropy: Entropy
    budget: Budget
    timings: dict[str, float]
    cached: bool = False
    linked: tuple[LinkedEntity, ...] = ()
    unlinked_terms: int = 0
    unrecognised: tuple[Span, ...] = ()
    readings: tuple[Reading, ...] = ()


def required_tokens(constraints: Sequence[Constraint]) -> int:
    """New tokens the active length constraints need at least (0 when none)."""
    need = 0.0
    for c in constraints:
        bounds = facets_of(c).bounds
        if ("words",) in bounds:
            need = max(need, bounds[("words",)].lo * TOKENS_PER_WORD)
        if ("sentences",) in bounds:
            need = max(need, bounds[("sentences",)].lo * TOKENS_PER_SENTENCE)
    return math.ceil(need) + _HEADROOM if need > 0 else 0


def _parse_ms(result: ExtractionResult, cached: bool, extract_ms: float) -> float | None:
    if cached:
        return 0.0
    value = result.features.get("parse_ms")
    return min(float(value), extract_ms) if isinstance(value, (int, float)) else None


#: spaCy entity labels that are values, never ontology terms.
_VALUE_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "DATE", "TIME"})
_LATIN = re.compile(r"[A-Za-z]")


def count_unlinked_terms(
    entities: Sequence[tuple[int, int, str]], linked: Sequence[LinkedEntity]
) -> int:
    """Named entities (``(start, end, label)``) that no linked mention overlaps.

    Value-like entities (numbers, amounts, dates) are not domain terms and
    never count. An entity partly covered by a link counts as linked.
    """
    count = 0
    for start, end, label in entities:
        if label in _VALUE_LABELS:
            continue
        if not any(le.start < end and start < le.end for le in linked):
            count += 1
    return count


def _with_entities(doc: Doc) -> Doc:
    """``doc`` with named entities: the NER pass extraction skipped, run on the same parse."""
    if not doc.has_annotation("ENT_IOB"):
        nlp = english()
        if "ner" in nlp.pipe_names:
            doc = nlp.get_pipe("ner")(doc)
    return doc


def link_domain(
    index: OntologyIndex, prompt: str, english_doc: Doc | None = None
) -> tuple[tuple[LinkedEntity, ...], int]:
    """Link ``prompt`` to ``index``; return the links and the number of unlinked terms.

    English entities come from the shared spaCy pipeline (one parse, reused by
    the linker). With ``english_doc`` (extraction's parse of this prompt) that
    parse gains its entities and is reused, so the prompt is parsed once for
    extraction and linking. Chinese has no entity recogniser in our pipeline,
    so its unlinked terms are not counted.
    """
    if english_doc is not None and english_doc.text == prompt:
        doc: Doc | None = _with_entities(english_doc)
    else:
        doc = english()(prompt) if _LATIN.search(prompt) else None
    linked = link_mentions(index, prompt, doc=doc)
    entities = [(e.start_char, e.end_char, e.label_) for e in doc.ents] if doc is not None else []
    return linked, count_unlinked_terms(entities, linked)


def _timings(
    parse_ms: float | None, extract_ms: float, graph_ms: float, link_ms: float | None
) -> dict[str, float]:
    timings = {"extract": round(max(extract_ms - (parse_ms or 0.0), 0.0), 3)}
    if parse_ms is not None:
        timings = {"parse": round(parse_ms, 3), **timings}
    if link_ms is not None:
        timings["link"] = round(link_ms, 3)
    timings["graph"] = round(graph_ms, 3)
    return timings


def analyse(
    prompt: str,
    *,
    defaults: Sequence[Constraint] = (),
    domain_hook: DomainHook | None = None,
    unlinked_terms: int = 0,
    limits: BudgetLimits = DEFAULT_LIMITS,
    cache: ExtractionCache | None = _CACHE,
    domain_index: OntologyIndex | None = None,
    cache_scope: str = "",
    english_doc: Doc | None = None,
) -> Analysis:
    """Extract, build the graph, score entropy and set the budget.

    Args:
        prompt: the user's prompt (extraction enforces its own size cap).
        defaults: profile defaults (``origin=profile``), see ``extract``.
        domain_hook: contributes ontology edges for the extracted constraints; by
            default, with ``domain_index``, the index's ``owl:disjointWith`` edges
            (:func:`reasoning.evidence.disjoint.disjointness_hook`).
        unlinked_terms: domain terms entity linking could not resolve (added to
            those counted here when ``domain_index`` is given).
        limits: the range the budget moves in.
        cache: where extraction results are memoised (``None``: always extract).
        domain_index: the domain's ontology index: link the prompt to it and
            count the named entities it cannot link.
        cache_scope: whose cache entries this call may hit and adds to (the
            tenant, in a service for several); see :class:`ExtractionCache`.
        english_doc: the prompt's English parse when the caller made it already
            (``reasoning.constraints.extraction.parse_english_many``, a batch of
            prompts in one pass); extraction and domain linking then reuse it.

    Raises:
        InvalidInput / LimitExceeded: from extraction (empty or oversized prompt)
            or from a domain edge naming an unknown constraint.
    """
    t0 = time.perf_counter()
    if (
        english_doc is None
        and domain_index is not None
        and (cache is None or not cache.contains(prompt, defaults, cache_scope))
    ):
        # Extraction and linking both need this parse: make it once.
        english_doc = parse_english_many([prompt])[0]
    if cache is None:
        result, cached = extract(prompt, defaults=defaults, english_doc=english_doc), False
    else:
        result, cached = cache.get_or_extract(prompt, defaults, cache_scope, english_doc)
    t1 = time.perf_counter()
    linked: tuple[LinkedEntity, ...] = ()
    if domain_index is not None:
        linked, missing = link_domain(domain_index, prompt, english_doc)
        unlinked_terms += missing
    t_link = time.perf_counter()
    if domain_hook is None and domain_index is not None:
        domain_hook = disjointness_hook(domain_index)
    extra = tuple(domain_hook(result.constraints)) if domain_hook is not None else ()
    graph = build_graph(result.constraints, prompt=prompt, extra_edges=extra)
    entropy = cognitive_entropy(result, graph, unlinked_terms=unlinked_terms)
    budget = budget_for(entropy.score, limits, required_tokens=required_tokens(graph.active()))
    t2 = time.perf_counter()
    extract_ms = (t1 - t0) * 1000
    parse_ms = _parse_ms(result, cached, extract_ms)
    return Analysis(
        status=Status.NEEDS_CONFIRMATION if graph.conflicts else Status.OK,
        language=result.language,
        constraints=result.constraints,
        premises=result.premises,
        sentences=result.sentences,
        graph=graph,
        entropy=entropy,
        budget=budget,
        timings=_timings(
            parse_ms,
            extract_ms,
            (t2 - t_link) * 1000,
            (t_link - t1) * 1000 if domain_index is not None else None,
        ),
        cached=cached,
        linked=linked,
        unlinked_terms=max(unlinked_terms, 0),
        unrecognised=result.unrecognised,
        readings=result.readings,
    )
