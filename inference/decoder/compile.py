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

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from inference.decoder.compile_form import (
    form_class_opening,
    form_closing,
    form_floors,
    form_hashtags,
    form_initials,
    form_layout,
    form_lines,
    form_minima,
    form_opening,
    form_paragraph_words,
    form_piece_sentences,
    form_placement,
    form_sentence_end,
    form_sentence_mark,
    form_sentence_share,
    form_spans,
    form_tally,
    lower_forms,
)
from inference.decoder.compile_sentence_steps import form_sentence_steps
from inference.decoder.compile_sentence_types import form_sentence_types
from inference.decoder.compile_sentence_word import form_sentence_word
from inference.decoder.compile_structure import lower_structures, structure_layout
from inference.decoder.compile_verb_opening import form_verb_opening
from inference.decoder.controllers.capitals import Capitals
from inference.decoder.controllers.charset import CharPolicy, SoftPolicy
from inference.decoder.controllers.citing import Citations
from inference.decoder.controllers.class_closings import build_class_closings, form_class_closing
from inference.decoder.controllers.class_openings import build_class_openings
from inference.decoder.controllers.closing_texts import build_closings
from inference.decoder.controllers.count_maxima import build_tally
from inference.decoder.controllers.count_minima import build_minima
from inference.decoder.controllers.count_piece_minima import build_floors
from inference.decoder.controllers.count_tallies import Limits, count_text
from inference.decoder.controllers.hashtags import build_hashtags
from inference.decoder.controllers.initials import build_initials
from inference.decoder.controllers.keywords import UNWRITABLE, Keyword, Keywords
from inference.decoder.controllers.lexical import ForbiddenWords
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
from inference.decoder.controllers.sentences import sentence_floor
from inference.decoder.controllers.shares import build_shares
from inference.decoder.controllers.spans import build_spans
from inference.decoder.controllers.steering import ConstraintSteering
from inference.decoder.controllers.template import Body, Layout, Literal, build_layout
from inference.decoder.controllers.verb_opening import build_verb_openings
from inference.decoder.vocab import VocabTables, vocab_tables
from reasoning.constraints.catalog import CATALOG
from reasoning.constraints.model import Constraint, Hardness, Kind, Relation, Scope
from reasoning.errors import ConflictError, InvalidInput, LimitExceeded
from reasoning.language import LANGUAGE_SCRIPTS

__all__ = ["CONTROLLED_KINDS", "FORM_FAMILIES", "FormContext", "FormFamily", "branch_steerings", "compile_steering"]


# Kinds with a token controller, as the catalog declares them (its
# ``controllable`` flags are the one source of truth; some kinds are controlled
# only for certain parameters, see ``ConstraintSteering.controlled`` for what a
# given request got). A test compiles every one of them.
CONTROLLED_KINDS: frozenset[Kind] = frozenset(kind for kind, spec in CATALOG.items() if spec.controllable)

_BODY_PRIORITY = (
    Kind.JSON_FORMAT,
    Kind.REGEX_FORMAT,
    Kind.CONSTRAINED_RESPONSE,
    Kind.SECTIONS,
    Kind.PARAGRAPH_COUNT,
    Kind.NTH_PARAGRAPH_FIRST_WORD,
    Kind.BULLET_COUNT,
    Kind.TWO_RESPONSES,
)
_FORMAL = (Kind.JSON_FORMAT, Kind.REGEX_FORMAT, Kind.CONSTRAINED_RESPONSE)
#: The JSON answer without a schema: an object of at least one key (``{}`` answers nothing) whose
#: values nest objects at most two levels deeper. Unbounded nesting let the model open an object
#: per key until the budget ran out, and no closing path fitted what was left.
_SCALAR = {"type": ["string", "number", "boolean", "null"]}
_LEAF = {"anyOf": [_SCALAR, {"type": "array", "items": _SCALAR}]}
_RECORD = {"type": "object", "additionalProperties": _LEAF}
_ANY_OBJECT = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": {"anyOf": [_LEAF, _RECORD, {"type": "array", "items": _RECORD}]},
}
_KEY_VALUE_CHARS = 48  # the longest string value of a key the request names
# Literal text whose checker ignores case may be case-folded to obey a case policy.
_CASE_FREE_LITERALS = (Kind.POSTSCRIPT, Kind.END_PHRASE, Kind.REPEAT_PROMPT, Kind.NTH_PARAGRAPH_FIRST_WORD)
#: The fewest words a statistical language identifier (n-gram profiles, as in
#: langdetect or lingua) names reliably. Shorter answers are misread, and
#: all-capital ones worst: "THE LAW IS NOT ALLOWABLE." reads as Vietnamese.
IDENTIFIABLE_WORDS = 20


