"""The sentence judge of bench.grounding: every sentence of a decoded answer, judged alone.

General and written for the benchmark, not for its cases, and sharing no
code with the product's own checks (``reasoning.rules.support``,
``inference.decoder.degeneracy``): the benchmark measures them, so it must
not restate them. Each sentence of an answer is one of:

- ``rules``: a sentence the rules stated (it is part of the decision
  sentence or of its grounds, as the plan gave them): neither junk nor
  unsupported by construction, not counted in the shares;
- ``junk``: a fragment (a list marker or punctuation alone, a label ending
  in a colon, two words or fewer / four Han characters or fewer), an echo
  of the request (three quarters of its word or character bigrams are the
  request's), or garbled Chinese (Han character pairs that no word of the
  language's dictionary holds and the references do not spell);
- ``unsupported``: it writes a number, a code-like token (capitals and
  digits joined by dashes), or a capitalised multi-word name that none of
  the references holds, or less than half of its content words (English
  words of four letters or more, compared on their first five letters;
  Chinese character bigrams) are in the references;
- ``supported`` otherwise.

The references are the texts the answer may rest on: the evidence facts its
branch showed, the decision and its grounds, the conclusions' statements
and the request.

``grounds_stated``: a decided case names, for every conclusion, at least one
fact that fired it (the span of the request it was read from, or its
subject's and object's names in one sentence: as the request names them or
by the ontology's labels; a literal: its subject and its number). A bare
mention of an individual, or a value the service filled in (the evaluation
date), is no ground; a conclusion the request fired only so is judged on
the ontology's facts that fired it. ``why_not_stated``: a
no-rule case names the rule that came nearest (its id).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

__all__ = ["SentenceVerdicts", "judge_sentences", "sentences"]

_SPLIT = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_MARKER = re.compile(r"^\s*(?:\(?\d{1,2}[.)、]|[-*•])\s*")
_CITE = re.compile(r"\[[A-Za-z]?\d+\]")
_CODE = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+\b")
# ASCII word characters only before a number: one right after a Han character ("货值为80,000") is read.
_NUM = re.compile(
    r"(?<![A-Za-z0-9_.,-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\d])\s*(million|thousand|万|亿)?", re.IGNORECASE
)
_NAME = re.compile(r"\b(?:[A-Z][a-z]+|[A-Z]{2,})(?:\s+(?:[A-Z][a-z]+|[A-Z]{2,}|GmbH|Ltd|Inc))+\b")
_FIRST_WORDS = frozenset(["The", "This", "That", "These", "It", "In", "If", "A", "An", "As", "No", "Our"])
_STOP = frozenset(
    ["about", "above", "after", "again", "against", "also", "among", "because", "been", "before", "being", "below", "between", "both", "could", "does", "doing", "down", "during", "each", "from", "further", "have", "having", "here", "into", "itself", "just", "more", "most", "must", "only", "other", "over", "same", "should", "some", "such", "than", "that", "their", "them", "then", "there", "these", "they", "this", "those", "through", "under", "until", "very", "were", "what", "when", "where", "which", "while", "will", "with", "would", "your", "shall", "need", "needs", "needed", "required", "requires", "require", "case", "answer", "therefore", "thus", "however", "please"]
)
_RARE = 20_000  # jieba frequency under which a character is rare as a word of its own
_SCALE = {"million": 10**6, "thousand": 10**3, "万": 10**4, "亿": 10**8}


def sentences(text: str) -> list[str]:
    """The sentences and lines of an answer (empty ones dropped)."""
    return [s.strip() for s in _SPLIT.split(text) if s and s.strip()]


@lru_cache(maxsize=1)
def _dictionary_bigrams() -> frozenset[str]:
    """Every Han character pair inside a word of jieba's dictionary (the language's words)."""
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()
    pairs: set[str] = set()
    for word in jieba.dt.FREQ:
        for i in range(len(word) - 1):
            pairs.add(word[i : i + 2])
    return frozenset(pairs)


def _numbers(text: str) -> set[Decimal]:
    out: set[Decimal] = set()
    for m in _NUM.finditer(text):
        try:
            value = Decimal(m.group(1).replace(",", "") + (m.group(2) or ""))
        except InvalidOperation:
            continue
        out.add(value.normalize())
        if m.group(3):
            out.add((value * _SCALE[m.group(3).lower()]).normalize())
    return out


def _content(sentence: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(_HAN.sub(" ", sentence))]
    latin = [w[:5] for w in words if len(w) >= 4 and w not in _STOP]
    han = [run[i : i + 2] for run in _HAN_RUN.findall(sentence) for i in range(len(run) - 1)]
    return latin + han


def _bigrams(text: str) -> list[str]:
    han = [run[i : i + 2] for run in _HAN_RUN.findall(text) for i in range(len(run) - 1)]
    words = [w.lower() for w in _WORD.findall(text)]
    return han + [" ".join(words[i : i + 2]) for i in range(len(words) - 1)]


def _junk(sentence: str, request: str, reference: str) -> str | None:
    body = _CITE.sub(" ", _MARKER.sub("", sentence)).strip()
    words = _WORD.findall(body)
    han = _HAN.findall(body)
    if not words and not han:
        return "marker or punctuation alone"
    if body.endswith((":", "：")):
        return "a label"
    if len(words) <= 2 and len(han) <= 4:
        return "a fragment"
    own = _bigrams(body)
    theirs = set(_bigrams(request))
    if len(own) >= 3 and sum(1 for b in own if b in theirs) >= 0.75 * len(own):
        return "an echo of the request"
    if han:
        odd = _odd_pairs(body, reference)
        if odd:
            return "garbled: " + ", ".join(odd)
    return None


def _odd_pairs(text: str, reference: str) -> list[str]:
    """Adjacent characters the segmenter could not join into a word (both left alone) that
    no word of the dictionary holds as a pair and the references do not spell."""
    import jieba

    known = _dictionary_bigrams()
    freq = jieba.dt.FREQ
    odd: list[str] = []
    for run in _HAN_RUN.findall(text):
        words = jieba.lcut(run, HMM=False)
        for a, b in itertools.pairwise(words):
            pair = a + b
            alone = len(a) == len(b) == 1 and max(freq.get(a, 0), freq.get(b, 0)) < _RARE
            if alone and pair not in known and pair not in reference:
                odd.append(pair)
    return odd


def _unsupported(sentence: str, reference: str, numbers: set[Decimal]) -> str | None:
    body = _CITE.sub(" ", _MARKER.sub("", sentence))
    lowered = reference.lower()
    for code in _CODE.findall(body):
        if any(ch.isdigit() for ch in code) and code not in reference:
            return f"code {code}"
    stripped = _CODE.sub(" ", body)
    for value in _numbers(stripped):
        if value not in numbers:
            return f"number {value}"
    for name in _NAME.findall(stripped):
        parts = name.split()
        if parts[0] in _FIRST_WORDS:
            name = " ".join(parts[1:])
        if " " in name and name.lower() not in lowered:
            return f"name {name}"
    content = _content(stripped)
    if content:
        found = sum(1 for c in content if c in lowered)
        if found < 0.5 * len(content):
            return "content: " + ", ".join(c for c in content if c not in lowered)[:80]
    return None


@dataclass
class SentenceVerdicts:
    """The sentences of one answer, by class, with the reason for each junk or unsupported one."""

    rules: list[str] = field(default_factory=list)
    supported: list[str] = field(default_factory=list)
    junk: list[tuple[str, str]] = field(default_factory=list)
    unsupported: list[tuple[str, str]] = field(default_factory=list)
    grounds_stated: bool | None = None
    why_not_stated: bool | None = None

    @property
    def judged(self) -> int:
        """Sentences of the model's own (not the rules')."""
        return len(self.supported) + len(self.junk) + len(self.unsupported)

    @property
    def clean(self) -> bool:
        return not self.junk and not self.unsupported


def _label(index: Any, term: str, lang: str) -> str:
    """The ontology's label of ``term`` (an N-Triples IRI or a bare one) in ``lang``; "" when
    the ontology does not hold it."""
    tid = index.term_id(term if term.startswith("<") else f"<{term}>")
    return str(index.label(tid, lang)) if tid >= 0 else ""


def _names(term: str, labels: dict[str, str], index: Any, lang: str) -> list[str]:
    """How a sentence may name ``term``: as the request names it or by the ontology's label."""
    return [n.lower() for n in dict.fromkeys((labels.get(term, ""), _label(index, term, lang))) if n]


