"""Compile the generic constraint form (``count``, ``position``, ``wrap``,
``structure``, ``copy``) onto the token controllers.

Two routes, so that each form constraint is kept by machinery that already
guarantees it, and is reported ``controlled`` only then:

- ``lower_forms`` rewrites a form constraint into a named kind whose
  controller keeps exactly that meaning (same id, so the report names the
  user's constraint): a count of one punctuation mark or character becomes a
  keyword frequency (its count is the keyword's substring count; minima are
  inserted and paced over the budget, maxima checked per candidate); a
  minimum alone of digits or emoji becomes a keyword minimum of one digit or
  emoji (each insertion adds one item; a count bounded on both sides is left
  to the prompt, as the insertions would bypass the cap's mask);
  the first word / sentence / paragraph / line starting with (or the first
  word being) a text becomes the start phrase, which the layout writes first
  and ends on a word boundary; the last one ending with a text becomes the
  end phrase; the k-th paragraph (``k >= 2``) opened by a word, when nothing
  else shapes the body or counts paragraphs, becomes the blank-line body of
  ``k`` paragraphs whose k-th starts with that word; a list to write
  (bulleted, numbered, nested), when nothing else shapes the body, becomes
  the bullet layout of three items (numbered ``1.`` ... or with an indented
  sub-bullet).
- ``form_*`` give the specs of the form's own controllers:
  ``form_tally`` the ``controllers.count_maxima.Tally`` of the upper bounds on
  characters, letters, punctuation, digits, emoji, numbers, filtered and
  distinct words, in the whole answer or in each sentence / paragraph /
  line, of ratio maxima (at most a fraction of one such count's items are
  another's, in a free body without fixed or inserted text) and of
  ``no_list``, with room reserved for what the layout's
  literals add (per piece: the most a literal's piece holds, as a literal
  may join any piece; distinct words: also the required keywords and the
  placed texts);
  ``form_floors`` the per-piece minima of words / characters / letters
  (``controllers.count_piece_minima``); ``form_minima`` the whole-answer minima of
  characters and letters (kept) and of distinct words (assisted: the stop
  is held) (``controllers.count_minima``); ``form_placement`` the k-th word
  (``controllers.placing``); ``form_opening`` the k-th sentence or line,
  or every sentence / line / paragraph, opening with a text (``controllers.openings``;
  an emoji opening is the opening text ``✅``); ``form_class_opening`` every
  (or the k-th) sentence / line / paragraph opening with a capital, a lowercase
  letter or a digit (``controllers.class_openings``);
  ``form_closing`` every sentence / line / paragraph (or the k-th line or paragraph)
  ending with a text (``controllers.closing_texts``); ``form_spans`` the counts
  of spans between delimiters of one to three marks, opened and closed in the
  model's prose (``controllers.spans``); ``form_sentence_mark`` every
  sentence ending with one mark (``controllers.sentence_marks``);
  ``form_sentence_share`` at least a share of the sentences ending with one
  mark ("half of the sentences are questions", ``controllers.shares``);
  ``form_hashtags`` a minimum of hashtags (``controllers.hashtags``);
  ``form_lines`` a count of the answer's lines (``controllers.lines``);
  ``form_layout`` puts an
  answer-level wrapper's delimiters into the layout (forced first and last).

Tables, lists beside another body and copies are ``compile_structure``'s.
Everything else (other middle positions: a piece being a text; ratio
minima other than a share of sentences by their end mark; whole-answer minima
of numbers, minima of filtered words; spans between delimiters holding letters or of more than
three marks; a line count beside fixed text) is left to the
prompt and the verifier, reported ``uncontrolled``, as is a form controller's
constraint where its guarantee would not hold (fixed text or inserted
words beside a per-piece minimum or an opening, a cap on the opening's own
items). Contradictions end in ``ConflictError`` (the pipeline asks for
confirmation): a cap the layout's own literals break, no list with a
bulleted body, a wrapper beside a quotation, a word minimum above what at
most ``m`` words in each of at most ``s`` sentences allow, a minimum (per
piece or whole) above its maximum, a per-piece minimum times the fewest
pieces above the whole answer's maximum, a position beyond the most pieces
allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inference.decoder.compile.forms import (
    INSERTING,
    WORD_INSERTING,
    bounds,
    case_of,
    fixed_texts,
    form_of_constraint,
    forms_of,
    free_body,
    literal_text,
    opening_text,
    required_keywords,
    whole_length,
)
from inference.decoder.controllers.class_openings import MASKED_CLASSES, ClassOpening
from inference.decoder.controllers.closing_texts import CLOSED_UNITS, Closing, piece_ends
from inference.decoder.controllers.count_maxima import (
    CAPPABLE_UNITS,
    PIECE_UNITS,
    Cap,
    Share,
    Tally,
    most_per_piece,
)
from inference.decoder.controllers.count_minima import KEPT_UNITS, MOST_PER_TOKEN, Minimum, Minimums
from inference.decoder.controllers.count_piece_minima import (
    FLOOR_UNITS,
    INSERTED_ITEMS,
    INSERTED_UNITS,
    Floor,
    Floors,
)
from inference.decoder.controllers.hashtags import HASHTAG_TOKENS, HashtagMinimum
from inference.decoder.controllers.initials import Initial, Initials
from inference.decoder.controllers.lines import LINE_TOKENS, LineCount
from inference.decoder.controllers.openings import EVERY_UNITS, OPENED_UNITS, Opening
from inference.decoder.controllers.piece_sentences import PieceSentences
from inference.decoder.controllers.placing import STRIPPED, Placement
from inference.decoder.controllers.sentence_ends import SentenceEnd
from inference.decoder.controllers.sentence_marks import TERMINALS, SentenceMark
from inference.decoder.controllers.shares import SentenceShare
from inference.decoder.controllers.spans import SPAN_TOKENS, SpanCount
from inference.decoder.controllers.template import Layout
from reasoning.constraints.form import units
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.form.model import (
    Count,
    Filter,
    Form,
    Measure,
    Position,
    Structure,
    Unit,
    Wrap,
)
from reasoning.constraints.form.model import Layout as FormLayout
from reasoning.constraints.model import Constraint, Kind, Relation
from reasoning.errors import ConflictError, LimitExceeded

__all__ = [
    "form_class_opening",
    "form_closing",
    "form_floors",
    "form_hashtags",
    "form_initials",
    "form_lines",
    "form_minima",
    "form_opening",
    "form_piece_sentences",
    "form_placement",
    "form_sentence_end",
    "form_sentence_mark",
    "form_sentence_share",
    "form_spans",
    "form_tally",
    "sentence_text_rule",
]


def _every_word_opening(form: Form | None) -> Form | None:
    """``form``, or for an opening of every word (``position(words, k=0, starts_with)``: a letter, or a
    capital) the count it is capped as: the words that do not open so, none (``Filter.negated``; the
    verifier judges every word as the counter splits them). A word's start is settled by its first
    token, so the cap refuses only tokens that open a word wrongly."""
    if not isinstance(form, Position) or form.unit is not Unit.WORDS or form.k != 0 or form.op != "starts_with":
        return form
    if form.word_class == "capital":
        wrong = Filter(case="title", negated=True)
    elif form.word_class is None and form.text.isalpha():
        wrong = Filter(starts_with=form.text, negated=True)
    else:
        return form
    return Count(unit=Unit.WORDS, filter=wrong, relation=Relation.AT_MOST, n=0)


def form_tally(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str]
) -> Tally | None:
    """The capped form counts and the no-list rule of ``constraints`` (None: none)."""
    literals = literal_text(layout)
    caps: list[Cap] = []
    shares: list[Share] = []
    no_list: list[str] = []
    for c in constraints:
        form = _every_word_opening(form_of_constraint(c))
        if isinstance(form, Structure) and form.layout is FormLayout.NO_LIST:
            if layout.body.kind == "formal":
                continue
            if layout.body.kind == "bullets":
                bullets = [b.id for b in constraints if b.kind == Kind.BULLET_COUNT]
                raise ConflictError("an answer without a list cannot hold bullets", constraint_ids=[c.id, *bullets])
            no_list.append(c.id)
            controlled.add(c.id)
            continue
        if isinstance(form, Count) and form.of is not None:
            share = _share(c, form, constraints, layout)
            if share is not None:
                shares.append(share)
                controlled.add(c.id)
            continue
        if not isinstance(form, Count):
            continue
        if form.unit not in CAPPABLE_UNITS or layout.body.kind == "formal":
            continue
        if form.per is not None:
            cap = _piece_cap(c, form, layout)
            if cap is not None:
                caps.append(cap)
                if not bounds(form.relation, form.n)[0]:
                    controlled.add(c.id)  # an exact count also needs its floor (``form_floors``)
            continue
        if form.filter.separator or form.filter.marker or form.filter.left or form.filter.text and form.unit is not Unit.LETTERS:
            continue
        lo, hi = bounds(form.relation, form.n)
        # A range of characters, letters or hashtags is capped here, its minimum kept by ``form_minima`` /
        # ``form_hashtags``; other ranges are left to the prompt.
        if hi is None or lo and not (form.unit in KEPT_UNITS and whole_length(form) or form.unit is Unit.HASHTAGS):
            continue
        fixed = literals
        if form.unit is Unit.UNIQUE_WORDS:
            if any(q.kind in WORD_INSERTING for q in constraints):
                continue  # words chosen at decode time would be forced past the check
            placed = [f.text for q in constraints if isinstance(f := form_of_constraint(q), Position)]
            fixed = "\n".join([literals, *required_keywords(constraints), *placed])
        reserved = units.count(form.measure, fixed)
        if reserved > hi:
            raise ConflictError(
                f"the answer's fixed text already holds {reserved} {form.unit.value}, more than {hi}",
                constraint_ids=[c.id],
            )
        caps.append(Cap(form.measure, hi - reserved, (c.id,), reserved=reserved))
        if not lo:
            controlled.add(c.id)
    _check_words_fit(constraints, caps)
    if not caps and not no_list and not shares:
        return None
    return Tally(tuple(caps), bool(no_list), tuple(no_list), tuple(shares))


#: Units a capped ratio can count on both sides (each item is judged within one word or character).
_SHARED_UNITS = CAPPABLE_UNITS - {Unit.UNIQUE_WORDS}


def _countable(measure: Measure) -> bool:
    f = measure.filter
    return measure.unit in _SHARED_UNITS and not (f.separator or f.marker or f.left) \
        and not (f.text and measure.unit is not Unit.LETTERS)


def _share(c: Constraint, form: Count, constraints: Sequence[Constraint], layout: Layout) -> Share | None:
    """The capped ratio of ``form`` (None: not an upper bound of a share of two countable
    measures in a free body without fixed text or words forced by another controller)."""
    if form.of is None or form.fraction is None or form.per is not None:
        return None
    if form.relation not in (Relation.AT_MOST, Relation.LESS_THAN):
        return None
    if not (_countable(form.measure) and _countable(form.of)):
        return None
    if not free_body(layout):
        return None
    if any(q.kind in INSERTING | WORD_INSERTING for q in constraints):
        return None
    return Share(form.measure, form.of, float(form.fraction), form.relation is Relation.LESS_THAN, (c.id,))


def _piece_cap(c: Constraint, form: Count, layout: Layout) -> Cap | None:
    """The per-piece cap of ``form`` (None: not a maximum per sentence / paragraph / line, or no room).

    Raises:
        ConflictError: a piece of the layout's own literals already holds more than the cap.
    """
    hi = bounds(form.relation, form.n)[1]
    if form.per not in PIECE_UNITS or hi is None:
        return None
    f = form.filter
    if f.separator or f.marker or f.left or (f.text and form.unit is not Unit.LETTERS):
        return None
    probe = Cap(form.measure, hi, (c.id,), per=form.per)
    pieces = list(fixed_texts(layout))
    reserved = max((most_per_piece(probe, text, 0) for text in pieces), default=0)
    if reserved > hi:
        raise ConflictError(
            f"a {form.per.value[:-1]} of the answer's fixed text already holds {reserved} {form.unit.value}, "
            f"more than {hi}",
            constraint_ids=[c.id],
        )
    if hi - reserved < 1:
        return None  # the free text could add nothing to a piece: left to the prompt
    return Cap(form.measure, hi - reserved, (c.id,), per=form.per, reserved=reserved)


def _check_words_fit(constraints: Sequence[Constraint], caps: Sequence[Cap]) -> None:
    """A word minimum above (words per sentence) x (most sentences) cannot be met: ``ConflictError``."""
    per_sentence = [cap for cap in caps if cap.per is Unit.SENTENCES and cap.measure.unit is Unit.WORDS
                    and cap.measure.filter == Filter()]
    if not per_sentence:
        return
    most_sentences: tuple[int, str] | None = None
    least_words: tuple[int, str] | None = None
    for c in constraints:
        relation, n = c.params.get("relation"), c.params.get("n")
        if not isinstance(n, int) or isinstance(n, bool):
            continue
        try:
            lo, hi = bounds(Relation(str(relation)), n)
        except ValueError:
            continue
        if c.kind == Kind.SENTENCE_COUNT and hi is not None and (most_sentences is None or hi < most_sentences[0]):
            most_sentences = (hi, c.id)
        if c.kind == Kind.WORD_COUNT and lo and (least_words is None or lo > least_words[0]):
            least_words = (lo, c.id)
    if most_sentences is None or least_words is None:
        return
    cap = min(per_sentence, key=lambda k: k.at_most)
    if least_words[0] > cap.at_most * most_sentences[0]:
        raise ConflictError(
            f"at least {least_words[0]} words do not fit in at most {most_sentences[0]} sentences "
            f"of at most {cap.at_most} words",
            constraint_ids=[least_words[1], most_sentences[1], *cap.sources],
        )


def form_placement(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool
) -> Placement | None:
    """The ``controllers.placing.Placement`` of a word at a middle position (None: none, or not
    controllable here).

    Controlled: the k-th word (``k >= 2``) is / starts with one word, in a free body whose fixed
    text before it holds fewer than ``k - 1`` words, with no controller that inserts or paces
    words (``inserts``: citations or a stated decision; the kinds of ``INSERTING``) and
    no other placement.
    """
    found: list[tuple[Constraint, Position]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Position) and form.unit is Unit.WORDS and form.k >= 2 and form.op in ("is", "starts_with"):
            found.append((c, form))
    if len(found) != 1 or inserts or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    word = form.text.strip().strip(STRIPPED)
    kinds = {q.kind for q in constraints}
    word = word.lower() if Kind.ALL_LOWERCASE in kinds else word.upper() if Kind.ALL_CAPITALS in kinds else word
    if not word or any(ch.isspace() for ch in word) or layout.body.kind != "free" or layout.end_phrase \
            or layout.postscript or layout.title or layout.highlights:
        return None
    if layout.prefix is not None and len(layout.prefix.split()) >= form.k - 1:
        return None
    for q in constraints:
        # The word's tokens are forced past the masks: an item in it that any maximum counts
        # (a capped letter, a forbidden word, a letter of the wrong case) leaves it to the prompt.
        try:
            forms = form_of(q.kind, q.params) or ()
        except (TypeError, ValueError, KeyError):
            return None
        for cap in forms:
            if isinstance(cap, Count) and cap.per is None and cap.of is None and cap.unit is not Unit.UNIQUE_WORDS \
                    and bounds(cap.relation, cap.n)[1] is not None and units.count(cap.measure, " " + word + " ") > 0:
                return None  # (a distinct-words cap reserves the placed words: ``form_tally``)
    controlled.add(c.id)
    return Placement(k=form.k, text=word, op=form.op, sources=(c.id,))


#: What would end a sentence, a line or a paragraph inside an inserted text.
_PIECE_ENDS = frozenset(".!?\u3002\uff01\uff1f\n")


def form_floors(
    constraints: Sequence[Constraint],
    layout: Layout,
    tally: Tally | None,
    controlled: set[str],
    *,
    max_new_tokens: int | None,
    inserts: bool,
) -> Floors | None:
    """The ``controllers.count_piece_minima.Floors`` of the per-piece minima (None: none controllable).

    Controlled: at least ``n`` words / characters / letters, or numbers / digits / emoji (an item
    inserted where the piece would end without it; not beside a cap that counts the item),
    with no filter, in each sentence, paragraph or line, in a free body without fixed text
    (literals are forced past the
    checks), with nothing that inserts a sentence or a piece end (``inserts``: citations
    or a stated decision; a keyword holding one). An exact count per piece is controlled
    when its cap is in ``tally`` too.

    Raises:
        ConflictError: a minimum per piece above a maximum per piece, or above a maximum of
            the whole answer (it has a piece), or a sentence minimum times a per-sentence
            word minimum above a word maximum.
        LimitExceeded: more words per piece than the token budget holds.
    """
    floors: list[Floor] = []
    found = [(c, f) for c in constraints if isinstance(f := form_of_constraint(c), Count)
             and f.per is not None and f.of is None and bounds(f.relation, f.n)[0]]
    for c, form in found:
        lo = bounds(form.relation, form.n)[0]
        _check_floor_fits(c, form, lo, constraints)
        if form.per not in PIECE_UNITS or form.unit not in FLOOR_UNITS | INSERTED_UNITS or not whole_length(form):
            continue
        if form.unit in INSERTED_UNITS and any(
                isinstance(cap, Count) and cap.of is None and bounds(cap.relation, cap.n)[1] is not None
                and units.count(cap.measure, " " + INSERTED_ITEMS[form.unit] + " ") > 0
                for q in constraints for cap in forms_of(q)):
            continue  # the inserted item is forced past the masks: a cap that counts it leaves the floor to the prompt
        if not free_body(layout) or inserts:
            continue
        if any(set(text) & _PIECE_ENDS for text in required_keywords(constraints)):
            continue
        if max_new_tokens is not None and form.unit is Unit.WORDS and lo > max_new_tokens:
            raise LimitExceeded(f"{lo} words per {form.per.value[:-1]} cannot fit in {max_new_tokens} new tokens",
                                constraint_ids=[c.id])
        hi = bounds(form.relation, form.n)[1]
        if hi is not None and not (tally is not None and any(c.id in cap.sources for cap in tally.caps)):
            continue
        floors.append(Floor(form.measure, lo, form.per, (c.id,)))
        controlled.add(c.id)
    return Floors(tuple(floors)) if floors else None


def _check_floor_fits(c: Constraint, floor: Count, lo: int, constraints: Sequence[Constraint]) -> None:
    """Refuse a per-piece minimum that a maximum makes impossible (see ``form_floors``)."""
    per = floor.per
    assert per is not None
    least_pieces, pieces_ids = 1, []
    for q in constraints:
        for f in forms_of(q):
            if isinstance(f, Count) and f.unit is per and f.per is None and f.of is None \
                    and f.filter == Filter() and bounds(f.relation, f.n)[0] > least_pieces:
                least_pieces, pieces_ids = bounds(f.relation, f.n)[0], [q.id]
    for q in constraints:
        if q.id == c.id:
            continue
        for f in forms_of(q):
            if not isinstance(f, Count) or f.of is not None or f.measure != floor.measure:
                continue
            hi = bounds(f.relation, f.n)[1]
            if hi is None:
                continue
            if f.per is per and hi < lo:
                raise ConflictError(f"at least {lo} {floor.unit.value} per {per.value[:-1]} but at most {hi}",
                                    constraint_ids=[c.id, q.id])
            if f.per is None and hi < lo * least_pieces:
                raise ConflictError(
                    f"{least_pieces} {per.value} of at least {lo} {floor.unit.value} do not fit in at most {hi}",
                    constraint_ids=[c.id, q.id, *pieces_ids],
                )


def form_opening(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool, placed: bool
) -> Opening | None:
    """The ``controllers.openings.Opening`` of a sentence or line at a middle position, or of every
    sentence, line or paragraph (``k = 0``), that starts with a text (None: none, or not
    controllable here).

    Controlled: one such position (``k >= 2`` or every piece), in a free body without fixed text, with no
    controller that forces words of its own (``inserts``: citations or a stated decision;
    ``placed``: a word placement; the kinds of ``INSERTING``), and no maximum that counts an
    item of the text (its tokens are forced past the masks).

    Raises:
        ConflictError: every piece opening with a text that the start phrase, or another
            opening of the same pieces, cannot begin with.
    """
    found: list[tuple[Constraint, Position]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Position) and form.op == "starts_with" and (
                form.unit in OPENED_UNITS and form.k >= 2 or form.unit in EVERY_UNITS and form.k == 0):
            found.append((c, form))
    _check_openings_agree(constraints, found)
    if len(found) != 1 or inserts or placed or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    kinds = {q.kind for q in constraints}
    text = " ".join(opening_text(form).split())
    text = text.lower() if Kind.ALL_LOWERCASE in kinds else text.upper() if Kind.ALL_CAPITALS in kinds else text
    if not text or not free_body(layout):
        return None
    if units.pieces(form.unit, text + " X")[:-1] or "\n" in text:
        return None  # the text would itself end a piece
    for q in constraints:
        try:
            forms = form_of(q.kind, q.params) or ()
        except (TypeError, ValueError, KeyError):
            return None
        for cap in forms:
            if isinstance(cap, Count) and cap.of is None and cap.unit is not Unit.UNIQUE_WORDS \
                    and bounds(cap.relation, cap.n)[1] is not None and units.count(cap.measure, " " + text + " ") > 0:
                return None  # (a distinct-words cap reserves the placed words: ``form_tally``)
    controlled.add(c.id)
    return Opening(per=form.unit, k=form.k, text=text, sources=(c.id,))


def form_class_opening(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool, placed: bool
) -> ClassOpening | None:
    """The ``controllers.class_openings.ClassOpening`` of every (or the k-th) sentence, line or
    paragraph opening with a capital letter, a lowercase letter or a digit (None: none, or not
    controllable here; an emoji is an opening text, a verb is left to the prompt).

    Controlled: one such position, in a free body without fixed text, with no controller that
    writes words of its own (as for ``form_opening``) and no other opening of the same pieces.

    Raises:
        ConflictError: a capital opening beside an all-lowercase answer, a lowercase one beside
            an all-capitals answer, a digit opening beside a cap of no digits.
    """
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Position)
             and form.op == "starts_with" and form.word_class in MASKED_CLASSES and form.unit in EVERY_UNITS]
    kinds = {q.kind: q.id for q in constraints}
    for c, form in found:
        against = {"capital": Kind.ALL_LOWERCASE, "lowercase": Kind.ALL_CAPITALS}.get(str(form.word_class))
        if against in kinds:
            raise ConflictError(f"every {form.unit.value[:-1]} cannot open with {form.word_class} letters "
                                "in an answer of the other case", constraint_ids=[c.id, kinds[against]])
        if form.word_class == "number":
            for q in constraints:
                for cap in forms_of(q):
                    if isinstance(cap, Count) and cap.unit in (Unit.DIGITS, Unit.NUMBERS) and cap.per is None \
                            and cap.of is None and bounds(cap.relation, cap.n)[1] == 0:
                        raise ConflictError("a piece cannot open with a digit in an answer without digits",
                                            constraint_ids=[c.id, q.id])
    letters = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
               and _letter_opening(form)]
    if len(found) + len(letters) != 1 or inserts or placed or any(c.kind in INSERTING for c in constraints):
        return None
    c, opening = (found or letters)[0]
    if not free_body(layout):
        return None
    for q in constraints:
        if q.id != c.id and any(isinstance(f, Position) and f.op == "starts_with"
                                and f.unit in (opening.unit, Unit.ANSWER) for f in forms_of(q)):
            return None  # another opening of these pieces: left to the prompt
    controlled.add(c.id)
    if isinstance(opening, Count):
        return ClassOpening(per=opening.unit, k=0, word_class=None, sources=(c.id,),
                            letter=(opening.filter.starts_with or "").lower())
    assert isinstance(opening, Position) and opening.word_class is not None
    return ClassOpening(per=opening.unit, k=opening.k, word_class=opening.word_class, sources=(c.id,))


def _letter_opening(form: Count) -> bool:
    """Whether ``form`` says every sentence / line / paragraph opens with a letter: none of them
    starts otherwise ("every sentence must start with the letter T")."""
    f = form.filter
    return form.unit in EVERY_UNITS and form.per is None and form.of is None and bounds(form.relation, form.n)[1] == 0 \
        and f.negated and f.starts_with is not None and len(f.starts_with) == 1 and f.starts_with.isalpha() \
        and f == Filter(starts_with=f.starts_with, negated=True)


def form_closing(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool, placed: bool
) -> Closing | None:
    """The ``controllers.closing_texts.Closing`` of every sentence, line or paragraph (``k = 0``), or the
    k-th line or paragraph, ending with a text (None: none, or not controllable here; the k-th
    sentence is ``form_sentence_end``'s).

    Controlled: one such position, in a free body without fixed text, with no controller that
    forces words of its own (as for ``form_opening``), a text that ends no piece before its own
    end, and no maximum that counts an item of the text (its tokens are forced past the masks).

    Raises:
        ConflictError: every piece ending with a text that the end phrase, or another closing
            of the same pieces, does not end with.
    """
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Position)
             and form.op == "ends_with" and form.unit in CLOSED_UNITS and form.text.strip()
             and (form.k == 0 or form.k >= 1 and form.unit in (Unit.LINES, Unit.PARAGRAPHS))]
    def agree(form: Position, text: str) -> bool:
        every = Closing(per=form.unit, k=0, text=" ".join(form.text.split()))
        return every.closed(text) or Closing(form.unit, 0, text).closed(every.text)

    _check_pieces_agree(constraints, found, Kind.END_PHRASE, "end with", agree)
    if len(found) != 1 or inserts or placed or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    text = " ".join(form.text.split())
    case = case_of(constraints)
    text = text.lower() if case == "lower" else text.upper() if case == "upper" else text
    if not free_body(layout):
        return None
    if any(ch in piece_ends(form.unit) for ch in text.rstrip(piece_ends(form.unit))) or "\n" in text:
        return None  # the text would end a piece before its own end
    for q in constraints:
        for cap in forms_of(q):
            if isinstance(cap, Count) and cap.of is None and cap.unit is not Unit.UNIQUE_WORDS \
                    and bounds(cap.relation, cap.n)[1] is not None and units.count(cap.measure, " " + text + " ") > 0:
                return None
    controlled.add(c.id)
    return Closing(per=form.unit, k=form.k, text=text, sources=(c.id,))


def _check_openings_agree(constraints: Sequence[Constraint], found: Sequence[tuple[Constraint, Position]]) -> None:
    """Every piece opening with a text beside the answer's start phrase, or another opening of
    the same pieces, that the text cannot begin: ``ConflictError`` ("every sentence begins with
    'Note'" and "start your answer with 'Hello'")."""
    def agree(form: Position, text: str) -> bool:
        return Opening(per=form.unit, k=0, text=" ".join(form.text.split())).may_open(text)

    _check_pieces_agree(constraints, found, Kind.START_PHRASE, "begin with", agree)


def _check_pieces_agree(
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


def form_minima(
    constraints: Sequence[Constraint],
    layout: Layout,
    tally: Tally | None,
    controlled: set[str],
    assisted: set[str],
    *,
    max_new_tokens: int | None,
) -> Minimums | None:
    """The ``controllers.count_minima.Minimums`` of the whole-answer minima of characters, letters
    (no filter: controlled) and distinct words (assisted), in a body that is not formal. A range
    (an exact count) is controlled when its cap is in ``tally`` too.

    Raises:
        ConflictError: a minimum above a maximum of the same count.
        LimitExceeded: more characters or letters than the token budget can add
            (``MOST_PER_TOKEN`` per token, besides what the fixed text holds).
    """
    literals = literal_text(layout)
    found: list[Minimum] = []
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or form.per is not None or form.of is not None:
            continue
        lo = bounds(form.relation, form.n)[0]
        kept = form.unit in KEPT_UNITS and whole_length(form)
        if not lo or not (kept or form.unit is Unit.UNIQUE_WORDS) or layout.body.kind == "formal":
            continue
        for q in constraints:
            other = form_of_constraint(q) if q.id != c.id else None
            if isinstance(other, Count) and other.per is None and other.of is None and other.measure == form.measure:
                hi = bounds(other.relation, other.n)[1]
                if hi is not None and hi < lo:
                    raise ConflictError(f"at least {lo} {form.unit.value.replace('_', ' ')} but at most {hi}",
                                        constraint_ids=[c.id, q.id])
        if kept and max_new_tokens is not None and lo - units.count(form.measure, literals) > MOST_PER_TOKEN * max_new_tokens:
            raise LimitExceeded(f"at least {lo} {form.unit.value} cannot fit in {max_new_tokens} new tokens",
                                constraint_ids=[c.id])
        capped = tally is not None and any(c.id in cap.sources for cap in tally.caps)
        if bounds(form.relation, form.n)[1] is not None and not capped:
            continue  # a range whose cap is not kept: left to the prompt
        found.append(Minimum(form.measure, lo, (c.id,)))
        (controlled if kept else assisted).add(c.id)
    return Minimums(tuple(found)) if found else None


def form_initials(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, max_new_tokens: int | None
) -> Initials | None:
    """The ``controllers.initials.Initials`` of a minimum of words starting, or ending, with given
    letters (no other filter, no maximum of its own), in a body that is not formal, beside no
    capital-word minimum (both would pace their words over the same budget).

    Raises:
        ConflictError: the minimum above a maximum of the same words or of all words.
        LimitExceeded: more such words than the token budget holds.
    """
    if layout.body.kind == "formal" or any(q.kind == Kind.CAPITAL_WORD_FREQUENCY for q in constraints):
        return None
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or form.unit is not Unit.WORDS or form.per is not None or form.of is not None:
            continue
        prefix = form.filter.starts_with or form.filter.ends_with or ""
        lo, hi = bounds(form.relation, form.n)
        if not lo or hi is not None or not prefix.isalpha() \
                or form.filter not in (Filter(starts_with=prefix), Filter(ends_with=prefix)):
            continue
        for q in constraints:
            for f in forms_of(q) if q.id != c.id else ():
                if isinstance(f, Count) and f.per is None and f.of is None and f.unit is Unit.WORDS \
                        and f.filter in (Filter(), form.filter):
                    most = bounds(f.relation, f.n)[1]
                    if most is not None and most < lo:
                        raise ConflictError(f"at least {lo} words with {prefix!r} but at most {most} words",
                                            constraint_ids=[c.id, q.id])
        if max_new_tokens is not None and lo > max_new_tokens:
            raise LimitExceeded(f"{lo} words cannot fit in {max_new_tokens} new tokens", constraint_ids=[c.id])
        controlled.add(c.id)
        return Initials(Initial(need=lo, sources=(c.id,), measure=form.measure))
    return None


#: The most characters a controlled span delimiter has ("**", "<<", a fence of three backquotes).
_MOST_DELIMITER = 3


def form_spans(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, max_new_tokens: int | None,
    inserts: bool,
) -> SpanCount | None:
    """The ``controllers.spans.SpanCount`` of the counts of spans between one pair of
    delimiters made of one to three marks (None: none, or not controllable here).

    Controlled: every whole-answer count of those spans (a range is two constraints), in a free
    body whose fixed text (literals, required keywords) holds neither delimiter, with
    no citations or stated decision (``inserts``: their brackets and sentences are forced) and
    no wrapper of the answer.

    Raises:
        ConflictError: a minimum above a maximum of the same spans.
        LimitExceeded: more spans than the token budget holds.
    """
    found: list[tuple[Constraint, Count]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Count) and form.unit is Unit.SPANS and form.per is None and form.of is None:
            found.append((c, form))
    if not found:
        return None
    f = found[0][1].filter
    left, right = f.left or "", f.right or ""
    same = [(c, form) for c, form in found if form.filter == f]
    lo = max(bounds(form.relation, form.n)[0] for _, form in same)
    his = [hi for _, form in same if (hi := bounds(form.relation, form.n)[1]) is not None]
    hi = min(his) if his else None
    ids = tuple(c.id for c, _ in same)
    if hi is not None and lo > hi:
        raise ConflictError(f"at least {lo} spans in {left}...{right} but at most {hi}", constraint_ids=list(ids))
    if max_new_tokens is not None and lo * SPAN_TOKENS > max_new_tokens:
        raise LimitExceeded(f"{lo} spans in {left}...{right} cannot fit in {max_new_tokens} new tokens",
                            constraint_ids=list(ids))
    if not 1 <= len(left) <= _MOST_DELIMITER or not 1 <= len(right) <= _MOST_DELIMITER \
            or any(ch.isalnum() or ch.isspace() for ch in left + right):
        return None  # a delimiter of marks only (a word or a line break is not written inside prose)
    fixed = list(fixed_texts(layout)) + required_keywords(constraints)
    if inserts or layout.wrap is not None or layout.body.kind != "free" \
            or any(ch in text for text in fixed for ch in (left, right, "\n")):
        return None
    if any(c.kind == Kind.QUOTATION for c in constraints) and '"' in (left, right):
        return None
    controlled.update(ids)
    return SpanCount(left=left, right=right, at_least=lo, at_most=hi, nonempty=f.nonempty, sources=ids)


def form_piece_sentences(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool
) -> PieceSentences | None:
    """The ``controllers.piece_sentences.PieceSentences`` of a bound on the sentences of every
    paragraph ("exactly two sentences in each paragraph"; None: none, or not controllable here).

    Controlled: in the blank-line body of a counted number of paragraphs (``_lower_paragraphs``),
    or alone in a free body without fixed text whose paragraphs the model writes (``free``: no
    other rule on paragraphs or lines), with no controller that writes text of its own
    (``inserts``, the kinds of ``INSERTING``) and no other rule on sentences.
    """
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
             and form.unit is Unit.SENTENCES and form.per is Unit.PARAGRAPHS and form.of is None
             and form.filter == Filter()]
    free = free_body(layout)
    if len(found) != 1 or inserts or not (free or layout.body.kind == "blank_paragraphs") \
            or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    pieces = (Unit.SENTENCES, Unit.PARAGRAPHS, Unit.LINES) if free else (Unit.SENTENCES,)
    for q in constraints:
        for f in forms_of(q) if q.id != c.id else ():
            if isinstance(f, (Count, Position, Wrap)) and (
                    getattr(f, "unit", None) in pieces or getattr(f, "per", None) in pieces):
                return None
    lo, hi = bounds(form.relation, form.n)
    if hi is not None and hi < max(lo, 1):
        return None
    controlled.add(c.id)
    return PieceSentences(at_least=lo, at_most=hi, sources=(c.id,), free=free)


def form_sentence_end(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool
) -> SentenceEnd | None:
    """The ``controllers.sentence_ends.SentenceEnd`` of the k-th sentence (``k >= 1``) ending with
    a text ("the first sentence ends with the word 'friends'"; None: none, or not controllable here).

    Controlled: one such position, its text without a terminal or a line break, in a free body
    without fixed text, with no controller that writes words of its own (``inserts``: citations
    or a stated decision; the kinds of ``INSERTING``), no other rule on sentence ends or
    openings, and no maximum that counts an item of the text (its tokens are forced past the masks).
    """
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Position)
             and form.unit is Unit.SENTENCES and form.op == "ends_with" and form.k >= 1]
    return sentence_text_rule(constraints, layout, controlled, found, inserts=inserts)


