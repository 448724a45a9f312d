"""What the compile steps read of a request's form constraints (shared by the lowering,
the layout and every family's compile step).

``form_of_constraint`` is the form a generic constraint carries where a controller reads it,
``forms_of`` every form of any constraint; ``bounds`` a relation's (least, most); ``free_body``
whether the body is free text without fixed text (where a controller that counts or places words
in the model's own text controls its rule); ``INSERTING`` / ``WORD_INSERTING`` the kinds whose
controllers write words of their own, which most families yield to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import msgspec

from inference.decoder.token_controllers.template import Layout, Literal, build_layout
from reasoning.constraints.form.kinds import GENERIC_KINDS, form_of
from reasoning.constraints.form.model import Count, Filter, Form, Position, Unit
from reasoning.constraints.form.model import Layout as FormLayout
from reasoning.constraints.model import Constraint, Kind, Relation
from reasoning.errors import ConflictError

__all__ = [
    "BODY_KINDS",
    "DIGIT_ITEM",
    "EMOJI_ITEM",
    "INSERTING",
    "KEPT_UNITS",
    "LISTS",
    "LIST_ITEMS",
    "PLACES",
    "WORD_INSERTING",
    "bounds",
    "case_of",
    "check_pieces_agree",
    "counts_unit",
    "fixed_texts",
    "form_of_constraint",
    "forms_of",
    "free_body",
    "item_leads",
    "literal_text",
    "opened_paragraph",
    "opening_text",
    "placed_against",
    "placed_from_start",
    "required_keywords",
    "whole_length",
]


#: The item inserted to meet a minimum of digits or emoji (any one counts).
DIGIT_ITEM = "7"


EMOJI_ITEM = "\u2705"  # ✅, one code point, no variation selector


PLACES = (Unit.WORDS, Unit.SENTENCES, Unit.PARAGRAPHS, Unit.LINES)
#: Units whose minimum is kept (every token can add an item): the others are assisted.
KEPT_UNITS = frozenset({Unit.CHARACTERS, Unit.LETTERS})


def form_of_constraint(c: Constraint) -> Form | None:
    """The form a generic constraint carries (None: not a generic kind, malformed params, or a form no
    controller here reads: a position inside a piece, echoing the answer's own words or a containment
    (``Position.plain``), and a spread's step, are verified only)."""
    shape = GENERIC_KINDS.get(c.kind)
    if shape is None:
        return None
    try:
        form = msgspec.convert(dict(c.params), shape)
    except msgspec.ValidationError:
        return None
    if isinstance(form, Position) and not form.plain:
        return None
    return form


def forms_of(c: Constraint) -> tuple[Form, ...]:
    """The forms of any constraint (none where its parameters do not fit its kind)."""
    try:
        return form_of(c.kind, c.params) or ()
    except (TypeError, ValueError, KeyError):
        return ()


def bounds(relation: Relation, n: int) -> tuple[int, int | None]:
    return {
        Relation.LESS_THAN: (0, n - 1),
        Relation.AT_MOST: (0, n),
        Relation.AT_LEAST: (n, None),
        Relation.MORE_THAN: (n + 1, None),
        Relation.EXACTLY: (n, n),
    }[relation]


def whole_length(form: Count) -> bool:
    """An unfiltered count, or a count of the characters that are not white space (every token
    can add such items: the minima and floors keep them)."""
    return form.filter == Filter() or (form.unit is Unit.CHARACTERS and form.filter == Filter(nonspace=True))


def opening_text(form: Position) -> str:
    """The text that meets a position's predicate when written: its own, or for the emoji class
    the one emoji the controllers write (any emoji meets it); "" for the other classes."""
    return EMOJI_ITEM if form.word_class == "emoji" and form.op == "starts_with" else form.text.strip()


def counts_unit(constraints: Sequence[Constraint], unit: Unit, own: str) -> bool:
    """Whether a constraint other than ``own`` counts or places ``unit`` (a layout made for one
    placement would have to agree with it)."""
    for q in constraints:
        if q.id == own:
            continue
        try:
            forms = form_of(q.kind, q.params) or ()
        except (TypeError, ValueError, KeyError):
            return True
        if any(isinstance(f, (Count, Position)) and f.unit is unit for f in forms):
            return True
    return False


#: Named kinds that give the answer its body (a list of its own would compete with them).
BODY_KINDS = frozenset({
    Kind.BULLET_COUNT, Kind.SECTIONS, Kind.PARAGRAPH_COUNT, Kind.NTH_PARAGRAPH_FIRST_WORD, Kind.JSON_FORMAT,
    Kind.REGEX_FORMAT, Kind.CONSTRAINED_RESPONSE, Kind.TWO_RESPONSES,
})


LISTS = (FormLayout.LIST, FormLayout.NUMBERED_LIST, FormLayout.NESTED_LIST)


#: Items of a list the request asks for without saying how many.
LIST_ITEMS = 3


def item_leads(constraints: Sequence[Constraint]) -> list[tuple[Constraint, str]]:
    """The texts every list item must open with (``position(bullets, 0, starts_with)``), by constraint."""
    found = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Position) and form.unit is Unit.BULLETS and form.k == 0 and form.op == "starts_with" \
                and opening_text(form):
            found.append((c, " ".join(opening_text(form).split())))
    return found


def case_of(constraints: Sequence[Constraint]) -> str | None:
    """The letter case every letter of the answer must have ("lower", "upper"; None: any)."""
    kinds = {q.kind for q in constraints}
    return "lower" if Kind.ALL_LOWERCASE in kinds else "upper" if Kind.ALL_CAPITALS in kinds else None


