"""Running one ontology version's decision rules over a case: :class:`RuleBook`.

Per request, :meth:`RuleBook.evaluate`:

1. builds the data graph: the case triples plus the ontology's
   neighbourhood of the case (out-edges up to two hops from the entities
   and classes the case names and the IRIs the rules themselves name, plus
   the in-edges of reached nodes on predicates the rules use), from the
   materialised index, so a rule sees inferred types and chains without
   the whole ontology being copied;
2. runs the rules with pyshacl, rule by rule in ``sh:order``, to a fixpoint
   (rules may build on each other's triples);
3. explains each SPARQL rule: its WHERE pattern is evaluated with ``$this``
   bound to the case, and each solution instantiates the template's
   decision triples (the conclusions, attributed to that rule) and the
   pattern's triples (the facts that fired it, split into case facts with
   spans and ontology facts with their version);
4. probes each rule that did not fire and reads a ``tv:requiresInput``
   the case lacks with extreme values (and, for codes, the values the
   ontology holds): a value that would add a conclusion makes the decision
   ``undetermined`` and names the input.

Everything runs under one limit on the rules' own work: the CPU time of
the thread that evaluates them (``time.thread_time``), not the wall clock,
so a loaded machine (other requests, other processes on the cores) or a
wait for another evaluation does not make a sound rule time out, while a
rule that loops or joins without bound still uses up its CPU budget and is
stopped with :class:`RuleTimeout`. A wall-clock backstop of
``_WALL_FACTOR`` times the limit stops an evaluation that makes no
progress at all. Every triple lookup of rdflib's evaluation checks the
limit (the cheap wall clock first, the thread's CPU time only once the wall
clock has passed the limit, so the check costs next to nothing). Rules that
keep adding triples stop after a fixed number of rounds with
:class:`RuleLoop`. The limit is checked again as each rule finishes, so the
problem names the rule that used up the time, not the one that ran next.

Evaluation runs inside :func:`reasoning.rules.sandbox.no_outside_calls`: a
rule cannot open a socket, fetch a URL (``SERVICE``, ``FROM``) or start a
process, and ``regex`` / ``replace`` / ``sh:pattern`` run on RE2, whose
matching time is linear in the text (a catastrophic pattern such as
``^(a+)+$`` cannot hold the interpreter lock, so the limit is checked and
the server keeps answering).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from itertools import product
from typing import Any, Final

import numpy as np
from pyshacl.errors import ReportableRuntimeError
from rdflib import BNode, Graph, Literal, URIRef, Variable
from rdflib.paths import AlternativePath
from rdflib.plugins.sparql.evaluate import evalPart
from rdflib.plugins.sparql.sparql import FrozenBindings, Query, QueryContext
from rdflib.plugins.stores.memory import Memory
from rdflib.term import Node

from reasoning.case.lexicon import CaseLexicon
from reasoning.case.model import CaseFact, CaseGraph
from reasoning.case.vocabulary import SH_OBJECT, SH_PREDICATE
from reasoning.errors import InvalidInput, LimitExceeded
from reasoning.evidence.index import LABEL_PREDICATES, OntologyIndex
from reasoning.evidence.model import EvidenceFact
from reasoning.evidence.terms import (
    Triple,
    from_rdflib,
    iri_value,
    is_iri,
    literal_parts,
)
from reasoning.rules import sandbox
from reasoning.rules.check import parse_rule_query
from reasoning.rules.model import Conclusion, Decision, InputOutcome, MissingInput, OntologyFact
from reasoning.rules.nearest import input_outcome, nearest_rule
from reasoning.rules.relax import pattern_triples
from reasoning.rules.shapes import LoadedRule, load_rules

__all__ = ["RuleBook", "RuleFailure", "RuleLoop", "RuleTimeout"]

_XSD: Final = "http://www.w3.org/2001/XMLSchema#"
_HOPS: Final = 2
_MAX_TRIPLES: Final = 20_000
_MAX_ROUNDS: Final = 8
_MAX_SOLUTIONS: Final = 8
_CHECK_EVERY: Final = 256
#: CPU seconds the search for the nearest rule may take (``reasoning.rules.nearest``).
_NEAREST_S: Final = 0.5
#: The wall-clock backstop, as a multiple of the CPU-time limit.
_WALL_FACTOR: Final = 20.0
_SKIPPED: Final = frozenset(LABEL_PREDICATES) | {"<http://www.w3.org/2000/01/rdf-schema#comment>"}
_PROBES: Final = {
    "MoneyAmount": ("0", "1000000000000000"),
    "Percentage": ("0", "100"),
    "Count": ("0", "1000000000"),
    "Length": ("0", "1000000"),
    "Date": ("0001-01-01", "9999-12-31"),
}
_PROBE_TYPES: Final = {
    "MoneyAmount": "decimal",
    "Percentage": "decimal",
    "Count": "integer",
    "Length": "decimal",
    "Date": "date",
}


class RuleTimeout(LimitExceeded):
    """A decision rule ran past the evaluation's time limit and was stopped."""


