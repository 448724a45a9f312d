"""The symbolic claim check: does one sentence contradict the decision?

Cheap enough for every sentence the decoder completes (no parser, no
model): the sentence is cut into clauses at commas, semicolons and "but",
each clause is searched for the ontology's labels of every action a
decision property can conclude (all ``rdfs:label``/``skos:altLabel``s,
English matched on crude word stems so "escalated" meets "escalate",
Chinese by substring), and a negation cue in the clause (not, no, never,
without, 不, 无需, 没有, ...) marks the action denied. A clause contradicts
the decision when it:

- denies a concluded action ("this should not be escalated") - ``negation``;
- states an action declared ``tv:conflictsWith`` a concluded one ("the
  payment goes ahead" when it is blocked) - ``conflict``;
- states an action the rules did not conclude, when the decision is
  complete (``decided`` or ``no_rule_applies``) - ``unrequired``.

An ``undetermined`` decision only rules out denials of what it concluded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

import msgspec

from reasoning.case.lexicon import CaseLexicon
from reasoning.evidence.terms import iri_value
from reasoning.rules.model import Decision

__all__ = ["ClaimCheck", "ClaimChecker", "stem"]

_WORD_RE: Final = re.compile(r"[^\W_]+|n't", re.UNICODE)
_CLAUSE_RE: Final = re.compile(r"[,;:，；：。.!?！？]|\bbut\b|\bwhereas\b|但|但是|而", re.IGNORECASE)
_EN_NEG: Final = frozenset(["not", "no", "never", "without", "none", "neither", "nor", "n't", "cannot", "unnecessary"])
_ZH_NEG: Final = re.compile(r"不|无需|无须|没有|未|免于|毋须|非")
_SKIP: Final = frozenset(["the", "a", "an", "to", "of", "for", "by", "with", "our", "this", "that", "be", "is", "are"])
_SUFFIXES: Final = ("ational", "ation", "ition", "ions", "ion", "ings", "ing", "ated", "ates",
                    "ate", "ied", "ies", "ed", "es", "e", "s", "y")
_PREFIX_MIN: Final = 5
_CJK_RE: Final = re.compile(r"[\u3400-\u9fff]")
#: Clauses a checker keeps the actions of for one decision (emptied when full).
_CLAUSES_KEPT: Final = 4096


def stem(word: str) -> str:
    """A crude English stem: the longest listed suffix removed ("escalated" -> "escal")."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("at") and len(word) > _PREFIX_MIN:
        word = word[:-2]
    return word


