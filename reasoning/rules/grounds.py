"""The grounds of a decision: why the rules decided what they did, said after the decision.

:func:`realise_grounds` turns a :class:`~reasoning.rules.model.Decision` into
sentences, English and Chinese, in the order a length budget keeps them
(the steering states as many as fit after the decision sentence):

1. the leads (``facts``, ``Ground.lead``): for each deciding rule, in the
   decision's order, the one fact that tells most why it fired - the
   request's own fact (with the span it was read from) before the
   ontology's; a value the rule reads, then what the rule's condition names
   (a class, a list), then a relation, a date; a bare mention last -
   one fact a sentence, a fact that leads several rules said once, citing
   them all. Each lead has a brief form without citations: a budget too
   tight for every lead with its citations still names a firing fact of
   every rule;
2. ``nearest`` (``no_rule_applies``): the rule that came nearest and what kept
   it from firing, with a brief form (the rule's name) a budget too tight for
   it states instead (it leads: no fact does);
3. ``missing`` (``undetermined``): what each value of a missing input would
   decide, one sentence a rule;
4. ``rule_text``: each deciding rule's own text from the ontology (a literal
   of the regulatory rule individual in the request's language), then the
   nearest rule's, cited with its evidence id; only when the evidence shows
   the rule;
5. ``facts``: the other facts that fired the rules - the request's facts
   (the conclusions' ``case_facts``) and the ontology's
   (``ontology_facts``), without the rule's own data (its threshold, its
   dates: the rule text says them) - grouped by the rules they fired
   (groups that fired more rules first), at most two a sentence.

A fact sentence cites the rules its facts fired when the decision has
several (with one, the decision sentence names it) and the evidence ids of
the facts the evidence shows.

:func:`draft_grounds` does all of this but the evidence ids once per decision
(a :class:`GroundDraft`); ``GroundDraft.cite`` adds the ids of the evidence an
answer shows, so one draft serves every citation of the same decision.

Everything is said through the ontology's labels (:mod:`reasoning.rules.phrasing`);
no domain, rule or wording is known here, so an uploaded domain gets its
grounds too. A ground whose text the claim check reads as contradicting the
decision is never produced (the caller passes the check).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

import msgspec

from reasoning.case.lexicon import CaseLexicon
from reasoning.case.model import CaseFact
from reasoning.evidence.index import LABEL_PREDICATES
from reasoning.evidence.model import EvidenceFact
from reasoning.evidence.terms import (
    RDF_TYPE,
    TV,
    Triple,
    iri,
    iri_value,
    is_iri,
    is_literal,
    literal_parts,
)
from reasoning.rules.model import Decision, InputOutcome
from reasoning.rules.phrasing import Clause, Phraser, join_clauses, sentence

__all__ = ["GROUND_KINDS", "Ground", "GroundDraft", "draft_grounds", "realise_grounds", "rule_text"]

#: What a ground says (``Ground.kind``).
GROUND_KINDS: Final = ("facts", "rule_text", "nearest", "missing")
_MENTIONS: Final = iri(TV + "mentions")
_SKIPPED_ORIGINS: Final = frozenset({"mention", "label", "default"})
_PER_SENTENCE: Final = 2
_HAN: Final = re.compile(r"[\u3400-\u9fff]")


class Ground(msgspec.Struct, frozen=True, kw_only=True):
    """One sentence of a decision's grounds, in both languages.

    ``text_zh`` / ``text_en`` are complete sentences with their rules and
    evidence ids cited; one may be empty when the ontology has nothing to
    say in that language (a rule text given only in English). ``facts`` are
    the triples it states (N-Triples), ``spans`` the request spans of the
    case facts among them, ``evidence_ids`` the ids it cites. A lead (see
    the module doc) has ``brief_en`` / ``brief_zh``: the same sentence
    without citations.
    """

    kind: str
    text_en: str
    text_zh: str
    rule_ids: tuple[str, ...]
    facts: tuple[Triple, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    evidence_ids: tuple[str, ...] = ()
    brief_en: str = ""
    brief_zh: str = ""

    @property
    def lead(self) -> bool:
        """Whether it is a lead (it has a brief form): said first, as the one fact that tells
        most why a rule fired."""
        return bool(self.brief_en or self.brief_zh)

    def text(self, lang: str = "en") -> str:
        """The sentence in ``lang`` (``zh`` or English; empty when there is none)."""
        return self.text_zh if lang == "zh" else self.text_en

    def brief(self, lang: str = "en") -> str:
        """A lead's sentence in ``lang`` without its citations (the shortest way to say
        it, for a tight budget); empty for the other grounds."""
        return self.brief_zh if lang == "zh" else self.brief_en


class _Fact:
    __slots__ = ("case_fact", "order", "rules", "triple")

    def __init__(self, triple: Triple, case_fact: CaseFact | None, order: int) -> None:
        self.triple, self.case_fact, self.order = triple, case_fact, order
        self.rules: list[str] = []


def _key(term: str) -> str:
    """A term as evidence facts write it: bare IRI, or a literal's text."""
    if is_iri(term):
        return iri_value(term)
    return literal_parts(term)[0] if is_literal(term) else term