def _bounds(params: dict[str, Any]) -> tuple[int | None, int | None]:
    """(minimum, maximum) inclusive from ``relation`` and ``n``."""
    try:
        n = int(params["n"])
        relation = Relation(params.get("relation", Relation.AT_LEAST))
    except (KeyError, ValueError, TypeError) as exc:
        raise InvalidInput(f"a count constraint needs 'relation' and an integer 'n': {exc}") from exc
    return {
        Relation.LESS_THAN: (None, n - 1),
        Relation.AT_MOST: (None, n),
        Relation.AT_LEAST: (n, None),
        Relation.MORE_THAN: (n + 1, None),
        Relation.EXACTLY: (n, n),
    }[relation]


def _conflict(detail: str, *constraints: Constraint) -> ConflictError:
    return ConflictError(detail, constraint_ids=[c.id for c in constraints])


@dataclass
class FormContext:
    """What a form family's compile step reads, and the shared state it adds to.

    ``hard`` are the hard constraints (forms lowered); ``layout`` the answer's
    layout so far; a step adds the ids it controls to ``controlled`` (or only
    assists to ``assisted``); ``inserts``: citations or a stated decision
    write text of their own in the body. ``compiled`` holds, by family name,
    the spec of every family compiled before (None: not needed or not
    controllable), in the order of ``FORM_FAMILIES``.
    """

    hard: list[Constraint]
    layout: Layout
    controlled: set[str]
    assisted: set[str]
    max_new_tokens: int | None
    inserts: bool
    compiled: dict[str, Any] = field(default_factory=dict)

    @property
    def placed(self) -> bool:
        """Whether the k-th word's placement is compiled (the openings and closings yield to it)."""
        return self.compiled.get("placement") is not None


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

    policy, policy_sources = _policy(hard, controlled, assisted)
    soft_policy, _ = _policy(soft, assisted, set())
    for c in soft:
        if c.id not in assisted:
            uncontrolled.add(c.id)

    limits, forbidden = _counts(hard, controlled, assisted)
    layout, literal_sources = _layout(hard, prompt, policy, controlled, uncontrolled)
    layout = structure_layout(hard, layout, policy=policy, limits=limits, tables=tables,
                              max_new_tokens=max_new_tokens, controlled=controlled, sources=literal_sources)
    layout = form_layout(hard, layout, controlled)
    form_paragraph_words(hard, layout, controlled)
    limits = _identifiable(limits, policy, layout, max_new_tokens)
    citations = _citations(constraints, evidence_ids, layout, policy, policy_sources, controlled, uncontrolled)
    keywords = _keywords(hard, layout, policy, policy_sources, forbidden, controlled)
    capitals = _capitals(hard, layout, policy, policy_sources, limits, controlled)
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

    _check_literals(layout, policy, policy_sources, literal_sources)
    _check_forbidden_literals(layout, forbidden, hard, literal_sources)
    _check_limits(limits, hard, max_new_tokens)
    if keywords is not None:
        _check_keywords(keywords, layout, limits, hard, tables, max_new_tokens)
    _check_sentences(layout, limits, hard)
    if policy.active and not bool((policy.allowed_mask(tables) & tables.has_letter).any()):
        raise _conflict("the character constraints leave no token with letters", *policy_sources)

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


