"""Why nothing applies, why undetermined: the nearest rule and what a missing input would decide.

Both are found symbolically, on the graph the rules were evaluated on:

- :func:`nearest_rule` (for ``no_rule_applies``): every SPARQL rule that did
  not fire is evaluated with one of its conditions dropped
  (:mod:`reasoning.rules.relax`), then, when none concludes anything that
  way, two. A condition is one unit of the pattern, or a case input's triple
  (``$this :size ?size``) together with the comparisons that read it (the
  input the case does not state: dropping the triple alone would leave its
  comparison unable to hold). Among the rules that conclude something with
  the fewest conditions dropped, the nearest is the first by, in turn
  (:func:`distance`):

  1. fewer exceptions (a ``NOT EXISTS`` or a comparison not on a case input:
     the rule's own exception holds, e.g. it is superseded);
  2. fewer conditions on the kind of the case itself (``$this a C``: a rule
     about another kind of case);
  3. fewer facts the case does not state (a triple pattern, a union, a
     missing input), i.e. more near misses: comparisons on an input the case
     states;
  4. the smaller distance of those near misses (the gap between the case's
     value and the rule's relative to the larger of the two; a year for a
     date; at most 1 each);
  5. more of the rule's conditions met;
  6. the rules' order.

  Its failing conditions are said by :mod:`reasoning.rules.whynot`;
- :func:`input_outcome` (for ``undetermined``): the probe value that made a
  rule conclude something gives the comparison the rule makes on the
  missing input ("the amount is above EUR 1,000,000") and the actions it
  would conclude; its sentence names the rule, not the actions ("If the
  amount is above 1,000,000, AML-R-024 applies."), which the rules have not
  decided.

The search runs under the caller's time limit (the engine gives it a budget
of its own, so it never fails a decision: the limit's expiry ends it with
what it found).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from decimal import Decimal
from itertools import combinations
from typing import Any, Final, NamedTuple, Protocol

from rdflib import RDF, Graph, Literal, URIRef, Variable
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
from reasoning.rules.whynot import compared_input, comparison, describe

__all__ = ["Condition", "ExplainedRule", "conditions", "distance", "input_outcome", "nearest_rule", "why_not", "why_not_brief"]

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


class Condition(NamedTuple):
    """One condition of a rule the search may drop: its ``units``, dropped together, and its
    ``kind``: ``comparison`` (a comparison on a case input), ``fact`` (a triple pattern, a
    union, or a case input's triple with the comparisons that read it), ``kind`` (the class
    of the case itself) or ``exception`` (a ``NOT EXISTS``, a comparison on no case input)."""

    units: tuple[Unit, ...]
    kind: str


def conditions(found: Sequence[Unit], patterns: Sequence[tuple[Any, Any, Any]]) -> list[Condition]:
    """The conditions of a rule whose pattern has the units ``found`` (see the module doc)."""
    filters = [u for u in found if u.kind == "filter"]
    out: list[Condition] = []
    for unit in found:
        if unit.kind == "filter":
            on_input = compared_input(unit.node, patterns) is not None
            out.append(Condition((unit,), "comparison" if on_input else "exception"))
        elif unit.kind == "union":
            out.append(Condition((unit,), "fact"))
        else:
            s, p, o = unit.node
            readers = [f for f in filters if o in _variables(f.node)] if isinstance(o, Variable) else []
            if s == _THIS and p == RDF.type:
                out.append(Condition((unit,), "kind"))
            elif s == _THIS and readers:
                out.append(Condition((unit, *readers), "fact"))
            else:
                out.append(Condition((unit,), "fact"))
    return out


def distance(combo: Sequence[Condition], solution: FrozenBindings, of: int, order: int) -> tuple[Any, ...]:
    """How far a rule is from firing when the conditions ``combo`` (of its ``of``) are dropped
    and it concludes something with ``solution``: smaller is nearer (the module doc's order)."""
    kinds = [c.kind for c in combo]
    gap = sum(_gap(u.node, solution) for c in combo if c.kind == "comparison" for u in c.units)
    return (len(combo), kinds.count("exception"), kinds.count("kind"), kinds.count("fact"),
            gap, -of, order)


def _gap(expr: Any, solution: FrozenBindings) -> float:
    """The relative distance of a failing comparison from holding (at most 1)."""
    if not (isinstance(expr, CompValue) and expr.name == "RelationalExpression"):
        return 1.0
    values = []
    for side in (expr.get("expr"), expr.get("other")):
        term = solution.get(side) if isinstance(side, Variable) else side
        values.append(term.toPython() if isinstance(term, Literal) else None)
    a, b = values
    if isinstance(a, date) and isinstance(b, date):
        return min(1.0, abs((a - b).days) / 365)
    if isinstance(a, (int, float, Decimal)) and isinstance(b, (int, float, Decimal)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        scale = max(abs(float(a)), abs(float(b)))
        return min(1.0, abs(float(a) - float(b)) / scale) if scale else 0.0
    return 1.0


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
    no rule concludes anything with two conditions dropped, or the budget ran out first
    (``expired`` raised)."""
    candidates = []
    for order, rule in enumerate(unfired):
        if rule.query is None:
            continue
        found = units(rule.query.algebra.p)
        if len(found) <= _MAX_UNITS:
            candidates.append((order, rule, conditions(found, rule.patterns)))
    best: tuple[tuple[Any, ...], ExplainedRule, tuple[Condition, ...], FrozenBindings] | None = None
    try:
        for size in (1, 2):
            for order, rule, conds in candidates:
                assert rule.query is not None
                for combo in combinations(conds, size):
                    keys = [u.key for c in combo for u in c.units]
                    if len(set(keys)) < len(keys):
                        continue  # a case input's comparison with the input itself
                    part = relaxed(rule.query.algebra.p, frozenset(keys))
                    solutions = _solutions(graph, rule.query, focus, part)
                    if not _actions(decisions, rule, solutions, focus):
                        continue
                    rank = distance(combo, solutions[0], len(conds), order)
                    if best is None or rank < best[0]:
                        best = (rank, rule, combo, solutions[0])
            if best is not None:
                break
    except expired:
        pass
    if best is None:
        return None
    _, rule, combo, solution = best
    phraser = Phraser(lexicon, case)
    # A missing input is said by the comparisons that read it.
    said = [u for c in combo for u in (
        [f for f in c.units if f.kind == "filter"] or list(c.units))]
    failing = tuple(describe(u, solution, rule.patterns, phraser) for u in said)
    return NearestRule(
        rule_id=rule.rule_id,
        rule_iri=rule.rule_iri,
        shacl_rule=rule.shacl_rule,
        failing=failing,
        actions=tuple(iri_value(a) for a in _actions(decisions, rule, [solution], focus)),
        statement_en=why_not(rule.rule_id, failing, "en"),
        statement_zh=why_not(rule.rule_id, failing, "zh"),
        brief_en=why_not_brief(rule.rule_id, "en"),
        brief_zh=why_not_brief(rule.rule_id, "zh"),
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
    actions = tuple(dict.fromkeys(o for _, _, o in decisions(rule, solutions, focus)))
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
        # The rule, not its actions: the answer must not state an action the rules have not
        # decided, even in a condition (a reader, or a judge, takes it for the decision); the
        # actions are in ``InputOutcome.actions`` and the rule's own text.
        if lang == "zh":
            condition = conditions[lang] or f"{lexicon.label(term, 'zh')}已知"
            statements[lang] = f"若{condition}，则适用{rule.rule_id}。"
        else:
            condition = conditions[lang] or f"the {lexicon.label(term, 'en')} is known"
            statements[lang] = f"If {condition}, {rule.rule_id} applies."
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
    """"R applies only when ...; here ..." (see ``NearestRule``): the rule's requirements and the
    case's own values, short enough to follow the decision sentence in a small budget."""
    zh = lang == "zh"
    required = [f.required_zh if zh else f.required_en for f in failing]
    actual = [a for f in failing if (a := f.actual_zh if zh else f.actual_en)]
    unstated = any(not (f.actual_zh if zh else f.actual_en) for f in failing)
    if zh:
        text = f"{rule_id}仅在{'且'.join(required)}时适用"
        if actual:
            return text + "；本案" + "，".join(actual) + ("，其余本案未述及。" if unstated else "。")
        return text + "，本案未述及。"
    text = f"{rule_id} applies only when {_join(required)}"
    if actual:
        return text + "; here " + _join(actual) + ("; the case does not state the rest." if unstated else ".")
    return text + ", which the case does not state."


def why_not_brief(rule_id: str, lang: str) -> str:
    """The shortest why-not, for a budget the full one does not fit: "The nearest rule is R."."""
    return f"最接近的规则是{rule_id}。" if lang == "zh" else f"The nearest rule is {rule_id}."
