"""The three pruning rules of DESIGN.md section 6, applied at step boundaries.

``PruningJudge.judge`` is called by the beam search for every candidate that
closes a step. Rules, cheapest first:

3. entropy bound: the step's mean normalised token entropy (entropy / log V)
   exceeds ``entropy_bound`` (0.85), or the step is degenerate (repetition,
   a copy of the instructions -- the system message and the request, unless
   a constraint asks for a copy --, a phrase the answer says more often than
   its constraints ask, a one-character Chinese sentence, script
   drift, a run of digits / symbols / emoji -- ``degeneracy.py``); a step
   holding tokens the steering forced is not judged a copy (its literal may
   come from the instructions);
2. evidence chain: in a domain answer (the branch shows evidence, or the
   request has a decision of the domain's rules), every complete sentence
   of the model's is checked for support (``reasoning.rules.support``)
   against the branch's evidence facts (the deciding rules' texts among
   them), the decision and its grounds (``SupportBasis.texts``) and the
   request: rule-id-shaped tokens, dates and numbers as whole quantities,
   names (capitalised multi-word and Chinese) must be held; most of its
   content words (Chinese: character pairs) too. An unsupported step is
   pruned (and repaired); with pruning off it is kept, flagged
   (``StepFacts.supported`` False), its confidence capped with a hint
   naming what is unsupported. A sentence
   still being written is judged on what it already holds (ids, numbers,
   names before its last word), so a failure is final. A domain answer's
   complete steps are also judged for junk (fragments, a sentence broken
   off, echoes of the request or of the answer before the sentence,
   garbled script: ``degeneracy.junk``) under the entropy rule;
1. semantic consistency: the step is a complete claim that contradicts the
   decision the domain's rules gave (``claims``, the symbolic claim check of
   ``reasoning.rules.claims``: it denies a concluded action, states one that
   conflicts with it, or one no rule requires); or two or more hard
   constraints are already certainly violated by the answer so far (partial
   verification), or -- when the
   budget allows counterfactual checks and the step states a domain fact --
   the claim and its minimal variants (``reasoning.counterfactual``) are
   scored given the branch's evidence and a variant beats the claim by more
   than ``contrast_margin`` nats per token (the evidence supports a
   counterfactual and not the claim).

The claim check against the decision is cheap (a few regular expressions on
one sentence, no model), so it runs on every complete claim of every beam,
with pruning on or off (``claims_checked`` / ``claims_contradicted`` count
it); it is checked before the evidence chain, so a contradicting claim is
reported as such even when it also names an unsupported fact. With pruning
off (``steering: false``) a contradicting step is kept but carries its
violation, so its branch ranks below every branch that kept the rules
(``decode.choose_answer``).

Counterfactual scoring is rationed by ``checks.CheckScheduler``: the checks
spend at most ``counterfactual_flops_share`` of every other FLOPs the decode
counted (prefill, decode, forced runs); skipped checks are counted with their
reason, not hidden. Only steps that state a fact (``checks.states_fact``)
and are complete claims, or the answer's last text, are scored (a periodic
probe's partial step is not), once per (branch, claim), each variant on its
changed window over the beam's own row of the KV slab, the claim's
log-probabilities taken from the decode (``contrast.row_contrast``); with
pruning off they wait for the end of an answer that holds them (``ended``);
the chosen answer's unscored claims are settled after the search
(``settle_answer``).

Time spent in constraint verification is added to the search's
``check_seconds`` (with the steering's apply / advance).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import torch

from inference.decoder.beam import SearchStats, StepCheck
from inference.decoder.checks import Checked, CheckScheduler, ClaimTokens, claim_rank, states_fact
from inference.decoder.contrast import RowContext
from inference.decoder.degeneracy import (
    JunkRules,
    Said,
    answer_scripts,
    copy_grams,
    degeneracy,
    junk,
    junk_rules,
    normalised_steps,
    repeat_bound,
    said,
)
from inference.decoder.kv_slab import PrefixKV
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from reasoning.constraints.model import Constraint, Hardness, Kind, Scope, Verdict
from reasoning.counterfactual import Threshold
from reasoning.evidence.model import EvidenceFact
from reasoning.rules.support import IdShapes, Source, SupportIndex, id_shapes
from reasoning.rules.support import proper_names as _proper_names

__all__ = [
    "BranchEvidence",
    "ClaimGuard",
    "ClaimReading",
    "PruningJudge",
    "StepFacts",
    "SupportBasis",
    "domain_mentions",
    "proper_names",
    "step_states_fact",
]


@dataclass(frozen=True)
class ClaimReading:
    """What the decision's claim check found in one complete claim.

    ``contradiction``: why the claim contradicts the decision (None: it does
    not); ``restates``: it states an action the rules concluded and
    contradicts nothing (full evidence support); ``undecided``: it states an
    action the rules could not decide, and what they lack to decide it.
    """

    contradiction: str | None = None
    restates: bool = False
    undecided: str | None = None


#: The symbolic claim check of a decision, run on one complete claim.
ClaimGuard = Callable[[str], ClaimReading]

_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])\d+(?:\.\d+)?")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s")
_CITATION = re.compile(r"\[(E\d+)\]")
_WORD = re.compile(r"\w+")
_PREFIX_CACHE = 64  # answer prefixes kept (a few per live beam)
_CLAIM_END = frozenset(".!?;:\n。！？；")
_HAS_WORD = re.compile(r"[^\W\d_]", re.UNICODE)
_DEGENERATE = "degenerate step: "  # how the entropy rule names a junk step
_RULE_CLASS = "urn:tenet:rule-id"  # the class the counterfactual swaps give the ontology's rule ids
_SENTENCE_END = re.compile(r"[.!?。！？\n]")
#: Content share a sentence restating a concluded action still needs (``CONTENT_SHARE`` otherwise).
_RESTATED_SHARE = 0.4


@dataclass(frozen=True)
class SupportBasis:
    """What a domain answer rests on beside its evidence and request: the decision
    and its grounds as written (``texts``), and the ontology's rule ids, whose shapes
    (``shapes``) are derived where the basis is used: the basis travels to a model
    worker as plain data, the compiled patterns do not."""

    texts: tuple[str, ...] = ()
    rule_ids: tuple[str, ...] = ()
    #: The lines the rules compare case values with (``reasoning.rules.thresholds``): a
    #: stated number or date is contrasted with one on their other side.
    thresholds: tuple[Threshold, ...] = ()

    @cached_property
    def shapes(self) -> IdShapes:
        """The shapes of ``rule_ids`` (:func:`reasoning.rules.support.id_shapes`)."""
        return id_shapes(self.rule_ids)


@dataclass(frozen=True)
class BranchEvidence:
    """What one branch showed the model, for support and contrast."""

    view: str
    facts: tuple[EvidenceFact, ...]
    prompt_kv: PrefixKV
    prompt_len: int
    first_logprobs: torch.Tensor  # [V]

    @property
    def text(self) -> str:
        """Everything the prompt showed of the facts: id, sentence, labels and dates (lower case)."""
        return " \n ".join(
            " ".join(x for x in (f.id, f.text, f.subject, f.object, f.effective, f.modified) if x)
            for f in self.facts
        ).lower()


@dataclass(frozen=True)
class StepFacts:
    """Everything the judge measured about a step (the payload of its ``StepCheck``)."""

    text: str
    verdicts: tuple[Verdict, ...] = ()
    mentions: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    evidence_used: tuple[str, ...] = ()
    evidence_cited: tuple[str, ...] = ()
    entropy: float = 0.0
    degenerate: str | None = None
    #: Names the step states that no shown fact, label or the request holds (now part of
    #: ``unsupported``; kept empty for callers that read it).
    unnamed: tuple[str, ...] = ()
    #: The support check's verdict (None: not a domain answer's complete sentence of the model)
    #: and the evidence ids that hold the step's items, best first.
    supported: bool | None = None
    support: tuple[str, ...] = ()
    #: The ids, numbers, dates and names among ``unsupported``.
    strict: tuple[str, ...] = ()
    #: The share of its content units the sources hold (None: no content word, or not judged).
    content_share: float | None = None
    contrast: float | None = None
    contrast_kind: str | None = None
    contrast_variant: str | None = None
    contradiction: str | None = None  # why the claim contradicts the decision (``ClaimGuard``)
    restates: bool = False  # it states a concluded action (``ClaimReading.restates``)
    undecided: str | None = None  # it states an action the rules could not decide, and why


def _answer_language(constraints: Sequence[Constraint], request_language: str) -> str:
    """The language the answer must be in: a (hard first) ``response_language``'s, else the request's."""
    required = sorted(
        (c for c in constraints if c.kind == Kind.RESPONSE_LANGUAGE and c.params.get("language")),
        key=lambda c: c.hardness != Hardness.HARD,
    )
    return str(required[0].params["language"]) if required else request_language


def _complete(text: str) -> bool:
    """A step that ends a sentence or a line (a closing quote or bracket after its mark
    aside): a claim, not a periodic probe's partial text."""
    return text.rstrip(" ").rstrip("\"'”’」』)）")[-1:] in _CLAIM_END


