"""Turn a ``RunRecord`` into a W3C PROV document (one bundle per run).

The document holds one bundle, ``bundle:<run id>``, so many runs can be put
side by side in one export without their records mixing. Inside the bundle:

Agents
    the service (name, version), the model (by weights file SHA-256, dtype,
    device), the tenant (``prov:Organization``) and the API key acting on its
    behalf.
Activities
    ``run:run`` (the whole run, typed by its kind), one ``run:stage/<name>``
    per timed pipeline stage, one ``run:decode/<step>`` per reasoning step,
    one ``run:prune/<n>`` per pruning decision (with its rule) and one
    ``run:reinference/<n>`` per partial re-run. All carry start and end times.
Entities
    the prompt, each constraint and premise, each ontology version used or
    produced, each evidence fact (derived from its ontology version), each
    step, each pruned candidate and the answer.

Relations: ``used``, ``wasGeneratedBy``, ``wasDerivedFrom``,
``wasAssociatedWith``, ``wasInformedBy``, ``actedOnBehalfOf`` and
``wasInvalidatedBy`` (a pruned candidate).

Identifiers: ``tenet:`` (``urn:tenet:ns#``) holds our vocabulary; ``run:``
(``urn:tenet:run:<run id>/``) the run-scoped ids; ``agent:`` and ``onto:``
ids shared across runs, so merged exports (RDF) join on the same model, tenant
and ontology version.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from urllib.parse import quote

from prov.identifier import Namespace, QualifiedName
from prov.model import PROV, PROV_TYPE, ProvBundle, ProvDocument

from reasoning.constraints.model import Verdict
from reasoning.provenance.canonical import canonical_json, sha256_hex
from reasoning.provenance.record import (
    ActivitySpan,
    OntologyArtifact,
    RunKind,
    RunRecord,
    StepTrace,
)

__all__ = [
    "AGENT",
    "BUNDLE",
    "ONTOLOGY",
    "TENET",
    "build_run_document",
    "bundle_id",
    "run_namespace",
]

TENET = Namespace("tenet", "urn:tenet:ns#")
BUNDLE = Namespace("bundle", "urn:tenet:bundle:")
AGENT = Namespace("agent", "urn:tenet:agent:")
ONTOLOGY = Namespace("onto", "urn:tenet:ontology:")

_KIND_TYPES: dict[RunKind, str] = {
    RunKind.REASON: "ReasonRun",
    RunKind.CONSTRAINTS: "ConstraintsRun",
    RunKind.REINFERENCE: "ReinferenceRun",
    RunKind.ONTOLOGY_UPLOAD: "OntologyUploadRun",
    RunKind.CHAT: "ChatRun",
}

Attributes = list[tuple[QualifiedName, object]]


def _local(text: str) -> str:
    """A string made safe as the local part of a qualified name."""
    return quote(text, safe="-_.")


def run_namespace(run_id: str, prefix: str = "run") -> Namespace:
    """The namespace of one run's records."""
    return Namespace(prefix, f"urn:tenet:run:{_local(run_id)}/")


def bundle_id(run_id: str) -> QualifiedName:
    """The qualified name of a run's bundle."""
    return BUNDLE[_local(run_id)]


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _verdict_attributes(verdicts: Sequence[Verdict]) -> Attributes:
    attributes: Attributes = []
    for verdict in verdicts:
        term = "satisfied" if verdict.satisfied else "violated"
        attributes.append((TENET[term], verdict.constraint_id))
    return attributes


