"""The decision the domain's rules give for one case (value objects).

``Decision.status``:

- ``decided``: at least one conclusion, every rule could be evaluated and
  no two conclusions conflict;
- ``no_rule_applies``: the case is complete for every rule and none
  concluded anything (the negative answer: "no rule requires escalation");
- ``undetermined``: some rule's condition reads an input the request lacks
  and some value of it would add a conclusion; ``missing`` names each such
  input (conclusions that do hold are still listed);
- ``conflicting``: two conclusions declared ``tv:conflictsWith`` both hold.

IRIs are bare (no angle brackets), like the rest of the public value objects.
"""

from __future__ import annotations

from typing import Final

import msgspec

from reasoning.case.model import CaseFact, CaseGraph

__all__ = [
    "DECISION_STATUSES",
    "Conclusion",
    "Decision",
    "FailingCondition",
    "InputOutcome",
    "MissingInput",
    "NearestRule",
    "OntologyFact",
]

DECISION_STATUSES: Final = ("decided", "no_rule_applies", "undetermined", "conflicting")


class OntologyFact(msgspec.Struct, frozen=True, kw_only=True):
    """A triple of the ontology a rule's condition matched, with the version it came from."""

    subject: str
    predicate: str
    object: str
    ontology_version: str
    #: The object as an N-Triples term (``object`` is bare: an IRI or a literal's text).
    object_term: str = ""


class Conclusion(msgspec.Struct, frozen=True, kw_only=True):
    """One thing one rule derived for the case ("this case requires EDD", by AML-R-017).

    ``statement_en`` / ``statement_zh`` render it from the ontology's labels
    of the decision property and the action. ``rule_id`` is the label of the
    regulatory rule the SHACL rule ``tv:implements`` (``rule_iri``);
    ``evidence_ids`` the evidence facts about that rule when the caller
    passed the run's evidence. ``case_facts`` are the request's facts that
    fired the rule (with spans), ``ontology_facts`` the ontology's;
    ``premise_ids`` the premises among them.
    """

    action: str
    predicate: str
    predicate_label_en: str
    predicate_label_zh: str
    action_label_en: str
    action_label_zh: str
    statement_en: str
    statement_zh: str
    rule_id: str
    rule_iri: str | None
    shacl_rule: str
    evidence_ids: tuple[str, ...] = ()
    case_facts: tuple[CaseFact, ...] = ()
    ontology_facts: tuple[OntologyFact, ...] = ()
    premise_ids: tuple[str, ...] = ()

    def statement(self, lang: str = "en") -> str:
        """The conclusion in ``lang`` (``zh`` or English)."""
        return self.statement_zh if lang == "zh" else self.statement_en


class FailingCondition(msgspec.Struct, frozen=True, kw_only=True):
    """A condition of a rule the case does not meet, said in words.

    ``kind``: ``comparison`` (a FILTER comparison on a case input: ``required_*``
    says what the rule requires, "the amount is above EUR 1,000,000", and
    ``actual_*`` what the case has, "the amount is EUR 750,000") or ``pattern``
    (facts the case does not state: "someone named in the case is a
    politically exposed person"; ``actual_*`` empty). ``input`` is the case
    input a comparison reads (bare IRI).
    """

    kind: str
    required_en: str
    required_zh: str
    actual_en: str = ""
    actual_zh: str = ""
    input: str | None = None


class NearestRule(msgspec.Struct, frozen=True, kw_only=True):
    """The rule that came nearest to firing on a case nothing applies to, and what kept it off.

    Found symbolically: the rule whose condition, with the fewest of its
    conditions dropped, would conclude something for the case (the ranking:
    ``reasoning.rules.nearest``). ``statement_en`` / ``statement_zh`` say it
    ("AML-R-024 applies only when the amount is above EUR 1,000,000; here the
    amount is EUR 750,000."); ``brief_en`` / ``brief_zh`` name it alone ("The
    nearest rule is AML-R-024."), for a budget the statement does not fit;
    ``actions`` what it would have concluded.
    """

    rule_id: str
    rule_iri: str | None
    shacl_rule: str
    failing: tuple[FailingCondition, ...]
    actions: tuple[str, ...]
    statement_en: str
    statement_zh: str
    brief_en: str = ""
    brief_zh: str = ""

    def statement(self, lang: str = "en") -> str:
        return self.statement_zh if lang == "zh" else self.statement_en


class InputOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What one value range of a missing input would decide under one rule.

    ``statement_en``: "If the amount is above 1,000,000, AML-R-024 applies."
    (``condition_*`` the value range, empty when the rule compares nothing on
    the input: any value would do); ``actions`` what the rule would then
    conclude (not in the sentence: the rules have not decided them).
    """

    rule_id: str
    rule_iri: str | None
    condition_en: str
    condition_zh: str
    actions: tuple[str, ...]
    statement_en: str
    statement_zh: str

    def statement(self, lang: str = "en") -> str:
        return self.statement_zh if lang == "zh" else self.statement_en


class MissingInput(msgspec.Struct, frozen=True, kw_only=True):
    """An input the request lacks that would change the decision, and the rules that read it.

    ``outcomes``: what values of it would decide, rule by rule.
    """

    input: str
    label_en: str
    label_zh: str
    rule_ids: tuple[str, ...]
    outcomes: tuple[InputOutcome, ...] = ()


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """What the rules require for one case (see the module doc for ``status``)."""

    status: str
    conclusions: tuple[Conclusion, ...]
    missing: tuple[MissingInput, ...]
    conflicts: tuple[tuple[str, str], ...]
    ontology_version: str
    rules_evaluated: int
    seconds: float
    case: CaseGraph
    #: For ``no_rule_applies``: the rule that came nearest and why it did not fire.
    nearest: NearestRule | None = None

    def actions(self) -> tuple[str, ...]:
        """The concluded actions, in conclusion order, each once."""
        return tuple(dict.fromkeys(c.action for c in self.conclusions))

    def rule_ids(self) -> tuple[str, ...]:
        """The deciding rules' ids, each once."""
        return tuple(dict.fromkeys(c.rule_id for c in self.conclusions))

    def premise_ids(self) -> tuple[str, ...]:
        """The premises some conclusion used."""
        return tuple(dict.fromkeys(p for c in self.conclusions for p in c.premise_ids))
