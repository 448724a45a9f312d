"""Compile a request's constraints into the token controllers of its decode.

``compile_steering`` reads the active constraints and builds one
``ConstraintSteering``: a character policy, a layout of literal / free /
formal segments, counted bounds and forbidden words. It also says which
constraints it *controls* (their violation is impossible within the token
budget), which it only *assists* (a bias, a script mask for a language that
shares its script with others) and which it leaves to the prompt
(``uncontrolled``: a capital-word maximum, evidence rules, a keyword minimum
in a formal answer).

The shared stages run first (the form lowered to named kinds, the character
policy, the counted bounds, the layout, citations, keywords, capital words:
``compile.lowering``, ``stages``, ``layout``, ``structure``), then every
family's compile step in the registry's compile order
(``token_controllers.registry.compile_steps``) over one ``CompileContext``, then the
final refusals (``compile.checks``). The composer builds the controllers from
the specs in the registry's own order (``token_controllers.registry.FAMILIES``).

Contradictions that no decode can satisfy are refused before decoding with
``ConflictError`` (``extra["constraint_ids"]`` names them), e.g. all-lowercase
with all-capitals, an end phrase with a comma under no-comma, a JSON answer
with bullets, a minimum word count above the maximum; a token budget too
small for a minimum raises ``LimitExceeded``. The pipeline answers both with
``needs_confirmation`` instead of a silent violation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from inference.decoder.compile.checks import (
    check_forbidden_literals,
    check_keywords,
    check_limits,
    check_literals,
    check_sentences,
)
from inference.decoder.compile.context import CompileContext, conflict
from inference.decoder.compile.forms import form_of_constraint, placed_against
from inference.decoder.compile.layout import form_layout, form_paragraph_words, named_layout
from inference.decoder.compile.lowering import lower_forms
from inference.decoder.compile.stages import (
    compile_capitals,
    compile_citations,
    compile_counts,
    compile_keywords,
    compile_policy,
)
from inference.decoder.compile.structure import lower_structures, structure_layout
from inference.decoder.token_controllers.charset import CharPolicy, SoftPolicy
from inference.decoder.token_controllers.citing import Citations
from inference.decoder.token_controllers.count_tallies import Limits
from inference.decoder.token_controllers.openings import Opening
from inference.decoder.token_controllers.placing import Placement
from inference.decoder.token_controllers.registry import compile_steps
from inference.decoder.token_controllers.steering import ConstraintSteering
from inference.decoder.token_controllers.template import Layout, build_layout
from inference.decoder.vocab import vocab_tables
from reasoning.constraints.catalog import CATALOG
from reasoning.constraints.form.model import Position
from reasoning.constraints.model import Constraint, Hardness, Kind, Scope
from reasoning.errors import LimitExceeded

__all__ = [
    "CONTROLLED_KINDS",
    "IDENTIFIABLE_WORDS",
    "branch_steerings",
    "compile_steering",
]

# Kinds with a token controller, as the catalog declares them (its
# ``controllable`` flags are the one source of truth; some kinds are controlled
# only for certain parameters, see ``ConstraintSteering.controlled`` for what a
# given request got). A test compiles every one of them.
CONTROLLED_KINDS: frozenset[Kind] = frozenset(kind for kind, spec in CATALOG.items() if spec.controllable)


#: The fewest words a statistical language identifier (n-gram profiles, as in
#: langdetect or lingua) names reliably. Shorter answers are misread, and
#: all-capital ones worst: "THE LAW IS NOT ALLOWABLE." reads as Vietnamese.
IDENTIFIABLE_WORDS = 20


def compile_steering(
    constraints: Sequence[Constraint],
    tokenizer: Any,
    *,
    prompt: str,
    device: torch.device | str = "cpu",
    vocab_size: int | None = None,
    max_new_tokens: int | None = None,
    evidence_ids: Sequence[str] = (),
    statement: Any = None,
) -> ConstraintSteering:
    """The steering for ``constraints`` (hard ones masked, soft static ones biased).

    ``prompt`` is the user's request (the text ``repeat_prompt`` repeats when
    its parameter is missing); ``device`` and ``vocab_size`` are the model's;
    ``max_new_tokens`` lets the controllers close the structure (end phrase,
    closing quote) before the budget ends; without it they cannot.
    ``evidence_ids`` are the ids of the evidence facts the prompt shows
    (``E1``, ``E2``, ...): with them a hard ``cite_sources`` constraint is
    controlled (the answer cites that many distinct shown facts, chosen by
    the model); without them it is left to the prompt and the verifier.
    For a decode of several evidence branches pass the ids of all of them
    and bind each branch to its own with ``branch_steerings``.
    ``statement`` (a ``token_controllers.stating.Statement``) is the decision the
    answer must state and may not contradict (the rules stage's).

    Example::

        steering = compile_steering([Constraint(id="c1", kind=Kind.NO_COMMA)],
                                    tokenizer, prompt="Describe Paris.")
        state = steering.initial_state()
    """
    tables = vocab_tables(tokenizer, device, vocab_size)
    active = [c for c in constraints if c.scope == Scope.RESPONSE]
    hard = lower_forms(lower_structures([c for c in active if c.hardness == Hardness.HARD]))
    soft = [c for c in active if c.hardness == Hardness.SOFT]
    controlled: set[str] = set()
    assisted: set[str] = set()
    uncontrolled: set[str] = {c.id for c in constraints if c.scope != Scope.RESPONSE}

    policy, policy_sources = compile_policy(hard, controlled, assisted)
    soft_policy, _ = compile_policy(soft, assisted, set())
    for c in soft:
        if c.id not in assisted:
            uncontrolled.add(c.id)

    limits, forbidden = compile_counts(hard, controlled, assisted)
    layout, literal_sources = named_layout(hard, prompt, policy, controlled, uncontrolled)
    layout = structure_layout(hard, layout, policy=policy, limits=limits, tables=tables,
                              max_new_tokens=max_new_tokens, controlled=controlled, sources=literal_sources)
    layout = form_layout(hard, layout, controlled)
    form_paragraph_words(hard, layout, controlled)
    limits = _identifiable(limits, policy, layout, max_new_tokens)
    citations = compile_citations(constraints, evidence_ids, layout, policy, policy_sources, controlled, uncontrolled)
    keywords = compile_keywords(hard, layout, policy, policy_sources, forbidden, controlled)
    capitals = compile_capitals(hard, layout, policy, policy_sources, limits, controlled)
    inserts = citations is not None or statement is not None  # text of their own in the body
    ctx = CompileContext(hard, layout, controlled, assisted, max_new_tokens, inserts)
    for family in compile_steps():
        assert family.compile is not None  # compile_steps holds only families with a step
        ctx.compiled[family.name] = family.compile(ctx)
    _withdraw_unkept_places(ctx)
    placement: Placement | None = ctx.compiled["placement"]
    opening: Opening | None = ctx.compiled["opening"]
    if placement is not None and policy.active:
        # Its tokens are forced: the character policy must allow every one of them.
        allowed = policy.allowed_mask(tables)
        if not all(bool(allowed[t]) for t in tables.encode(" " + placement.text) + tables.encode(placement.text)):
            controlled.difference_update(placement.sources)
            ctx.compiled["placement"] = None
    if opening is not None and policy.active:
        allowed = policy.allowed_mask(tables)
        if not all(bool(allowed[t]) for t in tables.encode(" " + opening.text) + tables.encode(opening.text)):
            controlled.difference_update(opening.sources)
            ctx.compiled["opening"] = None

    for c in hard:
        if c.id not in controlled and c.id not in assisted:
            uncontrolled.add(c.id)

    check_literals(layout, policy, policy_sources, literal_sources)
    check_forbidden_literals(layout, forbidden, hard, literal_sources)
    check_limits(limits, hard, max_new_tokens)
    if keywords is not None:
        check_keywords(keywords, layout, limits, hard, tables, max_new_tokens)
    check_sentences(layout, limits, hard)
    if policy.active and not bool((policy.allowed_mask(tables) & tables.has_letter).any()):
        raise conflict("the character constraints leave no token with letters", *policy_sources)

    return ConstraintSteering(
        tables,
        segments=build_layout(layout),
        specs=tuple(
            spec
            for spec in (policy, SoftPolicy(soft_policy), limits, forbidden, citations, keywords, capitals,
                         *ctx.compiled.values(), statement)
            if spec is not None
        ),
        max_new_tokens=max_new_tokens,
        controlled=frozenset(controlled),
        assisted=frozenset(assisted),
        uncontrolled=frozenset(uncontrolled),
    )


def _withdraw_unkept_places(ctx: CompileContext) -> None:
    """Withdraw a compiled step that places a sentence or line counted from the end against an
    exact count (``forms.placed_from_start``) that no controller keeps: the k-th from the start
    is then not the piece asked for, so the place is left to the prompt."""
    for name, spec in list(ctx.compiled.items()):
        sources = getattr(spec, "sources", ())
        for c in ctx.hard:
            form = form_of_constraint(c) if c.id in sources else None
            counts = placed_against(form, ctx.hard) if isinstance(form, Position) else ()
            if counts and not set(counts) <= ctx.controlled:
                ctx.controlled.difference_update(sources)
                ctx.compiled[name] = None
                break


def _bound_citations(steering: ConstraintSteering) -> Citations | None:
    """The citation requirement a steering's citation controller enforces, if any."""
    return steering.spec(Citations)


def branch_steerings(
    steering: ConstraintSteering, shown: Sequence[Sequence[str]]
) -> tuple[ConstraintSteering, ...]:
    """One steering per evidence branch, each citing only the ids its prompt shows.

    ``steering`` is compiled with the ids of every branch; ``shown[b]`` are
    the ids branch ``b`` shows. The answer is one branch's text, so a hard
    ``cite_sources`` minimum that no branch shows enough ids for cannot be
    met by any answer: ``LimitExceeded`` (the pipeline asks for confirmation,
    as for a request that shows too few ids at all). A branch below the
    minimum while another meets it is decoded anyway (see
    ``ConstraintSteering.for_evidence``: it cites all it shows and reports
    "citations" unmet). Binding compiles nothing again.
    """
    bound = tuple(steering.for_evidence(ids) for ids in shown)
    citations = _bound_citations(steering)
    if citations is not None and bound and not any(
        (c := _bound_citations(s)) is not None and c.reachable for s in bound
    ):
        most = max(len(set(ids)) for ids in shown)
        raise LimitExceeded(
            f"{citations.need} distinct evidence facts must be cited but no evidence branch shows"
            f" more than {most}",
            constraint_ids=list(citations.sources),
        )
    return bound


def _identifiable(
    limits: Limits, policy: CharPolicy, layout: Layout, max_new_tokens: int | None
) -> Limits:
    """Hold the end until the answer is long enough for its language to be identified.

    A hard letter case or Latin-script language is checked (by our verifier,
    by a grader, by a downstream filter) with a statistical identifier that
    misreads a one-line answer. When the request sets no word or sentence
    maximum of its own and the body is free text, the answer gets at least
    :data:`IDENTIFIABLE_WORDS` words. The floor is implicit: it never exceeds
    a third of the token budget (so it is always reachable) and never lowers
    a minimum the request set.
    """
    latin_language = policy.scripts is not None and policy.scripts <= {"LATIN"}
    if policy.case is None and not latin_language:
        return limits
    if limits.max_words is not None or limits.max_sentences is not None or layout.body.kind == "formal":
        return limits
    floor = IDENTIFIABLE_WORDS if max_new_tokens is None else min(IDENTIFIABLE_WORDS, max_new_tokens // 3)
    if floor <= (limits.min_words or 0):
        return limits
    return replace(limits, min_words=floor)