def _plain_number(text: str) -> str:
    return text.replace(",", "")


def proper_names(text: str) -> tuple[str, ...]:
    """Names of two or more capitalised words in ``text`` (``reasoning.rules.support.proper_names``)."""
    return _proper_names(text)


def domain_mentions(text: str, labels: Sequence[str]) -> tuple[str, ...]:
    """Known labels, numbers and ISO dates stated in ``text`` (list markers excluded), in order."""
    found: list[tuple[int, str]] = []
    lowered = text.lower()
    for label in labels:
        m = re.search(rf"(?<!\w){re.escape(label.lower())}(?!\w)", lowered)
        if m:
            found.append((m.start(), label))
    skip = _LIST_MARKER.match(text)
    dates = [(m.start(), m.end()) for m in _ISO_DATE.finditer(text)]
    found.extend((a, text[a:b]) for a, b in dates)
    for m in _NUMBER.finditer(text):
        if (skip and m.start() < skip.end()) or any(a <= m.start() < b for a, b in dates):
            continue
        found.append((m.start(), m.group(0)))
    return tuple(label for _, label in sorted(found))


def step_states_fact(text: str, violation: str | None, labels: Sequence[str]) -> bool:
    """``checks.states_fact`` of a decoded step (its text and the violation it carries):
    what the judge wanted a contrast for, as a bench or a report counts it; ``labels``
    are the domain labels it may name (the lexicon's, the evidence's)."""
    junk = violation if violation is not None and violation.startswith(f"entropy: {_DEGENERATE}") else None
    return states_fact(text, domain_mentions(text, labels), junk)


