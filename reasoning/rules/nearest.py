"""Why nothing applies, why undetermined: the nearest rule and what a missing input would decide.

Both are found symbolically, on the graph the rules were evaluated on:

- :func:`nearest_rule` (for ``no_rule_applies``): every SPARQL rule that did
  not fire is evaluated with one of its conditions dropped
  (:mod:`reasoning.rules.relax`), then, when none fires that way, two; the
  rule that concludes something with the fewest dropped conditions is the
  nearest (at the same count a near miss on a compared case input ranks
  before a missing fact, then the rules' order). Its failing conditions are
  said by :mod:`reasoning.rules.whynot`;
- :func:`input_outcome` (for ``undetermined``): the probe value that made a
  rule conclude something gives the comparison the rule makes on the
  missing input ("the amount is above EUR 1,000,000") and the actions it
  would conclude.

The search runs under the caller's time limit (the engine gives it a budget
of its own, so it never fails a decision: the limit's expiry ends it with
what it found).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any, Final, Protocol

from rdflib import Graph, URIRef, Variable
from rdflib.plugins.sparql.evaluate import evalPart
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import FrozenBindings, Query, QueryContext
from rdflib.term import Node

from reasoning.case.lexicon import CaseLexicon
from reasoning.case.model import CaseGraph
from reasoning.evidence.terms import Triple, iri_value
from reasoning.rules.model import FailingCondition, InputOutcome, NearestRule
from reasoning.rules.phrasing import Phraser
from reasoning.rules.relax import Unit, relaxed, units
from reasoning.rules.whynot import comparison, describe

__all__ = ["ExplainedRule", "input_outcome", "nearest_rule", "why_not"]

#: Rules with more droppable conditions than this are not searched (pairs grow quadratically).
_MAX_UNITS: Final = 16
_MAX_SOLUTIONS: Final = 8
_THIS: Final = Variable("this")


class ExplainedRule(Protocol):
    """What the search reads of an engine's prepared rule."""

    query: Query | None
    patterns: list[tuple[Any, Any, Any]]
    rule_id: str
    rule_iri: str | None

    @property
    def shacl_rule(self) -> str: ...


Decisions = Callable[[Any, list[FrozenBindings], Node], Sequence[Triple]]


def _actions(decisions: Decisions, rule: Any, solutions: list[FrozenBindings], focus: Node) -> tuple[str, ...]:
    return tuple(dict.fromkeys(o for _, _, o in decisions(rule, solutions, focus)))


def _solutions(graph: Graph, query: Query, focus: Node, part: Any) -> list[FrozenBindings]:
    bindings: dict[Any, Any] = {_THIS: focus}
    ctx = QueryContext(graph, initBindings=bindings)
    ctx.prologue = query.prologue
    out: list[FrozenBindings] = []
    for solution in evalPart(ctx, part):
        out.append(solution)
        if len(out) >= _MAX_SOLUTIONS:
            break
    return out


def nearest_rule(
    graph: Graph,
    lexicon: CaseLexicon,
    case: CaseGraph,
    focus: Node,
    unfired: Sequence[ExplainedRule],
    decisions: Decisions,
    expired: type[Exception],
) -> NearestRule | None:
    """The rule nearest to firing on ``case`` among ``unfired`` (in the rules' order); None when
    no rule fires with two conditions dropped, or the budget ran out first (``expired`` raised)."""
    candidates = [(order, rule, units(rule.query.algebra.p)) for order, rule in enumerate(unfired)
                  if rule.query is not None]
    best: tuple[tuple[int, int, int], ExplainedRule, list[Unit], FrozenBindings] | None = None
    try:
        for size in (1, 2):
            for order, rule, found in candidates:
                if len(found) > _MAX_UNITS or rule.query is None:
                    continue
                for combo in combinations(found, size):
                    part = relaxed(rule.query.algebra.p, frozenset(u.key for u in combo))
                    solutions = _solutions(graph, rule.query, focus, part)
                    if not _actions(decisions, rule, solutions, focus):
                        continue
                    rank = (size, 0 if any(u.kind == "filter" for u in combo) else 1, order)
                    if best is None or rank < best[0]:
                        best = (rank, rule, list(combo), solutions[0])
                    break
            if best is not None:
                break
    except expired:
        pass
    if best is None:
        return None
    _, rule, failing_units, solution = best
    phraser = Phraser(lexicon, case)
    failing = tuple(describe(u, solution, rule.patterns, phraser) for u in failing_units)
    return NearestRule(
        rule_id=rule.rule_id,
        rule_iri=rule.rule_iri,
        shacl_rule=rule.shacl_rule,
        failing=failing,
        actions=tuple(iri_value(a) for a in _actions(decisions, rule, [solution], focus)),
        statement_en=why_not(rule.rule_id, failing, "en"),
        statement_zh=why_not(rule.rule_id, failing, "zh"),
    )


