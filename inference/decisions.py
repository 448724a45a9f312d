"""The rules stage of a plan: the decision the domain's rules give for a request.

Between the evidence stage and the decode (DESIGN.md section 2): the case
graph of the request and the domain's decision rules give a
:class:`~reasoning.rules.model.Decision`; the deciding rules' own facts are
added to the evidence every branch shows (so the answer can cite them, and
their ids are the ids the citation controller accepts); the decision
becomes the ``Statement`` the steering inserts and checks every claim
against (``inference.decoder.token_controllers.stating``).

One :class:`~reasoning.rules.decide.DecisionEngine` is built per ontology
version (its index object) and kept as long as that index lives, so the
rules are parsed once per version, never per request.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Final

import msgspec

from inference.decoder.pruning import ClaimGuard, ClaimReading, SupportBasis
from inference.decoder.token_controllers.stating import Statement
from reasoning.case.amend import amend_request, restore_spans
from reasoning.constraints.model import Premise
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph, LinkedEntity
from reasoning.evidence.subgraph import fact_of, facts_about
from reasoning.evidence.terms import iri_value, is_iri
from reasoning.rules.decide import DecisionEngine, decision_sentence
from reasoning.rules.grounds import GroundDraft
from reasoning.rules.model import Decision
from reasoning.rules.thresholds import rule_thresholds

__all__ = [
    "RULES_VIEW",
    "claim_guard",
    "decide",
    "decision_engine",
    "refusing_invented_ids",
    "statement_of",
    "support_basis",
    "with_rule_evidence",
]

#: The view that holds the deciding rules' facts when no other view has evidence.
RULES_VIEW = "rules"
#: Limit of one rule evaluation, in CPU seconds of the evaluating thread (the engine raises
#: ``LimitExceeded`` past it; see ``reasoning.rules.engine``).
RULES_TIMEOUT_S: Final = 1.0
_ID_NUMBER: Final = re.compile(r"E(\d+)")
_END: Final = re.compile(r"[.。]\s*$")

_engines: weakref.WeakKeyDictionary[OntologyIndex, DecisionEngine] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def decision_engine(index: OntologyIndex) -> DecisionEngine:
    """The engine of ``index``'s ontology version (built on first use, then shared)."""
    with _lock:
        engine = _engines.get(index)
    if engine is None:
        built = DecisionEngine(index)
        with _lock:
            engine = _engines.setdefault(index, built)
    return engine


def decide(
    index: OntologyIndex,
    prompt: str,
    *,
    premises: Sequence[Premise],
    retracted: Sequence[str],
    linked: Sequence[LinkedEntity],
    today: date,
    amended: Mapping[str, str] | None = None,
) -> Decision | None:
    """The decision for ``prompt`` under ``index``'s rules; None when the ontology has none.

    Every premise's facts are read (``premises``: all the request states)
    and the ``retracted`` ones' removed again, so a retraction drops exactly
    its facts. An ``amended`` premise (id -> its new text) is read with its
    new text in place of its old one (``reasoning.case.amend``): its old
    facts are gone, the new ones carry its id. Raises
    :class:`~reasoning.errors.LimitExceeded` for rules that run past the
    time limit or do not reach a fixpoint.
    """
    engine = decision_engine(index)
    if not engine.has_rules:
        return None
    request = amend_request(prompt, premises, amended or {})
    # The links were found in the original text; an amended one is linked again.
    case = engine.build_case(
        request.text,
        premises=request.premises,
        linked=None if request.changed else linked,
        evaluation_date=today,
    )
    case = restore_spans(case, request)
    if retracted:
        case = case.without_premises(retracted)
    return engine.evaluate(case, timeout_s=RULES_TIMEOUT_S)