def _fact_named(fact: Any, answer_sentences: Sequence[str], labels: dict[str, str],
                index: Any, lang: str) -> bool:
    span = (fact.text or "").strip()
    if len(span) >= 2 and any(span.lower() in s.lower() for s in answer_sentences):
        return True
    subject = _names(fact.subject, labels, index, lang)
    if fact.object.startswith('"'):
        values = _numbers(fact.object.split('"')[1])
        return any(
            (not subject or any(n in s.lower() for n in subject)) and values & _numbers(s)
            for s in answer_sentences
        )
    obj = _names(fact.object, labels, index, lang)
    return bool(subject and obj) and any(
        any(n in s.lower() for n in subject) and any(n in s.lower() for n in obj) for s in answer_sentences
    )


@dataclass(frozen=True)
class _Fact:
    subject: str
    object: str
    text: str = ""


def _firing(conclusion: Any) -> list[Any]:
    """The facts that fired a conclusion and say something: the request's, without a bare mention
    ("the request names Jon Doe") or a value the service filled in (the evaluation date, no span);
    when the request gave only those, the ontology's (not the rule's own data: its id, text,
    threshold)."""
    saying = [f for f in conclusion.case_facts
              if not f.predicate.endswith("#mentions>") and f.origin != "default"]
    if saying:
        return saying
    rule = conclusion.rule_iri
    owned = {rule} | {f.object for f in conclusion.ontology_facts if f.subject == rule}
    return [_Fact(f"<{f.subject}>", f.object_term) for f in conclusion.ontology_facts
            if f.subject not in owned and f.object_term]


