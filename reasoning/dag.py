"""The reasoning DAG of a session: what each part of an answer was computed from.

Nodes are premises, constraints, evidence facts, decoded steps, evidence
branches and answers; an edge ``A -> B`` reads "A depends_on B" (A was
computed from B, so changing B invalidates A). The graph is a networkx
``DiGraph`` for the algorithms (descendants of a premise, the invariant that
nothing depends on a retracted premise) and exports as node-link JSON, Turtle
and JSON-LD with the vocabulary of ``ontologies/reasoning-dag.ttl``.

Node ids are stable strings built by :func:`node_id`: premises are session-wide
(``premise:<id>``); everything a turn computed is prefixed by its turn number
(``t2:branch:compliance``, ``t2:step:compliance.1``), so recording a turn again
after a partial re-inference replaces exactly that turn's nodes.

The module depends on nothing of ours outside ``reasoning``: callers convert
their run results into :class:`BranchTrace` / :class:`DagStep`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from enum import StrEnum
from typing import Any
from urllib.parse import quote

import msgspec
import networkx as nx
from rdflib import Graph, Literal, Namespace, URIRef
from rdflib.namespace import PROV, RDF, RDFS, XSD

from reasoning.constraints.model import Constraint, Premise
from reasoning.errors import InvalidInput, NotFound
from reasoning.evidence.model import EvidenceFact

__all__ = [
    "DAG",
    "BranchTrace",
    "ConclusionTrace",
    "DagNode",
    "DagStep",
    "NodeKind",
    "ReasoningDag",
    "node_id",
    "record_turn",
]

DAG = Namespace("https://w3id.org/tenet/dag#")
DEPENDS_ON = "depends_on"

_RDF_CLASS = {
    "premise": DAG.Premise,
    "constraint": DAG.Constraint,
    "evidence": DAG.Evidence,
    "step": DAG.Step,
    "branch": DAG.Branch,
    "answer": DAG.Answer,
    "conclusion": DAG.Conclusion,
}
# Attributes exported to RDF, with their datatype; the rest stay in node-link JSON.
_RDF_ATTRS: dict[str, tuple[URIRef, URIRef]] = {
    "text": (DAG.text, XSD.string),
    "turn": (DAG.turn, XSD.integer),
    "status": (DAG.status, XSD.string),
    "confidence": (DAG.confidence, XSD.double),
    "weight": (DAG.weight, XSD.double),
    "priority": (DAG.priority, XSD.integer),
    "view": (DAG.view, XSD.string),
    "recomputed": (DAG.recomputed, XSD.boolean),
}


class NodeKind(StrEnum):
    PREMISE = "premise"
    CONSTRAINT = "constraint"
    EVIDENCE = "evidence"
    STEP = "step"
    BRANCH = "branch"
    ANSWER = "answer"
    CONCLUSION = "conclusion"


class DagNode(msgspec.Struct, frozen=True, kw_only=True):
    """One node. ``attrs`` holds JSON-safe details (text, status, confidence...)."""

    id: str
    kind: NodeKind
    label: str
    attrs: dict[str, Any] = msgspec.field(default_factory=dict)


class DagStep(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded step as the DAG needs it: what it said and what it cited."""

    id: str
    text: str
    confidence: float
    evidence_ids: tuple[str, ...] = ()
    premise_ids: tuple[str, ...] = ()


class ConclusionTrace(msgspec.Struct, frozen=True, kw_only=True):
    """A conclusion of the domain's decision rules: its rule, the premises it used
    (session premise ids) and the rule's evidence facts."""

    key: str
    statement: str
    rule_id: str
    premise_ids: tuple[str, ...] = ()
    evidence_ids: tuple[str, ...] = ()


class BranchTrace(msgspec.Struct, frozen=True, kw_only=True):
    """One evidence branch of a run: its inputs (the premises and evidence in
    its prompt suffix) and the steps it decoded, in order."""

    view: str
    premise_ids: tuple[str, ...]
    evidence_ids: tuple[str, ...]
    steps: tuple[DagStep, ...]
    text: str = ""
    confidence: float = 0.0
    recomputed: bool = True