def with_rule_evidence(
    decision: Decision,
    subgraphs: tuple[EvidenceSubgraph, ...],
    index: OntologyIndex,
    *,
    today: date,
    lang: str,
    draft: GroundDraft | None = None,
) -> tuple[tuple[EvidenceSubgraph, ...], Decision]:
    """Every view's evidence with the deciding rules' facts, and the decision citing them.

    A rule fact already shown keeps its id; new ones are numbered after the
    highest shown id; a rule whose shown facts lack its own text gets its text
    too (the grounds quote it). The ontology's record of each fact a lead of the
    grounds states (one firing fact of each rule, e.g. "Jon Doe listed on PEP
    list") is added the same way, so the lead cites it. Every such fact is shown by
    every view (each branch may be the answer, and it may cite only what it
    shows), whatever the evidence budget; they form the ``rules`` view when no
    view has evidence. Each conclusion's ``evidence_ids`` become the ids of its
    rule's facts. ``draft`` is the decision's grounds drafted once
    (``DecisionEngine.draft_grounds``), for the caller to pass on to
    :func:`statement_of` too; without it they are drafted here.
    """
    shown = [f for g in subgraphs for f in g.facts]
    next_id = 1 + max((int(m.group(1)) for f in shown if (m := _ID_NUMBER.fullmatch(f.id))), default=0)
    by_rule: dict[str, tuple[str, ...]] = {}
    rule_facts: dict[str, EvidenceFact] = {}
    for rule_iri in dict.fromkeys(i for i in _stated_rules(decision) if i):
        assert rule_iri is not None
        known = {f.id: f for f in shown if f.subject == rule_iri}
        facts = tuple(known.values())
        if not facts:
            facts = facts_about(index, rule_iri, first_id=next_id, view=RULES_VIEW, today=today, lang=lang)
            next_id += len(facts)
        elif not any(_is_text(f) for f in facts):
            # The rule's own text is always shown (the grounds quote it): first, with a new id.
            text = tuple(f for f in facts_about(index, rule_iri, first_id=next_id, view=RULES_VIEW,
                                                today=today, lang=lang, limit=1) if _is_text(f))
            facts, next_id = (*text, *facts), next_id + len(text)
        rule_facts.update((f.id, f) for f in facts)
        by_rule[rule_iri] = tuple(f.id for f in facts)
    for triple in _lead_facts(decision, index, draft):
        # The ontology's record of a fact a lead ground states, so the ground can cite it.
        key = tuple(_bare(t) for t in triple)
        fact = next((f for f in shown if (f.subject, f.predicate, f.object) == key), None)
        if fact is None:
            fact = fact_of(index, triple, fact_id=f"E{next_id}", view=RULES_VIEW, today=today, lang=lang)
            next_id += fact is not None
        if fact is not None:
            rule_facts.setdefault(fact.id, fact)
    if rule_facts and subgraphs:
        subgraphs = tuple(
            msgspec.structs.replace(g, facts=g.facts + tuple(
                msgspec.structs.replace(f, view=g.view)
                for i, f in rule_facts.items() if i not in {x.id for x in g.facts}
            ))
            for g in subgraphs
        )
    elif rule_facts:
        subgraphs = (EvidenceSubgraph(view=RULES_VIEW, relevance=1.0, seeds=(), facts=tuple(rule_facts.values())),)
    conclusions = tuple(
        msgspec.structs.replace(c, evidence_ids=by_rule.get(c.rule_iri or "", c.evidence_ids))
        for c in decision.conclusions
    )
    return subgraphs, msgspec.structs.replace(decision, conclusions=conclusions)


def _lead_facts(
    decision: Decision, index: OntologyIndex, draft: GroundDraft | None
) -> list[tuple[str, str, str]]:
    """The facts the leads of the decision's grounds state (one firing fact of each rule)."""
    grounds = decision_engine(index).grounds(decision, draft=draft) if decision.conclusions else ()
    return list(dict.fromkeys(t for g in grounds if g.lead for t in g.facts))


def _bare(term: str) -> str:
    """An N-Triples term as evidence facts hold it (an IRI bare, a literal as it is)."""
    return iri_value(term) if is_iri(term) else term


def _is_text(fact: EvidenceFact) -> bool:
    """A fact whose object is a sentence-like literal (a rule's own text)."""
    return fact.object.startswith('"') and " " in fact.object


def _stated_rules(decision: Decision) -> list[str | None]:
    """The rules the answer states: the deciding ones, the nearest, those a missing input decides."""
    rules = [c.rule_iri for c in decision.conclusions]
    if decision.nearest is not None:
        rules.append(decision.nearest.rule_iri)
    rules += [o.rule_iri for m in decision.missing for o in m.outcomes]
    return rules


