"""Compact evidence: what one branch's prompt shows of its view's facts, under a token budget.

Every prefilled evidence token costs the whole model's compute, and a view's
facts are many short sentences of which the answer cites few. Before the
prompt is rendered each branch's facts are compacted:

- every fact ``keep`` holds stays, whatever the budget (the facts the
  decision and its grounds cite: the deciding rules' own facts and the
  facts that fired them);
- of the others, duplicates go: a fact whose sentence another fact already
  says (the same words, case and spacing aside), or the same relation read
  the other way (``A related to B`` beside ``B related to A``);
- the rest are taken by score (the evidence ranking's relevance to the
  case), highest first, while their estimated tokens fit ``token_budget``.

The facts keep their order (and their ids), so a citation still names
what it named; only facts are left out, none is reworded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from reasoning.evidence.model import EvidenceFact
from reasoning.evidence.subgraph import estimate_tokens

__all__ = ["compact_facts", "fact_tokens"]

_SPACE = re.compile(r"\s+")


def fact_tokens(facts: Sequence[EvidenceFact]) -> int:
    """Estimated tokens of ``facts``' sentences (``subgraph.estimate_tokens``)."""
    return sum(estimate_tokens(f.text) for f in facts)


def _said(fact: EvidenceFact) -> str:
    return _SPACE.sub(" ", fact.text).strip().rstrip(".。").casefold()


def compact_facts(
    facts: Sequence[EvidenceFact],
    *,
    keep: Callable[[EvidenceFact], bool],
    token_budget: int,
) -> tuple[EvidenceFact, ...]:
    """``facts`` compacted as the module docstring says, in their order.

    Guarantees: every fact ``keep`` holds is in the result; the others in it
    are distinct sentences and relations, and their estimated tokens sum to
    at most ``token_budget``.
    """
    said: set[str] = set()
    relations: set[tuple[str, str, str]] = set()
    chosen: set[int] = set()

    def related(fact: EvidenceFact) -> bool:  # between two individuals, not to a literal
        return not fact.object.startswith('"') and not fact.subject.startswith('"')

    def note(fact: EvidenceFact) -> None:
        said.add(_said(fact))
        if related(fact):
            relations.add((fact.subject, fact.predicate, fact.object))

    def repeats(fact: EvidenceFact) -> bool:
        inverse = (fact.object, fact.predicate, fact.subject)
        return _said(fact) in said or (related(fact) and inverse in relations)

    for i, fact in enumerate(facts):
        if keep(fact):
            chosen.add(i)
            note(fact)
    spent = 0
    for i in sorted(range(len(facts)), key=lambda j: (-facts[j].score, j)):
        fact = facts[i]
        if i in chosen or repeats(fact):
            continue
        cost = estimate_tokens(fact.text)
        if spent + cost > token_budget:
            continue
        spent += cost
        chosen.add(i)
        note(fact)
    return tuple(f for i, f in enumerate(facts) if i in chosen)