def input_outcome(
    lexicon: CaseLexicon,
    case: CaseGraph,
    rule: ExplainedRule,
    term: str,
    solutions: list[FrozenBindings],
    focus: Node,
    decisions: Decisions,
) -> InputOutcome:
    """What a value of the missing input ``term`` (N-Triples) would decide under ``rule``, from the
    ``solutions`` of the probe that made it conclude something."""
    phraser = Phraser(lexicon, case)
    found = decisions(rule, solutions, focus)
    actions = tuple(dict.fromkeys(o for _, _, o in found))
    predicate = found[0][1] if found else None
    variable = next(
        (o for s, p, o in rule.patterns
         if s == _THIS and isinstance(p, URIRef) and f"<{p}>" == term and isinstance(o, Variable)),
        None,
    )
    conditions: dict[str, str] = {}
    statements: dict[str, str] = {}
    for lang in ("en", "zh"):
        said = [
            c.requirement(lang)
            for unit in (units(rule.query.algebra.p) if rule.query is not None else [])
            if unit.kind == "filter" and variable is not None and variable in _variables(unit.node)
            and (c := comparison(unit.node, solutions[0], rule.patterns, phraser, lang)) is not None
        ]
        conditions[lang] = ("且" if lang == "zh" else " and ").join(said)
        labels = [lexicon.label(a, lang) for a in actions]
        verb = lexicon.label(predicate, lang) if predicate else ("需要" if lang == "zh" else "requires")
        if lang == "zh":
            condition = conditions[lang] or f"{lexicon.label(term, 'zh')}已知"
            statements[lang] = f"若{condition}，则适用{rule.rule_id}，本案{verb}{'、'.join(labels)}。"
        else:
            condition = conditions[lang] or f"the {lexicon.label(term, 'en')} is known"
            statements[lang] = f"If {condition}, {rule.rule_id} applies and this case {verb} {_join(labels)}."
    return InputOutcome(
        rule_id=rule.rule_id,
        rule_iri=rule.rule_iri,
        condition_en=conditions["en"],
        condition_zh=conditions["zh"],
        actions=tuple(iri_value(a) for a in actions),
        statement_en=statements["en"],
        statement_zh=statements["zh"],
    )


def _variables(expr: Any) -> set[Variable]:
    """The variables an expression reads."""
    if isinstance(expr, Variable):
        return {expr}
    if isinstance(expr, CompValue):
        return set().union(*(_variables(v) for v in expr.values()))
    if isinstance(expr, list):
        return set().union(*(_variables(v) for v in expr))
    return set()


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def why_not(rule_id: str, failing: Sequence[FailingCondition], lang: str) -> str:
    """"The nearest rule, R, applies only when ...; here ..." (see ``NearestRule``)."""
    zh = lang == "zh"
    required = [f.required_zh if zh else f.required_en for f in failing]
    actual = [a for f in failing if (a := f.actual_zh if zh else f.actual_en)]
    unstated = any(not (f.actual_zh if zh else f.actual_en) for f in failing)
    if zh:
        text = f"最接近的规则{rule_id}仅在{'且'.join(required)}时适用"
        if actual:
            return text + "；本案" + "，".join(actual) + ("，其余条件本案未述及。" if unstated else "。")
        return text + "，本案未述及。"
    text = f"The nearest rule, {rule_id}, applies only when {_join(required)}"
    if actual:
        return text + "; here " + _join(actual) + (", and the case does not state the rest." if unstated else ".")
    return text + ", which the case does not state."