def statement_of(
    decision: Decision,
    index: OntologyIndex,
    lang: str,
    shown: Sequence[str],
    facts: Sequence[EvidenceFact] = (),
    draft: GroundDraft | None = None,
) -> Statement:
    """The sentence the answer states for ``decision``, citing the rules' ``shown`` evidence ids,
    and its grounds (``reasoning.rules.grounds``) in ``lang``.

    ``shown`` are the evidence ids every branch's prompt shows; each deciding
    rule is cited by its first id among them (a rule whose facts a citation
    time window cut is not cited). ``facts`` are the evidence facts; the
    grounds cite those of them whose ids are ``shown``. The grounds that come
    first with a brief form (the leads: a firing fact of each rule) give
    ``Statement.briefs``. ``draft``: the grounds already drafted for this
    decision (as :func:`with_rule_evidence` takes them), cited here.
    """
    engine = decision_engine(index)
    zh = lang == "zh"
    visible = set(shown)
    # One shown id per deciding rule: enough to cite it, short enough to fit a small budget.
    per_rule = (next((i for i in c.evidence_ids if i in visible), None) for c in decision.conclusions)
    ids = [i for i in dict.fromkeys(per_rule) if i is not None]
    sentence = decision_sentence(decision, lang)
    if ids:
        cites = "".join(f"[{i}]" for i in ids) if zh else " " + " ".join(f"[{i}]" for i in ids)
        body = _END.sub("", sentence)
        sentence = body + cites + ("。" if zh else ".")
    cited = [f for f in {f.id: f for f in facts}.values() if f.id in visible]
    grounds = [g for g in engine.grounds(decision, cited, draft=draft) if g.text(lang)]
    return Statement(
        text=sentence,
        contradicts=lambda text: engine.check_claim(text, decision).contradicts,
        sources=decision.rule_ids(),
        grounds=tuple(g.text(lang) for g in grounds),
        briefs=tuple(itertools.takewhile(bool, (g.brief(lang) for g in grounds))),
    )


def claim_guard(decision: Decision, index: OntologyIndex) -> ClaimGuard:
    """The claim check the pruning judge runs on every complete claim, steered or not.

    Its :class:`~inference.decoder.pruning.ClaimReading` of a sentence:
    ``contradiction`` is the :class:`~reasoning.rules.claims.ClaimCheck`'s
    reason (the denied or conflicting action and the rules that require the
    other); ``restates`` is True when the sentence states a concluded action
    and contradicts nothing; ``undecided`` names what the rules lack when the
    sentence states an action they could not decide (an ``undetermined``
    decision's missing inputs).
    """
    engine = decision_engine(index)
    concluded = set(decision.actions())
    missing = ", ".join(m.label_en for m in decision.missing)

    def guard(sentence: str) -> ClaimReading:
        check = engine.check_claim(sentence, decision)
        if check.contradicts:
            return ClaimReading(contradiction=check.reason or "contradicts the decision")
        affirmed = [a for a, negated in engine.claims.stated(sentence) if not negated]
        undecided = [a for a in affirmed if a not in concluded]
        reason = None
        if undecided and decision.status == "undetermined":
            label = engine.lexicon.label(f"<{undecided[0]}>", "en")
            reason = f"the rules cannot decide {label} without the {missing or 'missing inputs'}"
        return ClaimReading(restates=any(a in concluded for a in affirmed), undecided=reason)

    return guard


def support_basis(
    decision: Decision, index: OntologyIndex, lang: str, statement: Statement | None = None
) -> SupportBasis:
    """What the sentences of an answer to a decided request may rest on beside its
    evidence and request: the decision as stated (``statement``'s text, the grounds
    with it, when the steering states it; else the decision sentence) and its
    conclusions, with the shapes of the ontology's rule ids (``support.id_shapes``)."""
    engine = decision_engine(index)
    texts = [statement.text, *statement.ground_texts] if statement is not None else [decision_sentence(decision, lang)]
    texts += [c.statement(lang) for c in decision.conclusions]
    texts += [m.label_zh if lang == "zh" else m.label_en for m in decision.missing]
    return SupportBasis(texts=tuple(dict.fromkeys(texts)), rule_ids=tuple(engine.rule_ids),
                        thresholds=rule_thresholds(engine.rules))


def refusing_invented_ids(statement: Statement, basis: SupportBasis, shown: Sequence[str]) -> Statement:
    """``statement`` refusing every rule id that neither the ``shown`` texts (evidence
    and request) nor the decision hold, token by token (``Statement.invented``)."""
    shapes = basis.shapes
    if shapes.pattern is None:
        return statement
    held = frozenset(t[a:b] for t in (*shown, *basis.texts) for a, b in shapes.find(t))
    return dataclasses.replace(statement, invented=lambda text: shapes.refused(text, held))
