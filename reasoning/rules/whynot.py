"""What kept a rule from firing, in words: the failing conditions of the nearest rule.

Given a condition of a rule's pattern (a :class:`~reasoning.rules.relax.Unit`)
and a solution of the pattern with that condition dropped, says what the
rule requires and, for a comparison on a case input, what the case has:

- a comparison ``?amount > ?limit`` where ``$this :amount ?amount``: "the
  amount is above EUR 1,000,000" / "金额高于EUR 1,000,000", and "the amount
  is EUR 750,000" (the operator read from the case's side);
- a triple pattern or a UNION of them: its clauses through the ontology's
  labels, a variable the case names said as "someone named in the case"
  ("someone named in the case is a politically exposed person or is listed
  on PEP list");
- anything else (``NOT EXISTS``, a function): "no exception of the rule
  applies" (the rule's own text says which).

Domain words come only from the ontology's labels (:mod:`reasoning.rules.phrasing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from rdflib import RDF, Literal, URIRef, Variable
from rdflib.paths import AlternativePath
from rdflib.plugins.sparql.parserutils import CompValue
from rdflib.plugins.sparql.sparql import FrozenBindings

from reasoning.evidence.terms import TV, from_rdflib
from reasoning.rules.model import FailingCondition
from reasoning.rules.phrasing import Clause, Phraser
from reasoning.rules.relax import FLIPPED, Unit, alternatives

__all__ = ["Comparison", "compared_input", "comparison", "describe"]

_THIS: Final = Variable("this")
_MENTIONS: Final = URIRef(TV + "mentions")
_SOMEONE: Final = {"en": "someone named in the case", "zh": "案中一方"}
_SOMETHING: Final = {"en": "something", "zh": "某项"}
_ANOTHER: Final = {"en": "another one named in the case", "zh": "案中另一方"}
_WORDS: Final = {
    ("en", False): {">": "above", ">=": "at least", "<": "below", "<=": "at most", "=": "", "!=": "other than"},
    ("en", True): {">": "after", ">=": "on or after", "<": "before", "<=": "on or before", "=": "",
                   "!=": "other than"},
    ("zh", False): {">": "高于", ">=": "不低于", "<": "低于", "<=": "不高于", "=": "为", "!=": "不为"},
    ("zh", True): {">": "晚于", ">=": "不早于", "<": "早于", "<=": "不晚于", "=": "为", "!=": "不为"},
}
_EXCEPTION: Final = {"en": "no exception of the rule applies", "zh": "不存在该规则的例外情形"}


class Comparison:
    """A comparison said from the case's side: ``name`` (the input's label), the operator's
    words, the value the rule requires and the case's own value (None when absent)."""

    __slots__ = ("actual", "input", "name", "op", "required")

    def __init__(self, name: str, op: str, required: str, actual: str | None, input_: str | None) -> None:
        self.name, self.op, self.required, self.actual, self.input = name, op, required, actual, input_

    def requirement(self, lang: str, *, with_form: bool = False) -> str:
        """"the amount is above EUR 1,000,000" (``with_form``: "the amount above ...")."""
        if lang == "zh":
            return f"{self.name}{self.op}{self.required}"
        verb = "" if with_form else " is"
        return f"the {self.name}{verb} {self.op} {self.required}".replace("  ", " ")

    def has(self, lang: str) -> str:
        if self.actual is None:
            return ""
        return f"{self.name}为{self.actual}" if lang == "zh" else f"the {self.name} is {self.actual}"


def _binder(var: Variable, patterns: Sequence[tuple[Any, Any, Any]]) -> tuple[Any, str] | None:
    """The subject and predicate (N-Triples) of the pattern that binds ``var`` as its object."""
    for s, p, o in patterns:
        if o == var:
            predicate = p.args[0] if isinstance(p, AlternativePath) else p
            if isinstance(predicate, URIRef):
                return s, f"<{predicate}>"
    return None


def compared_input(expr: Any, patterns: Sequence[tuple[Any, Any, Any]]) -> str | None:
    """The case input (N-Triples predicate) a comparison ``expr`` reads, or None when it is no
    comparison or compares nothing the case states (``$this :input ?v``)."""
    if not (isinstance(expr, CompValue) and expr.name == "RelationalExpression"):
        return None
    for side in (expr.get("expr"), expr.get("other")):
        binder = _binder(side, patterns) if isinstance(side, Variable) else None
        if binder is not None and binder[0] == _THIS:
            return binder[1]
    return None


def comparison(
    expr: Any, solution: FrozenBindings, patterns: Sequence[tuple[Any, Any, Any]], phraser: Phraser, lang: str
) -> Comparison | None:
    """The comparison ``expr`` said from the case's side, or None when it is not one."""
    if not (isinstance(expr, CompValue) and expr.name == "RelationalExpression"):
        return None
    left, op, right = expr.get("expr"), str(expr.get("op")), expr.get("other")
    if op not in FLIPPED or isinstance(right, list):
        return None
    sides = [left, right]
    binders = [_binder(v, patterns) if isinstance(v, Variable) else None for v in sides]
    case_side = next((i for i, b in enumerate(binders) if b is not None and b[0] == _THIS), None)
    if case_side is None:
        case_side = next((i for i, b in enumerate(binders) if b is not None), None)
    if case_side is None:
        return None
    other = 1 - case_side
    if case_side == 1:
        op = FLIPPED[op]
    binder = binders[case_side]
    assert binder is not None
    predicate = binder[1]
    kind = phraser.kind_of(predicate)

    def said(term: Any) -> str | None:
        value = solution.get(term) if isinstance(term, Variable) else term
        if not isinstance(value, (Literal, URIRef)):
            return None
        node = from_rdflib(value)
        if node is None:
            return None
        if isinstance(value, Literal):
            return phraser.value(node, kind, lang, phraser.unit_of(predicate))
        return phraser.name(node, lang)

    required = said(sides[other])
    if required is None:
        return None
    value = solution.get(sides[case_side]) if isinstance(sides[case_side], Variable) else None
    dated = kind == "Date" or (isinstance(value, Literal) and str(value.datatype or "").endswith(("#date", "#dateTime")))
    words = _WORDS[("zh" if lang == "zh" else "en", dated)][op]
    return Comparison(
        phraser.lexicon.label(predicate, lang),
        words,
        required,
        said(sides[case_side]),
        predicate.strip("<>") if binder[0] == _THIS else None,
    )