def _evidence_ids(evidence: Sequence[EvidenceFact]) -> dict[tuple[str, str, str], str]:
    out: dict[tuple[str, str, str], str] = {}
    for f in evidence:
        obj = literal_parts(f.object)[0] if f.object.startswith('"') else f.object
        out.setdefault((f.subject, f.predicate, obj), f.id)
    return out


def rule_text(lexicon: CaseLexicon, rule_iri: str, lang: str) -> tuple[str, str] | None:
    """The rule's own text in ``lang`` and the predicate that holds it (bare IRI): a literal of the
    rule individual that is no label and reads as a sentence (four words, or six Chinese characters)."""
    index = lexicon.index
    node = index.term_id(iri(rule_iri))
    if node < 0:
        return None
    labels = {index.term_id(p) for p in LABEL_PREDICATES}
    for edge in index.out_edges[index.out_ptr[node] : index.out_ptr[node + 1]].tolist():
        p, o = int(index.p[edge]), int(index.o[edge])
        if p in labels or not index.literal_mask[o]:
            continue
        text, tag, _ = literal_parts(index.terms[o])
        zh = (tag or "").startswith("zh") or (tag is None and bool(_HAN.search(text)))
        if zh != (lang == "zh"):
            continue
        if (len(_HAN.findall(text)) >= 6) if zh else (len(text.split()) >= 4):
            return " ".join(text.split()), iri_value(index.terms[p])
    return None


def realise_grounds(
    decision: Decision,
    lexicon: CaseLexicon,
    *,
    evidence: Sequence[EvidenceFact] = (),
    contradicts: Callable[[str], bool] | None = None,
    specific: Callable[[str, Triple], bool] | None = None,
) -> tuple[Ground, ...]:
    """The grounds of ``decision`` in the order a budget keeps them (see the module doc).

    ``evidence`` are the facts the answer shows (their ids are cited);
    ``contradicts`` the claim check of one sentence against the decision (a
    ground it flags, in either language, is left out); ``specific(rule_id,
    triple)`` whether a fact matches what that rule's condition names
    (``RuleBook.names_in_condition``; without it, only class memberships do).
    The same as ``draft_grounds(...).cite(evidence, contradicts)``.
    """
    return draft_grounds(decision, lexicon, specific=specific).cite(evidence, contradicts)


class _FactSentence(msgspec.Struct, frozen=True):
    """A sentence of fired facts before citing evidence: its bodies and what it may cite."""

    lead: bool
    rules: tuple[str, ...]
    cites: tuple[str, ...]
    body_en: str
    body_zh: str
    facts: tuple[Triple, ...]
    keys: tuple[tuple[str, str, str], ...]
    spans: tuple[tuple[int, int], ...]

    def ground(self, cited: dict[tuple[str, str, str], str]) -> Ground:
        ids = tuple(dict.fromkeys(i for k in self.keys if (i := cited.get(k)) is not None))
        return Ground(
            kind="facts",
            text_en=sentence(self.body_en, "en", rules=self.cites, evidence=ids),
            text_zh=sentence(self.body_zh, "zh", rules=self.cites, evidence=ids),
            brief_en=sentence(self.body_en, "en") if self.lead else "",
            brief_zh=sentence(self.body_zh, "zh") if self.lead else "",
            rule_ids=self.rules,
            facts=self.facts,
            spans=self.spans,
            evidence_ids=ids,
        )