def _policy(
    constraints: list[Constraint], controlled: set[str], assisted: set[str]
) -> tuple[CharPolicy, list[Constraint]]:
    no_comma = False
    case: str | None = None
    scripts: frozenset[str] | None = None
    sources: list[Constraint] = []
    case_source: Constraint | None = None
    for c in constraints:
        if c.kind == Kind.NO_COMMA:
            no_comma = True
        elif c.kind in (Kind.ALL_LOWERCASE, Kind.ALL_CAPITALS):
            wanted = "lower" if c.kind == Kind.ALL_LOWERCASE else "upper"
            if case is not None and case != wanted:
                assert case_source is not None
                raise _conflict("an answer cannot be all lowercase and all capitals", case_source, c)
            case, case_source = wanted, c
        elif c.kind == Kind.RESPONSE_LANGUAGE:
            lang = str(c.params.get("language", "")).lower().split("-")[0]
            wanted_scripts = LANGUAGE_SCRIPTS.get(lang, frozenset({"LATIN"}))
            if scripts is not None and scripts != wanted_scripts:
                raise _conflict("the answer cannot be in two languages", *[s for s in sources if s.kind == Kind.RESPONSE_LANGUAGE], c)
            scripts = wanted_scripts
            (controlled if lang in LANGUAGE_SCRIPTS else assisted).add(c.id)
            sources.append(c)
            continue
        else:
            continue
        controlled.add(c.id)
        sources.append(c)
    return CharPolicy(no_comma=no_comma, case=case, scripts=scripts), sources


def _counts(
    constraints: list[Constraint], controlled: set[str], assisted: set[str]
) -> tuple[Limits, ForbiddenWords | None]:
    """Counted bounds and forbidden words. A minimum count of one letter is
    only assisted: holding the end back cannot make the model write a rare
    letter; every other bound here is guaranteed within the token budget."""
    limits = Limits()
    words: list[str] = []
    for c in constraints:
        if c.kind == Kind.WORD_COUNT:
            lo, hi = _bounds(c.params)
            limits = replace(limits, min_words=_tighter(limits.min_words, lo, max), max_words=_tighter(limits.max_words, hi, min))
        elif c.kind == Kind.SENTENCE_COUNT:
            lo, hi = _bounds(c.params)
            limits = replace(
                limits,
                min_sentences=_tighter(limits.min_sentences, lo, max),
                max_sentences=_tighter(limits.max_sentences, hi, min),
            )
        elif c.kind == Kind.LETTER_FREQUENCY:
            letter = str(c.params.get("letter", "")).lower()
            if len(letter) != 1:
                raise InvalidInput(f"letter_frequency needs exactly one character, got {letter!r}")
            if limits.letter not in (None, letter):
                continue
            lo, hi = _bounds(c.params)
            limits = replace(
                limits,
                letter=letter,
                min_letter=_tighter(limits.min_letter, lo, max),
                max_letter=_tighter(limits.max_letter, hi, min),
            )
            if lo is not None:
                assisted.add(c.id)
                continue
        elif c.kind == Kind.PLACEHOLDERS:
            limits = replace(limits, min_placeholders=max(int(c.params.get("n", 1)), limits.min_placeholders or 0))
        elif c.kind == Kind.FORBIDDEN_WORDS:
            found = [str(w).strip() for w in c.params.get("words", []) if str(w).strip()]
            if not found:
                continue
            words += found
        else:
            continue
        controlled.add(c.id)
    return limits, ForbiddenWords(tuple(dict.fromkeys(words))) if words else None


def _tighter(old: int | None, new: int | None, pick: Any) -> int | None:
    if old is None:
        return new
    if new is None:
        return old
    return int(pick(old, new))


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


