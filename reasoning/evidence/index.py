"""The compact, integer-indexed form of one ontology version.

Built once at upload from the asserted and inferred triples, stored as one
compressed blob (the ``materialised`` column), and loaded into memory once
per version. It holds:

- ``terms``: every distinct term string; triples are three ``int32``
  arrays of term ids, with a flag for inferred ones;
- CSR adjacency in both directions (``out_ptr``/``out_edges`` sorted by
  subject, ``in_ptr``/``in_edges`` by object, edges being triple ids), so
  the neighbours of a node are one slice and a k-hop expansion touches only
  the frontier, whatever the graph size;
- labels for display (English and Chinese) and label keys for linking:
  lower-cased word keys and noun-lemma keys for English and other
  space-separated languages, whitespace-free keys for Chinese;
- dates: when each resource was last updated (directly or through a
  ``tv:freshnessVia`` property) and from when it is in force;
- the declared views and the domain profile.

Arrays are marked read-only: an index is shared between threads and never
changes after it is built.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt

from reasoning.errors import InvalidInput
from reasoning.evidence.lemmas import NounLemmatizer, default_lemmatizer, words
from reasoning.evidence.terms import (
    OWL_CLASS,
    OWL_THING,
    RDF_TYPE,
    RDFS_CLASS,
    RDFS_LABEL,
    RDFS_SUBCLASSOF,
    SKOS_ALT_LABEL,
    SKOS_PREF_LABEL,
    Triple,
    is_iri,
    is_literal,
    literal_parts,
    local_name,
)
from reasoning.evidence.views import DomainProfile, ViewSpec

__all__ = ["LABEL_PREDICATES", "OntologyIndex", "build_index", "parse_date"]

IntArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]

LABEL_PREDICATES: Final = (SKOS_PREF_LABEL, RDFS_LABEL, SKOS_ALT_LABEL)
_LABEL_WEIGHT: Final = {SKOS_PREF_LABEL: 1.0, RDFS_LABEL: 1.0, SKOS_ALT_LABEL: 0.9}
_LEMMA_FACTOR: Final = 0.95
_LOCAL_NAME_WEIGHT: Final = 0.7
_FORMAT: Final = 1
_CJK_RE: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff]")
_ZH_STRIP_RE: Final = re.compile(r"[\s\W_]+", re.UNICODE)
_DATE_RE: Final = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?")
_STOP_KEYS: Final = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "is",
        "it", "its", "of", "on", "or", "that", "the", "this", "to", "was", "were", "will", "with"
    )
)
_SCHEMA_PREFIXES: Final = (
    "<http://www.w3.org/2002/07/owl#",
    "<http://www.w3.org/2000/01/rdf-schema#",
    "<http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "<https://tenet.dev/ns/views#",
)


def parse_date(term: str) -> str | None:
    """An ISO date (``YYYY-MM-DD``) from a date-like literal, or None.

    ``xsd:date``, ``xsd:dateTime`` and ``xsd:gYear`` / ``gYearMonth`` values
    are accepted; a missing month or day counts as the first.
    """
    if not is_literal(term):
        return None
    match = _DATE_RE.match(literal_parts(term)[0].strip())
    if match is None:
        return None
    year, month, day = match.group(1), match.group(2) or "01", match.group(3) or "01"
    return f"{year}-{month}-{day}"


class _Payload(msgspec.Struct, array_like=True):
    format: int
    terms: list[str]
    s: bytes
    p: bytes
    o: bytes
    inferred: bytes
    out_ptr: bytes
    out_edges: bytes
    in_ptr: bytes
    in_edges: bytes
    is_class: bytes
    label_en: dict[int, str]
    label_zh: dict[int, str]
    modified: dict[int, tuple[str, int]]
    effective: dict[int, str]
    en_keys: dict[str, list[tuple[int, float]]]
    zh_keys: dict[str, list[tuple[int, float]]]
    views: list[ViewSpec]
    profile: DomainProfile


class OntologyIndex:
    """One ontology version, ready for linking and k-hop expansion (read-only)."""

    def __init__(self, payload: _Payload, *, version: str) -> None:
        if payload.format != _FORMAT:
            raise InvalidInput(f"ontology index format {payload.format} is not supported; "
                               "re-upload the ontology")
        self.version = version
        self.terms: list[str] = payload.terms
        self.s = _array(payload.s, np.int32)
        self.p = _array(payload.p, np.int32)
        self.o = _array(payload.o, np.int32)
        self.inferred = _array(payload.inferred, np.bool_)
        self.out_ptr = _array(payload.out_ptr, np.int64)
        self.out_edges = _array(payload.out_edges, np.int32)
        self.in_ptr = _array(payload.in_ptr, np.int64)
        self.in_edges = _array(payload.in_edges, np.int32)
        self.is_class = _array(payload.is_class, np.bool_)
        self.degree = np.diff(self.out_ptr) + np.diff(self.in_ptr)
        self.degree.setflags(write=False)
        self.label_en = payload.label_en
        self.label_zh = payload.label_zh
        self.modified = payload.modified
        self.effective = payload.effective
        self.en_keys = payload.en_keys
        self.zh_keys = payload.zh_keys
        self.max_en_words = max((k.count(" ") + 1 for k in self.en_keys), default=0)
        self.max_zh_chars = max((len(k) for k in self.zh_keys), default=0)
        self.views: tuple[ViewSpec, ...] = tuple(payload.views)
        self.profile = payload.profile
        self._payload = payload
        self._ids: dict[str, int] | None = None
        self._fallback_labels: dict[int, str] = {}
        self._view_masks: dict[str, BoolArray] = {}
        self._view_weights: dict[str, npt.NDArray[np.float32]] = {}
        self.type_id = self.term_id(RDF_TYPE)
        self.literal_mask: BoolArray = np.fromiter(
            (t.startswith('"') for t in self.terms), np.bool_, len(self.terms))
        self.literal_mask.setflags(write=False)

    # --- construction and storage ---------------------------------------------------

    def to_bytes(self) -> bytes:
        """The compressed blob stored with the ontology version."""
        return zlib.compress(msgspec.msgpack.encode(self._payload), 1)

    @classmethod
    def from_bytes(cls, blob: bytes, *, version: str) -> OntologyIndex:
        """Load a blob written by :meth:`to_bytes`; ``version`` names the ontology version."""
        try:
            payload = msgspec.msgpack.decode(zlib.decompress(blob), type=_Payload)
        except (zlib.error, msgspec.DecodeError) as exc:
            raise InvalidInput(f"the stored ontology index is unreadable ({exc}); "
                               "re-upload the ontology") from None
        return cls(payload, version=version)

    def with_version(self, version: str) -> OntologyIndex:
        """The same index (arrays shared, nothing copied) under another version id."""
        clone = OntologyIndex.__new__(OntologyIndex)
        clone.__dict__.update(self.__dict__)
        clone.version = version
        return clone

    # --- lookups -------------------------------------------------------------------

    @property
    def triple_count(self) -> int:
        return int(self.s.shape[0])

    @property
    def inferred_count(self) -> int:
        return int(self.inferred.sum())

    def term_id(self, term: str) -> int:
        """The id of a term string, or -1 when the ontology does not hold it."""
        if self._ids is None:
            self._ids = {t: i for i, t in enumerate(self.terms)}
        return self._ids.get(term, -1)

    def label(self, node: int, lang: str = "en") -> str:
        """A display label: the language's label, else English, else the local name."""
        if lang == "zh":
            found = self.label_zh.get(node)
            if found:
                return found
        found = self.label_en.get(node)
        if found:
            return found
        found = self._fallback_labels.get(node)
        if found is None:
            term = self.terms[node]
            found = literal_parts(term)[0] if is_literal(term) else local_name(term)
            self._fallback_labels[node] = found
        return found

    def out_of(self, node: int) -> IntArray:
        """The triples (ids) whose subject is ``node``, in document order: one CSR slice."""
        return self.out_edges[self.out_ptr[node] : self.out_ptr[node + 1]]

    def into(self, node: int) -> IntArray:
        """The triples (ids) whose object is ``node``, in document order: one CSR slice."""
        return self.in_edges[self.in_ptr[node] : self.in_ptr[node + 1]]

    def view(self, name: str) -> ViewSpec:
        for spec in self.views:
            if spec.name == name:
                return spec
        known = ", ".join(v.name for v in self.views)
        raise InvalidInput(f"unknown view {name!r}; this ontology declares: {known}", field="views")

    def view_mask(self, name: str) -> BoolArray:
        """Which triples belong to view ``name`` (computed once per view)."""
        mask = self._view_masks.get(name)
        if mask is None:
            mask = _compute_view_mask(self, self.view(name))
            mask.setflags(write=False)
            self._view_masks[name] = mask
        return mask

    def predicate_weights(self, name: str) -> npt.NDArray[np.float32]:
        """Relation weight per term id for view ``name`` (only predicates matter)."""
        weights = self._view_weights.get(name)
        if weights is None:
            spec = self.view(name)
            weights = np.full(len(self.terms), spec.default_weight, dtype=np.float32)
            for predicate, value in spec.weights.items():
                pid = self.term_id(predicate)
                if pid >= 0:
                    weights[pid] = value
            weights.setflags(write=False)
            self._view_weights[name] = weights
        return weights