def judge_sentences(
    answer: str,
    *,
    lang: str,
    request: str,
    evidence: Sequence[str],
    stated: Sequence[str],
    decision: Any,
    index: Any,
) -> SentenceVerdicts:
    """Judge every sentence of ``answer`` (see the module doc).

    ``stated``: the decision sentence and its grounds as the plan gave them
    (empty without steering); ``decision``: the rules' ``Decision`` (its
    conclusions' case facts and the nearest rule); ``index``: the ontology
    index, for the labels of the facts' terms.
    """
    verdicts = SentenceVerdicts()
    reference = "\n".join([*evidence, *stated, request])
    if decision is not None:
        reference += "\n" + "\n".join(c.statement(lang) for c in decision.conclusions)
    numbers = _numbers(_CODE.sub(" ", reference))
    said = sentences(answer)
    for sentence in said:
        if any(sentence in s for s in stated) and len(sentence) >= 6:
            verdicts.rules.append(sentence)
            continue
        why = _junk(sentence, request, reference)
        if why:
            verdicts.junk.append((sentence, why))
            continue
        why = _unsupported(sentence, reference, numbers)
        if why:
            verdicts.unsupported.append((sentence, why))
        else:
            verdicts.supported.append(sentence)
    if decision is not None and decision.status == "decided":
        labels = {e.term: e.label for e in decision.case.entities}
        verdicts.grounds_stated = all(
            any(_fact_named(f, said, labels, index, lang) for f in facts)
            for facts in (_firing(c) for c in decision.conclusions) if facts
        )
    if decision is not None and decision.status == "no_rule_applies":
        nearest = decision.nearest
        verdicts.why_not_stated = nearest is not None and nearest.rule_id in answer
    return verdicts