def _layout(
    constraints: list[Constraint],
    prompt: str,
    policy: CharPolicy,
    controlled: set[str],
    uncontrolled: set[str],
) -> tuple[Layout, dict[str, Constraint]]:
    """The layout and, per literal text, the constraint that requires it."""
    by_kind: dict[Kind, Constraint] = {}
    for c in constraints:
        by_kind.setdefault(c.kind, c)
    sources: dict[str, Constraint] = {}

    def literal(c: Constraint, text: str) -> str:
        if c.kind in _CASE_FREE_LITERALS:
            folded = CharPolicy(case=policy.case).transform(text)
            text = folded
        sources[text] = c
        return text

    body_kind = next((k for k in _BODY_PRIORITY if k in by_kind), None)
    body = Body()
    if body_kind is not None:
        c = by_kind[body_kind]
        body = _body(c, literal)
        controlled.add(c.id)
        for rival in _BODY_PRIORITY:
            if rival in by_kind and rival != body_kind:
                if body_kind in _FORMAL or rival in _FORMAL:
                    raise _conflict("a formal answer (JSON, regex, options) cannot have another structure", c, by_kind[rival])
                uncontrolled.add(by_kind[rival].id)
    layout = Layout(body=body)
    formal = body.kind == "formal"
    for kind in (Kind.QUOTATION, Kind.TITLE, Kind.POSTSCRIPT, Kind.END_PHRASE, Kind.HIGHLIGHTED_SECTIONS):
        if kind in by_kind and formal:
            raise _conflict("a formal answer (JSON, regex, options) cannot carry extra text", by_kind[body_kind], by_kind[kind])  # type: ignore[index]
    if Kind.QUOTATION in by_kind:
        layout = replace(layout, quotation=True)
        controlled.add(by_kind[Kind.QUOTATION].id)
    if Kind.TITLE in by_kind:
        layout = replace(layout, title=True)
        controlled.add(by_kind[Kind.TITLE].id)
    prefix_c = by_kind.get(Kind.REPEAT_PROMPT) or by_kind.get(Kind.START_PHRASE)
    if prefix_c is not None:
        key = "prompt_to_repeat" if prefix_c.kind == Kind.REPEAT_PROMPT else "phrase"
        text = str(prefix_c.params.get(key) or (prompt if prefix_c.kind == Kind.REPEAT_PROMPT else "")).strip()
        if not text:
            raise InvalidInput(f"{prefix_c.kind.value} needs a non-empty '{key}'")
        other = by_kind.get(Kind.START_PHRASE) if prefix_c.kind == Kind.REPEAT_PROMPT else None
        if other is not None and not text.lower().startswith(str(other.params.get("phrase", "")).strip().lower()):
            raise _conflict("the answer cannot start with both texts", prefix_c, other)
        if formal:
            raise _conflict("a formal answer cannot start with other text", by_kind[body_kind], prefix_c)  # type: ignore[index]
        layout = replace(layout, prefix=literal(prefix_c, text))
        controlled.add(prefix_c.id)
        if other is not None:
            controlled.add(other.id)
    if Kind.POSTSCRIPT in by_kind:
        c = by_kind[Kind.POSTSCRIPT]
        layout = replace(layout, postscript=literal(c, str(c.params.get("marker") or "P.S.").strip()))
        controlled.add(c.id)
    if Kind.END_PHRASE in by_kind:
        c = by_kind[Kind.END_PHRASE]
        phrase = str(c.params.get("phrase", "")).strip()
        if not phrase:
            raise InvalidInput("end_phrase needs a non-empty 'phrase'")
        layout = replace(layout, end_phrase=literal(c, phrase))
        controlled.add(c.id)
    if Kind.HIGHLIGHTED_SECTIONS in by_kind:
        c = by_kind[Kind.HIGHLIGHTED_SECTIONS]
        n = int(c.params.get("n", 1))
        slots = {"free": n, "bullets": body.n, "sections": body.n, "paragraphs": body.n,
                 "blank_paragraphs": body.n, "two": 2}.get(body.kind, 0)
        if n <= slots:
            layout = replace(layout, highlights=n)
            controlled.add(c.id)
        else:
            uncontrolled.add(c.id)
    return layout, sources


def _object_of(keys: Sequence[str]) -> dict[str, Any]:
    """The schema of an object holding ``keys``, in that order, each a value of any type whose
    strings stay short (a required key left unwritten would keep the budget's landing from
    closing the object)."""
    return {"type": "object", "properties": {k: {"maxLength": _KEY_VALUE_CHARS} for k in keys}, "required": list(keys)}


