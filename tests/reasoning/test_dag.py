"""The session reasoning DAG: edges as the decode happened, descendants, exports."""

from __future__ import annotations

import json

import pytest
from rdflib import Graph, URIRef
from rdflib.namespace import RDF

from reasoning.constraints.model import Constraint, Kind, Premise, Relation
from reasoning.dag import (
    DAG,
    BranchTrace,
    ConclusionTrace,
    DagNode,
    DagStep,
    NodeKind,
    ReasoningDag,
    node_id,
    record_turn,
)
from reasoning.errors import InvalidInput, NotFound
from reasoning.evidence.model import EvidenceFact

BASE = "urn:tenet:session:s1/"


def _fact(fid: str, view: str) -> EvidenceFact:
    return EvidenceFact(
        id=fid, subject="ex:a", predicate="ex:p", object="ex:b", text=f"fact {fid}",
        view=view, score=1.0, hops=1, ontology_version="v1",
    )


PREMISES = (
    Premise(id="P1", text="Assume the tax rate is 20%.", topic="tax rate", value="20%"),
    Premise(id="P2", text="Given that Jon Doe is a PEP.", topic="PEP", value=None),
    Premise(id="P3", text="Assume the weather is fine.", topic="weather", value="fine"),
)
CONSTRAINTS = (
    Constraint(id="C1", kind=Kind.WORD_COUNT, params={"relation": Relation.LESS_THAN, "n": 80}),
)
EVIDENCE = (_fact("E1", "compliance"), _fact("E2", "fund_flow"))


def _branches() -> tuple[BranchTrace, ...]:
    return (
        BranchTrace(
            view="compliance", premise_ids=("P2",), evidence_ids=("E1",),
            steps=(
                DagStep(id="compliance.1", text="PEPs need review.", confidence=0.8,
                          evidence_ids=("E1",), premise_ids=("P2",)),
                DagStep(id="compliance.2", text="Escalate.", confidence=0.7),
            ),
        ),
        BranchTrace(
            view="assumptions", premise_ids=("P1",), evidence_ids=(),
            steps=(DagStep(id="assumptions.1", text="Tax is 20%.", confidence=0.6),),
        ),
        BranchTrace(
            view="fund_flow", premise_ids=(), evidence_ids=("E2",),
            steps=(DagStep(id="fund_flow.1", text="EUR 2m moved.", confidence=0.9,
                             evidence_ids=("E2",)),),
        ),
    )


@pytest.fixture
def dag() -> ReasoningDag:
    d = ReasoningDag()
    record_turn(d, turn=1, premises=PREMISES, constraints=CONSTRAINTS, evidence=EVIDENCE,
                branches=_branches(), answer="Escalate it.", confidence=0.7)
    return d


def test_descendants_of_a_premise_are_the_branch_that_used_it_and_the_answer(dag: ReasoningDag) -> None:
    got = dag.descendants("premise:P1")
    assert got == {"t1:step:assumptions.1", "t1:branch:assumptions", "t1:answer:answer"}


def test_a_premise_no_branch_received_has_no_descendants(dag: ReasoningDag) -> None:
    assert "premise:P3" in dag
    assert dag.descendants("premise:P3") == frozenset()


def test_later_steps_depend_on_earlier_steps_of_their_branch(dag: ReasoningDag) -> None:
    assert dag.dependencies("t1:step:compliance.2") == {"t1:step:compliance.1"}
    assert "t1:step:compliance.2" in dag.descendants("premise:P2")
    assert dag.dependencies("t1:answer:answer") == {
        "t1:branch:compliance", "t1:branch:assumptions", "t1:branch:fund_flow"
    }


def test_constraints_reach_every_branch(dag: ReasoningDag) -> None:
    assert {n for n in dag.descendants("t1:constraint:C1") if ":branch:" in n} == {
        "t1:branch:compliance", "t1:branch:assumptions", "t1:branch:fund_flow"
    }


def test_recording_a_turn_again_drops_edges_to_a_retracted_premise(dag: ReasoningDag) -> None:
    branches = tuple(b for b in _branches() if b.view != "assumptions")
    record_turn(dag, turn=1, premises=PREMISES, constraints=CONSTRAINTS, evidence=EVIDENCE,
                branches=branches, answer="Escalate.", premise_status={"P1": "retracted"})
    assert dag.descendants("premise:P1") == frozenset()
    assert dag.node("premise:P1").attrs["status"] == "retracted"
    assert "t1:branch:assumptions" not in dag
    assert "t1:step:assumptions.1" not in dag


def test_turns_are_namespaced(dag: ReasoningDag) -> None:
    record_turn(dag, turn=2, premises=(), constraints=(), evidence=(_fact("E1", "compliance"),),
                branches=(BranchTrace(view="compliance", premise_ids=(), evidence_ids=("E1",),
                                      steps=()),), answer="ok")
    assert "t1:evidence:E1" in dag and "t2:evidence:E1" in dag
    assert dag.dependencies("t2:branch:compliance") == {"t2:evidence:E1"}
    assert dag.turn_nodes(2) == {"t2:evidence:E1", "t2:branch:compliance", "t2:answer:answer"}


