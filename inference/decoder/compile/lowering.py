"""Lower the generic constraint form (``count``, ``position``, ``structure``) onto the named
kinds whose controllers keep exactly that meaning.

``lower_forms`` rewrites a form constraint into a named kind (same id, so the report names the
user's constraint): a count of one punctuation mark or character becomes a keyword frequency (its
count is the keyword's substring count; minima are inserted and paced over the budget, maxima
checked per candidate); a minimum alone of digits or emoji becomes a keyword minimum of one digit
or emoji (each insertion adds one item; a count bounded on both sides is left to the prompt, as the
insertions would bypass the cap's mask); the first word / sentence / paragraph / line starting with
(or the first word being) a text becomes the start phrase, which the layout writes first and ends
on a word boundary; the last one ending with a text becomes the end phrase; the k-th paragraph
(``k >= 2``) opened by a word, when nothing else shapes the body or counts paragraphs, becomes the
blank-line body of ``k`` paragraphs whose k-th starts with that word; a count of paragraphs with a
minimum becomes that body; a list to write (bulleted, numbered, nested), when nothing else shapes
the body, becomes the bullet layout of three items (numbered ``1.`` ... or with an indented
sub-bullet); a ``letter_frequency`` minimum of a mark becomes that keyword's frequency.

Copies and lists with a shape are ``structure.lower_structures``'; what the lowering leaves as a
form is compiled by the form families' own steps (``token_controllers.registry.FAMILIES``).

Raises ``ConflictError`` for a position beyond the most pieces allowed and for every list item
opening with two texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import msgspec

from inference.decoder.compile.forms import (
    BODY_KINDS,
    DIGIT_ITEM,
    EMOJI_ITEM,
    LIST_ITEMS,
    LISTS,
    PLACES,
    bounds,
    counts_unit,
    form_of_constraint,
    forms_of,
    item_leads,
    opened_paragraph,
    opening_text,
)
from inference.decoder.token_controllers.placing import STRIPPED
from reasoning.constraints.form import units
from reasoning.constraints.form.model import Count, Filter, Position, Structure, Unit
from reasoning.constraints.form.model import Layout as FormLayout
from reasoning.constraints.model import Constraint, Kind, Relation
from reasoning.errors import ConflictError

__all__ = ["lower_forms"]


_PREFIXED = (Kind.START_PHRASE, Kind.REPEAT_PROMPT)


def _plain(f: Filter, **allowed: object) -> bool:
    return msgspec.structs.replace(f, **dict.fromkeys(allowed)) == Filter()


def _keyword(c: Constraint, text: str, relation: Relation, n: int) -> Constraint:
    params = {"keyword": text, "relation": str(relation), "n": n}
    return msgspec.structs.replace(c, kind=Kind.KEYWORD_FREQUENCY, params=params)


def _lower_count(c: Constraint, form: Count) -> list[Constraint]:
    """A count with a minimum that a keyword's insertions meet, as that keyword
    (maxima alone are caps of the tally, see ``token_controllers.count_maxima.compile_tally``)."""
    lo, hi = bounds(form.relation, form.n)
    if form.per is not None or form.of is not None or not lo:
        return [c]
    f = form.filter
    if form.unit in (Unit.CHARACTERS, Unit.PUNCTUATION) and f.chars and _plain(f, chars=True):
        marks = list(dict.fromkeys(f.chars))  # one mark, or its variants (';' and '；')
        if all(form.unit is Unit.CHARACTERS or units.count(form.measure, m) == 1 for m in marks):
            # The first is inserted and paced; where a maximum counts the others too, they are not written.
            rest = [_keyword(c, m, Relation.AT_MOST, 0) for m in marks[1:]] if hi is not None else []
            return [_keyword(c, marks[0], form.relation, form.n), *rest]
    item = {Unit.DIGITS: DIGIT_ITEM, Unit.EMOJI: EMOJI_ITEM}.get(form.unit)
    if item is not None and hi is None and _plain(f):
        return [_keyword(c, item, Relation.AT_LEAST, lo)]
    return [c]


def _lower_position(
    c: Constraint, form: Position, constraints: Sequence[Constraint], taken: set[Kind], fold: str | None
) -> list[Constraint]:
    text = opening_text(form)
    if fold == "lower":
        text = text.lower()
    elif fold == "upper":
        text = text.upper()
    one_word = len(text.split()) == 1
    if form.unit is Unit.BULLETS and form.k == 0 and form.op == "starts_with" and text:
        return _lower_item_lead(c, text, constraints, taken)
    if not text or form.unit not in PLACES:
        return [c]
    starts = form.k == 1 and (form.op == "starts_with" or (form.op == "is" and form.unit is Unit.WORDS and one_word))
    if starts and not taken & set(_PREFIXED):
        taken.add(Kind.START_PHRASE)
        return [msgspec.structs.replace(c, kind=Kind.START_PHRASE, params={"phrase": text})]
    ends = form.k == -1 and (form.op == "ends_with" or (form.op == "is" and form.unit is Unit.WORDS and one_word))
    if ends and Kind.END_PHRASE not in taken and (one_word or Kind.QUOTATION not in taken):
        taken.add(Kind.END_PHRASE)
        return [msgspec.structs.replace(c, kind=Kind.END_PHRASE, params={"phrase": text})]
    opens_paragraph = form.unit is Unit.PARAGRAPHS and form.k >= 2 and form.op == "starts_with" and one_word
    if opens_paragraph and not taken & BODY_KINDS and not counts_unit(constraints, Unit.PARAGRAPHS, c.id):
        # The blank-line paragraph body of k paragraphs, the k-th opened by the word (a literal).
        taken.add(Kind.NTH_PARAGRAPH_FIRST_WORD)
        params = {"n": form.k, "nth": form.k, "first_word": text.strip(STRIPPED)}
        return [msgspec.structs.replace(c, kind=Kind.NTH_PARAGRAPH_FIRST_WORD, params=params)]
    return [c]


def _lower_paragraphs(
    c: Constraint, form: Count, constraints: Sequence[Constraint], taken: set[Kind]
) -> list[Constraint]:
    """A count of the answer's blank-line paragraphs with a minimum ("exactly three paragraphs",
    "at least two") as the blank-line body of that many paragraphs, when nothing else shapes the
    body and no other count or second placement of paragraphs is there; the k-th paragraph opened
    by one word ``position(paragraphs, k, starts_with)``, or holding it (``contains``: the word is
    written as its first), ``k`` within the count or counted from its end (``opened_paragraph``),
    is that body's first word (``form_paragraph_words`` reports it controlled); a text closing every paragraph
    (``position(paragraphs, 0, ends_with)``) leaves the body as it is (``compile_closing`` closes
    each of its paragraphs). Empty: not such a count."""
    lo = bounds(form.relation, form.n)[0]
    if form.unit is not Unit.PARAGRAPHS or form.per is not None or form.of is not None or form.filter != Filter():
        return []
    if not lo or taken & BODY_KINDS:
        return []
    placed: list[Position] = []
    for q in constraints:
        if q.id == c.id:
            continue
        for f in forms_of(q):
            if isinstance(f, Count) and f.unit is Unit.PARAGRAPHS and f.per is None:
                return []
            if isinstance(f, Position) and f.unit is Unit.PARAGRAPHS:
                placed.append(f)
    params: dict[str, object] = {"n": lo}
    placed = [p for p in placed if not (p.op == "ends_with" and p.k == 0)]  # every paragraph's closing
    if placed:
        nth = opened_paragraph(placed[0], lo)
        if len(placed) > 1 or nth is None:
            return []
        params.update(nth=nth, first_word=placed[0].text.strip().strip(STRIPPED))
    taken.add(Kind.NTH_PARAGRAPH_FIRST_WORD)
    return [msgspec.structs.replace(c, kind=Kind.NTH_PARAGRAPH_FIRST_WORD, params=params)]


def _lower_structure(c: Constraint, form: Structure, constraints: Sequence[Constraint], taken: set[Kind]) -> list[Constraint]:
    """A list to write (bulleted, numbered, nested) as the bullet layout of ``LIST_ITEMS`` items,
    when no other constraint gives the answer its body."""
    if form.layout not in LISTS or taken & BODY_KINDS:
        return [c]
    rivals = [q for q in constraints if q.id != c.id and isinstance(form_of_constraint(q), Structure)]
    if rivals:
        return [c]
    taken.add(Kind.BULLET_COUNT)
    params = {"n": LIST_ITEMS, "numbered": form.layout is FormLayout.NUMBERED_LIST,
              "nested": form.layout is FormLayout.NESTED_LIST}
    return [msgspec.structs.replace(c, kind=Kind.BULLET_COUNT, params=params)]


def _lower_item_lead(c: Constraint, text: str, constraints: Sequence[Constraint], taken: set[Kind]) -> list[Constraint]:
    """Every list item opening with ``text`` as the bullet layout of ``LIST_ITEMS`` items, each
    opened by it, when no other constraint gives the answer its body (beside a list that another
    constraint lowers, ``form_layout`` adds the lead to its items)."""
    if taken & BODY_KINDS or any(q.id != c.id and isinstance(form_of_constraint(q), Structure) for q in constraints):
        return [c]
    taken.add(Kind.BULLET_COUNT)
    return [msgspec.structs.replace(c, kind=Kind.BULLET_COUNT, params={"n": LIST_ITEMS, "lead": text})]


def lower_forms(constraints: Sequence[Constraint]) -> list[Constraint]:
    """The hard response constraints with the form constraints a named kind's
    controller keeps rewritten into that kind (see the module doc)."""
    _check_positions_fit(constraints)
    leads = item_leads(constraints)
    for (c, text), (q, other) in combinations(leads, 2):
        if not (text.lower().startswith(other.lower()) or other.lower().startswith(text.lower())):
            raise ConflictError("every list item cannot open with two texts", constraint_ids=[c.id, q.id])
    taken = {c.kind for c in constraints}
    fold = "lower" if Kind.ALL_LOWERCASE in taken else "upper" if Kind.ALL_CAPITALS in taken else None
    out: list[Constraint] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Count):
            out += _lower_paragraphs(c, form, constraints, taken) or _lower_count(c, form)
        elif isinstance(form, Position):
            out += _lower_position(c, form, constraints, taken, fold)
        elif isinstance(form, Structure):
            out += _lower_structure(c, form, constraints, taken)
        else:
            out.append(_lower_mark_frequency(c))
    return out


def _lower_mark_frequency(c: Constraint) -> Constraint:
    """A ``letter_frequency`` minimum of a mark that is no letter or digit ("exactly three '?'")
    as that keyword's frequency: the keyword's insertions meet the minimum (a letter's is only
    assisted, as a letter alone is no word to insert), and the substring count it keeps is the
    letter count's."""
    letter = str(c.params.get("letter", ""))
    if c.kind != Kind.LETTER_FREQUENCY or len(letter) != 1 or letter.isalnum() or letter.isspace():
        return c
    try:
        relation, n = Relation(c.params.get("relation", "at least")), int(c.params.get("n", 0))
    except (TypeError, ValueError):
        return c
    return _keyword(c, letter, relation, n) if bounds(relation, n)[0] else c


def _check_positions_fit(constraints: Sequence[Constraint]) -> None:
    """A text placed at the k-th word / sentence / paragraph / line of an answer that may hold
    fewer than k of them cannot be written: ``ConflictError``."""
    most: dict[Unit, tuple[int, str]] = {}
    for q in constraints:
        for f in forms_of(q):
            if isinstance(f, Count) and f.unit in PLACES and f.per is None and f.of is None and f.filter == Filter():
                hi = bounds(f.relation, f.n)[1]
                if hi is not None and (f.unit not in most or hi < most[f.unit][0]):
                    most[f.unit] = (hi, q.id)
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Position) and form.unit in most and form.k > most[form.unit][0]:
            hi, source = most[form.unit]
            raise ConflictError(
                f"the {form.unit.value[:-1]} {form.k} cannot be placed in an answer of at most {hi} {form.unit.value}",
                constraint_ids=[c.id, source],
            )