@dataclass
class PruningJudge:
    """Implements ``StepJudge`` for one decode (all branches of one request).

    The rules' settings are ``options``' (``DecodeOptions``); with
    ``options.prune`` False every step is measured and reported, none pruned.

    ``language`` is the request's; the answer's language, whose scripts the
    script-drift check expects, is a ``response_language`` constraint's when
    the request sets one, else the request's.

    ``claims`` is the decision's claim check (None when the request has no
    decision): every complete claim is checked, whatever the budget.

    ``instructions`` is the text the model was told (the system message and
    the request, without evidence): a step that copies it is degenerate.
    """

    tokenizer: Any
    runner: ModelRunner
    constraints: Sequence[Constraint]
    branches: Sequence[BranchEvidence]
    options: DecodeOptions
    stats: SearchStats
    verify: Callable[..., Verdict]
    lexicon: Mapping[str, str] = field(default_factory=dict)
    request_text: str = ""
    language: str = "en"
    pad_id: int = 0
    claims: ClaimGuard | None = None
    instructions: str = ""
    basis: SupportBasis | None = None
    claims_checked: int = 0
    claims_contradicted: int = 0

    def __post_init__(self) -> None:
        self._checked = [
            c for c in self.constraints if c.hardness == Hardness.HARD and c.scope == Scope.RESPONSE
        ]
        labels = set(self.lexicon)
        for branch in self.branches:
            for fact in branch.facts:
                labels.update(
                    x
                    for x in (fact.subject, fact.object)
                    if x and not x.startswith(("http", "urn:"))
                )
        self._labels = sorted((label for label in labels if len(label) >= 3), key=len, reverse=True)
        self._label_set = frozenset(self._labels)
        self._request = self.request_text.lower()
        self._texts = [b.text for b in self.branches]
        # The counterfactual checks of this request: one per (branch, claim), within the share.
        self.checks = CheckScheduler(
            self.runner,
            self.options,
            self._ids,
            lambda ids: str(self.tokenizer.decode(list(ids), skip_special_tokens=True)),
            self.branches,
            # The ontology's rule ids are siblings too: a cited rule is contrasted with another.
            {**dict.fromkeys(self.basis.rule_ids if self.basis else (), _RULE_CLASS), **self.lexicon},
            self.pad_id,
            self.basis.thresholds if self.basis is not None else (),
        )
        self._prefixes: dict[tuple[int, ...], tuple[str, frozenset[str], Said]] = {}
        self._scripts = answer_scripts(_answer_language(self.constraints, self.language))
        copying = any(c.kind in (Kind.REPEAT_PROMPT, Kind.COPY) for c in self.constraints)
        self._instructions = frozenset() if copying else copy_grams([self.instructions])
        self._repeats = repeat_bound(self.constraints)
        self._support: dict[int, SupportIndex | None] = {}
        self._junk: dict[int, JunkRules | None] = {}

    def _domain(self, branch: int) -> bool:
        """A domain answer: the branch shows evidence, or the request has a decision."""
        shown = branch < len(self.branches) and bool(self.branches[branch].facts)
        return shown or self.basis is not None

    def support_index(self, branch: int) -> SupportIndex | None:
        """The support check of ``branch`` (None: not a domain answer), built on first use."""
        if branch not in self._support:
            index = None
            if self._domain(branch):
                basis = self.basis or SupportBasis()
                facts = self.branches[branch].facts if branch < len(self.branches) else ()
                sources = [
                    Source(
                        id=f.id,
                        text=" ".join(
                            x
                            for x in (f.text, f.subject, f.object, f.effective, f.modified)
                            if x and not x.startswith(("http", "urn:"))
                        ),
                    )
                    for f in facts
                ]
                sources += [Source(text=t) for t in (*basis.texts, self.request_text)]
                index = SupportIndex(sources, basis.shapes)
            self._support[branch] = index
        return self._support[branch]

    def _junk_rules(self, branch: int) -> JunkRules | None:
        if branch not in self._junk:
            rules = None
            if self._domain(branch):
                view = self.branches[branch].view if branch < len(self.branches) else ""
                headings = (f"Evidence ({view}):", f"证据 ({view}):", "Evidence", "证据")
                reference = " ".join(
                    (*self._texts[branch : branch + 1], *(self.basis.texts if self.basis else ()))
                )
                rules = junk_rules(self.request_text, headings, reference)
            self._junk[branch] = rules
        return self._junk[branch]

    def judge(
        self,
        branch: int,
        tokens: Sequence[int],
        start: int,
        end: int,
        entropies: Sequence[float],
        final: bool,
        forced: Sequence[bool] = (),
        logprobs: Sequence[float] = (),
        context: RowContext | None = None,
    ) -> StepCheck:
        text = self.tokenizer.decode(list(tokens[start:end]), skip_special_tokens=True)
        free = [k for k in range(start, end) if not (k < len(forced) and forced[k])]
        facts = self._measure(branch, tokens, start, end, entropies, text, free)
        # Pruning off, a contrast only informs the step's confidence: it waits for the beam's end.
        deferrable = not self.options.prune
        claim = ClaimTokens(tokens, start, end, logprobs, context, deferrable)
        # The step the token limit ends is the answer's last text: a claim, complete or not
        # (with pruning on it is judged as it was: the budget's end rolls it back or keeps it).
        last = final or (not self.options.prune and end >= self.options.max_new_tokens)
        rule, detail, facts = self._rule(branch, facts, final, chosen=bool(free), claim=claim, last=last)
        if rule is not None and (final or not self.options.prune):
            facts = self._informed(branch, facts, last, claim)  # kept flagged: its contrast informs
        # A claim of a domain answer that cannot be repaired is left out: the answer ends before it.
        droppable = rule is not None and self._domain(branch)
        if rule is not None and self.options.prune and not final:
            return StepCheck(keep=False, rule=rule, detail=detail, payload=facts, droppable=droppable)
        # With pruning on, a final step (the budget's) the answer does not need is left out.
        return StepCheck(
            keep=True, rule=rule, detail=detail, payload=facts, droppable=droppable and self.options.prune
        )

    def ended(
        self, branch: int, tokens: Sequence[int], context: RowContext | None = None
    ) -> None:
        """A beam of ``branch`` ended with the answer ``tokens`` on the row ``context``: the
        contrasts its claims still wait for are scored now, while the row holds them."""
        if self.options.counterfactual_checks and context is not None:
            self.checks.ended(branch, tokens, context)

    def _measure(
        self,
        branch: int,
        tokens: Sequence[int],
        start: int,
        end: int,
        entropies: Sequence[float],
        text: str,
        free: Sequence[int],
    ) -> StepFacts:
        """Measure the step; the entropy rule sees only the ``free`` tokens (those the model chose).

        A token the steering forced (a layout literal, the only token a
        grammar allows) says nothing about the model's state, and a step made
        only of forced tokens cannot be degenerate: pruning it could only cut
        the structure the hard constraints require.
        """
        ents = [entropies[k] for k in free if k < len(entropies)]
        mean_entropy = sum(ents) / len(ents) if ents else 0.0
        earlier, earlier_steps, before = self._earlier(tokens, start)
        own = [tokens[k] for k in free]
        degenerate = (
            degeneracy(
                text,
                own,
                earlier_steps,
                self._scripts,
                self._instructions,
                before,
                self._repeats,
                # Forced tokens are never a copy: the copy rule judges the model's own text.
                None
                if len(free) == end - start or not self._instructions
                else self.tokenizer.decode(own, skip_special_tokens=True),
            )
            if free
            else None
        )
        # A sentence longer than a step (cut at ``max_step_tokens``) is judged whole where it ends.
        sentence = text
        if _complete(text):
            ends = list(_SENTENCE_END.finditer(earlier))
            opens = ends[-1].end() if ends else 0
            sentence = earlier[opens:] + text
            rules = self._junk_rules(branch)
            # A sentence the rules stated (the decision, a ground) is theirs, whoever closed it.
            stated = self.basis is not None and any(sentence.strip() in t for t in self.basis.texts)
            if degenerate is None and free and rules is not None and not stated:
                # The model's own sentence must not restate the answer before it; a step the
                # steering forced tokens into (a stated decision or ground) is the rules' own.
                own_step = len(free) == end - start
                degenerate = junk(sentence, rules, earlier[:opens] if own_step else "")
        mentions = domain_mentions(text, self._labels)
        index = self.support_index(branch) if free else None
        verdict = (
            index.check(
                sentence.strip(),
                complete=_complete(text),
                terms=[m for m in mentions if m in self._label_set],
            )
            if index is not None
            else None
        )
        unsupported = verdict.unsupported if verdict is not None else ()
        if degenerate is None and verdict is not None and verdict.empty and _HAS_WORD.search(text):
            degenerate = "junk: the step states nothing its evidence could hold"
        used = self._evidence_used(branch, mentions, text)
        t0 = time.perf_counter()
        verdicts = tuple(self.verify(c, earlier + text, partial=True) for c in self._checked)
        self.stats.check_seconds += time.perf_counter() - t0
        return StepFacts(
            text=text,
            verdicts=verdicts,
            mentions=mentions,
            unsupported=unsupported,
            evidence_used=used,
            evidence_cited=tuple(dict.fromkeys(_CITATION.findall(text))),
            entropy=mean_entropy,
            degenerate=degenerate,
            supported=verdict.supported if verdict is not None else None,
            support=verdict.support if verdict is not None else (),
            strict=verdict.strict if verdict is not None else (),
            content_share=verdict.content_share if verdict is not None else None,
        )

    def _earlier(self, tokens: Sequence[int], start: int) -> tuple[str, frozenset[str], Said]:
        """The answer before the step, as text, as normalised steps and as the
        phrases it holds (cached per prefix).

        Every candidate of a beam, and every probe of its pending step, shares
        the text before the step; decoding and splitting it once per prefix
        keeps the judge's cost from growing with the answer's length.
        """
        key = tuple(tokens[:start])
        hit = self._prefixes.get(key)
        if hit is None:
            earlier = self.tokenizer.decode(list(key), skip_special_tokens=True)
            steps = [s for s in re.split(r"(?<=[.!?。！？])\s+|\n+", earlier) if s.strip()]
            hit = (earlier, normalised_steps(steps), said(earlier))
            if len(self._prefixes) >= _PREFIX_CACHE:
                self._prefixes.pop(next(iter(self._prefixes)))
            self._prefixes[key] = hit
        return hit

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _evidence_used(self, branch: int, mentions: Sequence[str], text: str) -> tuple[str, ...]:
        if branch >= len(self.branches):
            return ()
        words = {w for w in _WORD.findall(text.lower()) if len(w) > 3}
        used = []
        for fact in self.branches[branch].facts:
            fact_text = fact.text.lower()
            shared = sum(1 for w in words if w in fact_text)
            if shared >= 2 or any(m.lower() in fact_text for m in mentions):
                used.append(fact.id)
        return tuple(used)

    def _rule(
        self,
        branch: int,
        facts: StepFacts,
        final: bool = False,
        *,
        chosen: bool = True,
        claim: ClaimTokens | None = None,
        last: bool = False,
    ) -> tuple[str | None, str, StepFacts]:
        """The first rule the step breaks (entropy, evidence, semantic), its reason, the facts.

        ``chosen`` is False for a step made only of tokens the steering forced
        (the inserted decision statement itself): the claim check has nothing
        of the model's to judge there. ``last``: the step is the answer's last
        text (``final``, or the token limit cut it): its facts get their
        contrast even when it is no complete sentence.
        """
        if facts.entropy > self.options.entropy_bound:
            return (
                "entropy",
                f"mean normalised entropy {facts.entropy:.2f} > {self.options.entropy_bound}",
                facts,
            )
        if facts.degenerate:
            return "entropy", f"{_DEGENERATE}{facts.degenerate}", facts
        if (
            self.claims is not None
            and chosen
            and (final or _complete(facts.text))
            and _HAS_WORD.search(facts.text)
        ):
            self.claims_checked += 1
            reading = self.claims(facts.text.strip())
            facts = replace(
                facts,
                contradiction=reading.contradiction,
                restates=reading.restates,
                undecided=reading.undecided,
            )
            if reading.contradiction is not None:
                self.claims_contradicted += 1
                return "semantic", f"contradicts the decision: {reading.contradiction}", facts
        has_evidence = branch < len(self.branches) and bool(self.branches[branch].facts)
        if (
            facts.supported is False
            and facts.restates
            and not facts.strict
            and (facts.content_share is None or facts.content_share >= _RESTATED_SHARE)
        ):
            # It states what the rules concluded: the decision holds its words; only its
            # ids, numbers, dates and names still need a source, and a fair part of its
            # content (a concluded action named amid claims no source holds is no restatement:
            # '以上是阿克米的上报。').
            facts = replace(facts, supported=True, unsupported=())
        if facts.supported is False:
            detail = "unsupported: no evidence, rule, decision or request holds " + ", ".join(
                repr(m) for m in facts.unsupported[:4]
            )
            return "evidence", detail, facts
        violated = [v for v in facts.verdicts if not v.satisfied and v.certain]
        if len(violated) >= self.options.min_violations:
            return "semantic", "violates " + ", ".join(v.constraint_id for v in violated), facts
        if (
            has_evidence
            and self.options.counterfactual_checks
            and states_fact(facts.text, facts.mentions, facts.degenerate)
            and (final or last or _complete(facts.text))
        ):
            rule, detail, facts = self._contradiction(branch, facts, claim)
            # A step the steering wrote whole (the decision, its grounds) is the rules' own
            # statement: its contrast informs its confidence, it is no reason to prune it.
            return (rule, detail, facts) if chosen else (None, "", facts)
        return None, "", facts

    @property
    def counterfactual_scored(self) -> int:
        """Distinct claims (per branch) whose contrast was scored."""
        return self.checks.scored

    @property
    def counterfactual_skipped(self) -> int:
        """Distinct claims (per branch) that wanted a contrast and have none."""
        return self.checks.skipped

    @property
    def counterfactual_reused(self) -> int:
        """Meetings of a claim answered by its contrast already scored."""
        return self.checks.reused

    def _informed(
        self, branch: int, facts: StepFacts, final: bool, claim: ClaimTokens | None
    ) -> StepFacts:
        """A step another rule flagged but the answer keeps (pruning off, or the last step)
        still states its facts: it gets its contrast (for its confidence), not a second rule."""
        if (
            facts.contrast is None
            and states_fact(facts.text, facts.mentions, facts.degenerate)
            and self.options.counterfactual_checks
            and branch < len(self.branches)
            and self.branches[branch].facts
            and (final or _complete(facts.text))
        ):
            facts = self._contradiction(branch, facts, claim)[2]
        return facts

    def _contradiction(
        self, branch: int, facts: StepFacts, claim: ClaimTokens | None = None
    ) -> tuple[str | None, str, StepFacts]:
        checked = self.checks.check(branch, facts.text, claim)
        return self._contrasted(facts, checked)

    def _contrasted(
        self, facts: StepFacts, checked: Checked | None
    ) -> tuple[str | None, str, StepFacts]:
        if checked is None:
            return None, "", facts
        variant = checked.variant
        facts = replace(
            facts,
            contrast=checked.value,
            contrast_kind=variant.kind,
            contrast_variant=variant.text,
        )
        if checked.value < -self.options.contrast_margin:
            detail = (
                f"the evidence favours the {variant.kind} variant {variant.text!r}"
                f" ({checked.value:.2f} nats/token)"
            )
            return "semantic", detail, facts
        return None, "", facts

    def settle(self, branch: int, check: StepCheck) -> StepCheck:
        """A step of the chosen answer, given the contrast its own check lacked.

        A claim of a branch with evidence that states a domain fact and has
        no contrast (its check was skipped for budget, or an earlier
        rule flagged it while pruning was off, so it stayed in the answer)
        takes the contrast another beam's check computed for the same claim,
        else one scored now with what is left of the share. A variant that
        beats it flags the step (``semantic``) unless another rule already did.
        """
        facts = check.payload
        if (
            not isinstance(facts, StepFacts)
            or facts.contrast is not None
            or not states_fact(facts.text, facts.mentions, facts.degenerate)
            or not self.options.counterfactual_checks
            or branch >= len(self.branches)
            or not self.branches[branch].facts
        ):
            return check
        rule, detail, facts = self._contrasted(facts, self.checks.settle(branch, facts.text))
        if check.rule is None and rule is not None:
            return replace(check, rule=rule, detail=detail, payload=facts)
        return replace(check, payload=facts)

    def settle_answer(self, branch: int, checks: Sequence[StepCheck]) -> list[StepCheck]:
        """``settle`` every step of the chosen answer, the most informative claims first
        (``checks.claim_rank``: facts the decision relies on, numbers and dates, entities),
        so what is left of the share goes to them."""
        relied = domain_mentions(" ".join(self.basis.texts), self._labels) if self.basis else ()
        texts = [c.payload.text if isinstance(c.payload, StepFacts) else "" for c in checks]
        out = list(checks)
        for i in sorted(range(len(checks)), key=lambda i: (claim_rank(texts[i], relied), i)):
            out[i] = self.settle(branch, checks[i])
        return out