def build_index(
    asserted: Sequence[Triple],
    inferred: Sequence[Triple],
    *,
    views: tuple[ViewSpec, ...],
    profile: DomainProfile,
    lemmatizer: NounLemmatizer | None = None,
    version: str = "",
) -> OntologyIndex:
    """Build the index of one ontology version from its asserted and inferred triples."""
    lemmatizer = lemmatizer or default_lemmatizer()
    asserted_set = set(asserted)
    extra = [t for t in dict.fromkeys(inferred) if t not in asserted_set]
    all_triples = list(asserted) + extra
    ids: dict[str, int] = {}
    setdefault = ids.setdefault
    s_ids = np.fromiter((setdefault(t[0], len(ids)) for t in all_triples), np.int32,
                        len(all_triples))
    p_ids = np.fromiter((setdefault(t[1], len(ids)) for t in all_triples), np.int32,
                        len(all_triples))
    o_ids = np.fromiter((setdefault(t[2], len(ids)) for t in all_triples), np.int32,
                        len(all_triples))
    terms = list(ids)
    n = len(terms)
    inferred_flags = np.zeros(len(all_triples), dtype=np.bool_)
    inferred_flags[len(asserted):] = True
    out_ptr, out_edges = _csr(s_ids, n)
    in_ptr, in_edges = _csr(o_ids, n)

    is_class = np.zeros(n, dtype=np.bool_)
    type_id, subclass_id = ids.get(RDF_TYPE, -1), ids.get(RDFS_SUBCLASSOF, -1)
    for class_term in (OWL_CLASS, RDFS_CLASS):
        cid = ids.get(class_term, -1)
        if cid >= 0 and type_id >= 0:
            is_class[s_ids[(p_ids == type_id) & (o_ids == cid)]] = True
    if subclass_id >= 0:
        sub = p_ids == subclass_id
        is_class[s_ids[sub]] = True
        is_class[o_ids[sub]] = True
    thing = ids.get(OWL_THING, -1)
    if thing >= 0:
        is_class[thing] = True

    label_en, label_zh, en_keys, zh_keys = _labels(terms, ids, s_ids, p_ids, o_ids, lemmatizer)
    _add_local_names(terms, s_ids, p_ids, type_id, label_en, label_zh, en_keys, lemmatizer)
    modified, effective = _dates(terms, ids, s_ids, p_ids, o_ids, profile)

    payload = _Payload(
        format=_FORMAT,
        terms=terms,
        s=s_ids.tobytes(),
        p=p_ids.tobytes(),
        o=o_ids.tobytes(),
        inferred=inferred_flags.tobytes(),
        out_ptr=out_ptr.tobytes(),
        out_edges=out_edges.tobytes(),
        in_ptr=in_ptr.tobytes(),
        in_edges=in_edges.tobytes(),
        is_class=is_class.tobytes(),
        label_en=label_en,
        label_zh=label_zh,
        modified=modified,
        effective=effective,
        en_keys={k: sorted(v.items(), key=lambda kv: -kv[1]) for k, v in en_keys.items()},
        zh_keys={k: sorted(v.items(), key=lambda kv: -kv[1]) for k, v in zh_keys.items()},
        views=list(views),
        profile=profile,
    )
    return OntologyIndex(payload, version=version)