class _RuleSaying(msgspec.Struct, frozen=True):
    """A ground said of one rule (the nearest, what a missing input would decide)."""

    kind: str
    statement_en: str
    statement_zh: str
    rule_id: str
    rule_iri: str | None
    brief: tuple[str, str] = ("", "")

    def ground(self, evidence: Sequence[EvidenceFact]) -> Ground:
        return _said_of_rule(self.kind, self.statement_en, self.statement_zh, self.rule_id,
                             self.rule_iri, evidence, brief=self.brief)


class _RuleText(msgspec.Struct, frozen=True):
    """A rule's own text per language (with the predicate that holds it), when it has one."""

    rule_id: str
    rule_iri: str
    found: tuple[tuple[str, tuple[str, str] | None], ...]

    def ground(self, evidence: Sequence[EvidenceFact]) -> Ground | None:
        return _rule_text_ground(self.rule_id, self.rule_iri, self.found, evidence)


class GroundDraft(msgspec.Struct, frozen=True):
    """The grounds of one decision before any evidence is cited (:func:`draft_grounds`).

    Everything that reads the rules, the case and the ontology (which facts
    fired which rules, the leads, the phrasing, the rules' own texts) is done
    once here; :meth:`cite` only numbers the evidence it is given, so the
    grounds are drafted once per decision and cited with whatever evidence an
    answer shows. A decision that differs only in its conclusions'
    ``evidence_ids`` has the same draft.
    """

    leads: tuple[_FactSentence, ...]
    said: tuple[_RuleSaying, ...]
    texts: tuple[_RuleText, ...]
    rest: tuple[_FactSentence, ...]

    def cite(
        self,
        evidence: Sequence[EvidenceFact] = (),
        contradicts: Callable[[str], bool] | None = None,
    ) -> tuple[Ground, ...]:
        """The grounds citing ``evidence`` (:func:`realise_grounds`), without those ``contradicts`` flags."""
        cited = _evidence_ids(evidence)
        grounds = [s.ground(cited) for s in self.leads]
        grounds += [s.ground(evidence) for s in self.said]
        grounds += [g for t in self.texts if (g := t.ground(evidence)) is not None]
        grounds += [s.ground(cited) for s in self.rest]
        if contradicts is not None:
            grounds = [g for g in grounds
                       if not any(t and contradicts(t) for t in (g.text_en, g.text_zh))]
        return tuple(grounds)


def draft_grounds(
    decision: Decision,
    lexicon: CaseLexicon,
    *,
    specific: Callable[[str, Triple], bool] | None = None,
) -> GroundDraft:
    """The grounds of ``decision`` before citing evidence (``specific`` as :func:`realise_grounds`)."""
    facts = _fact_sentences(decision, Phraser(lexicon, decision.case), specific)
    said: list[_RuleSaying] = []
    rules = list(dict.fromkeys((c.rule_id, c.rule_iri) for c in decision.conclusions))
    if decision.nearest is not None:
        near = decision.nearest
        said.append(_RuleSaying("nearest", near.statement_en, near.statement_zh, near.rule_id,
                                near.rule_iri, (near.brief_en, near.brief_zh)))
        rules.append((near.rule_id, near.rule_iri))
    seen_rules: set[str] = set()
    for missing in decision.missing:
        for outcome in _outcomes(missing.outcomes):
            if outcome.rule_id in seen_rules:
                continue
            seen_rules.add(outcome.rule_id)
            said.append(_RuleSaying("missing", outcome.statement_en, outcome.statement_zh,
                                    outcome.rule_id, outcome.rule_iri))
    texts = tuple(
        _RuleText(rule_id, rule_iri, tuple((lang, rule_text(lexicon, rule_iri, lang)) for lang in ("en", "zh")))
        for rule_id, rule_iri in dict.fromkeys(rules)
        if rule_iri is not None
    )
    return GroundDraft(
        leads=tuple(f for f in facts if f.lead),
        said=tuple(said),
        texts=texts,
        rest=tuple(f for f in facts if not f.lead),
    )


def _outcomes(outcomes: Sequence[InputOutcome]) -> list[InputOutcome]:
    """Outcomes with a stated value range before those that only need the input known."""
    return sorted(outcomes, key=lambda o: not o.condition_en)


