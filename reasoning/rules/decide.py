"""The entry point of grounded decisions: request text in, :class:`Decision` out.

One :class:`DecisionEngine` per ontology version (build it beside the
version's :class:`~reasoning.evidence.index.OntologyIndex` and keep it as
long as the index; building parses the rules once)::

    engine = DecisionEngine(index)
    decision = engine.decide(prompt, premises=premises, linked=linked, evidence=facts)
    decision.status                       # "decided", "no_rule_applies", ...
    decision_sentence(decision, "en")     # what the answer must state
    engine.check_claim(sentence, decision).contradicts

Retracting a premise: ``engine.evaluate(decision.case.without_premises(["p1"]))``
recomputes the decision over the remaining facts; conclusions whose
``premise_ids`` do not name the premise come out the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from spacy.tokens import Doc

from reasoning.case.build import build_case
from reasoning.case.lexicon import CaseLexicon
from reasoning.case.model import CaseGraph
from reasoning.constraints.model import Premise
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.model import EvidenceFact, LinkedEntity
from reasoning.evidence.terms import iri_value
from reasoning.rules.claims import ClaimCheck, ClaimChecker
from reasoning.rules.engine import RuleBook
from reasoning.rules.grounds import Ground, GroundDraft, draft_grounds
from reasoning.rules.model import Decision

__all__ = ["DecisionEngine", "decision_sentence"]


class DecisionEngine:
    """Case graph, rules and claim checks of one ontology version (thread-safe)."""

    def __init__(self, index: OntologyIndex) -> None:
        self.index = index
        self.lexicon = CaseLexicon(index)
        self.rules = RuleBook(index, self.lexicon)
        self.claims = ClaimChecker(self.lexicon)

    @property
    def rule_ids(self) -> tuple[str, ...]:
        """The ids of the ontology's decision rules, as conclusions cite them (the label
        of the regulatory rule each ``tv:implements``, else the rule's own name)."""
        ids: dict[str, None] = {}
        for loaded in self.rules.rules:
            implements = loaded.source.implements
            term = self.index.term_id(implements) if implements else -1
            ids[self.index.label(term, "en") if term >= 0 else iri_value(loaded.node)] = None
        return tuple(ids)

    @property
    def has_rules(self) -> bool:
        """False when the ontology declares no decision rules (then every case is ``no_rule_applies``)."""
        return self.rules.has_rules

    def build_case(self, text: str, *, premises: Sequence[Premise] = (), doc: Doc | None = None,
                   linked: Sequence[LinkedEntity] | None = None,
                   evaluation_date: date | None = None) -> CaseGraph:
        """The case graph of a request (see :func:`reasoning.case.build.build_case`)."""
        return build_case(self.lexicon, text, premises=premises, doc=doc, linked=linked,
                          evaluation_date=evaluation_date)

    def evaluate(self, case: CaseGraph, *, timeout_s: float = 1.0,
                 evidence: Sequence[EvidenceFact] = ()) -> Decision:
        """The decision for an already built case (e.g. after a premise was retracted)."""
        return self.rules.evaluate(case, timeout_s=timeout_s, evidence=evidence)

    def decide(self, text: str, *, premises: Sequence[Premise] = (), doc: Doc | None = None,
               linked: Sequence[LinkedEntity] | None = None,
               evidence: Sequence[EvidenceFact] = (), evaluation_date: date | None = None,
               timeout_s: float = 1.0) -> Decision:
        """Build the case of ``text`` and evaluate the rules on it within ``timeout_s``.

        Raises :class:`~reasoning.rules.engine.RuleTimeout` or
        :class:`~reasoning.rules.engine.RuleLoop` (both
        :class:`~reasoning.errors.LimitExceeded`) for rules that run away.
        """
        case = self.build_case(text, premises=premises, doc=doc, linked=linked,
                               evaluation_date=evaluation_date)
        return self.evaluate(case, timeout_s=timeout_s, evidence=evidence)

    def grounds(
        self, decision: Decision, evidence: Sequence[EvidenceFact] = (), draft: GroundDraft | None = None
    ) -> tuple[Ground, ...]:
        """The grounds of ``decision`` (:func:`reasoning.rules.grounds.realise_grounds`), citing the
        ids of ``evidence`` (the facts the answer shows); none contradicts the decision.
        ``draft`` is :meth:`draft_grounds`'s of this decision when the caller has it (so
        the grounds are not drafted again)."""
        if draft is None:
            draft = self.draft_grounds(decision)
        return draft.cite(evidence, contradicts=lambda text: self.check_claim(text, decision).contradicts)

    def draft_grounds(self, decision: Decision) -> GroundDraft:
        """The grounds of ``decision`` before citing evidence (:func:`reasoning.rules.grounds.draft_grounds`):
        draft once, then :meth:`grounds` cites them with whatever evidence an answer shows."""
        return draft_grounds(decision, self.lexicon, specific=self.rules.names_in_condition)

    def check_claim(self, sentence: str, decision: Decision) -> ClaimCheck:
        """Whether one sentence contradicts the decision (cheap: no parsing, no model)."""
        return self.claims.check(sentence, decision)


def decision_sentence(decision: Decision, lang: str = "en") -> str:
    """The sentence an answer must state for ``decision``, with the deciding rules cited.

    >>> # e.g. "This case requires enhanced due diligence and escalation to the MLRO
    >>> # (AML-R-017, AML-R-024)."
    """
    zh = lang == "zh"
    actions: dict[str, tuple[str, list[str]]] = {}
    verbs: dict[str, str] = {}
    for c in decision.conclusions:
        label = c.action_label_zh if zh else c.action_label_en
        entry = actions.setdefault(c.action, (label, []))
        if c.rule_id not in entry[1]:
            entry[1].append(c.rule_id)
        verbs.setdefault(c.predicate, c.predicate_label_zh if zh else c.predicate_label_en)
    rules = list(dict.fromkeys(r for _, ids in actions.values() for r in ids))
    cited = ("（" + "、".join(rules) + "）") if zh else (" (" + ", ".join(rules) + ")")
    labels = [label for label, _ in actions.values()]
    missing = [m.label_zh if zh else m.label_en for m in decision.missing]
    if decision.status == "conflicting":
        return ("规则对本案的结论相互冲突：" + "、".join(labels) + cited + "，需人工复核。") if zh else \
            ("The rules conflict on this case: " + _join_en(labels) + cited
             + "; it needs a human review.")
    if labels:
        verb = next(iter(verbs.values()), "需要" if zh else "requires")
        text = ("本案" + verb + "、".join(labels) + cited + "。") if zh else \
            ("This case " + verb + " " + _join_en(labels) + cited + ".")
        if missing:
            text += ("是否还需其他措施取决于" + "、".join(missing) + "。") if zh else \
                (" Whether more is required depends on the " + _join_en(missing) + ".")
        return text
    if missing:
        return ("缺少" + "、".join(missing) + "，规则无法判定本案。") if zh else \
            ("The rules cannot decide this case without the " + _join_en(missing) + ".")
    # Short, so the nearest rule's why-not fits after it in a small budget.
    return "规则未要求本案采取任何措施。" if zh else "No rule requires an action for this case."


def _join_en(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