class RuleLoop(LimitExceeded):
    """The decision rules kept adding triples without reaching a fixpoint."""


class RuleFailure(InvalidInput):
    """A stored decision rule (its target or condition) could not be evaluated (pyshacl refused it).

    The upload checks refuse what pyshacl is known to refuse; this is the
    clear answer for whatever remains, never an internal error.
    """


class _Expired(Exception):
    """Raised inside rdflib's evaluation when the deadline has passed."""


class _Limit:
    """A CPU-time limit for the calling thread, with a wall-clock backstop (see the module doc).

    ``expired()`` reads the wall clock (cheap); only once the wall clock has
    passed the CPU budget still left does it read the thread's CPU time
    (a system call) and move its next wall-clock check to when the rest of
    the budget could at the earliest be used up. CPU time never runs faster
    than the wall clock, so no expiry is missed.
    """

    __slots__ = ("_cpu_end", "_wall_end", "_wall_next")

    def __init__(self, cpu_s: float) -> None:
        now = time.perf_counter()
        self._cpu_end = time.thread_time() + cpu_s
        self._wall_next = now + cpu_s
        self._wall_end = now + cpu_s * _WALL_FACTOR

    def expired(self) -> bool:
        now = time.perf_counter()
        if now < self._wall_next:
            return False
        if now > self._wall_end:
            return True
        left = self._cpu_end - time.thread_time()
        if left <= 0:
            return True
        self._wall_next = now + left
        return False


_NO_LIMIT: Final = _Limit(float("inf"))


class _DeadlineStore(Memory):
    """An in-memory store whose lookups stop the evaluation once its ``limit`` has expired."""

    limit: _Limit = _NO_LIMIT

    def triples(self, triple_pattern: Any, context: Any = None) -> Any:
        limit = self.limit
        if limit.expired():
            raise _Expired
        for n, item in enumerate(super().triples(triple_pattern, context)):
            if n % _CHECK_EVERY == 0 and n and limit.expired():
                raise _Expired
            yield item


class _Explained:
    """A SPARQL rule prepared for explanation and probing."""

    __slots__ = ("inputs", "loaded", "patterns", "query", "rule_id", "rule_iri", "template")

    def __init__(
        self, loaded: LoadedRule, query: Query | None, rule_id: str, rule_iri: str | None
    ) -> None:
        self.loaded, self.query = loaded, query
        self.patterns = list(pattern_triples(query.algebra.p)) if query is not None else []
        self.template = list(query.algebra.get("template") or ()) if query is not None else []
        self.inputs = tuple(loaded.source.inputs)
        self.rule_id, self.rule_iri = rule_id, rule_iri

    @property
    def shacl_rule(self) -> str:
        return iri_value(self.loaded.node)


def _parsed(text: str, prefixes: dict[str, str]) -> Query | None:
    """One ``sh:construct`` text parsed (:func:`~reasoning.rules.check.parse_rule_query`); None when refused."""
    problem, _, query = parse_rule_query(text, prefixes)
    return None if problem is not None else query


