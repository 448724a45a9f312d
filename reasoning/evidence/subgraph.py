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
separate decode branch).

Dates: a fact carries the last-updated date of its subject (its own
``dcterms:modified`` / ``prov:generatedAtTime`` or, through a
``tv:freshnessVia`` property, that of e.g. the list it is on) and the
effective date of its subject, else of its object. ``stale_hint`` is set
when the date is older than ``stale_after_days`` before ``today``; the
caller passes ``today`` so results are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import date, timedelta
from typing import Final

import numpy as np
import numpy.typing as npt

from reasoning.errors import InvalidInput
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph, LinkedEntity
from reasoning.evidence.terms import is_iri, is_literal, iri, iri_value

__all__ = ["build_evidence", "apply_time_window", "estimate_tokens", "MAX_HOPS"]

MAX_HOPS: Final = 4
_DECAY: Final = 0.6
_CJK_RANGES: Final = ((0x3400, 0x9FFF), (0xF900, 0xFAFF), (0x3040, 0x30FF))


def estimate_tokens(text: str) -> int:
    """A cheap, conservative token estimate: one per CJK character, one per 4 other chars.

    Close to BPE tokenisers of small English-centric models on short fact
    sentences (which are dominated by names and numbers), never zero.
    """
    cjk = sum(1 for ch in text if any(lo <= ord(ch) <= hi for lo, hi in _CJK_RANGES))
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
        ranked = _expand(index, spec.name, seeds, hops, hub_degree, frontier_limit)
        facts: list[EvidenceFact] = []
        spent = 0
        used_seeds: set[int] = set()
        for triple, score, hop, seed in ranked:
            text = _render(index, triple, lang)
            cost = estimate_tokens(text)
            if spent + cost > token_budget:
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
) -> list[tuple[int, float, int, int]]:
    """Ranked ``(triple id, score, hop, seed)`` of the view reachable within ``hops``."""
    if not seeds:
        return []
    mask = index.view_mask(view)
    weights = index.predicate_weights(view)
    literal = index.literal_mask
    best_fact: dict[int, tuple[float, int, int]] = {}
    node_score: dict[int, float] = dict(seeds)
    node_seed: dict[int, int] = {s: s for s in seeds}
    frontier = np.fromiter(seeds, np.int64, len(seeds))
    expanded: set[int] = set()
    for hop in range(1, hops + 1):
        if frontier.size == 0:
            break
        expanded.update(frontier.tolist())
        scores = np.array([node_score[n] for n in frontier.tolist()], dtype=np.float64)
        out_e, out_owner = _gather(index.out_ptr, index.out_edges, frontier)
        in_e, in_owner = _gather(index.in_ptr, index.in_edges, frontier)
        keep_in = index.p[in_e] != index.type_id
        in_e, in_owner = in_e[keep_in], in_owner[keep_in]
        edges = np.concatenate([out_e, in_e])
        owners = np.concatenate([out_owner, in_owner])
        other = np.concatenate([index.o[out_e], index.s[in_e]]).astype(np.int64)
        in_view = mask[edges]
        edges, owners, other = edges[in_view], owners[in_view], other[in_view]
        if edges.size == 0:
            break
        fact_scores = (scores[owners] * weights[index.p[edges]] * _DECAY ** (hop - 1)
                       / np.sqrt(1.0 + np.log1p(index.degree[other])))
        origin = frontier[owners]
        next_best: dict[int, float] = {}
        for edge, score, src, dst in zip(edges.tolist(), fact_scores.tolist(), origin.tolist(),
                                         other.tolist(), strict=True):
            known = best_fact.get(edge)
            if known is None or score > known[0]:
                best_fact[edge] = (score, hop, node_seed[src])
            if dst in expanded or literal[dst]:
                continue
            if score > node_score.get(dst, 0.0):
                node_score[dst] = score
                node_seed[dst] = node_seed[src]
            if score > next_best.get(dst, 0.0):
                next_best[dst] = score
        candidates = [n for n in next_best
                      if n not in seeds and index.degree[n] <= hub_degree]
        candidates.sort(key=lambda n: -next_best[n])
        frontier = np.array(candidates[:frontier_limit], dtype=np.int64)
    ranked = sorted(best_fact.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[0]))
    return [(edge, score, hop, seed) for edge, (score, hop, seed) in ranked]


# --- facts -----------------------------------------------------------------------------


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