def sentence_text_rule(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str],
    found: Sequence[tuple[Constraint, Position]], *, inserts: bool,
) -> SentenceEnd | None:
    """The ``SentenceEnd`` of the one position in ``found``, the k-th sentence ending with its text
    or (``op="contains"``) holding it, where the sentence-end controller can keep it: on the terms
    :func:`form_sentence_end` names, the same for both (None: not one position, or not here)."""
    if len(found) != 1 or inserts or any(c.kind in INSERTING for c in constraints):
        return None
    c, form = found[0]
    kinds = {q.kind for q in constraints}
    text = " ".join(form.text.split())
    text = text.lower() if Kind.ALL_LOWERCASE in kinds else text.upper() if Kind.ALL_CAPITALS in kinds else text
    if not text or any(ch in TERMINALS or ch == "\n" for ch in text) or not free_body(layout):
        return None
    for q in constraints:
        for f in forms_of(q) if q.id != c.id else ():
            if isinstance(f, Wrap) and f.unit is Unit.SENTENCES or isinstance(f, Position) and f.unit is Unit.SENTENCES:
                return None
            if isinstance(f, Count) and (f.of is not None or f.unit is Unit.SENTENCES and f.filter.ends_with):
                return None
            if isinstance(f, Count) and f.of is None and f.unit not in (Unit.UNIQUE_WORDS, *PIECE_UNITS) \
                    and bounds(f.relation, f.n)[1] is not None and units.count(f.measure, " " + text + " ") > 0:
                return None  # (a count of lines or paragraphs: the text adds none)
    controlled.add(c.id)
    return SentenceEnd(k=form.k, text=text, sources=(c.id,), op="contains" if form.op == "contains" else "ends_with")