class RuleBook:
    """The decision rules of one ontology version, ready to evaluate cases (thread-safe)."""

    def __init__(self, index: OntologyIndex, lexicon: CaseLexicon | None = None) -> None:
        sandbox.install()
        self.index = index
        self.lexicon = lexicon or CaseLexicon(index)
        terms = index.terms
        triples = [
            (terms[s], terms[p], terms[o])
            for s, p, o in zip(index.s.tolist(), index.p.tolist(), index.o.tolist(), strict=True)
        ]
        self.rules = load_rules(triples)
        #: Per rule (as ``rules``), each ``sh:construct`` parsed (None: refused), parsed once here
        #: for every reader of the rules (the first is the one explained; the thresholds read all).
        self.queries: tuple[tuple[Query | None, ...], ...] = tuple(
            tuple(_parsed(text, loaded.source.prefixes) for text in loaded.source.constructs)
            for loaded in self.rules
        )
        self._explained: list[_Explained] = []
        constants: set[str] = set()
        predicates: set[str] = set()
        for loaded, queries in zip(self.rules, self.queries, strict=True):
            query = queries[0] if queries else None
            implements = loaded.source.implements
            rule_id = (
                index.label(index.term_id(implements), "en")
                if implements and index.term_id(implements) >= 0
                else iri_value(loaded.node)
            )
            self._explained.append(
                _Explained(loaded, query, rule_id, iri_value(implements) if implements else None)
            )
            for pattern in self._explained[-1].patterns:
                for term in pattern:
                    for each in _iris(term):
                        (predicates if term is pattern[1] else constants).add(each)
            if implements:
                constants.add(implements)
        self._constants = sorted(c for c in constants if index.term_id(c) >= 0)
        named: dict[str, set[tuple[str, str, str]]] = {}
        for rule in self._explained:
            for s, p, o in rule.patterns:
                for predicate in _iris(p):
                    for end, term in (("o", o), ("s", s)):
                        if isinstance(term, (URIRef, Literal)) and (shown := from_rdflib(term)) is not None:
                            named.setdefault(rule.rule_id, set()).add((predicate, shown, end))
        self._named_in_condition = {rule_id: frozenset(v) for rule_id, v in named.items()}
        self._rule_predicates = {index.term_id(p) for p in predicates} - {-1}
        self._terms: dict[str, Node] = {}
        self._lock = threading.Lock()

    @property
    def has_rules(self) -> bool:
        return bool(self.rules)

    def names_in_condition(self, rule_id: str, triple: Triple) -> bool:
        """Whether ``triple`` (N-Triples terms) matches a triple pattern of a condition of
        ``rule_id``'s rules that names its object or its subject (``?p aml:listedOn
        aml:pepList``, ``?p a aml:PoliticallyExposedPerson``), not one that only joins
        variables (``?a aml:sentFundsTo ?b``): what the rule asks of the case, specifically."""
        named = self._named_in_condition.get(rule_id, frozenset())
        s, p, o = triple
        return (p, o, "o") in named or (p, s, "s") in named

    # --- evaluation ------------------------------------------------------------------

    def evaluate(
        self, case: CaseGraph, *, timeout_s: float = 1.0, evidence: Sequence[EvidenceFact] = ()
    ) -> Decision:
        """The decision for ``case`` within ``timeout_s`` seconds of the rules' CPU time.

        Raises :class:`RuleTimeout` when the rules run past the limit and
        :class:`RuleLoop` when they do not reach a fixpoint.
        """
        started = time.perf_counter()
        store = _DeadlineStore()
        graph = Graph(store=store)
        case_triples = case.triples()
        for triple in self._neighbourhood(case):
            graph.add(self._rdf(triple))
        for triple in case_triples:
            graph.add(self._rdf(triple))
        focus = self._term(case.case)
        running = ["the rules"]
        try:
            with self._lock, sandbox.no_outside_calls():
                # Set once the lock is held: waiting for another evaluation is not this one's work.
                store.limit = _Limit(timeout_s)
                final = self._run(graph, focus, running)
            solved = [(rule, final.get(i, [])) for i, rule in enumerate(self._explained)]
            concluded = {
                (s, p, o)
                for rule, solutions in solved
                for s, p, o in self._decisions(rule, solutions, focus)
            }
            with sandbox.no_outside_calls():
                by_triple_rules = self._triple_rule_decisions(graph, focus, running)
                concluded.update(t for _, t in by_triple_rules)
                missing = self._missing(graph, case, focus, solved,
                                        {o for _, _, o in concluded}, running)
                nearest = None
                if not concluded and not missing:
                    # A budget of its own: the search for the why-not never fails a decision.
                    store.limit = _Limit(min(timeout_s, _NEAREST_S))
                    unfired = [rule for rule, solutions in solved if not solutions]
                    nearest = nearest_rule(graph, self.lexicon, case, focus, unfired,
                                           self._decisions_list, _Expired)
                    store.limit = _NO_LIMIT
        except ReportableRuntimeError as exc:
            raise RuleFailure(
                f"the decision rule {running[0]} could not be evaluated ({' '.join(str(exc).split())[:300]}); "
                "fix or remove the rule in the ontology",
                rule=running[0],
            ) from None
        except _Expired:
            raise RuleTimeout(
                f"the decision rule {running[0]} ran past the {timeout_s:g} s limit (CPU time "
                "of the rule evaluation) and was stopped; fix or remove the rule in the ontology",
                rule=running[0],
            ) from None
        conclusions = self._conclusions(case, solved, focus, evidence)
        conclusions.extend(
            self._triple_rule_conclusions(case, by_triple_rules, conclusions, evidence)
        )
        actions = {c.action for c in conclusions}
        pairs = {
            (min(a, iri_value(b)), max(a, iri_value(b)))
            for a in actions
            for b in self.lexicon.conflicts.get(f"<{a}>", ())
            if iri_value(b) in actions
        }
        conflicts = tuple(sorted(pairs))
        status = (
            "conflicting"
            if conflicts
            else "undetermined"
            if missing
            else "decided"
            if conclusions
            else "no_rule_applies"
        )
        return Decision(
            status=status,
            conclusions=tuple(conclusions),
            missing=tuple(missing),
            conflicts=conflicts,
            ontology_version=self.index.version,
            rules_evaluated=len(self.rules),
            seconds=round(time.perf_counter() - started, 4),
            case=case,
            nearest=nearest if status == "no_rule_applies" else None,
        )

    def _run(self, graph: Graph, case: Node, running: list[str]) -> dict[int, list[FrozenBindings]]:
        """Apply the rules until nothing new is added (``running[0]`` names the rule running).

        Returns, per SPARQL rule, its solutions on the case node in the final
        round (which added nothing, so they are the solutions over the final
        graph and explain the conclusions).

        pyshacl selects each rule's focus nodes (its shape's targets) and
        checks its ``sh:condition``s, and applies ``sh:TripleRule``s itself;
        a SPARQL rule's CONSTRUCT runs from the query parsed once per
        version (pyshacl would parse its text again on every call, which
        costs more than the evaluation).
        """
        from pyshacl.graph_abstraction import DataGraph
        from rdflib.plugins.sparql.evalutils import _fillTemplate

        data = DataGraph.from_rdflib(graph)
        limit = graph.store.limit if isinstance(graph.store, _DeadlineStore) else _NO_LIMIT
        current = "the rules"
        for _ in range(_MAX_ROUNDS):
            before = len(graph)
            on_case: dict[int, list[FrozenBindings]] = {}
            for i, rule in enumerate(self._explained):
                current = running[0] = iri_value(rule.loaded.node)
                pyshacl_rule = rule.loaded.rule
                if rule.query is None:
                    pyshacl_rule.apply(data)
                    if limit.expired():
                        raise _Expired
                    continue
                focus = pyshacl_rule.filter_conditions(
                    list(pyshacl_rule.shape.focus_nodes(data)), data
                )
                added: list[tuple[Node, Node, Node]] = []
                for node in focus:
                    solutions = self._solutions(graph, rule, node, limit=None)
                    if node == case:
                        on_case[i] = solutions[:_MAX_SOLUTIONS]
                    added.extend(
                        t for solution in solutions for t in _fillTemplate(rule.template, solution)
                    )
                for triple in added:
                    graph.add(triple)
                if limit.expired():  # this rule used up the time: name it, not the next one
                    raise _Expired
            if len(graph) == before:
                return on_case
        raise RuleLoop(
            f"the decision rules did not reach a fixpoint after {_MAX_ROUNDS} rounds "
            f"(last run: {current}); a rule keeps creating new triples",
            rule=current,
        )

    def _solutions(
        self, graph: Graph, rule: _Explained, focus: Node, limit: int | None = _MAX_SOLUTIONS
    ) -> list[FrozenBindings]:
        if rule.query is None:
            return []
        bindings: dict[Any, Any] = {Variable("this"): focus}
        ctx = QueryContext(graph, initBindings=bindings)
        ctx.prologue = rule.query.prologue
        solutions: list[FrozenBindings] = []
        for solution in evalPart(ctx, rule.query.algebra.p):
            solutions.append(solution)
            if limit is not None and len(solutions) >= limit:
                break
        return solutions

    def _decisions_list(self, rule: Any, solutions: list[FrozenBindings], focus: Node) -> list[Triple]:
        return list(self._decisions(rule, solutions, focus))

    def _decisions(
        self, rule: _Explained, solutions: Iterable[FrozenBindings], focus: Node
    ) -> Iterator[Triple]:
        decision_properties = self.lexicon.decision_properties
        for solution in solutions:
            for s, p, o in rule.template:
                triple = (_bound(s, solution), _bound(p, solution), _bound(o, solution))
                if None in triple or triple[0] != focus:
                    continue
                terms = tuple(from_rdflib(t) for t in triple)
                if terms[1] in decision_properties and None not in terms:
                    yield terms  # type: ignore[misc]

    # --- conclusions -----------------------------------------------------------------

    def _conclusions(
        self,
        case: CaseGraph,
        solved: list[tuple[_Explained, list[FrozenBindings]]],
        focus: Node,
        evidence: Sequence[EvidenceFact],
    ) -> list[Conclusion]:
        by_triple = {fact.triple: fact for fact in case.facts}
        out: dict[tuple[str, str], Conclusion] = {}
        for rule, solutions in solved:
            for solution in solutions:
                fired = [t for t in (_instantiate(p, solution) for p in rule.patterns) if t]
                for _, predicate, action in self._decisions(rule, [solution], focus):
                    key = (action, rule.rule_id)
                    if key in out:
                        continue
                    out[key] = self._conclusion(rule, predicate, action, fired, by_triple, evidence)
        return list(out.values())

    def _conclusion(
        self,
        rule: _Explained,
        predicate: str,
        action: str,
        fired: list[Triple],
        by_triple: dict[Triple, CaseFact],
        evidence: Sequence[EvidenceFact],
    ) -> Conclusion:
        lex = self.lexicon
        case_facts = tuple(dict.fromkeys(by_triple[t] for t in fired if t in by_triple))
        ontology_facts = tuple(
            dict.fromkeys(
                OntologyFact(
                    subject=iri_value(s),
                    predicate=iri_value(p),
                    object=_show(o),
                    ontology_version=self.index.version,
                    object_term=o,
                )
                for s, p, o in fired
                if (s, p, o) not in by_triple
            )
        )
        en_action, zh_action = lex.label(action, "en"), lex.label(action, "zh")
        en_verb, zh_verb = lex.label(predicate, "en"), lex.label(predicate, "zh")
        cited = rule.rule_iri
        evidence_ids = tuple(
            dict.fromkeys(
                f.id for f in evidence if cited is not None and cited in (f.subject, f.object)
            )
        )
        return Conclusion(
            action=iri_value(action),
            predicate=iri_value(predicate),
            predicate_label_en=en_verb,
            predicate_label_zh=zh_verb,
            action_label_en=en_action,
            action_label_zh=zh_action,
            statement_en=f"This case {en_verb} {en_action} ({rule.rule_id}).",
            statement_zh=f"本案{zh_verb}{zh_action}（{rule.rule_id}）。",
            rule_id=rule.rule_id,
            rule_iri=rule.rule_iri,
            shacl_rule=iri_value(rule.loaded.node),
            evidence_ids=evidence_ids,
            case_facts=case_facts,
            ontology_facts=ontology_facts,
            premise_ids=tuple(dict.fromkeys(f.premise_id for f in case_facts if f.premise_id)),
        )

    def _triple_rule_decisions(
        self, graph: Graph, focus: Node, running: list[str]
    ) -> list[tuple[_Explained, Triple]]:
        """Decision triples on the case that a ``sh:TripleRule`` with constant parts states."""
        out: list[tuple[_Explained, Triple]] = []
        case_term = from_rdflib(focus)
        for rule in self._explained:
            running[0] = iri_value(rule.loaded.node)
            parts = rule.loaded.source.triple_parts
            predicate, obj = parts.get(SH_PREDICATE), parts.get(SH_OBJECT)
            if (
                rule.query is not None
                or predicate not in self.lexicon.decision_properties
                or obj is None
                or not is_iri(obj)
                or case_term is None
            ):
                continue
            if (focus, self._term(predicate), self._term(obj)) not in graph:
                continue
            from pyshacl.graph_abstraction import DataGraph

            pyshacl_rule = rule.loaded.rule
            data = DataGraph.from_rdflib(graph)
            if focus in set(
                pyshacl_rule.shape.focus_nodes(data)
            ) and pyshacl_rule.filter_conditions([focus], data):
                out.append((rule, (case_term, predicate, obj)))
        return out

    def _triple_rule_conclusions(
        self,
        case: CaseGraph,
        found: list[tuple[_Explained, Triple]],
        known: list[Conclusion],
        evidence: Sequence[EvidenceFact],
    ) -> list[Conclusion]:
        """Conclusions of triple rules; their facts are the case's own statements (the
        condition is a shape, not a pattern to instantiate)."""
        by_triple = {fact.triple: fact for fact in case.facts}
        seen = {(c.action, c.shacl_rule) for c in known}
        stated = [f.triple for f in case.facts if f.origin in ("class", "relation", "apposition")]
        out: list[Conclusion] = []
        for rule, (_, predicate, action) in found:
            if (iri_value(action), iri_value(rule.loaded.node)) in seen:
                continue
            out.append(self._conclusion(rule, predicate, action, stated, by_triple, evidence))
        return out

    def _missing(
        self,
        graph: Graph,
        case: CaseGraph,
        focus: Node,
        solved: list[tuple[_Explained, list[FrozenBindings]]],
        concluded: set[str],
        running: list[str],
    ) -> list[MissingInput]:
        present = {p for s, p, _ in case.triples() if s == case.case}
        found: dict[str, list[str]] = {}
        outcomes: dict[str, list[InputOutcome]] = {}
        for rule, solutions in solved:
            running[0] = iri_value(rule.loaded.node)
            absent = [i for i in rule.inputs if i not in present]
            if solutions or not absent or rule.query is None:
                continue
            probed = self._probe_adds(graph, rule, focus, absent, concluded)
            if probed:
                for term in absent:
                    found.setdefault(term, []).append(rule.rule_id)
                    outcomes.setdefault(term, []).append(
                        input_outcome(self.lexicon, case, rule, term, probed, focus, self._decisions_list)
                    )
        specs = {spec.term: spec for spec in self.lexicon.inputs}
        missing: list[MissingInput] = []
        for term, rule_ids in found.items():
            spec = specs.get(term)
            missing.append(
                MissingInput(
                    input=iri_value(term),
                    label_en=spec.label_en if spec else self.lexicon.label(term, "en"),
                    label_zh=spec.label_zh if spec else self.lexicon.label(term, "zh"),
                    rule_ids=tuple(dict.fromkeys(rule_ids)),
                    outcomes=tuple(outcomes.get(term, ())),
                )
            )
        return missing

    def _probe_adds(
        self, graph: Graph, rule: _Explained, focus: Node, absent: list[str], concluded: set[str]
    ) -> list[FrozenBindings]:
        """The solutions of ``rule`` under the first values of the absent inputs that make it
        conclude something new (empty when none do)."""
        choices = [self._probe_values(term) for term in absent]
        for values in product(*choices):
            added = [
                (focus, self._term(term), value) for term, value in zip(absent, values, strict=True)
            ]
            for triple in added:
                graph.add(triple)
            try:
                solutions = self._solutions(graph, rule, focus)
            finally:
                for triple in added:
                    graph.remove(triple)
            if any(o not in concluded for _, _, o in self._decisions(rule, solutions, focus)):
                return solutions
        return []

    def _probe_values(self, term: str) -> list[Node]:
        spec = next((s for s in self.lexicon.inputs if s.term == term), None)
        kind = spec.kind if spec else ""
        if kind in _PROBES:
            datatype = URIRef(_XSD + _PROBE_TYPES[kind])
            return [Literal(v, datatype=datatype) for v in _PROBES[kind]]
        pid = self.index.term_id(term)
        values: list[Node] = []
        if pid >= 0:
            rows = np.nonzero(self.index.p == pid)[0][:16]
            values = list(
                dict.fromkeys(self._term(self.index.terms[o]) for o in self.index.o[rows].tolist())
            )
        return values or [Literal("")]

    # --- the neighbourhood -----------------------------------------------------------

    def _neighbourhood(self, case: CaseGraph) -> list[Triple]:
        index = self.index
        seeds: set[int] = set()
        for fact in case.facts:
            for term in (fact.subject, fact.object):
                node = index.term_id(term) if is_iri(term) else -1
                if node >= 0:
                    seeds.add(node)
        seeds.update(index.term_id(c) for c in self._constants)
        skipped = {index.term_id(p) for p in _SKIPPED}
        rows: set[int] = set()
        frontier, seen = seeds, set(seeds)
        for _ in range(_HOPS):
            following: set[int] = set()
            for node in frontier:
                for edge in index.out_edges[index.out_ptr[node] : index.out_ptr[node + 1]].tolist():
                    predicate, obj = int(index.p[edge]), int(index.o[edge])
                    if predicate in skipped:
                        continue
                    rows.add(edge)
                    if (
                        predicate != index.type_id
                        and not index.literal_mask[obj]
                        and obj not in seen
                    ):
                        following.add(obj)
                for edge in index.in_edges[index.in_ptr[node] : index.in_ptr[node + 1]].tolist():
                    if int(index.p[edge]) in self._rule_predicates:
                        rows.add(edge)
                        subject = int(index.s[edge])
                        if subject not in seen:
                            following.add(subject)
            seen |= following
            frontier = following
            if len(rows) > _MAX_TRIPLES:
                break
        terms = index.terms
        return [
            (terms[int(index.s[r])], terms[int(index.p[r])], terms[int(index.o[r])])
            for r in sorted(rows)[:_MAX_TRIPLES]
        ]

    # --- terms -----------------------------------------------------------------------

    def _term(self, term: str) -> Node:
        node = self._terms.get(term)
        if node is None:
            node = _to_rdflib(term)
            self._terms[term] = node
        return node

    def _rdf(self, triple: Triple) -> tuple[Node, Node, Node]:
        return (self._term(triple[0]), self._term(triple[1]), self._term(triple[2]))


