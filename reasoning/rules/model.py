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

__all__ = ["DECISION_STATUSES", "Conclusion", "Decision", "MissingInput", "OntologyFact"]

DECISION_STATUSES: Final = ("decided", "no_rule_applies", "undetermined", "conflicting")


class OntologyFact(msgspec.Struct, frozen=True, kw_only=True):
    """A triple of the ontology a rule's condition matched, with the version it came from."""

    subject: str
    predicate: str
    object: str
    ontology_version: str


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


class MissingInput(msgspec.Struct, frozen=True, kw_only=True):
    """An input the request lacks that would change the decision, and the rules that read it."""

    input: str
    label_en: str
    label_zh: str
    rule_ids: tuple[str, ...]


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

    def actions(self) -> tuple[str, ...]:
        """The concluded actions, in conclusion order, each once."""
        return tuple(dict.fromkeys(c.action for c in self.conclusions))

    def rule_ids(self) -> tuple[str, ...]:
        """The deciding rules' ids, each once."""
        return tuple(dict.fromkeys(c.rule_id for c in self.conclusions))

    def premise_ids(self) -> tuple[str, ...]:
        """The premises some conclusion used."""
        return tuple(dict.fromkeys(p for c in self.conclusions for p in c.premise_ids))
