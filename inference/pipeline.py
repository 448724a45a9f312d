"""Stages 1-6 of ``POST /v1/reason`` as one library call: the ``Reasoner``.

The reasoner plans a request (analysis, evidence, branch layout, steering),
decodes it, verifies the answer, and can re-run a plan partially: every
branch whose rendered prompt did not change is reused as it is, only the
others are decoded again. Stage 7 (record) belongs to the caller, which owns
the database.

Branch layout (what makes partial re-inference exact): the shared prefix is
the system prompt, the restated constraints and the question with its premise
sentences removed; each evidence view with facts is one branch; a premise is
shown only to the branches whose evidence it relates to (content-word overlap
between its topic and the view's facts), and the premises that relate to no
view form one more branch, ``assumptions``. So retracting a premise changes
exactly the branches that saw it; the others are token-for-token the prompts
a full re-run would decode, and are reused.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import msgspec

from inference.decisions import (
    claim_guard,
    decide,
    decision_engine,
    refusing_invented_ids,
    statement_of,
    support_basis,
    with_rule_evidence,
)
from inference.decoder.compile import branch_steerings, compile_steering
from inference.decoder.decode import BranchResult, DecodeResult, choose_answer, decode
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.options import BEAMS, NEW_TOKENS, SEEDS, DecodeOptions, Limit
from inference.decoder.pruning import ClaimGuard, SupportBasis
from inference.decoder.stream import StepEvent
from inference.decoder.token_controllers import ConstraintSteering
from inference.decoder.token_controllers.stating import Statement
from inference.loader import LoadedModel
from inference.prefix_cache import PrefixCache, PrefixScope
from inference.prompting import PromptPlan, evidence_shared, plan_prompt
from reasoning.analysis import Analysis, Status, analyse
from reasoning.budget import Budget
from reasoning.confidence import restated_confidence
from reasoning.constraints.model import Constraint, Hardness, Kind, Premise, Scope, Verdict
from reasoning.constraints.verifiers import VerifyContext, verify_all
from reasoning.errors import ConflictError, LimitExceeded
from reasoning.evidence.compact import compact_facts
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph, LinkedEntity
from reasoning.evidence.siblings import sibling_lexicon
from reasoning.evidence.subgraph import apply_time_window, build_evidence
from reasoning.evidence.terms import iri_value, is_iri, is_literal, literal_parts
from reasoning.rules.grounds import GroundDraft
from reasoning.rules.model import Decision
from reasoning.steps import Step

__all__ = [
    "ASSUMPTIONS_VIEW",
    "DIRECT_VIEW",
    "BranchSpec",
    "Plan",
    "ReasonOptions",
    "ReasonResult",
    "Reasoner",
]

ASSUMPTIONS_VIEW = "assumptions"
DIRECT_VIEW = "direct"
#: Relevance given to the assumptions branch: below any view whose evidence
#: linked to the prompt, so it only answers when nothing else does.
_ASSUMPTIONS_RELEVANCE = 0.3
_WORD = re.compile(r"[^\W\d_]{3,}|[\u4e00-\u9fff]{2,}", re.UNICODE)
#: Evidence expansion depth, and evidence prompt tokens per view, a request may ask for.
HOPS = Limit(1, 4)
EVIDENCE_TOKENS = Limit(32, 4096)


class ReasonOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Client options of a reasoning request; None means "let the budget decide".

    ``steering=False`` decodes the same model plain (greedy or beams without
    token controllers and without pruning), for comparison. The decode
    settings among them are checked against the decoder's own limits
    (``inference.decoder.options``), so an accepted request never fails the
    ``DecodeOptions`` it plans. Every other decode setting keeps its
    ``DecodeOptions`` default.

    Raises:
        InvalidInput: a value out of range (``field`` names it, e.g. ``options.num_beams``).
    """

    max_new_tokens: int | None = None
    num_beams: int | None = None
    seed: int = 0
    steering: bool = True
    hops: int | None = None
    counterfactual: bool | None = None
    evidence_token_budget: int = 384
    stream: bool = False

    def __post_init__(self) -> None:
        if self.max_new_tokens is not None:
            NEW_TOKENS.check(self.max_new_tokens, "options.max_new_tokens")
        if self.num_beams is not None:
            BEAMS.check(self.num_beams, "options.num_beams")
        if self.hops is not None:
            HOPS.check(self.hops, "options.hops")
        EVIDENCE_TOKENS.check(self.evidence_token_budget, "options.evidence_token_budget")
        SEEDS.check(self.seed, "options.seed")


class BranchSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One branch as planned: its view, evidence and the premises it was shown."""

    view: str
    relevance: float
    facts: tuple[EvidenceFact, ...]
    premise_ids: tuple[str, ...]
    premise_texts: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[object, ...]:
        """Equal keys mean equal branch prompts (given an equal shared prefix)."""
        return (self.view, tuple(f.id + f.text for f in self.facts), self.premise_ids, self.premise_texts)


@dataclass(frozen=True)
class Plan:
    """Everything decided before the first token: what each branch will see."""

    prompt: str
    question: str
    analysis: Analysis
    premises: tuple[Premise, ...]
    linked: tuple[LinkedEntity, ...]
    subgraphs: tuple[EvidenceSubgraph, ...]
    branches: tuple[BranchSpec, ...]
    decode_options: DecodeOptions
    budget: Budget
    options: ReasonOptions
    domain_version: str | None
    timings: dict[str, float] = field(default_factory=dict)
    conflict: str | None = None
    decision: Decision | None = None
    statement: Statement | None = None
    #: The decision's claim check, run by the pruning judge on every claim (steered or not).
    claims: ClaimGuard | None = None
    #: What the answer's sentences may rest on beside evidence and request (the decision, its
    #: grounds, the rule-id shapes): the pruning judge's support check (steered or not).
    basis: SupportBasis | None = None
    #: Label -> ontology class of the linked individuals and their siblings (other members of
    #: the class): the entity swaps of the counterfactual checks (``evidence.siblings``).
    entities: dict[str, str] = field(default_factory=dict)

    @property
    def language_code(self) -> str:
        """``zh`` or ``en``: the language the decision is stated in."""
        return "zh" if self.analysis.language.startswith("zh") else "en"

    @property
    def status(self) -> Status:
        return Status.NEEDS_CONFIRMATION if self.conflict or self.analysis.graph.conflicts else Status.OK

    @property
    def active_constraints(self) -> tuple[Constraint, ...]:
        return self.analysis.graph.active()

    @property
    def shared_key(self) -> tuple[object, ...]:
        """Equal keys mean every branch is decoded under the same shared inputs: the same
        question, language, active constraints, steering, decode options (seed included),
        decision, inserted decision statement and evidence every branch shows."""
        return (
            self.question,
            self.analysis.language,
            tuple((c.kind, repr(sorted(c.params.items())), c.hardness) for c in self.active_constraints),
            self.options.steering,
            self.decode_options,
            _decision_key(self.decision),
            # Inserted into every branch's answer: a branch decoded under another statement is stale.
            self.statement.text if self.statement is not None else None,
            self.statement.ground_texts if self.statement is not None else (),
            # Shown first by every evidence branch (``prompting.evidence_shared``): part of each prompt.
            tuple(f.id for f in evidence_shared([_view_of(b) for b in self.branches])),
        )


class ReasonResult(msgspec.Struct, frozen=True, kw_only=True):
    """The answer of one run and what explains it.

    ``reused`` / ``recomputed`` name branches (by view) on a partial re-run;
    on a fresh run everything is recomputed. ``decode`` is None when the run
    stopped before decoding (``needs_confirmation``). ``answer_branch`` is the
    index in ``branches`` of the branch whose text is ``answer``, chosen once
    by :func:`~inference.decoder.decode.choose_answer`; None exactly when
    there are no branches. A stored result from before the field existed gets
    it from the same rule when it is converted back.
    """

    status: Status
    answer: str
    verdicts: tuple[Verdict, ...]
    decode: DecodeResult | None
    branches: tuple[BranchResult, ...]
    branch_specs: tuple[BranchSpec, ...]
    timings: dict[str, float]
    recomputed: tuple[str, ...] = ()
    reused: tuple[str, ...] = ()
    conflict: str | None = None
    shared_key: str = ""
    answer_branch: int | None = None
    decision: Decision | None = None

    def __post_init__(self) -> None:
        if self.answer_branch is None and self.branches:
            msgspec.structs.force_setattr(self, "answer_branch", choose_answer(self.branches))

    @property
    def answer_steps(self) -> tuple[Step, ...]:
        """The answer branch's steps, in order (none when the run stopped before decoding)."""
        return () if self.answer_branch is None else self.branches[self.answer_branch].steps


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _strip_spans(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` without the given character spans (premise sentences), whitespace tidied."""
    out, last = [], 0
    for start, end in sorted(spans):
        if start >= last:
            out.append(text[last:start])
            last = end
    out.append(text[last:])
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip() or text.strip()


def _premise_sentence(analysis: Analysis, premise: Premise) -> tuple[int, int] | None:
    """The sentence span that states ``premise`` (so the shared question can drop it)."""
    if premise.source is None:
        return None
    for sentence in analysis.sentences:
        if sentence.start <= premise.source.start and premise.source.end <= sentence.end:
            return sentence.start, sentence.end
    return premise.source.start, premise.source.end


def premise_text(premise: Premise, language: str) -> str:
    """How a premise is shown to a branch: the user's own words, marked as an assumption."""
    label = "假设" if language.startswith("zh") else "Assumption"
    return f"{label} [{premise.id}]: {premise.text}"


def assign_premises(
    premises: Sequence[Premise], subgraphs: Sequence[EvidenceSubgraph]
) -> dict[str, tuple[str, ...]]:
    """Which views see which premises: topic words shared with the view's facts.

    A premise related to no view goes to ``ASSUMPTIONS_VIEW``; with no views
    at all, every premise goes to ``DIRECT_VIEW``.
    """
    if not subgraphs:
        return {DIRECT_VIEW: tuple(p.id for p in premises)}
    vocab = {g.view: _words(" ".join(f.text for f in g.facts)) for g in subgraphs}
    out: dict[str, list[str]] = {g.view: [] for g in subgraphs}
    orphans: list[str] = []
    for premise in premises:
        topic = _words(premise.topic) or _words(premise.text)
        views = [view for view, words in vocab.items() if topic & words]
        for view in views:
            out[view].append(premise.id)
        if not views:
            orphans.append(premise.id)
    if orphans:
        out[ASSUMPTIONS_VIEW] = orphans
    return {view: tuple(ids) for view, ids in out.items()}


@dataclass
class Reasoner:
    """Plans, decodes and re-runs requests on one loaded model.

    Decodes may run on several threads at once: each run keeps its state to
    itself, the prefix cache is locked, and with a ``batcher`` every model
    call goes through its one forward thread (concurrent decodes merged step
    by step). Without a batcher, callers serialise decodes on the model.
    """

    model: LoadedModel
    prefix_cache: PrefixCache | None = None
    batcher: MicroBatcher | None = None
    max_new_tokens_cap: int = 512
    today: Callable[[], date] = date.today
    #: Estimated tokens of a branch's facts besides those the decision and its grounds cite
    #: (``reasoning.evidence.compact``); None shows every fact the evidence stage chose.
    evidence_compact_tokens: int | None = 96

    def plan(
        self,
        prompt: str,
        *,
        options: ReasonOptions = ReasonOptions(),
        domain_index: OntologyIndex | None = None,
        defaults: Sequence[Constraint] = (),
        excluded_premise_ids: Sequence[str] = (),
        premise_overrides: Mapping[str, str] = {},
        extra_constraints: Sequence[Constraint] = (),
        tenant: str = "",
    ) -> Plan:
        """Stages 1-4: analysis, evidence, branch layout and decode options.

        ``excluded_premise_ids`` are retracted premises (not shown to any
        branch); ``premise_overrides`` replaces a premise's text (amendment).
        ``tenant`` scopes the extraction cache: a tenant's plan never hits
        another tenant's cached extraction (whose speed would reveal the prompt).
        """
        timings: dict[str, float] = {}
        analysis = analyse(
            prompt,
            defaults=(*defaults, *extra_constraints),
            domain_index=domain_index,
            cache_scope=tenant,
        )
        timings.update(analysis.timings)
        premises = tuple(
            msgspec.structs.replace(p, text=premise_overrides[p.id]) if p.id in premise_overrides else p
            for p in analysis.premises
            if p.id not in excluded_premise_ids
        )
        question = _strip_spans(
            prompt, [s for p in analysis.premises if (s := _premise_sentence(analysis, p)) is not None]
        )
        budget = analysis.budget
        t0 = time.perf_counter()
        linked = analysis.linked
        subgraphs: tuple[EvidenceSubgraph, ...] = ()
        if domain_index is not None:
            subgraphs = build_evidence(
                domain_index,
                linked,
                hops=options.hops or budget.evidence_hops,
                token_budget=options.evidence_token_budget,
                today=self.today(),
                lang="zh" if analysis.language.startswith("zh") else "en",
            )
            subgraphs = _within_windows(subgraphs, analysis.graph.active())
            subgraphs = tuple(g for g in subgraphs if g.facts)
        timings["evidence"] = round((time.perf_counter() - t0) * 1000, 3)
        decision: Decision | None = None
        draft: GroundDraft | None = None
        lang = "zh" if analysis.language.startswith("zh") else "en"
        if domain_index is not None:
            # Stage "rules": the case graph and the domain's decision rules give the decision;
            # the deciding rules' facts join the evidence so the answer can cite them.
            t0 = time.perf_counter()
            decision = decide(
                domain_index, prompt, premises=analysis.premises, retracted=excluded_premise_ids,
                linked=linked, today=self.today(), amended=premise_overrides,
            )
            if decision is not None:
                # The grounds are drafted once: their leads join the evidence, the statement cites them.
                draft = decision_engine(domain_index).draft_grounds(decision)
                subgraphs, decision = with_rule_evidence(
                    decision, subgraphs, domain_index, today=self.today(), lang=lang, draft=draft
                )
                subgraphs = _within_windows(subgraphs, analysis.graph.active())
            timings["rules"] = round((time.perf_counter() - t0) * 1000, 3)
        assignment = assign_premises(premises, subgraphs)
        texts = {p.id: p.text for p in premises}

        def spec(view: str, relevance: float, facts: tuple[EvidenceFact, ...]) -> BranchSpec:
            ids = assignment.get(view, ())
            return BranchSpec(
                view=view, relevance=relevance, facts=facts, premise_ids=ids,
                premise_texts=tuple(texts[i] for i in ids),
            )

        keep = _cited_by(decision)
        compact = self.evidence_compact_tokens
        branches = tuple(
            spec(g.view, g.relevance,
                 g.facts if compact is None else compact_facts(g.facts, keep=keep, token_budget=compact))
            for g in subgraphs
        )
        if ASSUMPTIONS_VIEW in assignment:
            branches += (spec(ASSUMPTIONS_VIEW, _ASSUMPTIONS_RELEVANCE, ()),)
        if not branches:
            branches = (spec(DIRECT_VIEW, 1.0, ()),)
        statement: Statement | None = None
        if decision is not None and domain_index is not None and options.steering:
            statement = statement_of(decision, domain_index, lang, _statement_ids(branches),
                                     [f for b in branches for f in b.facts], draft=draft)
        basis: SupportBasis | None = None
        if decision is not None and domain_index is not None:
            basis = support_basis(decision, domain_index, lang, statement)
            if statement is not None:
                # A rule id no shown fact, the request or the decision holds cannot be written.
                shown = [f.text for b in branches for f in b.facts]
                statement = refusing_invented_ids(statement, basis, [*shown, prompt])
        # The client's explicit limit stands; the budget's default is capped by the service.
        max_new = options.max_new_tokens or min(budget.max_new_tokens, self.max_new_tokens_cap)
        width = options.num_beams or budget.beam_width
        # The request's value wins over the budget's (``DecodeOptions.from_budget``).
        effective = Budget(
            beam_width=width,
            max_new_tokens=max_new,
            evidence_hops=options.hops or budget.evidence_hops,
            counterfactual_checks=(
                options.counterfactual if options.counterfactual is not None else budget.counterfactual_checks
            ) and options.steering,
        )
        decode_options = DecodeOptions.from_budget(effective, seed=options.seed, prune=options.steering)
        return Plan(
            prompt=prompt,
            question=question,
            analysis=analysis,
            premises=premises,
            linked=linked,
            subgraphs=subgraphs,
            branches=branches,
            decode_options=decode_options,
            budget=effective,
            options=options,
            domain_version=domain_index.version if domain_index is not None else None,
            timings=timings,
            decision=decision,
            statement=statement,
            claims=claim_guard(decision, domain_index)
            if decision is not None and domain_index is not None
            else None,
            basis=basis,
            entities=sibling_lexicon(domain_index, linked, lang=lang) if domain_index is not None else {},
        )

    def run(
        self, plan: Plan, *, tenant: str = "", on_step: Callable[[StepEvent], None] | None = None
    ) -> ReasonResult:
        """Stages 5-6 for every branch of ``plan``; ``on_step`` hears every branch's steps
        as ``StepEvent``s (``inference/decoder/stream.py``: per branch, exactly its ``steps``)."""
        return self._decode(plan, plan.branches, previous={}, tenant=tenant, on_step=on_step)

    def rerun(self, previous: ReasonResult, plan: Plan, *, tenant: str = "") -> ReasonResult:
        """Decode only the branches of ``plan`` whose prompt differs from ``previous``'s.

        A branch is reused when its ``BranchSpec.key`` equals a previous
        branch's and the shared inputs (``Plan.shared_key``: question, language,
        active constraints, decode options, decision and its statement) are
        unchanged; otherwise everything is decoded again.
        """
        old = {spec.key: result for spec, result in zip(previous.branch_specs, previous.branches)}
        if previous.status != Status.OK or previous.shared_key != repr(plan.shared_key):
            old = {}
        todo = tuple(spec for spec in plan.branches if spec.key not in old)
        reused = {spec.key: old[spec.key] for spec in plan.branches if spec.key in old}
        return self._decode(plan, todo, previous=reused, tenant=tenant)

    def _decode(
        self,
        plan: Plan,
        todo: tuple[BranchSpec, ...],
        *,
        previous: Mapping[tuple[object, ...], BranchResult],
        tenant: str,
        on_step: Callable[[StepEvent], None] | None = None,
    ) -> ReasonResult:
        timings = dict(plan.timings)
        if plan.status == Status.NEEDS_CONFIRMATION:
            return self._stopped(plan, timings, plan.conflict)
        constraints = plan.active_constraints
        lm = self.model
        steerings: list[ConstraintSteering] | None = None
        if plan.options.steering:
            try:
                steering = compile_steering(
                    [c for c in constraints if c.hardness == Hardness.HARD or c.scope == Scope.RESPONSE],
                    lm.tokenizer,
                    prompt=plan.question,
                    device=lm.device,
                    vocab_size=int(lm.model.get_output_embeddings().out_features),
                    max_new_tokens=plan.decode_options.max_new_tokens,
                    evidence_ids=[f.id for spec in plan.branches for f in spec.facts],
                    statement=plan.statement,
                )
                # Each branch cites only what its own prompt shows (its spec's facts).
                bound = branch_steerings(steering, [[f.id for f in spec.facts] for spec in plan.branches])
                by_key = {spec.key: s for spec, s in zip(plan.branches, bound)}
                steerings = [by_key[spec.key] for spec in todo]
            except (ConflictError, LimitExceeded) as exc:
                return self._stopped(plan, timings, exc.detail)
        result: DecodeResult | None = None
        decoded: dict[tuple[object, ...], BranchResult] = {}
        if todo:
            prompt_plan = self._prompt_plan(plan, todo)
            result = decode(
                lm.model,
                lm.tokenizer,
                prompt_plan,
                steering=steerings,
                options=plan.decode_options,
                constraints=constraints,
                premises=plan.premises,
                lexicon=_lexicon(plan),
                request_text=plan.question,
                prefix=self._prefix_scope(tenant),
                on_step=on_step,
                batcher=self.batcher,
                claims=plan.claims,
                basis=plan.basis,
            )
            decoded = {spec.key: branch for spec, branch in zip(todo, result.branches)}
            timings["prefill"] = round(result.timings.prefill_s * 1000, 3)
            timings["decode"] = round(result.timings.decode_s * 1000, 3)
        else:
            timings["prefill"] = timings["decode"] = 0.0
        merged = {**previous, **decoded}
        branches = tuple(merged[spec.key] for spec in plan.branches)
        if plan.statement is not None:
            branches = tuple(_restating(b, plan.statement) for b in branches)
        best = choose_answer(branches)
        answer = branches[best].text
        t0 = time.perf_counter()
        verdicts = tuple(verify_all(constraints, answer, context=_verify_context(plan)))
        timings["verify"] = round((time.perf_counter() - t0) * 1000, 3)
        return ReasonResult(
            status=Status.OK,
            answer=answer,
            verdicts=verdicts,
            decode=result,
            branches=branches,
            branch_specs=plan.branches,
            timings=timings,
            recomputed=tuple(spec.view for spec in todo),
            reused=tuple(spec.view for spec in plan.branches if spec.key in previous),
            shared_key=repr(plan.shared_key),
            answer_branch=best,
            decision=plan.decision,
        )

    def _prefix_scope(self, tenant: str) -> PrefixScope | None:
        """The tenant's prefixes of this model; None (no reuse) without a cache or a tenant."""
        if self.prefix_cache is None or not tenant:
            return None
        return PrefixScope(self.prefix_cache, tenant, self.model.identity.sha256)

    def _stopped(self, plan: Plan, timings: dict[str, float], conflict: str | None) -> ReasonResult:
        return ReasonResult(
            status=Status.NEEDS_CONFIRMATION,
            answer="",
            verdicts=(),
            decode=None,
            branches=(),
            branch_specs=plan.branches,
            timings=timings,
            conflict=conflict,
            decision=plan.decision,
        )

    def _prompt_plan(self, plan: Plan, todo: Sequence[BranchSpec]) -> PromptPlan:
        """Render the branches to decode; each sees its evidence and its premises."""
        by_id = {p.id: p for p in plan.premises}
        language = plan.analysis.language
        subgraphs = [
            EvidenceSubgraph(view=spec.view, relevance=spec.relevance, seeds=(), facts=spec.facts) for spec in todo
        ]
        notes = [
            tuple(premise_text(by_id[pid], language) for pid in spec.premise_ids if pid in by_id) for spec in todo
        ]
        return plan_prompt(
            self.model.tokenizer,
            plan.question,
            plan.active_constraints,
            subgraphs,
            language=language,
            notes=notes,
            share_evidence=plan.decode_options.shared_evidence,
        )


def _view_of(spec: BranchSpec) -> EvidenceSubgraph:
    return EvidenceSubgraph(view=spec.view, relevance=spec.relevance, seeds=(), facts=spec.facts)


def _bare(term: str) -> str:
    """A term as evidence facts write it: bare IRI, or a literal's text."""
    if is_iri(term):
        return iri_value(term)
    return literal_parts(term)[0] if is_literal(term) else term


def _cited_by(decision: Decision | None) -> Callable[[EvidenceFact], bool]:
    """Whether a fact is one the decision and its grounds may cite, so compaction keeps it:
    a fact about a rule the decision states (deciding, nearest, or decided by a missing input)
    or a fact that fired a deciding rule (a conclusion's request or ontology fact)."""
    if decision is None:
        return lambda fact: False
    rules = {c.rule_iri for c in decision.conclusions}
    if decision.nearest is not None:
        rules.add(decision.nearest.rule_iri)
    rules |= {o.rule_iri for m in decision.missing for o in m.outcomes}
    fired = {(_bare(f.subject), _bare(f.predicate), _bare(f.object)) for c in decision.conclusions
             for f in c.case_facts}
    fired |= {(_bare(f.subject), _bare(f.predicate), _bare(f.object)) for c in decision.conclusions
              for f in c.ontology_facts}
    return lambda fact: fact.subject in rules or (fact.subject, fact.predicate, _bare(fact.object)) in fired


def _within_windows(
    subgraphs: tuple[EvidenceSubgraph, ...], constraints: Sequence[Constraint]
) -> tuple[EvidenceSubgraph, ...]:
    """Drop evidence outside every citation time window the request sets."""
    for c in constraints:
        if c.kind != Kind.CITATION_TIME_WINDOW:
            continue
        before = _iso_date(c.params.get("not_before"))
        after = _iso_date(c.params.get("not_after"))
        subgraphs = apply_time_window(subgraphs, before, after)
    return subgraphs


def _iso_date(value: Any) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def _lexicon(plan: Plan) -> dict[str, str]:
    """Label -> class of the linked entities and their siblings, for counterfactual swaps
    (without a domain: each entity its own class, so none is swapped)."""
    return plan.entities or {e.label: e.iri for e in plan.linked if e.label}


def _verify_context(plan: Plan) -> VerifyContext:
    """The dates of the evidence shown, so citation windows can be checked on the answer."""
    dates = {
        f.id: dated for spec in plan.branches for f in spec.facts if (dated := f.effective or f.modified)
    }
    return VerifyContext(evidence_dates=dates)


def _statement_ids(branches: Sequence[BranchSpec]) -> list[str]:
    """The evidence ids the decision statement may cite: those every evidence branch shows.

    Branches that show no evidence (``assumptions``, premises no view relates
    to) do not narrow it: whether a premise is retracted or added must not
    change the sentence inserted into every other branch, or a partial re-run
    could not reuse any of them (``Plan.shared_key`` holds the statement).
    """
    shown = [{f.id for f in b.facts} for b in branches if b.facts]
    return sorted(set.intersection(*shown)) if shown else []


def _decision_key(decision: Decision | None) -> tuple[object, ...]:
    """Equal keys mean the same decision to state (status and concluded actions by rule)."""
    if decision is None:
        return ()
    return (decision.status, tuple((c.action, c.rule_id, c.evidence_ids) for c in decision.conclusions),
            tuple(m.input for m in decision.missing))


_UNSPELLED = re.compile(r"[\s,，]+")


def _restating(branch: BranchResult, statement: Statement) -> BranchResult:
    """``branch`` with the steps that state the decision or its grounds at full evidence support,
    each marked with its ``kind`` (``decision`` / ``grounds``) and ``support`` (the ids it cites)."""
    full = restated_confidence()

    def plain(text: str) -> str:
        # As a character policy may have spelled the statement (a letter case, no commas).
        return _UNSPELLED.sub("", text).casefold()

    decision, grounds = plain(statement.text), [plain(g) for g in statement.ground_texts]

    def kind(text: str) -> str | None:
        text = plain(text)
        if len(text) < 8:
            return None
        if text in decision:
            return "decision"
        return "grounds" if any(text in g for g in grounds) else None

    steps = tuple(
        msgspec.structs.replace(s, confidence=full.value, calibration_hint=full.hint, kind=k,
                                support=tuple(dict.fromkeys((*s.evidence_cited, *s.support))))
        if (k := kind(s.text)) is not None
        else s
        for s in branch.steps
    )
    return branch if steps == branch.steps else msgspec.structs.replace(branch, steps=steps)