def _to_rdflib(term: str) -> Node:
    if term.startswith("<"):
        return URIRef(term[1:-1])
    if term.startswith("_:"):
        return BNode(term[2:])
    lexical, lang, datatype = literal_parts(term)
    return Literal(lexical, lang=lang, datatype=URIRef(datatype) if datatype else None)


def _iris(term: Any) -> Iterator[str]:
    if isinstance(term, URIRef):
        yield f"<{term}>"
    elif isinstance(term, AlternativePath):
        for arg in term.args:
            yield from _iris(arg)


def _bound(term: Any, solution: FrozenBindings) -> Node | None:
    if isinstance(term, Variable):
        value = solution.get(term)
        return value if isinstance(value, Node) else None
    return term if isinstance(term, (URIRef, Literal)) else None


def _instantiate(pattern: tuple[Any, Any, Any], solution: FrozenBindings) -> Triple | None:
    s, p, o = (_bound(pattern[0], solution), pattern[1], _bound(pattern[2], solution))
    if s is None or o is None:
        return None
    predicates = (
        [p]
        if isinstance(p, URIRef)
        else (
            [a for a in p.args if isinstance(a, URIRef)] if isinstance(p, AlternativePath) else []
        )
    )
    graph = solution.ctx.graph if solution.ctx is not None else None
    for predicate in predicates:
        if graph is None or (s, predicate, o) in graph:
            terms = (from_rdflib(s), from_rdflib(predicate), from_rdflib(o))
            if None not in terms:
                return terms  # type: ignore[return-value]
    return None


def _show(term: str) -> str:
    return iri_value(term) if is_iri(term) else literal_parts(term)[0]
