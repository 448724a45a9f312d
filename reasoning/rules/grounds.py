"""The grounds of a decision: why the rules decided what they did, said after the decision.

:func:`realise_grounds` turns a :class:`~reasoning.rules.model.Decision` into
sentences, English and Chinese, in the order a length budget keeps them
(the steering states as many as fit after the decision sentence):

1. ``facts``: the facts that fired the rules - the request's own facts (the
   conclusion's ``case_facts``, with their spans) and the ontology's
   (``ontology_facts``), without the rule's own data (its threshold, its
   dates: the rule text says them). A fact that fired several rules is said
   once, citing all of them: facts are grouped by the rules they fired,
   groups that fired more rules first, then in the rules' order (the
   decision's); at most two facts a sentence, class memberships and case
   inputs before relations. Each sentence cites its rules and the evidence
   ids of the facts the evidence shows. Each group's first sentence (its
   most telling fact alone) comes here, its others after the rule texts (so
   a tight budget still names a firing fact of every rule and quotes the
   rules);
2. ``rule_text``: each deciding rule's own text from the ontology (a literal
   of the regulatory rule individual in the request's language), cited with
   its evidence id; only when the evidence shows the rule;
3. ``nearest`` (``no_rule_applies``): the rule that came nearest and what kept
   it from firing, then its text when shown;
4. ``missing`` (``undetermined``): what each value of a missing input would
   decide, one sentence a rule.

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

__all__ = ["GROUND_KINDS", "Ground", "realise_grounds", "rule_text"]

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
    case facts among them, ``evidence_ids`` the ids it cites.
    """

    kind: str
    text_en: str
    text_zh: str
    rule_ids: tuple[str, ...]
    facts: tuple[Triple, ...] = ()
    spans: tuple[tuple[int, int], ...] = ()
    evidence_ids: tuple[str, ...] = ()

    def text(self, lang: str = "en") -> str:
        """The sentence in ``lang`` (``zh`` or English; empty when there is none)."""
        return self.text_zh if lang == "zh" else self.text_en


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
) -> tuple[Ground, ...]:
    """The grounds of ``decision`` in the order a budget keeps them (see the module doc).

    ``evidence`` are the facts the answer shows (their ids are cited);
    ``contradicts`` the claim check of one sentence against the decision (a
    ground it flags, in either language, is left out).
    """
    phraser = Phraser(lexicon, decision.case)
    cited = _evidence_ids(evidence)
    facts = _fact_grounds(decision, phraser, cited)
    grounds: list[Ground] = [g for lead, g in facts if lead]
    rules = list(dict.fromkeys((c.rule_id, c.rule_iri) for c in decision.conclusions))
    if decision.nearest is not None:
        near = decision.nearest
        grounds.append(_said_of_rule("nearest", near.statement_en, near.statement_zh,
                                     near.rule_id, near.rule_iri, evidence))
        rules.append((near.rule_id, near.rule_iri))
    seen_rules: set[str] = set()
    for missing in decision.missing:
        for outcome in _outcomes(missing.outcomes):
            if outcome.rule_id in seen_rules:
                continue
            seen_rules.add(outcome.rule_id)
            grounds.append(_said_of_rule("missing", outcome.statement_en, outcome.statement_zh,
                                         outcome.rule_id, outcome.rule_iri, evidence))
    for rule_id, rule_iri in dict.fromkeys(rules):
        ground = _rule_text_ground(lexicon, rule_id, rule_iri, evidence)
        if ground is not None:
            grounds.append(ground)
    grounds += [g for lead, g in facts if not lead]
    if contradicts is not None:
        grounds = [g for g in grounds
                   if not any(t and contradicts(t) for t in (g.text_en, g.text_zh))]
    return tuple(grounds)


def _outcomes(outcomes: Sequence[InputOutcome]) -> list[InputOutcome]:
    """Outcomes with a stated value range before those that only need the input known."""
    return sorted(outcomes, key=lambda o: not o.condition_en)