def form_sentence_mark(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool
) -> SentenceMark | None:
    """The ``controllers.sentence_marks.SentenceMark`` of every sentence ending with one
    sentence-ending mark (``wrap(sentences, "", mark)``; None: none, or not controllable here).

    Controlled: in a free body without fixed text, citations or a stated decision (``inserts``),
    whose required keywords hold no terminal.

    Raises:
        ConflictError: two different marks for every sentence.
    """
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Wrap)
             and form.unit is Unit.SENTENCES and not form.left and len(form.right) == 1 and form.right in TERMINALS]
    if not found:
        return None
    marks = {form.right for _, form in found}
    if len(marks) > 1:
        raise ConflictError("every sentence cannot end with two different marks",
                            constraint_ids=[c.id for c, _ in found])
    if inserts or not free_body(layout):
        return None
    if any(ch in TERMINALS for text in required_keywords(constraints) for ch in text):
        return None
    ids = tuple(c.id for c, _ in found)
    controlled.update(ids)
    return SentenceMark(mark=found[0][1].right, sources=ids)


def form_sentence_share(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, inserts: bool
) -> SentenceShare | None:
    """The ``controllers.shares.SentenceShare`` of a lower bound on the share of the sentences
    ending with one sentence-ending mark ("at least half of the sentences are questions":
    ``count(sentences, ends_with="?") / count(sentences) >= 0.5``; None: none, or not
    controllable here).

    Controlled: in a free body without fixed text, citations or a stated decision
    (``inserts``), whose required keywords hold no terminal, beside no other rule on every
    sentence's end mark.

    Raises:
        ConflictError: a share of sentences with the mark above a maximum share of them, or
            beside every sentence ending with another mark.
    """
    found: list[tuple[Constraint, Count, str]] = []
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Count) or form.of is None or form.fraction is None or form.per is not None:
            continue
        mark = form.filter.ends_with or ""
        if form.unit is Unit.SENTENCES and form.of == Measure(unit=Unit.SENTENCES) and len(mark) == 1 \
                and mark in TERMINALS and form.filter == Filter(ends_with=mark) \
                and form.relation in (Relation.AT_LEAST, Relation.MORE_THAN) and form.fraction > 0:
            found.append((c, form, mark))
    if not found:
        return None
    c, form, mark = max(found, key=lambda item: (item[1].fraction or 0.0, item[1].relation is Relation.MORE_THAN))
    fraction = float(form.fraction or 0.0)
    for q in constraints:
        other = form_of_constraint(q)
        if isinstance(other, Wrap) and other.unit is Unit.SENTENCES and not other.left and other.right != mark \
                and other.right in TERMINALS:
            raise ConflictError(f"every sentence cannot end with {other.right!r} when some must end with {mark!r}",
                                constraint_ids=[c.id, q.id])
        capped = isinstance(other, Count) and other.of == form.of and other.measure == form.measure \
            and other.per is None and other.fraction is not None and other.relation in (Relation.AT_MOST,
                                                                                        Relation.LESS_THAN)
        if capped and isinstance(other, Count) and other.fraction is not None and (
                other.fraction < fraction or other.fraction == fraction
                and (other.relation is Relation.LESS_THAN or form.relation is Relation.MORE_THAN)):
            raise ConflictError(f"a share of the sentences ending with {mark!r} of at least {fraction:g} "
                                f"and at most {other.fraction:g}", constraint_ids=[c.id, q.id])
    if fraction > 1 or fraction == 1 and form.relation is Relation.MORE_THAN:
        raise ConflictError(f"more than every sentence cannot end with {mark!r}", constraint_ids=[c.id])
    if inserts or not free_body(layout):
        return None
    if any(ch in TERMINALS for text in required_keywords(constraints) for ch in text):
        return None
    if any(isinstance(q_form := form_of_constraint(q), Wrap) and q_form.unit is Unit.SENTENCES for q in constraints):
        return None  # every sentence's end is another controller's
    ids = tuple(q.id for q, _, m in found if m == mark)
    controlled.update(ids)
    return SentenceShare(mark=mark, fraction=fraction, strict=form.relation is Relation.MORE_THAN, sources=ids)