def _term(term: Any, phraser: Phraser) -> str | None:
    if term == _THIS:
        return phraser.case.case
    if isinstance(term, Variable):
        return f"?{term}"
    return from_rdflib(term)


def _kind_phrase(var: Variable, group: Sequence[tuple[Any, Any, Any]], phraser: Phraser, lang: str) -> str | None:
    """"a high-risk jurisdiction" for a variable its group types (``?x a C``), or None."""
    for s, p, o in group:
        if s == var and p == RDF.type and isinstance(o, URIRef):
            said = phraser.clause(f"?{var}", f"<{RDF.type}>", f"<{o}>", lang)
            if said is not None:
                # "is a C" / "是C": the class with its article, as the phrasing says a membership.
                return said.predicate.removeprefix("是") if lang == "zh" else said.predicate.removeprefix("is ")
    return None


def _clause(triple: tuple[Any, Any, Any], phraser: Phraser, lang: str, mentioned: set[Variable],
            group: Sequence[tuple[Any, Any, Any]] = ()) -> Clause | None:
    s, p, o = triple
    predicate = p.args[0] if isinstance(p, AlternativePath) else p
    subject, obj = _term(s, phraser), _term(o, phraser)
    if not isinstance(predicate, URIRef) or subject is None or obj is None:
        return None
    names: dict[str, str] = {}
    for v in (s, o):
        if isinstance(v, Variable) and v != _THIS and f"?{v}" not in names:
            kind = None if v in mentioned else _kind_phrase(v, group, phraser, lang)
            # A second party of one clause is "another" one.
            phrases = _SOMEONE if v in mentioned else _SOMETHING
            names[f"?{v}"] = kind or (phrases[lang] if not names else _ANOTHER[lang] if v in mentioned
                                      else phrases[lang])
    return phraser.clause(subject, f"<{predicate}>", obj, lang, names)


def _said(clauses: Sequence[Clause], lang: str) -> str:
    """Alternatives joined by "or", a shared subject said once."""
    joiner = "或" if lang == "zh" else " or "
    if clauses and all(c.subject == clauses[0].subject for c in clauses):
        return clauses[0].subject + ("" if lang == "zh" else " ") + joiner.join(c.predicate for c in clauses)
    return joiner.join(c.subject + ("" if lang == "zh" else " ") + c.predicate for c in clauses)


def _whole(triple: tuple[Any, Any, Any], group: Sequence[tuple[Any, Any, Any]], mentioned: set[Variable]) -> bool:
    """Whether the clause of ``triple`` says all of its alternative ``group``: the others only
    type a variable the clause names by its class (``?x a C``)."""
    named = {v for v in (triple[0], triple[2]) if isinstance(v, Variable) and v not in mentioned}
    return all(t == triple or (t[1] == RDF.type and t[0] in named) for t in group)


def describe(unit: Unit, solution: FrozenBindings, patterns: Sequence[tuple[Any, Any, Any]],
             phraser: Phraser) -> FailingCondition:
    """The failing condition ``unit`` in words, English and Chinese (see the module doc)."""
    mentioned = {o for s, p, o in patterns if s == _THIS and p == _MENTIONS and isinstance(o, Variable)}
    if unit.kind == "filter":
        en = comparison(unit.node, solution, patterns, phraser, "en")
        zh = comparison(unit.node, solution, patterns, phraser, "zh")
        if en is not None and zh is not None:
            return FailingCondition(kind="comparison", required_en=en.requirement("en"),
                                    required_zh=zh.requirement("zh"), actual_en=en.has("en"),
                                    actual_zh=zh.has("zh"), input=en.input)
        return FailingCondition(kind="pattern", required_en=_EXCEPTION["en"], required_zh=_EXCEPTION["zh"])
    texts: dict[str, str] = {}
    for lang in ("en", "zh"):
        if unit.kind == "triple":
            groups = [[unit.node]]
        else:
            groups = [alt for alt in alternatives(unit.node) if alt]
        said: list[tuple[Clause, bool]] = []
        for group in groups:
            # An alternative is said by its first pattern on something the case names.
            ordered = sorted(group, key=lambda t: not (t[0] == _THIS or t[0] in mentioned))
            found = next(((c, t) for t in ordered if (c := _clause(t, phraser, lang, mentioned, group))), None)
            if found is not None and all(found[0].predicate != c.predicate or found[0].subject != c.subject
                                         for c, _ in said):
                said.append((found[0], _whole(found[1], group, mentioned)))
        # Alternatives said whole (nothing of theirs left unsaid) stand for the others: "this case
        # is a cross-border transfer", not the first pattern of a join across jurisdictions.
        whole = [c for c, complete in said if complete]
        texts[lang] = _said(whole or [c for c, _ in said], lang)
    return FailingCondition(kind="pattern", required_en=texts["en"], required_zh=texts["zh"])