def _body(c: Constraint, literal: Any) -> Body:
    p = c.params
    try:
        if c.kind == Kind.JSON_FORMAT:
            from llguidance import LLMatcher

            # An object that holds the keys asked for, or at least one key (never an empty ``{}``).
            keys = [str(k) for k in p.get("keys", ()) if str(k)]
            schema = p.get("schema") or (_object_of(keys) if keys else _ANY_OBJECT)
            grammar = LLMatcher.grammar_from_json_schema(
                json.dumps(schema), defaults={"whitespace_flexible": False}
            )
            return Body(kind="formal", grammar=grammar)
        if c.kind == Kind.REGEX_FORMAT:
            from llguidance import LLMatcher

            pattern = str(p["pattern"])
            re.compile(pattern)
            return Body(kind="formal", grammar=LLMatcher.grammar_from_regex(pattern))
        if c.kind == Kind.CONSTRAINED_RESPONSE:
            from llguidance import LLMatcher

            options = [str(o) for o in p["options"] if str(o)]
            if not options:
                raise InvalidInput("constrained_response needs at least one option")
            for option in options:
                literal(c, option)
            pattern = "|".join(re.escape(o) for o in options)
            return Body(kind="formal", grammar=LLMatcher.grammar_from_regex(f"({pattern})"))
        if c.kind == Kind.SECTIONS:
            splitter = str(p.get("splitter") or "Section").strip()
            literal(c, splitter)
            return Body(kind="sections", n=int(p["n"]), splitter=splitter)
        if c.kind == Kind.PARAGRAPH_COUNT:
            return Body(kind="paragraphs", n=int(p["n"]))
        if c.kind == Kind.NTH_PARAGRAPH_FIRST_WORD and "first_word" not in p:
            return Body(kind="blank_paragraphs", n=int(p["n"]))  # a paragraph count (compile_form)
        if c.kind == Kind.NTH_PARAGRAPH_FIRST_WORD:
            n, nth = int(p["n"]), int(p["nth"])
            if not 1 <= nth <= n:
                raise InvalidInput(f"nth_paragraph_first_word: nth={nth} is not within 1..{n}")
            word = literal(c, str(p["first_word"]).strip().capitalize())
            return Body(kind="blank_paragraphs", n=n, nth=nth, first_word=word)
        if c.kind == Kind.BULLET_COUNT:
            # numbered / nested / intro / outro: a list structure of the form lowered to bullets
            # (compile_form.lower_forms, compile_structure.lower_structures)
            return Body(kind="bullets", n=int(p["n"]), numbered=bool(p.get("numbered")), nested=bool(p.get("nested")),
                        sub_items=int(p.get("sub_items") or 0), item_lead=literal(c, str(p["lead"])) if p.get("lead") else "",
                        intro=p.get("intro"), outro=p.get("outro"))
        return Body(kind="two")
    except (KeyError, ValueError, TypeError, re.error) as exc:
        raise InvalidInput(f"{c.kind.value}: invalid parameters {p!r}: {exc}") from exc


def _citations(
    constraints: Sequence[Constraint],
    evidence_ids: Sequence[str],
    layout: Layout,
    policy: CharPolicy,
    policy_sources: list[Constraint],
    controlled: set[str],
    uncontrolled: set[str],
) -> Citations | None:
    """The citation controller of the hard ``cite_sources`` constraints, if it can run.

    It needs shown evidence and running text to cite in (not a formal body);
    an all-lowercase answer cannot write the ``E`` of ``[E1]`` (a conflict);
    asking for more distinct facts than are shown cannot be met (a limit).
    """
    cite = [c for c in constraints if c.kind == Kind.CITE_SOURCES and c.hardness == Hardness.HARD]
    ids = tuple(dict.fromkeys(str(i) for i in evidence_ids))
    if not cite or not ids or layout.body.kind == "formal":
        return None
    try:
        need = max(int(c.params.get("min", 1)) for c in cite)
        citations = Citations(ids, need=max(1, need), sources=tuple(c.id for c in cite))
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"cite_sources: invalid 'min' or evidence ids: {exc}") from exc
    if policy.case == "lower":
        raise _conflict("citations like [E1] need a capital E", *[c for c in policy_sources if c.kind == Kind.ALL_LOWERCASE], *cite)
    if citations.need > len(ids):
        raise LimitExceeded(
            f"{citations.need} distinct evidence facts must be cited but only {len(ids)} are shown",
            constraint_ids=[c.id for c in cite],
        )
    for c in cite:
        controlled.add(c.id)
        uncontrolled.discard(c.id)
    return citations