def form_hashtags(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, max_new_tokens: int | None,
    inserts: bool,
) -> HashtagMinimum | None:
    """The ``controllers.hashtags.HashtagMinimum`` of a minimum of hashtags (None: none, or not
    controllable here: a formal body, citations or a stated decision beside it). A range is
    controlled when its cap is controlled too (``form_tally``).

    Raises:
        ConflictError: the minimum above a maximum of hashtags.
        LimitExceeded: more hashtags than the token budget holds.
    """
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
             and form.unit is Unit.HASHTAGS and form.per is None and form.of is None and form.filter == Filter()]
    lows = [(c, lo) for c, form in found if (lo := bounds(form.relation, form.n)[0])]
    if not lows:
        return None
    source, lo = max(lows, key=lambda pair: pair[1])
    for c, form in found:
        hi = bounds(form.relation, form.n)[1]
        if hi is not None and hi < lo:
            raise ConflictError(f"at least {lo} hashtags but at most {hi}", constraint_ids=[source.id, c.id])
    if max_new_tokens is not None and lo * HASHTAG_TOKENS > max_new_tokens:
        raise LimitExceeded(f"{lo} hashtags cannot fit in {max_new_tokens} new tokens", constraint_ids=[source.id])
    if inserts or layout.body.kind == "formal":
        return None
    ids = tuple(c.id for c, _ in lows)
    for c, form in found:
        if c.id not in ids and c.id not in controlled:
            return None  # a cap left to the prompt: the range is too
    controlled.update(c.id for c, _ in found)
    return HashtagMinimum(at_least=lo, sources=ids)


