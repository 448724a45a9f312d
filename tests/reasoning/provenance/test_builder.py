"""The PROV bundle of a run: agents, activities, entities and their relations."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import msgspec
from prov.model import PROV, ProvActivity, ProvBundle, ProvRecord
from prov_samples import T0, aml_record

from reasoning.provenance import (
    OntologyArtifact,
    ProvFormat,
    RunKind,
    RunRecord,
    build_run_document,
    parse,
    serialize,
)


def _bundle(record: RunRecord, run_id: str = "run-1") -> ProvBundle:
    document = build_run_document(run_id, record, service_version="1.2.3")
    [bundle] = document.bundles
    assert str(bundle.identifier) == f"bundle:{run_id}"
    return bundle


def _by_id(bundle: ProvBundle) -> dict[str, ProvRecord]:
    return {str(r.identifier): r for r in bundle.get_records() if r.identifier is not None}


def _attr(record: ProvRecord, name: str) -> set[str]:
    return {str(v) for k, v in record.attributes if str(k) == name}


def _relations(bundle: ProvBundle, kind: str) -> set[tuple[str, str]]:
    pairs = set()
    for record in bundle.get_records():
        if record.get_type().localpart == kind:
            first, second = (str(v) for _, v in record.formal_attributes[:2])
            pairs.add((first, second))
    return pairs


def test_agents_name_service_model_tenant_and_key() -> None:
    records = _by_id(_bundle(aml_record()))
    service = records["agent:service/tenet/1.2.3"]
    assert _attr(service, "tenet:version") == {"1.2.3"}
    model = records["agent:model/" + "ab" * 32]
    assert _attr(model, "tenet:sha256") == {"ab" * 32} and _attr(model, "tenet:dtype") == {"float32"}
    assert str(PROV["Organization"]) in {str(v) for v in records["agent:tenant/acme"].get_asserted_types()}
    bundle = _bundle(aml_record())
    assert ("agent:key/key-1", "agent:tenant/acme") in _relations(bundle, "Delegation")
    associated = _relations(bundle, "Association")
    assert {("run:run", "agent:service/tenet/1.2.3"), ("run:run", "agent:key/key-1")} <= associated
    assert ("run:decode/S1", "agent:model/" + "ab" * 32) in associated


def test_activities_carry_the_recorded_times_and_order() -> None:
    record = aml_record()
    bundle = _bundle(record)
    records = _by_id(bundle)
    parse_stage = records["run:stage/parse"]
    assert isinstance(parse_stage, ProvActivity)
    assert parse_stage.get_startTime() == record.activities[0].started_at
    assert parse_stage.get_endTime() == record.activities[0].ended_at
    run = records["run:run"]
    assert isinstance(run, ProvActivity)
    assert run.get_endTime() - run.get_startTime() == timedelta(milliseconds=70)
    informed = _relations(bundle, "Communication")
    assert ("run:stage/extract", "run:stage/parse") in informed
    assert ("run:decode/S2", "run:decode/S1") in informed
    assert ("run:reinference/1", "prev1:run") in informed


def test_entities_and_their_derivations() -> None:
    bundle = _bundle(aml_record())
    records = _by_id(bundle)
    assert _attr(records["run:fact/E1"], "tenet:ontologyVersion") == {"aml-v3"}
    assert _attr(records["run:constraint/C1"], "tenet:params") == {'{"n":80,"relation":"less than"}'}
    assert _attr(records["run:answer"], "tenet:violated") == {"C3"}
    derived = _relations(bundle, "Derivation")
    assert {
        ("run:fact/E1", "onto:aml-v3"),
        ("run:step/S1", "run:fact/E1"),
        ("run:step/S2", "run:premise/P1"),
        ("run:step/S2", "run:step/S1"),
        ("run:answer", "run:step/S2"),
        ("run:constraint/C1", "run:prompt"),
    } <= derived
    generated = _relations(bundle, "Generation")
    assert {("run:step/S1", "run:decode/S1"), ("run:answer", "run:decode/S2"),
            ("run:fact/E2", "run:stage/evidence"), ("run:constraint/C3", "run:stage/extract")} <= generated
    used = _relations(bundle, "Usage")
    assert {("run:stage/parse", "run:prompt"), ("run:decode/S1", "run:fact/E1"),
            ("run:reinference/1", "prev1:premise/P1"), ("run:run", "onto:aml-v3")} <= used


def test_each_pruning_decision_is_an_activity_with_its_rule() -> None:
    bundle = _bundle(aml_record())
    records = _by_id(bundle)
    assert _attr(records["run:prune/1"], "tenet:rule") == {"semantic_consistency"}
    assert _attr(records["run:prune/2"], "tenet:rule") == {"entropy_bound"}
    used = _relations(bundle, "Usage")
    assert {("run:prune/1", "run:constraint/C1"), ("run:prune/1", "run:fact/E2")} <= used
    assert ("run:candidate/1", "run:prune/1") in _relations(bundle, "Invalidation")
    assert ("run:prune/1", "run:decode/S2") in _relations(bundle, "Communication")


def test_the_bundle_is_deterministic() -> None:
    first = build_run_document("run-1", aml_record(), service_version="1.2.3")
    second = build_run_document("run-1", aml_record(), service_version="1.2.3")
    assert serialize(first, ProvFormat.JSON) == serialize(second, ProvFormat.JSON)
    assert first == second


def test_an_ontology_upload_without_prompt_model_or_key_generates_its_version() -> None:
    record = RunRecord(
        tenant_id="clinic", key_id=None, kind=RunKind.ONTOLOGY_UPLOAD, status="ok", prompt="",
        started_at=T0, finished_at=T0 + timedelta(seconds=2),
        ontologies=(OntologyArtifact(version="clin-v2", domain="clinical", sha256="ef" * 32,
                                     triples=1200, generated=True),),
    )
    bundle = _bundle(record)
    records = _by_id(bundle)
    assert "run:prompt" not in records and "run:answer" not in records
    assert ("onto:clin-v2", "run:run") in _relations(bundle, "Generation")
    assert ("run:run", "agent:tenant/clinic") in _relations(bundle, "Association")
    types = Counter(r.get_type().localpart for r in bundle.get_records())
    assert types["Agent"] == 2 and types["Activity"] == 1


def test_identifiers_with_odd_characters_survive_every_format() -> None:
    record = msgspec.structs.replace(aml_record(tenant_id="Tenant A/ü #1", key_id="k y"), reinferences=())
    document = build_run_document("run 7/ä", record, service_version="1.2.3")
    for fmt in ProvFormat:
        expected = document.flattened() if fmt is ProvFormat.TURTLE else document
        assert parse(serialize(document, fmt), fmt) == expected, fmt


def test_rule_evaluation_used_the_facts_and_generated_the_conclusions() -> None:
    record = aml_record()
    decision = {
        "status": "decided", "statement": "This case requires escalation to the MLRO (AML-R-017).",
        "conclusions": [{
            "statement": "This case requires escalation to the MLRO (AML-R-017).", "rule_id": "AML-R-017",
            "action": "https://tenet.dev/ontologies/aml#act-escalate", "evidence_ids": ["E1"],
            "case_facts": [{"subject": "<urn:tenet:case:1>", "predicate": "<urn:p>", "object": "<urn:o>",
                            "span": {"start": 43, "end": 55, "text": "our PEP list"}}],
            "premise_ids": ["P1"],
        }],
        "missing": [],
    }
    record = msgspec.structs.replace(record, result={**record.result, "decision": decision})
    bundle = _bundle(record)
    records = _by_id(bundle)
    conclusion = records["run:conclusion/1"]
    assert _attr(conclusion, "tenet:ruleId") == {"AML-R-017"}
    generated = _relations(bundle, "Generation")
    [(_, activity)] = [pair for pair in generated if pair[0] == "run:conclusion/1"]
    used = {entity for act, entity in _relations(bundle, "Usage") if act == activity}
    assert {"run:case-fact/1", "run:premise/P1", "run:fact/E1"} <= used
    derived = _relations(bundle, "Derivation")
    assert ("run:case-fact/1", "run:prompt") in derived or any(a == "run:case-fact/1" for a, _ in derived)
    assert ("run:conclusion/1", "run:case-fact/1") in derived
    # Without a decision there is no rule evaluation.
    assert not any(k.startswith("run:conclusion/") for k in _by_id(_bundle(aml_record())))