def _keywords(
    constraints: list[Constraint],
    layout: Layout,
    policy: CharPolicy,
    policy_sources: list[Constraint],
    forbidden: ForbiddenWords | None,
    controlled: set[str],
) -> Keywords | None:
    """The keyword controller of the hard ``keywords_present`` and ``keyword_frequency``
    constraints (see ``controllers.keywords``).

    Counting ignores case, so a keyword is inserted folded to the answer's
    case policy. Bounds on one keyword (compared case-insensitively) merge. A
    minimum needs running text to be inserted into, so in a formal answer
    (JSON, a regex, fixed options) it is left to the prompt, as is a keyword
    that holds layout characters (``*``, brackets, ``<``, ``>``, newlines).
    Conflicts: a keyword the no-comma rule forbids or that holds a forbidden
    word while it is required, and a minimum above a maximum.
    """
    merged: dict[str, Keyword] = {}
    for c in constraints:
        bounds: list[tuple[str, int, int | None]]
        if c.kind == Kind.KEYWORDS_PRESENT:
            bounds = [(str(w).strip(), 1, None) for w in c.params.get("keywords", []) if str(w).strip()]
        elif c.kind == Kind.KEYWORD_FREQUENCY:
            word = str(c.params.get("keyword", "")).strip()
            lo, hi = _bounds(c.params)
            bounds = [(word, lo or 0, hi)] if word else []
        else:
            continue
        writable = all(not (set(w) & UNWRITABLE) for w, _, _ in bounds)
        if not bounds or not writable or (layout.body.kind == "formal" and any(lo for _, lo, _ in bounds)):
            continue
        for word, lo, hi in bounds:
            text = word.lower() if policy.case == "lower" else word.upper() if policy.case == "upper" else word
            old = merged.get(text.casefold())
            if old is not None:
                lo, hi = max(lo, old.at_least), _tighter(old.at_most, hi, min)
                text = old.text
            merged[text.casefold()] = Keyword(
                text, at_least=lo, at_most=hi, sources=(old.sources if old else ()) + (c.id,)
            )
        controlled.add(c.id)
    if not merged:
        return None
    case_policy = CharPolicy(no_comma=policy.no_comma, case=policy.case)
    for k in merged.values():
        involved = [c for c in constraints if c.id in k.sources]
        if k.at_most is not None and k.at_least > k.at_most:
            raise _conflict(f"the keyword {k.text!r} is required {k.at_least} times but allowed {k.at_most}", *involved)
        if k.at_least and not case_policy.ok_text(k.text):
            culprits = [c for c in policy_sources if c.kind != Kind.RESPONSE_LANGUAGE]
            raise _conflict(f"the required keyword {k.text!r} breaks a character constraint", *culprits, *involved)
        if k.at_least and forbidden is not None and forbidden.violated(k.text):
            banned = [c for c in constraints if c.kind == Kind.FORBIDDEN_WORDS]
            raise _conflict(f"the required keyword {k.text!r} contains a forbidden word", *banned, *involved)
    return Keywords(tuple(merged.values()))