def _same(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return len(short) >= _PREFIX_MIN and long_.startswith(short)


class ClaimCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on one sentence: ``contradicts`` with ``kind``, the action and why."""

    contradicts: bool
    kind: str | None = None
    action: str | None = None
    reason: str | None = None
    rule_ids: tuple[str, ...] = ()


class ClaimChecker:
    """The action labels of one ontology version, prepared for matching (read-only)."""

    def __init__(self, lexicon: CaseLexicon) -> None:
        self.lexicon = lexicon
        self._en: list[tuple[str, tuple[str, ...]]] = []
        self._zh: list[tuple[str, str]] = []
        # The clauses of the decision last checked: one request's, never another's.
        self._clauses: tuple[Decision | None, dict[str, tuple[tuple[str, bool], ...]]] = (None, {})
        for action in sorted(lexicon.actions):
            for text, zh in lexicon.all_labels(action):
                if zh or _CJK_RE.search(text):
                    self._zh.append((action, text))
                else:
                    stems = tuple(stem(w) for w in _WORD_RE.findall(text) if w.lower() not in _SKIP)
                    if stems:
                        self._en.append((action, stems))

    def check(self, sentence: str, decision: Decision) -> ClaimCheck:
        """Whether ``sentence`` contradicts ``decision`` (see the module doc)."""
        concluded = {f"<{a}>" for a in decision.actions()}
        complete = decision.status in ("decided", "no_rule_applies")
        owner, kept = self._clauses
        if owner is not decision:
            kept = {}
            self._clauses = (decision, kept)
        for action, negated in self._mentions(sentence, kept):
            verdict = self._judge(action, negated, concluded, complete, decision)
            if verdict is not None:
                return verdict
        return ClaimCheck(contradicts=False)

    def stated(self, sentence: str) -> tuple[tuple[str, bool], ...]:
        """The actions ``sentence`` names (bare IRIs, first mention first), each with
        whether its clause negates it: what a claim says, whatever the decision."""
        found: dict[str, bool] = {}
        for action, negated in self._mentions(sentence, {}):
            found.setdefault(iri_value(action), negated)
        return tuple(found.items())

    def _mentions(
        self, sentence: str, kept: dict[str, tuple[tuple[str, bool], ...]]
    ) -> Iterator[tuple[str, bool]]:
        """Each action a clause of ``sentence`` names, in order, with whether that clause negates."""
        for clause in _CLAUSE_RE.split(sentence):
            if not clause or not clause.strip():
                continue
            yield from self._clause(clause, kept)

    def _clause(
        self, clause: str, kept: dict[str, tuple[tuple[str, bool], ...]]
    ) -> tuple[tuple[str, bool], ...]:
        """The actions ``clause`` names, each with whether the clause negates (kept in ``kept``).

        The decoder asks about every candidate token's sentence so far, so the
        clauses before the last one come again and again; what a clause names
        depends only on its text and this checker's labels, which never change.
        ``check`` keeps them per decision, so one request's clauses never answer
        (nor speed up) another's.
        """
        hit = kept.get(clause)
        if hit is None:
            words = [w.lower() for w in _WORD_RE.findall(clause)]
            negated = any(w in _EN_NEG for w in words) or bool(_ZH_NEG.search(clause))
            stems = [stem(w) for w in words if w not in _SKIP]
            hit = tuple((action, negated) for action in self._actions_in(clause, stems))
            if len(kept) >= _CLAUSES_KEPT:
                kept.clear()
            kept[clause] = hit
        return hit

    def _actions_in(self, clause: str, stems: list[str]) -> list[str]:
        found: dict[str, None] = {}
        # Two stems are the same only if they share their first _PREFIX_MIN letters (equal,
        # or the shorter, of at least that length, starts the longer): a label whose first
        # stem shares them with no stem of the clause cannot be in it.
        heads = {s[:_PREFIX_MIN] for s in stems}
        for action, label in self._en:
            if label[0][:_PREFIX_MIN] in heads and _contains(stems, label):
                found[action] = None
        for action, text in self._zh:
            if text in clause:
                found[action] = None
        return list(found)

    def _judge(self, action: str, negated: bool, concluded: set[str], complete: bool,
               decision: Decision) -> ClaimCheck | None:
        label = self.lexicon.label(action, "en")
        if action in concluded and negated:
            rules = tuple(c.rule_id for c in decision.conclusions if f"<{c.action}>" == action)
            return ClaimCheck(contradicts=True, kind="negation", action=iri_value(action),
                              reason=f"denies {label}, which {', '.join(rules)} requires",
                              rule_ids=rules)
        if action in concluded or negated:
            return None
        against = sorted(self.lexicon.conflicts.get(action, set()) & concluded)
        if against:
            other = self.lexicon.label(against[0], "en")
            rules = tuple(c.rule_id for c in decision.conclusions if f"<{c.action}>" in against)
            return ClaimCheck(contradicts=True, kind="conflict", action=iri_value(action),
                              reason=f"states {label}, which conflicts with the required {other}",
                              rule_ids=rules)
        if complete:
            return ClaimCheck(contradicts=True, kind="unrequired", action=iri_value(action),
                              reason=f"states {label}, which no rule requires for this case")
        return None


def _contains(stems: list[str], label: tuple[str, ...]) -> bool:
    n = len(label)
    for i in range(len(stems) - n + 1):
        if all(_same(stems[i + k], label[k]) for k in range(n)):
            return True
    return False