def form_lines(
    constraints: Sequence[Constraint], layout: Layout, controlled: set[str], *, max_new_tokens: int | None,
    inserts: bool,
) -> LineCount | None:
    """The ``controllers.lines.LineCount`` of the counts of the answer's lines (a range is two
    constraints; None: none, or not controllable here: a body that is not free, fixed text,
    citations or a stated decision).

    Raises:
        ConflictError: a minimum above a maximum of lines.
        LimitExceeded: more lines than the token budget holds.
    """
    found = [(c, form) for c in constraints if isinstance(form := form_of_constraint(c), Count)
             and form.unit is Unit.LINES and form.per is None and form.of is None and form.filter == Filter()]
    if not found:
        return None
    lo = max(bounds(form.relation, form.n)[0] for _, form in found)
    his = [hi for _, form in found if (hi := bounds(form.relation, form.n)[1]) is not None]
    hi = min(his) if his else None
    ids = tuple(c.id for c, _ in found)
    if hi is not None and lo > hi:
        raise ConflictError(f"at least {lo} lines but at most {hi}", constraint_ids=list(ids))
    if max_new_tokens is not None and lo * LINE_TOKENS > max_new_tokens:
        raise LimitExceeded(f"{lo} lines cannot fit in {max_new_tokens} new tokens", constraint_ids=list(ids))
    if inserts or not free_body(layout):
        return None
    if hi is not None and hi < 1:
        return None
    controlled.update(ids)
    return LineCount(at_least=lo, at_most=hi, sources=ids)