def _said_of_rule(kind: str, statement_en: str, statement_zh: str, rule_id: str,
                  rule_iri: str | None, evidence: Sequence[EvidenceFact],
                  brief: tuple[str, str] = ("", "")) -> Ground:
    """A ground that says something of one rule (the nearest, or what a missing input would
    decide), cited with the first evidence fact shown about that rule; ``brief`` (English,
    Chinese) its shortest form, for a budget it does not fit (the nearest rule's name)."""
    ids = _rule_ids_shown(rule_iri, evidence)[:1]
    return Ground(kind=kind, text_en=sentence(statement_en, "en", evidence=ids),
                  text_zh=sentence(statement_zh, "zh", evidence=ids), rule_ids=(rule_id,),
                  evidence_ids=ids, brief_en=brief[0], brief_zh=brief[1])


def _rule_ids_shown(rule_iri: str | None, evidence: Sequence[EvidenceFact]) -> tuple[str, ...]:
    return tuple(f.id for f in evidence if rule_iri is not None and f.subject == rule_iri)


def _rule_text_ground(
    rule_id: str,
    rule_iri: str,
    found_by_lang: Sequence[tuple[str, tuple[str, str] | None]],
    evidence: Sequence[EvidenceFact],
) -> Ground | None:
    """The rule's own text (``found_by_lang``: per language, :func:`rule_text`'s answer), cited
    with the evidence fact that shows it; None when the evidence shows it in no language."""
    texts: dict[str, str] = {}
    ids: list[str] = []
    for lang, found in found_by_lang:
        if found is None:
            texts[lang] = ""
            continue
        text, predicate = found
        shown = next((f.id for f in evidence if f.subject == rule_iri and f.predicate == predicate), None)
        if shown is None:
            texts[lang] = ""
            continue
        ids.append(shown)
        body = f"{rule_id}：{text}" if lang == "zh" else f"{rule_id}: {text}"
        texts[lang] = sentence(body, lang, evidence=(shown,))
    if not any(texts.values()):
        return None
    return Ground(kind="rule_text", text_en=texts["en"], text_zh=texts["zh"], rule_ids=(rule_id,),
                  evidence_ids=tuple(dict.fromkeys(ids)))


def _fired_facts(decision: Decision, phraser: Phraser) -> dict[Triple, _Fact]:
    """The facts that fired the deciding rules, each with the rules it fired (in decision order)."""
    facts: dict[Triple, _Fact] = {}
    money = any(phraser.kind_of(f.predicate) == "MoneyAmount" for f in decision.case.facts
                if f.subject == decision.case.case)
    for conclusion in decision.conclusions:
        owned = {conclusion.rule_iri} | {
            f.object for f in conclusion.ontology_facts if f.subject == conclusion.rule_iri
        }
        stated = {t for f in conclusion.case_facts if f.predicate != _MENTIONS for t in (f.subject, f.object)}
        said_by_ontology = [f for f in conclusion.ontology_facts if f.subject not in owned]
        stated |= {iri(f.subject) for f in said_by_ontology} | {f.object_term for f in said_by_ontology}
        for case_fact in conclusion.case_facts:
            if case_fact.predicate == _MENTIONS and case_fact.object not in stated:
                # A named individual no other fact of the rule says more about: "this case concerns X".
                pass
            elif case_fact.origin in _SKIPPED_ORIGINS or case_fact.predicate == _MENTIONS:
                continue
            if money and phraser.kind_of(case_fact.predicate) == "Currency":
                continue  # said with the amount ("EUR 2,000,000")
            fact = facts.setdefault(case_fact.triple, _Fact(case_fact.triple, case_fact, len(facts)))
            if conclusion.rule_id not in fact.rules:
                fact.rules.append(conclusion.rule_id)
        for onto in conclusion.ontology_facts:
            if onto.subject in owned or not onto.object_term:
                continue
            triple = (iri(onto.subject), iri(onto.predicate), onto.object_term)
            fact = facts.setdefault(triple, _Fact(triple, None, len(facts)))
            if conclusion.rule_id not in fact.rules:
                fact.rules.append(conclusion.rule_id)
    return facts