@lru_cache(maxsize=64)
def fixed_texts(layout: Layout) -> tuple[str, ...]:
    """The texts of ``layout``'s literal segments, in order (its segments built once per layout:
    the lowering asks each form's question of the same one)."""
    return tuple(s.text for s in build_layout(layout) if isinstance(s, Literal))


def opened_paragraph(form: Position, n: int) -> int | None:
    """The paragraph (1 to ``n``) of a body of ``n`` blank-line paragraphs that ``form`` has open
    with one word: the k-th paragraph starting with the word, or holding it (a word the paragraph
    must contain is written as its first: "mention ice in the last paragraph"); a ``k`` counted
    from the end is counted in the body's ``n``. None: no such place."""
    word = form.text.strip()
    if form.unit is not Unit.PARAGRAPHS or form.op not in ("starts_with", "contains") \
            or len(word.split()) != 1 or re.search(r"\w", word) is None:
        return None
    nth = form.k if form.k > 0 else n + 1 + form.k
    return nth if form.k != 0 and 1 <= nth <= n else None


def placed_from_start(form: Position, constraints: Sequence[Constraint]) -> Position:
    """``form`` with a ``k`` counted from the end (below 0) counted from the start instead, where
    the same request fixes how many of its pieces the answer has: one exact count of that unit
    over the whole answer ("exactly 5 sentences" beside "the third sentence from the end is a
    question": the third) -- the count's own controller keeps that many, so the k-th from the start
    is the piece asked for. ``form`` unchanged otherwise (no exact count, two different ones, or a
    ``k`` outside it): a place counted from an end nobody plans is left unsteered."""
    exact = _exact_counts(form, constraints)
    if form.k >= 0 or len(exact) != 1:
        return form
    k = next(iter(exact)) + 1 + form.k
    return msgspec.structs.replace(form, k=k) if k >= 1 else form


def placed_against(form: Position, constraints: Sequence[Constraint]) -> tuple[str, ...]:
    """The ids of the exact counts ``placed_from_start`` counted ``form``'s place against (empty:
    ``form`` is not placed from the end): the place holds only where they are kept, so a step that
    steers it is withdrawn when one of them is left uncontrolled (``compile.steering``)."""
    if placed_from_start(form, constraints) is form:
        return ()
    return next(iter(_exact_counts(form, constraints).values()))


def _exact_counts(form: Position, constraints: Sequence[Constraint]) -> dict[int, tuple[str, ...]]:
    """The exact counts of ``form``'s unit over the whole answer in ``constraints``: n -> their ids."""
    found: dict[int, tuple[str, ...]] = {}
    for c in constraints:
        for f in forms_of(c):
            if isinstance(f, Count) and f.unit is form.unit and f.per is None and f.of is None \
                    and f.filter == Filter() and bounds(f.relation, f.n) == (f.n, f.n):
                found[f.n] = (*found.get(f.n, ()), c.id)
    return found


def free_body(layout: Layout) -> bool:
    """Whether the body is free text without fixed text anywhere: where a controller that counts
    or places words in the model's own text controls its rule."""
    return layout.body.kind == "free" and not fixed_texts(layout)


def literal_text(layout: Layout) -> str:
    return "\n".join(fixed_texts(layout))


#: Kinds whose controllers force words not known at compile time (a distinct-words cap cannot reserve them).
WORD_INSERTING = frozenset({Kind.CAPITAL_WORD_FREQUENCY, Kind.PLACEHOLDERS, Kind.CITE_SOURCES})


def required_keywords(constraints: Sequence[Constraint]) -> list[str]:
    """The keyword texts the keyword controller may insert (each required at least once)."""
    found: list[str] = []
    for q in constraints:
        if q.kind == Kind.KEYWORDS_PRESENT:
            found += [str(w) for w in q.params.get("keywords", [])]
        elif q.kind == Kind.KEYWORD_FREQUENCY:
            found.append(str(q.params.get("keyword", "")))
    return found


#: Kinds whose controllers write or pace words of their own (a placement would refuse them).
INSERTING = frozenset({
    Kind.KEYWORDS_PRESENT, Kind.KEYWORD_FREQUENCY, Kind.CAPITAL_WORD_FREQUENCY, Kind.PLACEHOLDERS,
    Kind.CITE_SOURCES, Kind.POSTSCRIPT, Kind.END_PHRASE, Kind.WORD_COUNT, Kind.SENTENCE_COUNT,
})


def check_pieces_agree(
    constraints: Sequence[Constraint],
    found: Sequence[tuple[Constraint, Position]],
    fixed: Kind,
    verb: str,
    agree: Callable[[Position, str], bool],
) -> None:
    """``ConflictError`` for an every-piece position (``k = 0``) that does not ``agree`` with the
    answer's fixed text of kind ``fixed`` (its start or end phrase) or with another position of
    the same pieces."""
    for c, form in found:
        if form.k != 0:
            continue
        fixed_texts = [(q.id, str(q.params.get("phrase", ""))) for q in constraints if q.kind == fixed]
        others = [(q.id, other.text) for q, other in found if q.id != c.id and other.unit is form.unit]
        for source, text in [*fixed_texts, *others]:
            if text.strip() and not agree(form, text):
                raise ConflictError(f"every {form.unit.value[:-1]} cannot {verb} {form.text!r} and the text "
                                    f"{text.strip()!r}", constraint_ids=[c.id, source])