# --- helpers ---------------------------------------------------------------------------


def _array(raw: bytes, dtype: type) -> npt.NDArray[Any]:
    array: npt.NDArray[Any] = np.frombuffer(raw, dtype=dtype)
    array.setflags(write=False)
    return array


def _csr(keys: IntArray, n: int) -> tuple[npt.NDArray[np.int64], IntArray]:
    """Row pointers and triple ids sorted by ``keys`` (stable, so document order holds)."""
    order = np.argsort(keys, kind="stable").astype(np.int32)
    counts = np.bincount(keys, minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, order


def _labels(
    terms: list[str],
    ids: dict[str, int],
    s_ids: IntArray,
    p_ids: IntArray,
    o_ids: IntArray,
    lemmatizer: NounLemmatizer,
) -> tuple[dict[int, str], dict[int, str], dict[str, dict[int, float]], dict[str, dict[int, float]]]:
    label_en: dict[int, str] = {}
    label_zh: dict[int, str] = {}
    rank_en: dict[int, int] = {}
    rank_zh: dict[int, int] = {}
    en_keys: dict[str, dict[int, float]] = {}
    zh_keys: dict[str, dict[int, float]] = {}
    for rank, predicate in enumerate(LABEL_PREDICATES):
        pid = ids.get(predicate, -1)
        if pid < 0:
            continue
        weight = _LABEL_WEIGHT[predicate]
        rows = np.nonzero(p_ids == pid)[0]
        for subject, obj in zip(s_ids[rows].tolist(), o_ids[rows].tolist(), strict=True):
            term = terms[obj]
            if not is_literal(term):
                continue
            text, lang, _ = literal_parts(term)
            text = " ".join(text.split())
            if not text:
                continue
            chinese = (lang or "").lower().startswith("zh") or bool(_CJK_RE.search(text))
            if chinese:
                if rank < rank_zh.get(subject, 99):
                    label_zh[subject], rank_zh[subject] = text, rank
                key = _ZH_STRIP_RE.sub("", text).lower()
                if len(key) >= 2:
                    _put(zh_keys, key, subject, weight)
                continue
            english_rank = rank if (lang or "en").lower().startswith("en") else rank + 3
            if english_rank < rank_en.get(subject, 99):
                label_en[subject], rank_en[subject] = text, english_rank
            _add_word_keys(en_keys, words(text), subject, weight, lemmatizer)
    return label_en, label_zh, en_keys, zh_keys


def _add_word_keys(keys: dict[str, dict[int, float]], tokens: list[str], node: int,
                   weight: float, lemmatizer: NounLemmatizer) -> None:
    if not tokens:
        return
    surface = " ".join(tokens)
    if len(surface) < 2 or (len(tokens) == 1 and surface in _STOP_KEYS):
        return
    _put(keys, surface, node, weight)
    lemma = lemmatizer.key(tokens)
    if lemma != surface:
        _put(keys, lemma, node, weight * _LEMMA_FACTOR)


def _add_local_names(terms: list[str], s_ids: IntArray, p_ids: IntArray, type_id: int,
                     label_en: dict[int, str], label_zh: dict[int, str],
                     en_keys: dict[str, dict[int, float]], lemmatizer: NounLemmatizer) -> None:
    """Typed resources without any label are still linkable by their IRI's local name."""
    if type_id < 0:
        return
    for node in np.unique(s_ids[p_ids == type_id]).tolist():
        if node in label_en or node in label_zh:
            continue
        term = terms[node]
        if not is_iri(term) or term.startswith(_SCHEMA_PREFIXES):
            continue
        _add_word_keys(en_keys, words(local_name(term)), node, _LOCAL_NAME_WEIGHT, lemmatizer)


def _put(keys: dict[str, dict[int, float]], key: str, node: int, weight: float) -> None:
    bucket = keys.setdefault(key, {})
    if weight > bucket.get(node, 0.0):
        bucket[node] = weight


def _dates(
    terms: list[str],
    ids: dict[str, int],
    s_ids: IntArray,
    p_ids: IntArray,
    o_ids: IntArray,
    profile: DomainProfile,
) -> tuple[dict[int, tuple[str, int]], dict[int, str]]:
    """Last-updated dates (with the node that carries the date) and effective dates.

    A resource without a date of its own takes, through a ``tv:freshnessVia``
    property, the oldest last-updated date and the latest effective date of
    what it points to (a party is as fresh as its list; a recommendation is
    in force from its guideline's publication).
    """
    modified: dict[int, tuple[str, int]] = {}
    for node, date in _dated(terms, ids, s_ids, p_ids, o_ids, profile.freshness_properties):
        current = modified.get(node)
        if current is None or date > current[0]:
            modified[node] = (date, node)
    for subject, obj in _pairs(ids, s_ids, p_ids, o_ids, profile.freshness_via):
        own = modified.get(subject)
        via = modified.get(obj)
        if via is None or (own is not None and own[1] == subject):
            continue
        if own is None or via[0] < own[0]:
            modified[subject] = (via[0], via[1])
    effective: dict[int, str] = {}
    for node, date in _dated(terms, ids, s_ids, p_ids, o_ids, profile.effective_properties):
        if node not in effective or date < effective[node]:
            effective[node] = date
    inherited: dict[int, str] = {}
    for subject, obj in _pairs(ids, s_ids, p_ids, o_ids, profile.freshness_via):
        found = effective.get(obj)
        if found is not None and subject not in effective:
            inherited[subject] = max(found, inherited.get(subject, found))
    effective.update(inherited)
    return modified, effective


def _dated(terms: list[str], ids: dict[str, int], s_ids: IntArray, p_ids: IntArray,
           o_ids: IntArray, predicates: Iterable[str]) -> Iterable[tuple[int, str]]:
    for subject, obj in _pairs(ids, s_ids, p_ids, o_ids, predicates):
        date = parse_date(terms[obj])
        if date is not None:
            yield subject, date


def _pairs(ids: dict[str, int], s_ids: IntArray, p_ids: IntArray, o_ids: IntArray,
           predicates: Iterable[str]) -> Iterator[tuple[int, int]]:
    """``(subject, object)`` ids of the triples of each of ``predicates`` (the predicates in
    their order, each one's triples in document order); a predicate the ontology lacks has none."""
    for predicate in predicates:
        pid = ids.get(predicate, -1)
        if pid < 0:
            continue
        rows = np.nonzero(p_ids == pid)[0]
        yield from zip(s_ids[rows].tolist(), o_ids[rows].tolist(), strict=True)


def _compute_view_mask(index: OntologyIndex, spec: ViewSpec) -> BoolArray:
    n = len(index.terms)
    excluded = np.zeros(n, dtype=np.bool_)
    for predicate in LABEL_PREDICATES:
        pid = index.term_id(predicate)
        if pid >= 0:
            excluded[pid] = True
    if spec.all_properties:
        allowed = np.fromiter(
            (not t.startswith(_SCHEMA_PREFIXES) or t == RDFS_SUBCLASSOF for t in index.terms),
            np.bool_, n,
        )
        classes = ~np.fromiter((t.startswith(_SCHEMA_PREFIXES) for t in index.terms), np.bool_, n)
    else:
        allowed = np.zeros(n, dtype=np.bool_)
        for predicate in spec.properties:
            pid = index.term_id(predicate)
            if pid >= 0:
                allowed[pid] = True
        classes = np.zeros(n, dtype=np.bool_)
        for class_term in spec.classes:
            cid = index.term_id(class_term)
            if cid >= 0:
                classes[cid] = True
    allowed &= ~excluded
    if index.type_id < 0:
        by_predicate: BoolArray = allowed[index.p]
        return by_predicate
    is_type = index.p == index.type_id
    mask: BoolArray = np.where(is_type, classes[index.o], allowed[index.p])
    return mask
