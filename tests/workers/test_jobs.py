"""Decode jobs as plain data: the plan crosses to a worker unchanged, and routes by its prefix.

No model and no cluster: plans come from the real pipeline's planning stages
(spaCy, the constraint graph, the bundled AML domain's evidence and rules).
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from inference.pipeline import Reasoner, ReasonOptions
from inference.workers.job import DecodeJob, pack_job, unpack_job
from inference.workers.replica import WorkerConfig
from reasoning.evidence.index import OntologyIndex
from tests.conftest import load_bundled

AML = (
    "Assume the tax rate is 20%. Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on "
    "our PEP list. Should this be escalated? Answer in under 80 words and cite the rules."
)
PLAIN = "List three risks of paying suppliers in advance. Answer in under 40 words."


def _planner() -> Reasoner:
    # Planning (stages 1-4) reads no model: the reasoner's model is used only to decode.
    return Reasoner(model=None)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
async def aml_index(model_app: Any) -> OntologyIndex:
    await load_bundled(model_app, "default")
    runtime = model_app.state.runtime
    from app.services.runs import lookup_domain_index

    tenant = await _tenant_id(runtime)
    index = await lookup_domain_index(runtime, tenant, "aml")
    assert index is not None
    return index


async def _tenant_id(runtime: Any) -> str:
    from store import keys as key_store
    from store.db import transaction

    async with transaction(runtime.sessionmaker) as session:
        row = await key_store.get_or_create_tenant(session, "default")
        return str(row.id)


@pytest.mark.model
async def test_a_job_with_evidence_rules_and_a_previous_result_round_trips_exactly(
    aml_index: OntologyIndex,
) -> None:
    plan = _planner().plan(AML, options=ReasonOptions(max_new_tokens=8), domain_index=aml_index)
    assert plan.branches and plan.decision is not None and plan.premises
    job = DecodeJob(
        plan=plan, tenant="t1", session_id="s1", model_sha256="ab" * 32, index=aml_index
    )
    data = pack_job(job)
    assert isinstance(data, bytes)
    again = unpack_job(data)
    # The data crosses unchanged; the checks are bound again on the shipped index.
    assert again.plan.analysis == plan.analysis and again.plan.branches == plan.branches
    assert again.plan.decision == plan.decision and again.plan.shared_key == plan.shared_key
    assert again.plan.decode_options == plan.decode_options and again.plan.premises == plan.premises
    assert (again.tenant, again.session_id, again.model_sha256) == ("t1", "s1", "ab" * 32)
    assert plan.statement is not None and again.plan.statement is not None
    assert again.plan.statement.text == plan.statement.text
    assert again.plan.statement.sources == plan.statement.sources
    assert plan.claims is not None and again.plan.claims is not None
    denial = "This transfer should not be escalated."
    for sentence in (plan.statement.text, denial, "The weather is fine."):
        assert again.plan.statement.contradicts(sentence) == plan.statement.contradicts(sentence)
        assert again.plan.claims(sentence) == plan.claims(sentence)
    assert plan.claims(denial).contradiction  # the check is live, not a stub
    # One ontology version is unpickled once per worker and shared by its jobs.
    assert unpack_job(data).index is again.index
    with pytest.raises(ValueError, match="index"):
        pack_job(DecodeJob(plan=plan, tenant="t1"))


def test_the_affinity_follows_the_session_else_the_tenant_and_shared_prefix() -> None:
    planner = _planner()
    plan = planner.plan(PLAIN, options=ReasonOptions(max_new_tokens=8))
    same = planner.plan(PLAIN, options=ReasonOptions(max_new_tokens=8))
    other = planner.plan(
        "Why do auditors sample invoices?", options=ReasonOptions(max_new_tokens=8)
    )
    key = DecodeJob(plan=plan, tenant="t1").affinity
    assert key == DecodeJob(plan=same, tenant="t1").affinity
    assert key != DecodeJob(plan=plan, tenant="t2").affinity
    assert key != DecodeJob(plan=other, tenant="t1").affinity
    assert "supplier" not in key and "risk" not in key  # a digest, never the prompt
    in_session = DecodeJob(plan=plan, tenant="t1", session_id="s9").affinity
    assert in_session == DecodeJob(plan=other, tenant="t1", session_id="s9").affinity
    assert in_session != key


def test_a_foreign_payload_is_refused() -> None:
    with pytest.raises(msgspec.ValidationError):
        unpack_job(msgspec.msgpack.encode({"plan": "not a plan", "tenant": "t"}))


def test_the_serve_config_arguments_of_the_manifests_build_the_decoder_application() -> None:
    pytest.importorskip("ray")
    from inference.workers.ray_replica import DEPLOYMENT_NAME, build_app

    args = {
        "replicas": 1,
        "max_replicas": 4,
        "replica_cpus": 2,
        "replica_gpus": 1,
        "max_ongoing": 32,
        "max_queued": 256,
        "worker": {"model": "bundled", "device": "cuda", "weights": "bfloat16", "torch_threads": 2},
    }
    application = build_app(args)
    deployment = application._bound_deployment  # the deployment the application binds
    assert deployment.name == DEPLOYMENT_NAME
    assert deployment.max_ongoing_requests == 32 and deployment.max_queued_requests == 256
    assert deployment.ray_actor_options == {"num_cpus": 2, "num_gpus": 1}
    autoscaling = deployment._deployment_config.autoscaling_config
    assert (autoscaling.min_replicas, autoscaling.max_replicas) == (1, 4)
    assert autoscaling.target_ongoing_requests == 16
    config = msgspec.convert(deployment.init_args[0], WorkerConfig)
    assert (config.device, config.weights, config.torch_threads) == ("cuda", "bfloat16", 2)
    with pytest.raises(msgspec.ValidationError):
        build_app({"replicas": 1, "worker": {"device": 3}})