def _said_of_rule(kind: str, statement_en: str, statement_zh: str, rule_id: str,
                  rule_iri: str | None, evidence: Sequence[EvidenceFact]) -> Ground:
    """A ground that says something of one rule (the nearest, or what a missing input would
    decide), cited with the first evidence fact shown about that rule."""
    ids = _rule_ids_shown(rule_iri, evidence)[:1]
    return Ground(kind=kind, text_en=sentence(statement_en, "en", evidence=ids),
                  text_zh=sentence(statement_zh, "zh", evidence=ids), rule_ids=(rule_id,),
                  evidence_ids=ids)


def _rule_ids_shown(rule_iri: str | None, evidence: Sequence[EvidenceFact]) -> tuple[str, ...]:
    return tuple(f.id for f in evidence if rule_iri is not None and f.subject == rule_iri)


def _rule_text_ground(
    lexicon: CaseLexicon, rule_id: str, rule_iri: str | None, evidence: Sequence[EvidenceFact]
) -> Ground | None:
    if rule_iri is None:
        return None
    texts: dict[str, str] = {}
    ids: list[str] = []
    for lang in ("en", "zh"):
        found = rule_text(lexicon, rule_iri, lang)
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


def _fact_grounds(
    decision: Decision, phraser: Phraser, cited: dict[tuple[str, str, str], str]
) -> list[tuple[bool, Ground]]:
    """Sentences of the facts that fired the rules, grouped by the rules they fired; True
    marks each group's first sentence (its most telling facts)."""
    facts: dict[Triple, _Fact] = {}
    order = [c.rule_id for c in decision.conclusions]
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
    groups: dict[tuple[str, ...], list[_Fact]] = {}
    for fact in facts.values():
        rules = tuple(sorted(fact.rules, key=order.index))
        groups.setdefault(rules, []).append(fact)
    out: list[tuple[bool, Ground]] = []
    for rules in sorted(groups, key=lambda r: (-len(r), order.index(r[0]))):
        members = sorted(groups[rules], key=_telling)
        said: list[tuple[_Fact, Clause, Clause]] = []
        for fact in members:
            en = phraser.clause(*fact.triple, "en")
            zh = phraser.clause(*fact.triple, "zh")
            if en is None or zh is None:
                continue
            if any(en.subject == e.subject and en.predicate == e.predicate for _, e, _ in said):
                continue
            said.append((fact, _copula(en), zh))
        # The lead sentence says the group's most telling fact alone (short, to fit a budget).
        chunks = [said[:1]] + [said[i : i + _PER_SENTENCE] for i in range(1, len(said), _PER_SENTENCE)]
        for start, chunk in enumerate(c for c in chunks if c):
            ids = tuple(dict.fromkeys(
                i for f, _, _ in chunk
                if (i := cited.get((_key(f.triple[0]), _key(f.triple[1]), _key(f.triple[2])))) is not None
            ))
            out.append((start == 0, Ground(
                kind="facts",
                text_en=sentence(join_clauses([e for _, e, _ in chunk], "en"), "en", rules=rules, evidence=ids),
                text_zh=sentence(join_clauses([z for _, _, z in chunk], "zh"), "zh", rules=rules, evidence=ids),
                rule_ids=rules,
                facts=tuple(f.triple for f, _, _ in chunk),
                spans=tuple(
                    (f.case_fact.start, f.case_fact.end) for f, _, _ in chunk
                    if f.case_fact is not None and f.case_fact.start is not None and f.case_fact.end is not None
                ),
                evidence_ids=ids,
            )))
    return out


def _telling(fact: _Fact) -> tuple[int, int, int]:
    """Class memberships and case inputs say most, dates (context) least; the request's own
    facts before the ontology's."""
    _, p, o = fact.triple
    dated = is_literal(o) and (literal_parts(o)[2] or "").endswith(("#date", "#dateTime"))
    kind = 3 if dated else 0 if p == RDF_TYPE or is_literal(o) else 2 if p == _MENTIONS else 1
    return (kind, 0 if fact.case_fact is not None else 1, fact.order)


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