def node_id(kind: NodeKind | str, key: str, *, turn: int | None = None) -> str:
    """The DAG id of a node: ``premise:P1`` (session-wide) or ``t3:step:s1``.

    Premises must be given without ``turn``; every other kind needs one,
    because evidence ids and step ids are only unique within a run.
    """
    try:
        kind = NodeKind(kind)
    except ValueError:
        raise InvalidInput(f"unknown DAG node kind {kind!r}") from None
    if kind is NodeKind.PREMISE:
        if turn is not None:
            raise InvalidInput("premise node ids are session-wide and take no turn")
        return f"premise:{key}"
    if turn is None or turn < 0:
        raise InvalidInput(f"a {kind.value} node id needs a turn number >= 0")
    return f"t{turn}:{kind.value}:{key}"


class ReasoningDag:
    """A mutable DAG of :class:`DagNode` with ``depends_on`` edges.

    Guarantees: the graph stays acyclic (an edge that would close a cycle is
    refused with :class:`InvalidInput`); edges only join existing nodes
    (:class:`NotFound` otherwise); exports are deterministic (nodes and edges
    sorted by id) so two equal DAGs serialise to equal bytes.
    """

    def __init__(self) -> None:
        self._g: nx.DiGraph = nx.DiGraph()

    # -- building ---------------------------------------------------------

    def add(self, node: DagNode) -> None:
        """Add ``node``, or replace the label and attributes of an existing one."""
        self._g.add_node(node.id, node=node)

    def depend(self, dependent: str, dependency: str) -> None:
        """Record that ``dependent`` was computed from ``dependency``."""
        for nid in (dependent, dependency):
            if nid not in self._g:
                raise NotFound(f"DAG node {nid!r} does not exist")
        if dependent == dependency or nx.has_path(self._g, dependency, dependent):
            raise InvalidInput(f"edge {dependent!r} -> {dependency!r} would create a cycle")
        self._g.add_edge(dependent, dependency, relation=DEPENDS_ON)

    def update(self, nid: str, **attrs: Any) -> DagNode:
        """Merge ``attrs`` into a node's attributes; return the new node."""
        old = self.node(nid)
        new = DagNode(id=old.id, kind=old.kind, label=old.label, attrs={**old.attrs, **attrs})
        self._g.nodes[nid]["node"] = new
        return new

    def remove(self, ids: Iterable[str]) -> None:
        """Remove nodes and every edge touching them; unknown ids are ignored."""
        self._g.remove_nodes_from([i for i in ids if i in self._g])

    # -- reading ----------------------------------------------------------

    def __contains__(self, nid: object) -> bool:
        return nid in self._g

    def __len__(self) -> int:
        return int(self._g.number_of_nodes())

    def node(self, nid: str) -> DagNode:
        try:
            node: DagNode = self._g.nodes[nid]["node"]
        except KeyError:
            raise NotFound(f"DAG node {nid!r} does not exist") from None
        return node

    def nodes(self, kind: NodeKind | None = None) -> tuple[DagNode, ...]:
        """All nodes (of one kind when given), sorted by id."""
        found = (self._g.nodes[n]["node"] for n in sorted(self._g.nodes))
        return tuple(n for n in found if kind is None or n.kind is kind)

    def edges(self) -> tuple[tuple[str, str], ...]:
        """All ``(dependent, dependency)`` pairs, sorted."""
        return tuple(sorted(self._g.edges))

    def dependencies(self, nid: str) -> frozenset[str]:
        """The nodes ``nid`` was directly computed from."""
        self.node(nid)
        return frozenset(self._g.successors(nid))

    def dependents(self, nid: str) -> frozenset[str]:
        """The nodes directly computed from ``nid``."""
        self.node(nid)
        return frozenset(self._g.predecessors(nid))

    def descendants(self, nid: str) -> frozenset[str]:
        """Every node that depends on ``nid``, directly or transitively.

        These are exactly the nodes a change of ``nid`` invalidates (edges
        point from dependent to dependency, so this is networkx's ancestors).
        """
        self.node(nid)
        return frozenset(nx.ancestors(self._g, nid))

    def turn_nodes(self, turn: int) -> frozenset[str]:
        """The ids of the nodes a turn computed (every kind but premises)."""
        prefix = f"t{turn}:"
        return frozenset(n for n in self._g.nodes if n.startswith(prefix))

    def graph(self) -> nx.DiGraph:
        """A read-only view of the networkx graph (node attribute ``node``)."""
        view: nx.DiGraph = self._g.copy(as_view=True)
        return view

    # -- exports ----------------------------------------------------------

    def to_node_link(self) -> dict[str, Any]:
        """Node-link JSON (networkx's layout, ``edges`` key) with sorted nodes and edges."""
        return {
            "directed": True,
            "multigraph": False,
            "graph": {"edge_semantics": "source depends_on target"},
            "nodes": [
                {"id": n.id, "kind": n.kind.value, "label": n.label, "attrs": n.attrs}
                for n in self.nodes()
            ],
            "edges": [
                {"source": a, "target": b, "relation": DEPENDS_ON} for a, b in self.edges()
            ],
        }

    @classmethod
    def from_node_link(cls, data: Mapping[str, Any]) -> ReasoningDag:
        """Rebuild a DAG from :meth:`to_node_link` output (e.g. a stored session)."""
        dag = cls()
        try:
            for raw in data.get("nodes", ()):
                dag.add(
                    DagNode(
                        id=str(raw["id"]),
                        kind=NodeKind(raw["kind"]),
                        label=str(raw.get("label", "")),
                        attrs=dict(raw.get("attrs") or {}),
                    )
                )
            for raw in data.get("edges", ()):
                dag.depend(str(raw["source"]), str(raw["target"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"malformed reasoning DAG document: {exc}") from None
        return dag

    def to_rdf(self, base_iri: str) -> Graph:
        """The DAG as RDF: one ``dag:<Kind>`` resource per node under ``base_iri``."""
        g = Graph()
        g.bind("dag", DAG)
        g.bind("prov", PROV)
        for node in self.nodes():
            subject = _iri(base_iri, node.id)
            g.add((subject, RDF.type, _RDF_CLASS[node.kind.value]))
            g.add((subject, RDFS.label, Literal(node.label)))
            g.add((subject, DAG.nodeId, Literal(node.id)))
            for key, value in sorted(node.attrs.items()):
                if key in _RDF_ATTRS and value is not None:
                    predicate, datatype = _RDF_ATTRS[key]
                    g.add((subject, predicate, Literal(value, datatype=datatype)))
        for dependent, dependency in self.edges():
            g.add((_iri(base_iri, dependent), DAG.dependsOn, _iri(base_iri, dependency)))
        return g

    def to_turtle(self, base_iri: str) -> str:
        return self.to_rdf(base_iri).serialize(format="turtle")

    def to_jsonld(self, base_iri: str) -> str:
        """JSON-LD with an inline context (no remote context is ever referenced)."""
        context = {"dag": str(DAG), "prov": str(PROV), "rdfs": str(RDFS), "xsd": str(XSD)}
        return self.to_rdf(base_iri).serialize(format="json-ld", context=context, indent=2)


def _iri(base: str, nid: str) -> URIRef:
    return URIRef(base + quote(nid, safe=":"))


def _premise_node(premise: Premise, status: str) -> DagNode:
    return DagNode(
        id=node_id(NodeKind.PREMISE, premise.id),
        kind=NodeKind.PREMISE,
        label=premise.topic or premise.text,
        attrs={"text": premise.text, "topic": premise.topic, "value": premise.value, "status": status},
    )


def _step_inputs(branch: BranchTrace, turn: int, constraint_ids: Sequence[str]) -> Iterator[str]:
    """What a branch's first step was conditioned on: its prompt suffix and the constraints."""
    for pid in branch.premise_ids:
        yield node_id(NodeKind.PREMISE, pid)
    for eid in branch.evidence_ids:
        yield node_id(NodeKind.EVIDENCE, eid, turn=turn)
    for cid in constraint_ids:
        yield node_id(NodeKind.CONSTRAINT, cid, turn=turn)


def record_turn(
    dag: ReasoningDag,
    *,
    turn: int,
    premises: Sequence[Premise],
    constraints: Sequence[Constraint],
    evidence: Sequence[EvidenceFact],
    branches: Sequence[BranchTrace],
    answer: str,
    confidence: float | None = None,
    premise_status: Mapping[str, str] | None = None,
    conclusions: Sequence[ConclusionTrace] = (),
) -> None:
    """Write one turn's run into ``dag``, replacing what that turn had before.

    Each conclusion of the decision rules is a node over the premises it
    used and its rule's evidence; the answer depends on it (the decode
    states it), so retracting a premise a conclusion used reaches the answer
    through the conclusion.

    Edges, as the decode happened: each branch's first step depends on the
    premises and evidence of its prompt suffix and on the constraints that
    steered it; every later step on the step before it (it was decoded after
    it) and on the evidence and premises it cites; the branch on its steps and
    inputs; the answer on every branch. A premise that no branch received gets
    a node and no dependents. Premise nodes are kept across turns; their
    ``status`` comes from ``premise_status`` (default ``active``).
    """
    statuses = premise_status or {}
    dag.remove(dag.turn_nodes(turn))
    for premise in premises:
        dag.add(_premise_node(premise, statuses.get(premise.id, "active")))
    constraint_ids = [c.id for c in constraints]
    for c in constraints:
        dag.add(
            DagNode(
                id=node_id(NodeKind.CONSTRAINT, c.id, turn=turn),
                kind=NodeKind.CONSTRAINT,
                label=c.kind.value,
                attrs={
                    "turn": turn,
                    "kind": c.kind.value,
                    "params": c.params,
                    "hardness": c.hardness.value,
                    "weight": c.weight,
                    "text": c.source.text if c.source else None,
                },
            )
        )
    for fact in evidence:
        dag.add(
            DagNode(
                id=node_id(NodeKind.EVIDENCE, fact.id, turn=turn),
                kind=NodeKind.EVIDENCE,
                label=fact.id,
                attrs={
                    "turn": turn,
                    "text": fact.text,
                    "view": fact.view,
                    "triple": [fact.subject, fact.predicate, fact.object],
                    "ontology_version": fact.ontology_version,
                },
            )
        )
    answer_id = node_id(NodeKind.ANSWER, "answer", turn=turn)
    dag.add(
        DagNode(
            id=answer_id,
            kind=NodeKind.ANSWER,
            label="answer",
            attrs={"turn": turn, "text": answer, "confidence": confidence,
                   "recomputed": any(b.recomputed for b in branches)},
        )
    )
    for branch in branches:
        _record_branch(dag, turn, branch, constraint_ids, answer_id)
    for conclusion in conclusions:
        cid = node_id(NodeKind.CONCLUSION, conclusion.key, turn=turn)
        dag.add(DagNode(id=cid, kind=NodeKind.CONCLUSION, label=conclusion.rule_id,
                        attrs={"turn": turn, "text": conclusion.statement, "rule_id": conclusion.rule_id}))
        inputs = [node_id(NodeKind.PREMISE, p) for p in conclusion.premise_ids]
        inputs += [node_id(NodeKind.EVIDENCE, e, turn=turn) for e in conclusion.evidence_ids]
        for dependency in inputs:
            if dependency in dag:
                dag.depend(cid, dependency)
        dag.depend(answer_id, cid)


def _record_branch(
    dag: ReasoningDag, turn: int, branch: BranchTrace, constraint_ids: Sequence[str], answer_id: str
) -> None:
    branch_id = node_id(NodeKind.BRANCH, branch.view, turn=turn)
    dag.add(
        DagNode(
            id=branch_id,
            kind=NodeKind.BRANCH,
            label=branch.view,
            attrs={"turn": turn, "view": branch.view, "text": branch.text,
                   "confidence": branch.confidence, "recomputed": branch.recomputed},
        )
    )
    inputs = [i for i in _step_inputs(branch, turn, constraint_ids) if i in dag]
    previous: str | None = None
    for step in branch.steps:
        sid = node_id(NodeKind.STEP, step.id, turn=turn)
        dag.add(
            DagNode(
                id=sid,
                kind=NodeKind.STEP,
                label=step.id,
                attrs={"turn": turn, "view": branch.view, "text": step.text,
                       "confidence": step.confidence, "recomputed": branch.recomputed},
            )
        )
        cited = [node_id(NodeKind.EVIDENCE, e, turn=turn) for e in step.evidence_ids]
        cited += [node_id(NodeKind.PREMISE, p) for p in step.premise_ids if p in branch.premise_ids]
        for dependency in [*(inputs if previous is None else [previous]), *cited]:
            if dependency in dag:
                dag.depend(sid, dependency)
        dag.depend(branch_id, sid)
        previous = sid
    for dependency in inputs:
        dag.depend(branch_id, dependency)
    dag.depend(answer_id, branch_id)
