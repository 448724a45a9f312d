"""The shared stages of the compile: the character policy, the counted bounds and forbidden
words, and the controllers that run beside the layout (citations, keywords, capital words).

Each returns its spec (None: not needed) and adds the ids it controls to ``controlled`` (or only
assists to ``assisted``); the form families compile after them (``compile.steering``) and read
what they settled in the compile context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from inference.decoder.compile.context import conflict
from inference.decoder.token_controllers.capitals import Capitals
from inference.decoder.token_controllers.charset import CharPolicy
from inference.decoder.token_controllers.citing import Citations
from inference.decoder.token_controllers.count_tallies import Limits
from inference.decoder.token_controllers.keywords import UNWRITABLE, Keyword, Keywords
from inference.decoder.token_controllers.lexical import ForbiddenWords
from inference.decoder.token_controllers.template import Layout
from reasoning.constraints.model import Constraint, Hardness, Kind, Relation
from reasoning.errors import InvalidInput, LimitExceeded
from reasoning.language import LANGUAGE_SCRIPTS

__all__ = [
    "compile_capitals",
    "compile_citations",
    "compile_counts",
    "compile_keywords",
    "compile_policy",
    "tighter",
]


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


def compile_policy(
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
                raise conflict("an answer cannot be all lowercase and all capitals", case_source, c)
            case, case_source = wanted, c
        elif c.kind == Kind.RESPONSE_LANGUAGE:
            lang = str(c.params.get("language", "")).lower().split("-")[0]
            wanted_scripts = LANGUAGE_SCRIPTS.get(lang, frozenset({"LATIN"}))
            if scripts is not None and scripts != wanted_scripts:
                raise conflict("the answer cannot be in two languages", *[s for s in sources if s.kind == Kind.RESPONSE_LANGUAGE], c)
            scripts = wanted_scripts
            (controlled if lang in LANGUAGE_SCRIPTS else assisted).add(c.id)
            sources.append(c)
            continue
        else:
            continue
        controlled.add(c.id)
        sources.append(c)
    return CharPolicy(no_comma=no_comma, case=case, scripts=scripts), sources


def compile_counts(
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
            limits = replace(limits, min_words=tighter(limits.min_words, lo, max), max_words=tighter(limits.max_words, hi, min))
        elif c.kind == Kind.SENTENCE_COUNT:
            lo, hi = _bounds(c.params)
            limits = replace(
                limits,
                min_sentences=tighter(limits.min_sentences, lo, max),
                max_sentences=tighter(limits.max_sentences, hi, min),
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
                min_letter=tighter(limits.min_letter, lo, max),
                max_letter=tighter(limits.max_letter, hi, min),
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


def tighter(old: int | None, new: int | None, pick: Any) -> int | None:
    if old is None:
        return new
    if new is None:
        return old
    return int(pick(old, new))


def compile_citations(
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
        raise conflict("citations like [E1] need a capital E", *[c for c in policy_sources if c.kind == Kind.ALL_LOWERCASE], *cite)
    if citations.need > len(ids):
        raise LimitExceeded(
            f"{citations.need} distinct evidence facts must be cited but only {len(ids)} are shown",
            constraint_ids=[c.id for c in cite],
        )
    for c in cite:
        controlled.add(c.id)
        uncontrolled.discard(c.id)
    return citations


def compile_keywords(
    constraints: list[Constraint],
    layout: Layout,
    policy: CharPolicy,
    policy_sources: list[Constraint],
    forbidden: ForbiddenWords | None,
    controlled: set[str],
) -> Keywords | None:
    """The keyword controller of the hard ``keywords_present`` and ``keyword_frequency``
    constraints (see ``token_controllers.keywords``).

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
                lo, hi = max(lo, old.at_least), tighter(old.at_most, hi, min)
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
            raise conflict(f"the keyword {k.text!r} is required {k.at_least} times but allowed {k.at_most}", *involved)
        if k.at_least and not case_policy.ok_text(k.text):
            culprits = [c for c in policy_sources if c.kind != Kind.RESPONSE_LANGUAGE]
            raise conflict(f"the required keyword {k.text!r} breaks a character constraint", *culprits, *involved)
        if k.at_least and forbidden is not None and forbidden.violated(k.text):
            banned = [c for c in constraints if c.kind == Kind.FORBIDDEN_WORDS]
            raise conflict(f"the required keyword {k.text!r} contains a forbidden word", *banned, *involved)
    return Keywords(tuple(merged.values()))


def compile_capitals(
    constraints: list[Constraint],
    layout: Layout,
    policy: CharPolicy,
    policy_sources: list[Constraint],
    limits: Limits,
    controlled: set[str],
) -> Capitals | None:
    """The capital-word minimum of the hard ``capital_word_frequency`` constraints
    (see ``token_controllers.capitals``). Only a minimum without a maximum is
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
            raise conflict("an all-lowercase answer has no words in capitals", *lower, c)
        latin = policy.scripts is None or "LATIN" in policy.scripts
        if lo and hi is None and latin and layout.body.kind != "formal":
            found.append((c, lo))
    if not found:
        return None
    need = max(lo for _, lo in found)
    if limits.max_words is not None and need > limits.max_words:
        words = [c for c in constraints if c.kind == Kind.WORD_COUNT]
        raise conflict(
            f"{need} words in capitals cannot fit in {limits.max_words} words", *words, *[c for c, _ in found]
        )
    controlled.update(c.id for c, _ in found)
    return Capitals(need, sources=tuple(c.id for c, _ in found))