class _RunGraph:
    """Builds one run's bundle; one method per kind of record, in call order."""

    def __init__(
        self, run_id: str, record: RunRecord, bundle: ProvBundle, service: tuple[str, str]
    ) -> None:
        self.run = run_namespace(run_id)
        self.record = record
        self.bundle = bundle
        self.service = AGENT[f"service/{_local(service[0])}/{_local(service[1])}"]
        self.model = (
            AGENT[f"model/{_local(record.model.sha256)}"] if record.model is not None else None
        )
        self.stages: dict[str, QualifiedName] = {}
        self.decode_of_step: dict[str, QualifiedName] = {}

    # -- agents ---------------------------------------------------------------
    def add_agents(self, service_name: str, service_version: str) -> QualifiedName:
        record = self.record
        self.bundle.agent(
            self.service,
            [
                (PROV_TYPE, PROV["SoftwareAgent"]),
                (TENET["name"], service_name),
                (TENET["version"], service_version),
            ],
        )
        if record.model is not None and self.model is not None:
            self.bundle.agent(
                self.model,
                [
                    (PROV_TYPE, PROV["SoftwareAgent"]),
                    (PROV_TYPE, TENET["LanguageModel"]),
                    (TENET["name"], record.model.name),
                    (TENET["sha256"], record.model.sha256),
                    (TENET["dtype"], record.model.dtype),
                    (TENET["device"], record.model.device),
                    (TENET["parameters"], record.model.parameters),
                ],
            )
        tenant = AGENT[f"tenant/{_local(record.tenant_id)}"]
        self.bundle.agent(
            tenant, [(PROV_TYPE, PROV["Organization"]), (TENET["tenantId"], record.tenant_id)]
        )
        if record.key_id is None:
            return tenant
        key = AGENT[f"key/{_local(record.key_id)}"]
        self.bundle.agent(key, [(PROV_TYPE, TENET["ApiKey"]), (TENET["keyId"], record.key_id)])
        self.bundle.actedOnBehalfOf(key, tenant)
        return key

    # -- the run and its stages -------------------------------------------------
    def add_run(self, client: QualifiedName) -> QualifiedName:
        record = self.record
        attributes: Attributes = [
            (PROV_TYPE, TENET[_KIND_TYPES[record.kind]]),
            (TENET["status"], record.status),
        ]
        if record.session_id is not None:
            attributes.append((TENET["sessionId"], record.session_id))
        activity = self.run["run"]
        self.bundle.activity(
            activity, _utc(record.started_at), _utc(record.finished_at), attributes
        )
        self.bundle.wasAssociatedWith(activity, self.service)
        self.bundle.wasAssociatedWith(activity, client)
        if self.model is not None:
            self.bundle.wasAssociatedWith(activity, self.model)
        return activity

    def add_stages(self, spans: Iterable[ActivitySpan], run_activity: QualifiedName) -> None:
        previous: QualifiedName | None = None
        for span in spans:
            activity = self.run[f"stage/{_local(span.name)}"]
            attributes: Attributes = [
                (PROV_TYPE, TENET["Stage"]),
                (TENET["stage"], span.name),
                (TENET["partOf"], run_activity),
            ]
            attributes += [(TENET[_local(k)], v) for k, v in sorted(span.attributes.items())]
            self.bundle.activity(activity, _utc(span.started_at), _utc(span.ended_at), attributes)
            self.bundle.wasAssociatedWith(activity, self.service)
            if previous is not None:
                self.bundle.wasInformedBy(activity, previous)
            self.stages[span.name] = activity
            previous = activity

    def stage(self, *names: str) -> QualifiedName:
        """The first recorded stage of ``names``, else the run activity itself."""
        for name in names:
            if name in self.stages:
                return self.stages[name]
        return self.run["run"]

    # -- inputs -----------------------------------------------------------------
    def add_prompt(self) -> QualifiedName | None:
        record = self.record
        if not record.prompt:
            return None
        prompt = self.run["prompt"]
        self.bundle.entity(
            prompt,
            [
                (PROV_TYPE, TENET["Prompt"]),
                (TENET["text"], record.prompt),
                (TENET["sha256"], sha256_hex(record.prompt.encode("utf-8"))),
            ],
        )
        self.bundle.used(self.run["run"], prompt)
        parse = self.stage("parse")
        if parse != self.run["run"]:
            self.bundle.used(parse, prompt)
        return prompt

    def add_constraints(self, prompt: QualifiedName | None) -> None:
        extract = self.stage("extract", "parse")
        for constraint in self.record.constraints:
            entity = self.run[f"constraint/{_local(constraint.id)}"]
            attributes: Attributes = [
                (PROV_TYPE, TENET["Constraint"]),
                (TENET["constraintId"], constraint.id),
                (TENET["kind"], str(constraint.kind)),
                (TENET["params"], canonical_json(constraint.params).decode("utf-8")),
                (TENET["hardness"], str(constraint.hardness)),
                (TENET["scope"], str(constraint.scope)),
                (TENET["origin"], str(constraint.origin)),
                (TENET["confidence"], float(constraint.confidence)),
            ]
            if constraint.source is not None:
                attributes += [
                    (TENET["sourceText"], constraint.source.text),
                    (TENET["sourceStart"], constraint.source.start),
                    (TENET["sourceEnd"], constraint.source.end),
                ]
            self.bundle.entity(entity, attributes)
            self.bundle.wasGeneratedBy(entity, extract)
            if prompt is not None and constraint.source is not None:
                self.bundle.wasDerivedFrom(entity, prompt)

    def add_premises(self, prompt: QualifiedName | None) -> None:
        extract = self.stage("extract", "parse")
        for premise in self.record.premises:
            entity = self.run[f"premise/{_local(premise.id)}"]
            attributes: Attributes = [
                (PROV_TYPE, TENET["Premise"]),
                (TENET["premiseId"], premise.id),
                (TENET["text"], premise.text),
                (TENET["topic"], premise.topic),
                (TENET["negated"], premise.negated),
                (TENET["language"], premise.language),
            ]
            if premise.value is not None:
                attributes.append((TENET["value"], premise.value))
            self.bundle.entity(entity, attributes)
            self.bundle.wasGeneratedBy(entity, extract)
            if prompt is not None:
                self.bundle.wasDerivedFrom(entity, prompt)

    def add_ontologies(self) -> dict[str, QualifiedName]:
        """Ontology version entities, keyed by version (also for facts' versions)."""
        versions: dict[str, QualifiedName] = {}
        artifacts = list(self.record.ontologies)
        known = {artifact.version for artifact in artifacts}
        for fact in self.record.evidence:
            if fact.ontology_version not in known:
                known.add(fact.ontology_version)
                artifacts.append(OntologyArtifact(version=fact.ontology_version, domain=""))
        for artifact in artifacts:
            entity = ONTOLOGY[_local(artifact.version)]
            attributes: Attributes = [
                (PROV_TYPE, TENET["OntologyVersion"]),
                (TENET["version"], artifact.version),
            ]
            if artifact.domain:
                attributes.append((TENET["domain"], artifact.domain))
            if artifact.sha256:
                attributes.append((TENET["sha256"], artifact.sha256))
            if artifact.triples is not None:
                attributes.append((TENET["triples"], artifact.triples))
            self.bundle.entity(entity, attributes)
            if artifact.generated:
                self.bundle.wasGeneratedBy(entity, self.run["run"])
            else:
                self.bundle.used(self.run["run"], entity)
            versions[artifact.version] = entity
        return versions

    def add_evidence(self, versions: dict[str, QualifiedName]) -> None:
        retrieval = self.stage("evidence")
        for fact in self.record.evidence:
            entity = self.run[f"fact/{_local(fact.id)}"]
            attributes: Attributes = [
                (PROV_TYPE, TENET["EvidenceFact"]),
                (TENET["factId"], fact.id),
                (TENET["subject"], fact.subject),
                (TENET["predicate"], fact.predicate),
                (TENET["object"], fact.object),
                (TENET["text"], fact.text),
                (TENET["view"], fact.view),
                (TENET["score"], float(fact.score)),
                (TENET["hops"], fact.hops),
                (TENET["ontologyVersion"], fact.ontology_version),
            ]
            for term, value in (
                ("modified", fact.modified),
                ("effective", fact.effective),
                ("staleHint", fact.stale_hint),
            ):
                if value is not None:
                    attributes.append((TENET[term], value))
            self.bundle.entity(entity, attributes)
            self.bundle.wasGeneratedBy(entity, retrieval)
            self.bundle.wasDerivedFrom(entity, versions[fact.ontology_version])
        if retrieval != self.run["run"]:
            for version in sorted({fact.ontology_version for fact in self.record.evidence}):
                self.bundle.used(retrieval, versions[version])

    def add_decision(self, prompt: QualifiedName | None) -> None:
        """The rule evaluation: an activity that used the case facts (spans of the
        prompt), the premises and the rules' evidence facts, and generated the conclusions.

        Read from the stored ``result["decision"]`` (the public ``decision`` of
        the run); nothing when the run had none.
        """
        decision = self.record.result.get("decision")
        if not isinstance(decision, dict):
            return
        activity = self.stage("rules")
        if activity == self.run["run"]:
            activity = self.run["rules"]
            at = _utc(self.record.started_at)
            self.bundle.activity(activity, at, at, [(PROV_TYPE, TENET["RuleEvaluation"])])
        self.bundle.wasAssociatedWith(activity, self.service)
        facts: dict[tuple[str, str, str], QualifiedName] = {}
        premise_ids = {p.id for p in self.record.premises}
        fact_ids = {f.id for f in self.record.evidence}
        for k, conclusion in enumerate(decision.get("conclusions") or [], start=1):
            entity = self.run[f"conclusion/{k}"]
            self.bundle.entity(entity, [
                (PROV_TYPE, TENET["Conclusion"]),
                (TENET["ruleId"], str(conclusion.get("rule_id", ""))),
                (TENET["action"], str(conclusion.get("action", ""))),
                (TENET["text"], str(conclusion.get("statement", ""))),
                (TENET["decisionStatus"], str(decision.get("status", ""))),
            ])
            self.bundle.wasGeneratedBy(entity, activity)
            for fact in conclusion.get("case_facts") or []:
                key = (str(fact.get("subject")), str(fact.get("predicate")), str(fact.get("object")))
                if key not in facts:
                    facts[key] = self.run[f"case-fact/{len(facts) + 1}"]
                    span = fact.get("span") or {}
                    attributes: Attributes = [
                        (PROV_TYPE, TENET["CaseFact"]),
                        (TENET["subject"], key[0]), (TENET["predicate"], key[1]), (TENET["object"], key[2]),
                    ]
                    if span:
                        attributes += [(TENET["text"], str(span.get("text", ""))),
                                       (TENET["start"], int(span.get("start", 0))),
                                       (TENET["end"], int(span.get("end", 0)))]
                    self.bundle.entity(facts[key], attributes)
                    self.bundle.used(activity, facts[key])
                    if prompt is not None and span:
                        self.bundle.wasDerivedFrom(facts[key], prompt)
                self.bundle.wasDerivedFrom(entity, facts[key])
            for pid in conclusion.get("premise_ids") or []:
                if pid in premise_ids:
                    self.bundle.used(activity, self.run[f"premise/{_local(pid)}"])
                    self.bundle.wasDerivedFrom(entity, self.run[f"premise/{_local(pid)}"])
            for fid in conclusion.get("evidence_ids") or []:
                if fid in fact_ids:
                    self.bundle.used(activity, self.run[f"fact/{_local(fid)}"])
                    self.bundle.wasDerivedFrom(entity, self.run[f"fact/{_local(fid)}"])

    # -- the decode ---------------------------------------------------------------
    def add_steps(self, prompt: QualifiedName | None) -> None:
        previous = self.stage("decode", "prefill", "evidence", "extract")
        for step in self.record.steps:
            activity = self.add_step(step, prompt)
            self.bundle.wasInformedBy(activity, previous)
            previous = activity

    def add_step(self, step: StepTrace, prompt: QualifiedName | None) -> QualifiedName:
        activity = self.run[f"decode/{_local(step.id)}"]
        entity = self.run[f"step/{_local(step.id)}"]
        self.bundle.activity(
            activity,
            _utc(step.started_at),
            _utc(step.ended_at),
            [(PROV_TYPE, TENET["DecodeStep"]), (TENET["partOf"], self.run["run"])],
        )
        if self.model is not None:
            self.bundle.wasAssociatedWith(activity, self.model)
        attributes: Attributes = [
            (PROV_TYPE, TENET["Step"]),
            (TENET["stepId"], step.id),
            (TENET["text"], step.text),
        ]
        if step.confidence is not None:
            attributes.append((TENET["confidence"], float(step.confidence)))
        if step.view is not None:
            attributes.append((TENET["view"], step.view))
        if step.calibration_hint is not None:
            attributes.append((TENET["calibrationHint"], step.calibration_hint))
        attributes += _verdict_attributes(step.verdicts)
        self.bundle.entity(entity, attributes)
        self.bundle.wasGeneratedBy(entity, activity, _utc(step.ended_at))
        if prompt is not None:
            self.bundle.used(activity, prompt)
        for kind, ids in (
            ("fact", step.evidence_ids),
            ("premise", step.premise_ids),
            ("step", step.depends_on),
        ):
            for source_id in ids:
                source = self.run[f"{kind}/{_local(source_id)}"]
                self.bundle.used(activity, source)
                self.bundle.wasDerivedFrom(entity, source)
        self.decode_of_step[step.id] = activity
        return activity

    def add_pruning(self) -> None:
        for index, decision in enumerate(self.record.pruning, start=1):
            activity = self.run[f"prune/{index}"]
            candidate = self.run[f"candidate/{index}"]
            at = _utc(decision.at)
            attributes: Attributes = [
                (PROV_TYPE, TENET["PruningDecision"]),
                (TENET["rule"], decision.rule),
                (TENET["beam"], decision.beam),
                (TENET["partOf"], self.run["run"]),
            ]
            if decision.detail:
                attributes.append((TENET["detail"], decision.detail))
            if decision.score is not None:
                attributes.append((TENET["score"], float(decision.score)))
            self.bundle.activity(activity, at, at, attributes)
            self.bundle.wasAssociatedWith(activity, self.service)
            self.bundle.entity(
                candidate,
                [(PROV_TYPE, TENET["PrunedCandidate"]), (TENET["text"], decision.text)],
            )
            producer = self.decode_of_step.get(decision.step_id or "", self.stage("decode"))
            self.bundle.wasGeneratedBy(candidate, producer)
            self.bundle.used(activity, candidate)
            self.bundle.wasInvalidatedBy(candidate, activity, at)
            self.bundle.wasInformedBy(activity, producer)
            for kind, ids in (("constraint", decision.constraint_ids), ("fact", decision.evidence_ids)):
                for source_id in ids:
                    self.bundle.used(activity, self.run[f"{kind}/{_local(source_id)}"])

    def add_reinferences(self) -> None:
        for index, rerun in enumerate(self.record.reinferences, start=1):
            activity = self.run[f"reinference/{index}"]
            attributes: Attributes = [
                (PROV_TYPE, TENET["Reinference"]),
                (TENET["partOf"], self.run["run"]),
            ]
            attributes += [(TENET["recomputed"], node) for node in rerun.recomputed]
            attributes += [(TENET["reused"], node) for node in rerun.reused]
            if rerun.saved_ms is not None:
                attributes.append((TENET["savedMs"], float(rerun.saved_ms)))
            self.bundle.activity(
                activity, _utc(rerun.started_at), _utc(rerun.ended_at), attributes
            )
            self.bundle.wasAssociatedWith(activity, self.service)
            origin = self.run
            if rerun.previous_run_id is not None:
                origin = run_namespace(rerun.previous_run_id, prefix=f"prev{index}")
                self.bundle.add_namespace(origin)
                self.bundle.activity(
                    origin["run"], other_attributes=[(TENET["runId"], rerun.previous_run_id)]
                )
                self.bundle.wasInformedBy(activity, origin["run"])
            for premise_id in rerun.retracted_premise_ids:
                premise = origin[f"premise/{_local(premise_id)}"]
                if origin is not self.run:
                    self.bundle.entity(premise, [(PROV_TYPE, TENET["Premise"])])
                self.bundle.used(activity, premise)

    def add_answer(self, prompt: QualifiedName | None) -> None:
        record = self.record
        if record.answer is None:
            return
        entity = self.run["answer"]
        attributes: Attributes = [
            (PROV_TYPE, TENET["Answer"]),
            (TENET["text"], record.answer),
            (TENET["sha256"], sha256_hex(record.answer.encode("utf-8"))),
        ]
        attributes += _verdict_attributes(record.verdicts)
        self.bundle.entity(entity, attributes)
        producer = self.stage("decode")
        if record.steps:
            producer = self.decode_of_step[record.steps[-1].id]
        self.bundle.wasGeneratedBy(entity, producer, _utc(record.finished_at))
        for step in record.steps:
            self.bundle.wasDerivedFrom(entity, self.run[f"step/{_local(step.id)}"])
        if prompt is not None:
            self.bundle.wasDerivedFrom(entity, prompt)
        verify = self.stage("verify")
        if verify != self.run["run"]:
            self.bundle.used(verify, entity)
        for constraint in record.constraints:
            self.bundle.used(producer, self.run[f"constraint/{_local(constraint.id)}"])


def build_run_document(
    run_id: str,
    record: RunRecord,
    *,
    service_version: str,
    service_name: str = "tenet",
) -> ProvDocument:
    """The PROV document of one run: a single bundle named ``bundle:<run_id>``.

    Deterministic: the same inputs give the same records, so a stored bundle
    can be rebuilt and compared.
    """
    document = ProvDocument()
    document.add_namespace(BUNDLE)
    bundle = document.bundle(bundle_id(run_id))
    graph = _RunGraph(run_id, record, bundle, (service_name, service_version))
    for namespace in (TENET, AGENT, ONTOLOGY, graph.run):
        bundle.add_namespace(namespace)
    client = graph.add_agents(service_name, service_version)
    run_activity = graph.add_run(client)
    graph.add_stages(record.activities, run_activity)
    prompt = graph.add_prompt()
    graph.add_constraints(prompt)
    graph.add_premises(prompt)
    versions = graph.add_ontologies()
    graph.add_evidence(versions)
    graph.add_decision(prompt)
    graph.add_steps(prompt)
    graph.add_pruning()
    graph.add_reinferences()
    graph.add_answer(prompt)
    return document