def test_node_link_round_trip_is_exact(dag: ReasoningDag) -> None:
    data = dag.to_node_link()
    encoded = json.dumps(data, sort_keys=True)
    back = ReasoningDag.from_node_link(json.loads(encoded))
    assert json.dumps(back.to_node_link(), sort_keys=True) == encoded
    assert back.descendants("premise:P2") == dag.descendants("premise:P2")


def test_turtle_and_jsonld_exports_parse_back_with_the_same_edges(dag: ReasoningDag) -> None:
    turtle = Graph().parse(data=dag.to_turtle(BASE), format="turtle")
    jsonld = Graph().parse(data=dag.to_jsonld(BASE), format="json-ld")
    for g in (turtle, jsonld):
        edges = {(str(s), str(o)) for s, o in g.subject_objects(DAG.dependsOn)}
        assert len(edges) == len(dag.edges())
        assert (BASE + "t1:branch:assumptions", BASE + "premise:P1") in edges
        assert (URIRef(BASE + "premise:P1"), RDF.type, DAG.Premise) in g


def test_update_merges_attributes(dag: ReasoningDag) -> None:
    node = dag.update("t1:constraint:C1", weight=2.0, priority=3)
    assert node.attrs["weight"] == 2.0 and node.attrs["priority"] == 3
    assert node.attrs["kind"] == "word_count"


@pytest.mark.parametrize(
    ("dependent", "dependency", "error"),
    [
        ("t1:answer:answer", "nope", NotFound),
        ("premise:P1", "t1:answer:answer", InvalidInput),
        ("premise:P1", "premise:P1", InvalidInput),
    ],
)
def test_bad_edges_are_refused(dag: ReasoningDag, dependent: str, dependency: str,
                               error: type[Exception]) -> None:
    with pytest.raises(error):
        dag.depend(dependent, dependency)


@pytest.mark.parametrize(
    ("kind", "key", "turn"),
    [(NodeKind.PREMISE, "P1", 1), (NodeKind.STEP, "s1", None), ("unknown", "x", 1)],
)
def test_bad_node_ids_are_refused(kind: str, key: str, turn: int | None) -> None:
    with pytest.raises(InvalidInput):
        node_id(kind, key, turn=turn)


def test_malformed_document_is_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        ReasoningDag.from_node_link({"nodes": [{"id": "x", "kind": "planet"}]})


def test_unknown_node_is_not_found() -> None:
    d = ReasoningDag()
    d.add(DagNode(id="premise:P9", kind=NodeKind.PREMISE, label="x"))
    with pytest.raises(NotFound):
        d.descendants("premise:P0")


def test_a_conclusion_is_a_node_over_its_premises_and_rule_evidence() -> None:
    d = ReasoningDag()
    escalate = ConclusionTrace(key="AML-R-017/act-escalate", statement="This case requires escalation.",
                               rule_id="AML-R-017", premise_ids=("P2",), evidence_ids=("E1",))
    record_turn(d, turn=1, premises=PREMISES, constraints=CONSTRAINTS, evidence=EVIDENCE,
                branches=_branches(), answer="Escalate it.", conclusions=(escalate,))
    cid = node_id(NodeKind.CONCLUSION, "AML-R-017/act-escalate", turn=1)
    assert d.node(cid).label == "AML-R-017"
    assert d.dependencies(cid) == {node_id(NodeKind.PREMISE, "P2"), node_id(NodeKind.EVIDENCE, "E1", turn=1)}
    assert cid in d.descendants(node_id(NodeKind.PREMISE, "P2"))
    assert cid not in d.descendants(node_id(NodeKind.PREMISE, "P1"))
    assert node_id(NodeKind.ANSWER, "answer", turn=1) in d.dependents(cid)
    # Recorded again after the premise was retracted, the conclusion is gone with it.
    record_turn(d, turn=1, premises=PREMISES, constraints=CONSTRAINTS, evidence=EVIDENCE,
                branches=_branches(), answer="No action is required.", premise_status={"P2": "retracted"})
    assert cid not in d
    assert ReasoningDag.from_node_link(d.to_node_link()).to_node_link() == d.to_node_link()


def test_every_node_kind_exports_to_rdf_as_a_class_of_the_dag_vocabulary() -> None:
    """A node kind without an RDF class would make the session graph's Turtle export fail."""
    from pathlib import Path

    from reasoning.dag import DagNode, NodeKind

    vocabulary = Graph().parse(Path(__file__).parents[2] / "ontologies" / "reasoning-dag.ttl")
    dag = ReasoningDag()
    for kind in NodeKind:
        dag.add(DagNode(id=f"n-{kind.value}", kind=kind, label=kind.value))
    turtle = Graph().parse(data=dag.to_turtle(BASE), format="turtle")
    classes = {o for o in turtle.objects(None, RDF.type)}
    for cls in classes:
        if str(cls).startswith("https://w3id.org/tenet/dag#"):
            assert (cls, RDF.type, None) in vocabulary, cls
    assert len([c for c in classes if str(c).startswith("https://w3id.org/tenet/dag#")]) == len(NodeKind)