def _capitals(
    constraints: list[Constraint],
    layout: Layout,
    policy: CharPolicy,
    policy_sources: list[Constraint],
    limits: Limits,
    controlled: set[str],
) -> Capitals | None:
    """The capital-word minimum of the hard ``capital_word_frequency`` constraints
    (see ``controllers.capitals``). Only a minimum without a maximum is
    controlled, in running text whose script has capitals (Latin); an
    all-lowercase answer cannot meet one (a conflict), nor can a word maximum
    below it."""
    found: list[tuple[Constraint, int]] = []
    for c in constraints:
        if c.kind != Kind.CAPITAL_WORD_FREQUENCY:
            continue
        lo, hi = _bounds(c.params)
        if lo is not None and policy.case == "lower":
            lower = [s for s in policy_sources if s.kind == Kind.ALL_LOWERCASE]
            raise _conflict("an all-lowercase answer has no words in capitals", *lower, c)
        latin = policy.scripts is None or "LATIN" in policy.scripts
        if lo and hi is None and latin and layout.body.kind != "formal":
            found.append((c, lo))
    if not found:
        return None
    need = max(lo for _, lo in found)
    if limits.max_words is not None and need > limits.max_words:
        words = [c for c in constraints if c.kind == Kind.WORD_COUNT]
        raise _conflict(
            f"{need} words in capitals cannot fit in {limits.max_words} words", *words, *[c for c, _ in found]
        )
    controlled.update(c.id for c, _ in found)
    return Capitals(need, sources=tuple(c.id for c, _ in found))


def _check_keywords(
    keywords: Keywords,
    layout: Layout,
    limits: Limits,
    constraints: list[Constraint],
    tables: VocabTables,
    max_new_tokens: int | None,
) -> None:
    """Refuse keyword minimums that the other bounds leave no room for: a
    required keyword that itself holds a capped one too often (with the
    layout's literals), more words or letters than a maximum allows, more
    tokens than the budget."""
    literal_text = [s.text for s in build_layout(layout) if isinstance(s, Literal)]
    by_id = {c.id: c for c in constraints}
    for capped in keywords.items:
        if capped.at_most is None:
            continue
        forced = sum(capped.count(t) for t in literal_text)
        forced += sum(k.at_least * capped.count(k.text) for k in keywords.items if k is not capped)
        if forced > capped.at_most:
            involved = {s: by_id[s] for k in keywords.items if k is capped or capped.count(k.text) for s in k.sources}
            raise _conflict(
                f"the required text holds {capped.text!r} {forced} times, more than the {capped.at_most} allowed",
                *involved.values(),
            )
    required = [k for k in keywords.items if k.at_least]
    sources = [by_id[s] for k in required for s in k.sources]
    words = sum(k.at_least * count_text(" " + k.text).units for k in required)
    if limits.max_words is not None and words > limits.max_words:
        raise _conflict(
            f"the required keywords alone are {words} words, more than the {limits.max_words} allowed",
            *[c for c in constraints if c.kind == Kind.WORD_COUNT], *sources,
        )
    if limits.max_letter is not None and limits.letter is not None:
        letters = sum(k.at_least * k.text.lower().count(limits.letter) for k in required)
        if letters > limits.max_letter:
            raise _conflict(
                f"the required keywords hold the letter {limits.letter!r} {letters} times,"
                f" more than the {limits.max_letter} allowed",
                *[c for c in constraints if c.kind == Kind.LETTER_FREQUENCY], *sources,
            )
    tokens = sum(k.at_least * len(tables.encode(" " + k.text)) for k in required)
    if max_new_tokens is not None and required and tokens > max_new_tokens:
        raise LimitExceeded(
            f"the required keywords need {tokens} tokens, more than the {max_new_tokens} new tokens allowed",
            constraint_ids=[c.id for c in sources],
        )


def _check_literals(
    layout: Layout,
    policy: CharPolicy,
    policy_sources: list[Constraint],
    literal_sources: dict[str, Constraint],
) -> None:
    """Refuse literals the character policy forbids (scripts excepted: a
    literal the user asked for verbatim may be in another script)."""
    case_policy = CharPolicy(no_comma=policy.no_comma, case=policy.case)
    if not case_policy.active:
        return
    options = [(text, c) for text, c in literal_sources.items() if c.kind == Kind.CONSTRAINED_RESPONSE]
    if options and not any(case_policy.ok_text(text) for text, _ in options):
        raise _conflict(
            "no allowed option obeys the character constraints",
            *[c for c in policy_sources if c.kind != Kind.RESPONSE_LANGUAGE], options[0][1],
        )
    for segment in build_layout(layout):
        if isinstance(segment, Literal) and not case_policy.ok_text(segment.text):
            culprit = next((c for text, c in literal_sources.items() if text in segment.text and not case_policy.ok_text(text)), None)
            involved = [c for c in policy_sources if c.kind != Kind.RESPONSE_LANGUAGE]
            if culprit is not None:
                involved.append(culprit)
            raise _conflict(f"required text {segment.text.strip()!r} breaks a character constraint", *involved)


