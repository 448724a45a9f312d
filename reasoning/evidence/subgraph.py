"""Multi-hop evidence subgraphs: expand linked seeds per view, rank, cut to a budget.

For each view, a breadth-first expansion runs ``hops`` rounds from the
linked seeds over the view's triples, in both directions (a rule that
*screens against* the PEP list is evidence about the list). Each round is a
handful of numpy operations over the CSR slices of the frontier, so its
cost depends on the frontier's degree, not on the size of the graph.

What is never traversed: ``rdf:type`` backwards (from a class to all its
instances: siblings are not evidence), literals, and hubs: a non-seed node
with more than ``hub_degree`` edges is reached (the fact naming it is kept)
but not expanded. Each round keeps at most ``frontier_limit`` best-scored
nodes to expand next, which bounds the work per query.

Ranking: a fact reached from node ``u`` at hop ``h`` over predicate ``p``
to neighbour ``v`` scores

    score(u) * weight_view(p) * decay**(h - 1) / sqrt(1 + ln(1 + degree(v)))

where ``score(seed)`` is its link score and ``score(v)`` is the best fact
score that reached ``v``: short paths, heavy relations and specific
(low-degree) neighbours come first. Facts are then taken in rank order while
their estimated tokens fit ``token_budget`` (per view: each view is a
separate decode branch); a fact that does not fit is skipped for a smaller
one, until fewer than 4 tokens remain or 32 facts in a row did not fit.

Dates: a fact carries the last-updated date of its subject (its own
``dcterms:modified`` / ``prov:generatedAtTime`` or, through a
``tv:freshnessVia`` property, that of e.g. the list it is on) and the
effective date of its subject, else of its object. ``stale_hint`` is set
when the date is older than ``stale_after_days`` before ``today``; the
caller passes ``today`` so results are reproducible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from typing import Final

import numpy as np
import numpy.typing as npt

from reasoning.errors import InvalidInput
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph, LinkedEntity
from reasoning.evidence.terms import iri, iri_value, is_iri, is_literal, literal_parts

__all__ = ["MAX_HOPS", "apply_time_window", "build_evidence", "estimate_tokens", "fact_of", "facts_about"]

MAX_HOPS: Final = 4
_DECAY: Final = 0.6
_MIN_FACT_TOKENS: Final = 4
_LABELS: Final = ("http://www.w3.org/2000/01/rdf-schema#label", "http://www.w3.org/2004/02/skos/core#prefLabel")
_MAX_MISSES: Final = 32
_CJK_RE: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff]")


def estimate_tokens(text: str) -> int:
    """A cheap, conservative token estimate: one per CJK character, one per 4 other chars.

    Close to BPE tokenisers of small English-centric models on short fact
    sentences (which are dominated by names and numbers), never zero.
    """
    cjk = len(_CJK_RE.findall(text))
    return max(1, cjk + math.ceil((len(text) - cjk) / 4))


def build_evidence(
    index: OntologyIndex,
    linked: Sequence[LinkedEntity],
    *,
    hops: int,
    token_budget: int,
    views: Sequence[str] | None = None,
    today: date,
    lang: str = "en",
    stale_after_days: int = 365,
    hub_degree: int = 500,
    frontier_limit: int = 256,
) -> tuple[EvidenceSubgraph, ...]:
    """The evidence subgraph of each view (all declared views when ``views`` is None).

    Fact ids ("E1", "E2", ...) are assigned in view order then rank order,
    and one triple keeps one id across views, so ids are stable for a given
    index, seeds and parameters. Subgraphs come back sorted by relevance.
    """
    if not 1 <= hops <= MAX_HOPS:
        raise InvalidInput(f"hops must be between 1 and {MAX_HOPS}", field="hops")
    if token_budget < 1:
        raise InvalidInput("token_budget must be positive", field="token_budget")
    names = list(dict.fromkeys(views)) if views else [v.name for v in index.views]
    specs = [index.view(name) for name in names]
    seeds = _seed_scores(index, linked)
    horizon = today - timedelta(days=stale_after_days)
    ids: dict[int, str] = {}
    results: list[EvidenceSubgraph] = []
    for spec in specs:
        edges, scores, hop_counts, origins = _expand(index, spec.name, seeds, hops, hub_degree,
                                                     frontier_limit)
        facts: list[EvidenceFact] = []
        spent = 0
        misses = 0
        used_seeds: set[int] = set()
        for triple, score, hop, seed in zip(edges.tolist(), scores.tolist(), hop_counts.tolist(),
                                            origins.tolist(), strict=True):
            if token_budget - spent < _MIN_FACT_TOKENS or misses >= _MAX_MISSES:
                break
            if _other_language(index, triple, lang):
                continue
            text = _render(index, triple, lang)
            cost = estimate_tokens(text)
            if spent + cost > token_budget:
                misses += 1
                continue
            spent += cost
            used_seeds.add(seed)
            fact_id = ids.setdefault(triple, f"E{len(ids) + 1}")
            facts.append(_fact(index, triple, fact_id, text, spec.name, score, hop, horizon, lang))
        top = sorted((f.score for f in facts), reverse=True)[:3]
        relevance = round(sum(top) / 3, 4) if top else 0.0
        results.append(EvidenceSubgraph(
            view=spec.name,
            relevance=relevance,
            seeds=tuple(iri_value(index.terms[s]) for s in seeds if s in used_seeds),
            facts=tuple(facts),
        ))
    results.sort(key=lambda g: -g.relevance)
    return tuple(results)


def facts_about(
    index: OntologyIndex,
    subject: str,
    *,
    first_id: int,
    view: str,
    today: date,
    lang: str = "en",
    limit: int = 2,
    stale_after_days: int = 365,
) -> tuple[EvidenceFact, ...]:
    """Up to ``limit`` facts whose subject is ``subject`` (a bare IRI), texts first.

    Literal-valued facts other than labels come first (a rule's own text
    says what it requires), then the others, in index order. Ids are
    ``E<first_id>``, ``E<first_id + 1>``, ... so a caller can add them to
    evidence already numbered below ``first_id``; nothing when the ontology
    does not hold ``subject``.
    """
    node = index.term_id(iri(subject))
    if node < 0:
        return ()
    start, stop = int(index.out_ptr[node]), int(index.out_ptr[node + 1])
    triples = [int(t) for t in index.out_edges[start:stop]]
    labels = {index.term_id(iri(p)) for p in _LABELS}

    def rank(t: int) -> tuple[int, int]:
        p, o = int(index.p[t]), int(index.o[t])
        wordy = bool(index.literal_mask[o]) and p not in labels and " " in index.terms[o]
        return (0 if wordy else 1 if p != index.type_id and p not in labels else 2, t)

    horizon = today - timedelta(days=stale_after_days)
    chosen = sorted((t for t in triples if not _other_language(index, t, lang)), key=rank)[:limit]
    return tuple(
        _fact(index, t, f"E{first_id + k}", _render(index, t, lang), view, 1.0, 0, horizon, lang)
        for k, t in enumerate(chosen)
    )


def fact_of(
    index: OntologyIndex,
    triple: tuple[str, str, str],
    *,
    fact_id: str,
    view: str,
    today: date,
    lang: str = "en",
    stale_after_days: int = 365,
) -> EvidenceFact | None:
    """The ontology's ``triple`` (N-Triples terms) as an evidence fact with id ``fact_id``,
    rendered as :func:`build_evidence` renders it; None when the ontology does not hold it."""
    s, p, o = (index.term_id(t) for t in triple)
    if min(s, p, o) < 0:
        return None
    start, stop = int(index.out_ptr[s]), int(index.out_ptr[s + 1])
    for t in index.out_edges[start:stop].tolist():
        if int(index.p[t]) == p and int(index.o[t]) == o:
            horizon = today - timedelta(days=stale_after_days)
            return _fact(index, t, fact_id, _render(index, t, lang), view, 1.0, 0, horizon, lang)
    return None


def apply_time_window(
    subgraphs: Iterable[EvidenceSubgraph],
    not_before: date | None = None,
    not_after: date | None = None,
) -> tuple[EvidenceSubgraph, ...]:
    """Drop facts whose effective date lies outside ``[not_before, not_after]``.

    Facts without an effective date are kept: the window speaks about dated
    sources (rules in force, guidelines published), not about every fact.
    Relevance is recomputed over the remaining facts.
    """
    low = not_before.isoformat() if not_before else None
    high = not_after.isoformat() if not_after else None
    out: list[EvidenceSubgraph] = []
    for graph in subgraphs:
        kept = tuple(
            f for f in graph.facts
            if f.effective is None
            or ((low is None or f.effective >= low) and (high is None or f.effective <= high))
        )
        top = sorted((f.score for f in kept), reverse=True)[:3]
        out.append(EvidenceSubgraph(
            view=graph.view,
            relevance=round(sum(top) / 3, 4) if top else 0.0,
            seeds=graph.seeds,
            facts=kept,
        ))
    return tuple(out)


# --- expansion -------------------------------------------------------------------------


def _seed_scores(index: OntologyIndex, linked: Sequence[LinkedEntity]) -> dict[int, float]:
    seeds: dict[int, float] = {}
    for entity in linked:
        node = index.term_id(iri(entity.iri))
        if node >= 0 and entity.score > seeds.get(node, 0.0):
            seeds[node] = float(entity.score)
    return seeds


def _gather(ptr: npt.NDArray[np.int64], edges: npt.NDArray[np.int32],
            nodes: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """All edge ids of ``nodes`` in one CSR, and for each the position of its node."""
    starts = ptr[nodes]
    counts = ptr[nodes + 1] - starts
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int32), np.empty(0, np.int64)
    owner = np.repeat(np.arange(len(nodes)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return edges[starts[owner] + offsets], owner


def _expand(
    index: OntologyIndex,
    view: str,
    seeds: dict[int, float],
    hops: int,
    hub_degree: int,
    frontier_limit: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64],
           npt.NDArray[np.int64]]:
    """Ranked ``(triple ids, scores, hops, seeds)`` of the view reachable within ``hops``.

    Fully vectorised: per round, the frontier's CSR slices are gathered,
    filtered to the view and scored in numpy; duplicates (a triple reached
    twice, a node reached over several edges) keep their best score.
    """
    empty_i, empty_f = np.empty(0, np.int64), np.empty(0, np.float64)
    if not seeds:
        return empty_i, empty_f, empty_i, empty_i
    mask = index.view_mask(view)
    weights = index.predicate_weights(view)
    literal = index.literal_mask
    frontier = np.fromiter(seeds, np.int64, len(seeds))
    frontier_score = np.fromiter(seeds.values(), np.float64, len(seeds))
    frontier_seed = frontier.copy()
    closed = np.zeros(len(index.terms), dtype=np.bool_)
    closed[frontier] = True
    parts: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], int,
                      npt.NDArray[np.int64]]] = []
    for hop in range(1, hops + 1):
        if frontier.size == 0:
            break
        out_e, out_owner = _gather(index.out_ptr, index.out_edges, frontier)
        in_e, in_owner = _gather(index.in_ptr, index.in_edges, frontier)
        keep_in = index.p[in_e] != index.type_id
        in_e, in_owner = in_e[keep_in], in_owner[keep_in]
        edges = np.concatenate([out_e, in_e]).astype(np.int64)
        owners = np.concatenate([out_owner, in_owner])
        other = np.concatenate([index.o[out_e], index.s[in_e]]).astype(np.int64)
        in_view = mask[edges]
        edges, owners, other = edges[in_view], owners[in_view], other[in_view]
        if edges.size == 0:
            break
        scores = (frontier_score[owners] * weights[index.p[edges]] * _DECAY ** (hop - 1)
                  / np.sqrt(1.0 + np.log1p(index.degree[other])))
        origin_seed = frontier_seed[owners]
        parts.append((edges, scores, hop, origin_seed))
        nxt = ~closed[other] & ~literal[other] & (index.degree[other] <= hub_degree)
        nodes, node_scores, node_seeds = _best_per_key(other[nxt], scores[nxt], origin_seed[nxt])
        if nodes.size > frontier_limit:
            top = np.argpartition(-node_scores, frontier_limit)[:frontier_limit]
            nodes, node_scores, node_seeds = nodes[top], node_scores[top], node_seeds[top]
        closed[nodes] = True
        frontier, frontier_score, frontier_seed = nodes, node_scores, node_seeds
    if not parts:
        return empty_i, empty_f, empty_i, empty_i
    all_edges = np.concatenate([p[0] for p in parts])
    all_scores = np.concatenate([p[1] for p in parts])
    all_hops = np.concatenate([np.full(p[0].size, p[2], np.int64) for p in parts])
    all_seeds = np.concatenate([p[3] for p in parts])
    order = np.lexsort((all_hops, -all_scores, all_edges))
    all_edges, all_scores = all_edges[order], all_scores[order]
    all_hops, all_seeds = all_hops[order], all_seeds[order]
    first = np.ones(all_edges.size, dtype=np.bool_)
    first[1:] = all_edges[1:] != all_edges[:-1]
    all_edges, all_scores = all_edges[first], all_scores[first]
    all_hops, all_seeds = all_hops[first], all_seeds[first]
    rank = np.lexsort((all_edges, all_hops, -all_scores))
    return all_edges[rank], all_scores[rank], all_hops[rank], all_seeds[rank]


def _best_per_key(keys: npt.NDArray[np.int64], scores: npt.NDArray[np.float64],
                  tags: npt.NDArray[np.int64]
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """One entry per distinct key: the best score and its tag."""
    if keys.size == 0:
        return keys, scores, tags
    order = np.lexsort((-scores, keys))
    keys, scores, tags = keys[order], scores[order], tags[order]
    first = np.ones(keys.size, dtype=np.bool_)
    first[1:] = keys[1:] != keys[:-1]
    return keys[first], scores[first], tags[first]


# --- facts -----------------------------------------------------------------------------


def _other_language(index: OntologyIndex, triple: int, lang: str) -> bool:
    """Whether the triple's object is a text tagged in another language than ``lang`` while
    the same subject and predicate also have one in ``lang`` (a rule's text given in English
    and in Chinese is shown once, in the request's language)."""
    o = int(index.o[triple])
    if not index.literal_mask[o]:
        return False
    tag = (literal_parts(index.terms[o])[1] or "").lower()
    if not tag or tag.startswith(lang):
        return False
    s, p = int(index.s[triple]), int(index.p[triple])
    start, stop = int(index.out_ptr[s]), int(index.out_ptr[s + 1])
    for other in index.out_edges[start:stop].tolist():
        if int(index.p[other]) != p:
            continue
        oo = int(index.o[other])
        if index.literal_mask[oo] and (literal_parts(index.terms[oo])[1] or "").lower().startswith(lang):
            return True
    return False


def _render(index: OntologyIndex, triple: int, lang: str) -> str:
    s, p, o = int(index.s[triple]), int(index.p[triple]), int(index.o[triple])
    subject = index.label(s, lang)
    obj = index.label(o, lang).rstrip("。.")
    if p == index.type_id:
        if lang == "zh":
            return f"{subject}是{obj}。"
        article = "an" if obj[:1].lower() in "aeiou" else "a"
        return f"{subject} is {article} {obj}."
    predicate = index.label(p, lang)
    if lang == "zh":
        return f"{subject}{predicate}{obj}。"
    return f"{subject} {predicate} {obj}."


def _fact(index: OntologyIndex, triple: int, fact_id: str, text: str, view: str, score: float,
          hop: int, horizon: date, lang: str) -> EvidenceFact:
    s, p, o = int(index.s[triple]), int(index.p[triple]), int(index.o[triple])
    object_term = index.terms[o]
    dated = index.modified.get(s)
    modified = dated[0] if dated else None
    stale_hint = None
    if dated is not None and modified is not None and modified < horizon.isoformat():
        source = index.label(dated[1], lang)
        stale_hint = (f"{source}最后更新于{modified}" if lang == "zh"
                      else f"{source} last updated {modified}")
    effective = index.effective.get(s)
    if effective is None and is_iri(object_term):
        effective = index.effective.get(o)
    return EvidenceFact(
        id=fact_id,
        subject=iri_value(index.terms[s]),
        predicate=iri_value(index.terms[p]),
        object=object_term if is_literal(object_term) else iri_value(object_term),
        text=text,
        view=view,
        score=round(score, 4),
        hops=hop,
        ontology_version=index.version,
        modified=modified,
        effective=effective,
        stale_hint=stale_hint,
    )