def _fact_sentences(
    decision: Decision,
    phraser: Phraser,
    specific: Callable[[str, Triple], bool] | None,
) -> list[_FactSentence]:
    """Sentences of the facts that fired the rules, the leads first.

    The leads come first: for each deciding rule, in the decision's order,
    the fact that tells most why it fired (:func:`_telling`), one fact a
    sentence, a fact that leads several rules said once. The other facts
    follow, grouped by the rules they fired (groups that fired more rules
    first), at most two a sentence. A sentence cites the rules its facts
    fired when the decision has several (one rule: the decision sentence
    names it); :meth:`_FactSentence.ground` adds the evidence ids the
    evidence shows for its facts.
    """
    facts = _fired_facts(decision, phraser)
    order = list(dict.fromkeys(c.rule_id for c in decision.conclusions))
    several = len(order) > 1
    clauses: dict[Triple, tuple[Clause, Clause]] = {}
    for triple in facts:
        en = phraser.clause(*triple, "en")
        zh = phraser.clause(*triple, "zh")
        if en is not None and zh is not None:
            clauses[triple] = (_copula(en), zh)

    def rank(fact: _Fact, rule: str) -> tuple[int, int, int]:
        names = specific(rule, fact.triple) if specific is not None else fact.triple[1] == RDF_TYPE
        return _telling(fact, names)

    leads: list[_Fact] = []
    for rule in order:
        candidates = [f for f in facts.values() if rule in f.rules and f.triple in clauses]
        if candidates and (best := min(candidates, key=lambda f: rank(f, rule))) not in leads:
            leads.append(best)

    def drafted(chunk: Sequence[_Fact], lead: bool) -> _FactSentence:
        rules = tuple(sorted({r for f in chunk for r in f.rules}, key=order.index))
        return _FactSentence(
            lead=lead,
            rules=rules,
            cites=rules if several else (),
            body_en=join_clauses([clauses[f.triple][0] for f in chunk], "en"),
            body_zh=join_clauses([clauses[f.triple][1] for f in chunk], "zh"),
            facts=tuple(f.triple for f in chunk),
            keys=tuple((_key(f.triple[0]), _key(f.triple[1]), _key(f.triple[2])) for f in chunk),
            spans=tuple(
                (f.case_fact.start, f.case_fact.end) for f in chunk
                if f.case_fact is not None and f.case_fact.start is not None and f.case_fact.end is not None
            ),
        )

    out = [drafted((f,), True) for f in leads]
    said = {(clauses[f.triple][0].subject, clauses[f.triple][0].predicate) for f in leads}
    groups: dict[tuple[str, ...], list[_Fact]] = {}
    for fact in facts.values():
        if fact in leads or fact.triple not in clauses:
            continue
        groups.setdefault(tuple(sorted(fact.rules, key=order.index)), []).append(fact)
    for rules in sorted(groups, key=lambda r: (-len(r), order.index(r[0]))):
        rest: list[_Fact] = []
        for fact in sorted(groups[rules], key=lambda f: rank(f, rules[0])):
            en = clauses[fact.triple][0]
            if (en.subject, en.predicate) not in said:
                said.add((en.subject, en.predicate))
                rest.append(fact)
        out += [drafted(rest[i : i + _PER_SENTENCE], False) for i in range(0, len(rest), _PER_SENTENCE)]
    return out


def _telling(fact: _Fact, specific: bool) -> tuple[int, int, int]:
    """How much a fact tells of why its rule fired (lower first).

    The request's own facts before the ontology's, and a bare mention
    ("this case concerns X") last. Among either: a value the rule reads (an
    amount, a size), then a fact that matches what the rule's condition
    names (``specific``: a class, a list it asks a party to be on), then
    any other class membership or relation (one that joins the parties),
    then a date (context).
    """
    _, p, o = fact.triple
    if p == _MENTIONS:
        return (9, 0, fact.order)
    dated = is_literal(o) and (literal_parts(o)[2] or "").endswith(("#date", "#dateTime"))
    kind = 3 if dated else 0 if is_literal(o) else 1 if specific else 2
    return (0 if fact.case_fact is not None else 1, kind, fact.order)


_PREPOSITIONS: Final = frozenset(
    ("on", "in", "at", "by", "with", "to", "from", "as", "under", "for", "of", "into", "within")
)
_PARTICIPLE: Final = re.compile(r"(?:ed|en|ent|ant|ible|able)$")


def _copula(clause: Clause) -> Clause:
    """"listed on L" -> "is listed on L": a property label read as a participle or an
    adjective before a preposition takes "is" (English only; a verb label does not)."""
    words = clause.predicate.split()
    if (
        len(words) >= 2
        and words[1].lower() in _PREPOSITIONS
        and _PARTICIPLE.search(words[0].lower())
        and words[0].lower() not in ("is", "was", "been")
    ):
        return Clause(clause.subject, "is " + clause.predicate)
    return clause