def _check_forbidden_literals(
    layout: Layout,
    forbidden: ForbiddenWords | None,
    constraints: list[Constraint],
    literal_sources: dict[str, Constraint],
) -> None:
    """Refuse required text (an end phrase, the repeated prompt) that holds a forbidden word:
    forcing it would break one hard constraint, refusing it the other."""
    if forbidden is None:
        return
    for segment in build_layout(layout):
        if isinstance(segment, Literal) and forbidden.violated(segment.text):
            culprit = next((c for text, c in literal_sources.items() if text in segment.text), None)
            involved = [c for c in constraints if c.kind == Kind.FORBIDDEN_WORDS]
            if culprit is not None:
                involved.append(culprit)
            raise _conflict(f"required text {segment.text.strip()!r} contains a forbidden word", *involved)


# The layout features a sentence maximum can conflict with, and the kinds that ask for them.
_LAYOUT_FEATURES: dict[str, tuple[Kind, ...]] = {
    "body": _BODY_PRIORITY,
    "prefix": (Kind.REPEAT_PROMPT, Kind.START_PHRASE),
    "title": (Kind.TITLE,),
    "highlights": (Kind.HIGHLIGHTED_SECTIONS,),
    "postscript": (Kind.POSTSCRIPT,),
    "end_phrase": (Kind.END_PHRASE,),
}
_BARE_LAYOUT = Layout()


def _check_sentences(layout: Layout, limits: Limits, constraints: list[Constraint]) -> None:
    """Refuse a sentence maximum below what the layout needs (``sentence_floor``):
    each response, paragraph or section holds a sentence, "P.S." is one for
    every judge, a repeated request brings its own. The conflict names the
    sentence bounds and the layout constraints whose part raises the floor."""
    maximum = limits.max_sentences
    if maximum is None:
        return
    floor = sentence_floor(build_layout(layout))
    if floor <= maximum:
        return
    involved = [c for c in constraints if c.kind == Kind.SENTENCE_COUNT]
    for name, kinds in _LAYOUT_FEATURES.items():
        without = replace(layout, **{name: getattr(_BARE_LAYOUT, name)})
        if sentence_floor(build_layout(without)) < floor:
            # The first kind present made the feature (a rival body kind did not).
            kind = next((k for k in kinds if any(c.kind == k for c in constraints)), None)
            involved += [c for c in constraints if c.kind == kind]
    raise _conflict(
        f"the answer may hold {maximum} sentence(s) but its layout needs at least {floor}"
        " (a sentence per response, paragraph or section, and those its required text makes)",
        *{c.id: c for c in involved}.values(),
    )


def _check_limits(limits: Limits, constraints: list[Constraint], max_new_tokens: int | None) -> None:
    pairs = ((limits.min_words, limits.max_words, Kind.WORD_COUNT),
             (limits.min_sentences, limits.max_sentences, Kind.SENTENCE_COUNT),
             (limits.min_letter, limits.max_letter, Kind.LETTER_FREQUENCY))
    for lo, hi, kind in pairs:
        involved = [c for c in constraints if c.kind == kind]
        if hi is not None and hi < 0:
            raise _conflict(f"{kind.value}: the bound leaves no possible answer", *involved)
        if lo is not None and hi is not None and lo > hi:
            raise _conflict(f"{kind.value}: the minimum {lo} exceeds the maximum {hi}", *involved)
    if max_new_tokens is not None and limits.min_words is not None and limits.min_words > max_new_tokens:
        raise LimitExceeded(
            f"at least {limits.min_words} words cannot fit in {max_new_tokens} new tokens",
            constraint_ids=[c.id for c in constraints if c.kind == Kind.WORD_COUNT],
        )
