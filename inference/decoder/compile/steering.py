"""Compile a request's constraints into the token controllers of its decode.

``compile_steering`` reads the active constraints and builds one
``ConstraintSteering``: a character policy, a layout of literal / free /
formal segments, counted bounds and forbidden words. It also says which
constraints it *controls* (their violation is impossible within the token
budget), which it only *assists* (a bias, a script mask for a language that
shares its script with others) and which it leaves to the prompt
(``uncontrolled``: a capital-word maximum, evidence rules, a keyword minimum
in a formal answer).

Contradictions that no decode can satisfy are refused before decoding with
``ConflictError`` (``extra["constraint_ids"]`` names them), e.g. all-lowercase
with all-capitals, an end phrase with a comma under no-comma, a JSON answer
with bullets, a minimum word count above the maximum; a token budget too
small for a minimum raises ``LimitExceeded``. The pipeline answers both with
``needs_confirmation`` instead of a silent violation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from inference.decoder.compile.checks import (
    check_forbidden_literals,
    check_keywords,
    check_limits,
    check_literals,
    check_sentences,
)
from inference.decoder.compile.context import FormContext, conflict
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
from inference.decoder.compile_form import (
    form_class_opening,
    form_closing,
    form_floors,
    form_hashtags,
    form_initials,
    form_lines,
    form_minima,
    form_opening,
    form_piece_sentences,
    form_placement,
    form_sentence_end,
    form_sentence_mark,
    form_sentence_share,
    form_spans,
    form_tally,
)
from inference.decoder.compile_sentence_steps import form_sentence_steps
from inference.decoder.compile_sentence_types import form_sentence_types
from inference.decoder.compile_sentence_word import form_sentence_word
from inference.decoder.compile_verb_opening import form_verb_opening
from inference.decoder.controllers.charset import CharPolicy, SoftPolicy
from inference.decoder.controllers.citing import Citations
from inference.decoder.controllers.class_closings import build_class_closings, form_class_closing
from inference.decoder.controllers.class_openings import build_class_openings
from inference.decoder.controllers.closing_texts import build_closings
from inference.decoder.controllers.count_maxima import build_tally
from inference.decoder.controllers.count_minima import build_minima
from inference.decoder.controllers.count_piece_minima import build_floors
from inference.decoder.controllers.count_tallies import Limits
from inference.decoder.controllers.hashtags import build_hashtags
from inference.decoder.controllers.initials import build_initials
from inference.decoder.controllers.lines import build_lines
from inference.decoder.controllers.openings import Opening, build_openings
from inference.decoder.controllers.piece_sentences import build_piece_sentences
from inference.decoder.controllers.placing import Placement, build_placing
from inference.decoder.controllers.protocol import Builder
from inference.decoder.controllers.sentence_ends import build_sentence_ends
from inference.decoder.controllers.sentence_marks import build_sentence_marks
from inference.decoder.controllers.sentence_steps import build_sentence_steps
from inference.decoder.controllers.sentence_types import build_sentence_types
from inference.decoder.controllers.sentence_words import build_sentence_words
from inference.decoder.controllers.shares import build_shares
from inference.decoder.controllers.spans import build_spans
from inference.decoder.controllers.steering import ConstraintSteering
from inference.decoder.controllers.template import Layout, build_layout
from inference.decoder.controllers.verb_opening import build_verb_openings
from inference.decoder.vocab import vocab_tables
from reasoning.constraints.catalog import CATALOG
from reasoning.constraints.model import Constraint, Hardness, Kind, Scope
from reasoning.errors import LimitExceeded

__all__ = [
    "CONTROLLED_KINDS",
    "FORM_FAMILIES",
    "IDENTIFIABLE_WORDS",
    "FormContext",
    "FormFamily",
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


@dataclass(frozen=True)
class FormFamily:
    """A constraint-form family: its name, its controller's builder, and its compile step.

    ``compile`` returns the family's spec (None: not needed, or not
    controllable here), which ``build`` reads among the request's specs.
    """

    name: str
    build: Builder
    compile: Callable[[FormContext], Any]


#: The constraint-form families, in the order they compile: each step reads
#: what the shared stages (character policy, counted bounds, layout, citations,
#: keywords, capitals) and the steps before it settled, and the order is part
#: of the result (a step skips ids an earlier one controls; the first conflict
#: found is the one refused). Each pairs its compile step with the builder of
#: its controller, which ``controllers.registry.CONTROLLERS`` runs in the
#: composer's own order (a test keeps the two lists in step).
FORM_FAMILIES: tuple[FormFamily, ...] = (
    FormFamily("tally", build_tally, lambda f: form_tally(f.hard, f.layout, f.controlled)),
    FormFamily(
        "placement",
        build_placing,
        lambda f: form_placement(f.hard, f.layout, f.controlled, inserts=f.inserts),
    ),
    FormFamily(
        "floors",
        build_floors,
        lambda f: form_floors(
            f.hard, f.layout, f.compiled["tally"], f.controlled, max_new_tokens=f.max_new_tokens, inserts=f.inserts
        ),
    ),
    FormFamily(
        "minima",
        build_minima,
        lambda f: form_minima(
            f.hard, f.layout, f.compiled["tally"], f.controlled, f.assisted, max_new_tokens=f.max_new_tokens
        ),
    ),
    FormFamily(
        "initials",
        build_initials,
        lambda f: form_initials(f.hard, f.layout, f.controlled, max_new_tokens=f.max_new_tokens),
    ),
    FormFamily(
        "verb_opening",
        build_verb_openings,
        lambda f: form_verb_opening(
            f.hard, f.layout, f.controlled, inserts=f.inserts, placed=f.placed
        ),
    ),
    FormFamily(
        "class_opening",
        build_class_openings,
        lambda f: form_class_opening(
            f.hard, f.layout, f.controlled, inserts=f.inserts, placed=f.placed
        ),
    ),
    FormFamily(
        "opening",
        build_openings,
        lambda f: form_opening(f.hard, f.layout, f.controlled, inserts=f.inserts, placed=f.placed),
    ),
    FormFamily(
        "spans",
        build_spans,
        lambda f: form_spans(
            f.hard, f.layout, f.controlled, max_new_tokens=f.max_new_tokens, inserts=f.inserts
        ),
    ),
    FormFamily(
        "sentence_mark",
        build_sentence_marks,
        lambda f: form_sentence_mark(f.hard, f.layout, f.controlled, inserts=f.inserts),
    ),
    FormFamily(
        "sentence_end",
        build_sentence_ends,
        lambda f: form_sentence_end(f.hard, f.layout, f.controlled, inserts=f.inserts),
    ),
    FormFamily(
        "sentence_word",
        build_sentence_words,
        lambda f: form_sentence_word(
            f.hard, f.layout, f.controlled, inserts=f.inserts, ending=f.compiled["sentence_end"]
        ),
    ),
    FormFamily(
        "piece_sentences",
        build_piece_sentences,
        lambda f: form_piece_sentences(f.hard, f.layout, f.controlled, inserts=f.inserts),
    ),
    FormFamily(
        "closing",
        build_closings,
        lambda f: form_closing(f.hard, f.layout, f.controlled, inserts=f.inserts, placed=f.placed),
    ),
    FormFamily(
        "class_closing",
        build_class_closings,
        lambda f: form_class_closing(f.hard, f.layout, f.controlled, inserts=f.inserts, placed=f.placed),
    ),
    FormFamily(
        "sentence_steps",
        build_sentence_steps,
        lambda f: form_sentence_steps(f.hard, f.layout, f.controlled, inserts=f.inserts),
    ),
    FormFamily(
        "sentence_types",
        build_sentence_types,
        lambda f: form_sentence_types(f.hard, f.layout, f.controlled, inserts=f.inserts),
    ),
    FormFamily(
        "sentence_share",
        build_shares,
        lambda f: form_sentence_share(f.hard, f.layout, f.controlled, inserts=f.inserts),
    ),
    FormFamily(
        "hashtags",
        build_hashtags,
        lambda f: form_hashtags(
            f.hard, f.layout, f.controlled, max_new_tokens=f.max_new_tokens, inserts=f.inserts
        ),
    ),
    FormFamily(
        "lines",
        build_lines,
        lambda f: form_lines(
            f.hard, f.layout, f.controlled, max_new_tokens=f.max_new_tokens, inserts=f.inserts
        ),
    ),
)


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
    ``statement`` (a ``controllers.stating.Statement``) is the decision the
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
    form = FormContext(hard, layout, controlled, assisted, max_new_tokens, inserts)
    for family in FORM_FAMILIES:
        form.compiled[family.name] = family.compile(form)
    placement: Placement | None = form.compiled["placement"]
    opening: Opening | None = form.compiled["opening"]
    if placement is not None and policy.active:
        # Its tokens are forced: the character policy must allow every one of them.
        allowed = policy.allowed_mask(tables)
        if not all(bool(allowed[t]) for t in tables.encode(" " + placement.text) + tables.encode(placement.text)):
            controlled.difference_update(placement.sources)
            form.compiled["placement"] = None
    if opening is not None and policy.active:
        allowed = policy.allowed_mask(tables)
        if not all(bool(allowed[t]) for t in tables.encode(" " + opening.text) + tables.encode(opening.text)):
            controlled.difference_update(opening.sources)
            form.compiled["opening"] = None

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
                         *form.compiled.values(), statement)
            if spec is not None
        ),
        max_new_tokens=max_new_tokens,
        controlled=frozenset(controlled),
        assisted=frozenset(assisted),
        uncontrolled=frozenset(uncontrolled),
    )


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
