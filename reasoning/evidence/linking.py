"""Entity linking: prompt mentions -> ontology individuals and classes.

Two matchers run over the same prompt, so mixed-language prompts work:

- **Words** (English and other space-separated languages): the prompt's
  lower-cased words are matched longest-first against the index's label keys,
  by surface form and by noun lemma ("lobes" finds "lobe"). Short keys (up to
  three letters, e.g. "EU", "PEP") only match when written in capitals in the
  prompt, so "us" or "it" never link to an abbreviation.
- **Chinese**: the prompt with whitespace and punctuation removed is matched
  longest-first against the Chinese label keys, character by character (a
  segmenter may split a label differently inside a sentence than alone);
  jieba's word boundaries then score the match: a mention that starts and
  ends on a jieba boundary keeps its full score.

Scores are ``label weight`` (preferred label 1.0, alternative 0.9, lemma
match x0.95) times a context factor: 1.0 when spaCy saw the mention as (the
end of) a named entity or noun chunk, or on jieba boundaries; 0.9 otherwise.
A key naming several resources splits its score by ``1/sqrt(n)``. Matches
are resolved longest-first without overlaps ("PEP list" wins over "PEP").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Final

from spacy.tokens import Doc

from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.lemmas import default_lemmatizer, word_spans
from reasoning.evidence.model import LinkedEntity
from reasoning.evidence.terms import iri_value

__all__ = ["link_mentions"]

_CJK_RE: Final = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_SKIP_RE: Final = re.compile(r"[\s\W_]", re.UNICODE)
_CONTEXT_MISS: Final = 0.9
_SHORT_KEY: Final = 3


class _Candidate:
    __slots__ = ("end", "mention", "node", "score", "start", "zh")

    def __init__(self, start: int, end: int, node: int, score: float, mention: str,
                 zh: bool) -> None:
        self.start, self.end, self.node = start, end, node
        self.score, self.mention, self.zh = score, mention, zh


def link_mentions(
    index: OntologyIndex,
    text: str,
    *,
    doc: Doc | None = None,
    min_score: float = 0.5,
    limit: int = 32,
) -> tuple[LinkedEntity, ...]:
    """Link the mentions in ``text`` to resources of ``index``, best first per span.

    ``doc`` is the prompt's English spaCy doc when the caller already has one
    (its entities and noun chunks refine the scores); without it the shared
    English pipeline parses ``text`` when it contains Latin-script words.
    Returns at most ``limit`` links, one per resource, in prompt order; on
    the bundled AML domain "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe"
    links ``aml:AcmeLtd``, ``aml:CY`` and ``aml:JonDoe``, each with score 1.0.
    """
    candidates = list(_word_candidates(index, text, _np_spans(text, doc)))
    if _CJK_RE.search(text):
        candidates.extend(_chinese_candidates(index, text))
    chosen = _resolve(candidates)
    best: dict[int, _Candidate] = {}
    for cand in chosen:
        if cand.score >= min_score and cand.score > getattr(best.get(cand.node), "score", 0.0):
            best[cand.node] = cand
    ordered = sorted(best.values(), key=lambda c: (-c.score, c.start))[:limit]
    ordered.sort(key=lambda c: (c.start, -c.score))
    return tuple(
        LinkedEntity(
            iri=iri_value(index.terms[c.node]),
            label=index.label(c.node, "zh" if c.zh else "en"),
            mention=c.mention,
            start=c.start,
            end=c.end,
            score=round(c.score, 4),
            is_class=bool(index.is_class[c.node]),
        )
        for c in ordered
    )


def _np_spans(text: str, doc: Doc | None) -> list[tuple[int, int]]:
    """Character spans of spaCy entities and noun chunks (empty without Latin words)."""
    if doc is None:
        if not re.search(r"[A-Za-z]{2,}", text):
            return []
        from reasoning.nlp import english

        doc = english()(text)
    spans = [(ent.start_char, ent.end_char) for ent in doc.ents]
    if doc.has_annotation("DEP"):
        spans.extend((chunk.start_char, chunk.end_char) for chunk in doc.noun_chunks)
    return spans


def _word_candidates(index: OntologyIndex, text: str, np_spans: list[tuple[int, int]]
                     ) -> Iterable[_Candidate]:
    if not index.en_keys:
        return
    tokens = list(word_spans(text))
    lemmatizer = default_lemmatizer()
    lemmas = [lemmatizer.lemma(tok) for tok, _, _ in tokens]
    for i in range(len(tokens)):
        for length in range(min(index.max_en_words, len(tokens) - i), 0, -1):
            words = [tok for tok, _, _ in tokens[i:i + length]]
            start, end = tokens[i][1], tokens[i + length - 1][2]
            surface = " ".join(words)
            entries = index.en_keys.get(surface)
            factor = 1.0
            if entries is None:
                entries = index.en_keys.get(" ".join(lemmas[i:i + length]))
                factor = 0.95
            if entries is None:
                continue
            mention = text[start:end]
            if length == 1 and len(surface) <= _SHORT_KEY and not mention.isupper():
                continue
            context = 1.0 if _in_phrase(start, end, np_spans) else _CONTEXT_MISS
            share = 1.0 / math.sqrt(len(entries))
            for node, weight in entries:
                yield _Candidate(start, end, node, weight * factor * context * share, mention,
                                 False)


def _in_phrase(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    """True when [start, end) lies in an entity or noun chunk and reaches its end."""
    return any(s <= start and end == e for s, e in spans) or any(
        s <= start and end <= e and (e - end) <= 1 for s, e in spans
    )


def _chinese_candidates(index: OntologyIndex, text: str) -> Iterable[_Candidate]:
    if not index.zh_keys:
        return
    kept = [(ch.lower(), i) for i, ch in enumerate(text) if not _SKIP_RE.match(ch)]
    norm = "".join(ch for ch, _ in kept)
    boundaries = _jieba_boundaries(text)
    for i in range(len(norm)):
        for length in range(min(index.max_zh_chars, len(norm) - i), 1, -1):
            entries = index.zh_keys.get(norm[i:i + length])
            if entries is None:
                continue
            start, end = kept[i][1], kept[i + length - 1][1] + 1
            aligned = start in boundaries and end in boundaries
            context = 1.0 if aligned else _CONTEXT_MISS
            share = 1.0 / math.sqrt(len(entries))
            for node, weight in entries:
                yield _Candidate(start, end, node, weight * context * share, text[start:end], True)


def _jieba_boundaries(text: str) -> set[int]:
    import jieba

    bounds = {0, len(text)}
    for _, start, end in jieba.tokenize(text):
        bounds.add(start)
        bounds.add(end)
    return bounds


def _resolve(candidates: list[_Candidate]) -> list[_Candidate]:
    """Longest spans first, then best score; a span overlapping a chosen one is dropped.

    All resources of one chosen span are kept (an ambiguous label links to each).
    """
    candidates.sort(key=lambda c: (-(c.end - c.start), -c.score, c.start))
    taken: list[tuple[int, int]] = []
    chosen: list[_Candidate] = []
    for cand in candidates:
        span = (cand.start, cand.end)
        if span in taken:
            chosen.append(cand)
            continue
        if any(cand.start < e and s < cand.end for s, e in taken):
            continue
        taken.append(span)
        chosen.append(cand)
    return chosen
