"""The refusals checked once every stage and family has compiled: literals a character policy
or a forbidden word breaks, bounds that leave no answer, keyword minimums the other bounds leave
no room for, and a sentence maximum below what the layout needs."""

from __future__ import annotations

from dataclasses import replace

from inference.decoder.compile.context import conflict
from inference.decoder.compile.layout import BODY_PRIORITY
from inference.decoder.token_controllers.charset import CharPolicy
from inference.decoder.token_controllers.count_tallies import Limits, count_text
from inference.decoder.token_controllers.keywords import Keywords
from inference.decoder.token_controllers.lexical import ForbiddenWords
from inference.decoder.token_controllers.sentences import sentence_floor
from inference.decoder.token_controllers.template import Layout, Literal, build_layout
from inference.decoder.vocab import VocabTables
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import LimitExceeded

__all__ = [
    "check_forbidden_literals",
    "check_keywords",
    "check_limits",
    "check_literals",
    "check_sentences",
]


def check_keywords(
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
            raise conflict(
                f"the required text holds {capped.text!r} {forced} times, more than the {capped.at_most} allowed",
                *involved.values(),
            )
    required = [k for k in keywords.items if k.at_least]
    sources = [by_id[s] for k in required for s in k.sources]
    words = sum(k.at_least * count_text(" " + k.text).units for k in required)
    if limits.max_words is not None and words > limits.max_words:
        raise conflict(
            f"the required keywords alone are {words} words, more than the {limits.max_words} allowed",
            *[c for c in constraints if c.kind == Kind.WORD_COUNT], *sources,
        )
    if limits.max_letter is not None and limits.letter is not None:
        letters = sum(k.at_least * k.text.lower().count(limits.letter) for k in required)
        if letters > limits.max_letter:
            raise conflict(
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


def check_literals(
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
        raise conflict(
            "no allowed option obeys the character constraints",
            *[c for c in policy_sources if c.kind != Kind.RESPONSE_LANGUAGE], options[0][1],
        )
    for segment in build_layout(layout):
        if isinstance(segment, Literal) and not case_policy.ok_text(segment.text):
            culprit = next((c for text, c in literal_sources.items() if text in segment.text and not case_policy.ok_text(text)), None)
            involved = [c for c in policy_sources if c.kind != Kind.RESPONSE_LANGUAGE]
            if culprit is not None:
                involved.append(culprit)
            raise conflict(f"required text {segment.text.strip()!r} breaks a character constraint", *involved)


def check_forbidden_literals(
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
            raise conflict(f"required text {segment.text.strip()!r} contains a forbidden word", *involved)

# The layout features a sentence maximum can conflict with, and the kinds that ask for them.
_LAYOUT_FEATURES: dict[str, tuple[Kind, ...]] = {
    "body": BODY_PRIORITY,
    "prefix": (Kind.REPEAT_PROMPT, Kind.START_PHRASE),
    "title": (Kind.TITLE,),
    "highlights": (Kind.HIGHLIGHTED_SECTIONS,),
    "postscript": (Kind.POSTSCRIPT,),
    "end_phrase": (Kind.END_PHRASE,),
}


_BARE_LAYOUT = Layout()


def check_sentences(layout: Layout, limits: Limits, constraints: list[Constraint]) -> None:
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
    raise conflict(
        f"the answer may hold {maximum} sentence(s) but its layout needs at least {floor}"
        " (a sentence per response, paragraph or section, and those its required text makes)",
        *{c.id: c for c in involved}.values(),
    )


def check_limits(limits: Limits, constraints: list[Constraint], max_new_tokens: int | None) -> None:
    pairs = ((limits.min_words, limits.max_words, Kind.WORD_COUNT),
             (limits.min_sentences, limits.max_sentences, Kind.SENTENCE_COUNT),
             (limits.min_letter, limits.max_letter, Kind.LETTER_FREQUENCY))
    for lo, hi, kind in pairs:
        involved = [c for c in constraints if c.kind == kind]
        if hi is not None and hi < 0:
            raise conflict(f"{kind.value}: the bound leaves no possible answer", *involved)
        if lo is not None and hi is not None and lo > hi:
            raise conflict(f"{kind.value}: the minimum {lo} exceeds the maximum {hi}", *involved)
    if max_new_tokens is not None and limits.min_words is not None and limits.min_words > max_new_tokens:
        raise LimitExceeded(
            f"at least {limits.min_words} words cannot fit in {max_new_tokens} new tokens",
            constraint_ids=[c.id for c in constraints if c.kind == Kind.WORD_COUNT],
        )
