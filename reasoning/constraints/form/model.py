"""The six shapes of the constraint form, as frozen msgspec Structs.

A generic constraint's ``params`` are exactly the builtins of its shape
(``msgspec.to_builtins``), so the HTTP layer, the store and the graph carry
them without a schema of their own, and :func:`msgspec.convert` reads them
back with type checks.

- :class:`Count`: ``count(unit, filter) relation n``; with ``of`` the counted
  quantity is a share of another count (``fraction``, a ratio of two
  counts); with ``per`` the bound holds for each sentence / paragraph / line
  rather than for the whole answer.
- :class:`Position`: the ``k``-th (1-based; -1 the last; 0 every one) word,
  sentence, paragraph, line or list item, or the answer itself, starts with /
  ends with / is a text.
- :class:`Wrap`: the answer, or each of its sentences / paragraphs / lines,
  opens with ``left`` and closes with ``right``.
- :class:`Structure`: a layout the answer has (a list, a nested list, a
  table, marked sections, two responses) or must not have (no list).
- :class:`Copy`: the answer starts by repeating a text, verbatim or changed.
- :class:`Spread`: the lengths of the sentences / paragraphs / lines / list
  items are balanced: the longest exceeds the shortest by at most
  ``max_diff`` items, or is at most ``max_ratio`` times as long.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import msgspec

from reasoning.constraints.model import Relation

__all__ = [
    "ROUGHLY_EQUAL",
    "Adjacency",
    "Beside",
    "Copy",
    "Count",
    "Drop",
    "Echo",
    "Filter",
    "Form",
    "Layout",
    "LengthClass",
    "Measure",
    "Position",
    "Predicate",
    "Spread",
    "Structure",
    "Unit",
    "WordClass",
    "Wrap",
]


class Unit(StrEnum):
    """What a form counts, or where a position or wrapper applies."""

    CHARACTERS = "characters"
    LETTERS = "letters"
    WORDS = "words"
    UNIQUE_WORDS = "unique_words"
    SENTENCES = "sentences"
    PARAGRAPHS = "paragraphs"
    LINES = "lines"
    BULLETS = "bullets"
    NESTED_BULLETS = "nested_bullets"
    SECTIONS = "sections"
    PUNCTUATION = "punctuation"
    DIGITS = "digits"
    NUMBERS = "numbers"
    EMOJI = "emoji"
    HASHTAGS = "hashtags"
    HEADINGS = "headings"
    CAPITAL_WORDS = "capital_words"
    KEYWORDS = "keywords"
    HIGHLIGHTS = "highlights"
    PLACEHOLDERS = "placeholders"
    SPANS = "spans"
    ANSWER = "answer"


Case = Literal["upper", "lower", "title"]
Adjacency = Literal["initial", "word", "alphabet"]
LengthClass = Literal["prime", "even", "odd"]


class Filter(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """Which items of a unit count; every field set must hold (an empty filter counts all).

    - ``text``: for ``keywords`` the keyword (case-insensitive; a substring
      unless ``whole_word``), for ``letters`` the letter;
    - ``chars``: for ``characters`` / ``punctuation``, only these characters;
    - ``starts_with`` / ``ends_with`` / ``contains``: word or sentence
      affixes, case-insensitive;
    - ``case``: ``upper`` / ``lower`` letters, or ``title`` (capitalised) words;
    - ``script``: items whose letters are all in this script ("Latin", "Han");
    - ``stop_words``: True counts only stop words, False only the others;
    - ``separator``: paragraphs split by this divider (``***``) instead of blank lines;
    - ``marker``: sections introduced by this word and a number ("Section 1");
      for ``headings``, only headings of this many ``#`` (``"###"``);
    - ``left`` / ``right``: spans between these delimiters;
    - ``min_length`` / ``max_length``: items of at least / at most this many
      letters and digits ("no word longer than 8 letters" counts the words of
      ``min_length`` 9);
    - ``same_as_previous``: words that share with the word before them their
      first letter (``initial``; cased letters only) or the whole word
      (``word``), without case ("no two consecutive words start with the same
      letter" counts the words repeating the previous ``initial``); ``alphabet``:
      words whose first letter is not the one after the previous word's in the
      alphabet (z is followed by a), a word without a Latin initial among them
      ("each word starts with the next letter of the alphabet" counts them: at most 0);
    - ``length_class``: items whose length (letters and digits) is ``prime``,
      ``even`` or ``odd``;
    - ``palindrome``: items of letters and digits that read the same backwards
      (without case; "racecar", "level");
    - ``occurrence``: words that are at least the ``occurrence``-th use of the
      same word (without case) in the text ("no word more than twice" counts
      the third and later uses: ``occurrence`` 3, at most 0);
    - ``one_of``: words that are one of these (without case; a word of the
      answer as the word counter splits it): pronouns, coordinating
      conjunctions, the names a request lists ("at least 3 different
      coordinating conjunctions" counts the ``unique_words`` of for, and,
      nor, but, or, yet, so);
    - ``negated``: the items that fail the item tests above (affixes, contains,
      case, script, stop words, lengths, length class, palindrome) instead of
      those that pass: "every word starts with s" counts the words not
      starting with s, "every word has a prime number of letters" those
      whose length is not prime (at most 0 each);
    - ``nonspace``: for ``characters``, only those that are not white space
      ("excluding spaces"); without it every character counts, spaces and
      line breaks included, as a reader counts the length of a text.
    """

    text: str | None = None
    whole_word: bool = False
    chars: str | None = None
    starts_with: str | None = None
    ends_with: str | None = None
    contains: str | None = None
    case: Case | None = None
    script: str | None = None
    stop_words: bool | None = None
    separator: str | None = None
    marker: str | None = None
    left: str | None = None
    right: str | None = None
    nonempty: bool = False
    min_length: int | None = None
    max_length: int | None = None
    same_as_previous: Adjacency | None = None
    nonspace: bool = False
    length_class: LengthClass | None = None
    palindrome: bool = False
    occurrence: int | None = None
    negated: bool = False
    one_of: tuple[str, ...] = ()


class Measure(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """A unit and a filter: one countable quantity of a text."""

    unit: Unit
    filter: Filter = msgspec.field(default_factory=Filter)


class Count(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``count(unit, filter) relation n``, or ``count / count(of) relation fraction``."""

    unit: Unit
    relation: Relation
    n: int = 0
    filter: Filter = msgspec.field(default_factory=Filter)
    of: Measure | None = None
    fraction: float | None = None
    per: Unit | None = None

    @property
    def measure(self) -> Measure:
        return Measure(unit=self.unit, filter=self.filter)


Predicate = Literal["starts_with", "ends_with", "is", "contains"]
WordClass = Literal["emoji", "capital", "lowercase", "number", "verb"]
Echo = Literal["first_word", "previous_last_word"]


class Position(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ``k``-th ``unit`` (1-based, -1 the last; ``answer`` has only one) satisfies ``op text``.

    ``k = 0`` means every one of them ("every sentence begins with 'Note'",
    "each paragraph ends with 'Over.'", "start every list item with ✅";
    ``bullets`` are the list's item lines, their marker left out), and an
    answer without any fails.

    For words, ``is`` / ``starts_with`` compare the word without its
    surrounding punctuation; all comparisons ignore case.

    With ``word_class`` the piece opens (``starts_with``) or closes
    (``ends_with``) with an item of a class rather than a text (``text`` is
    then empty): ``emoji`` (an emoji character), ``capital`` / ``lowercase``
    (its first / last letter in that case), ``number`` (a digit),
    ``verb`` (a word the English tagger reads as a verb, as the bullets of a
    to-do list open). "Begin each bullet with an emoji" is
    ``position(bullets, k=0, starts_with, word_class=emoji)``.

    ``contains``: the piece holds ``text`` as a whole word or phrase ("the
    word 'ocean' must appear in the third sentence"). ``k`` below -1 counts
    from the end (-2 the second-to-last word).

    ``word``: the position is of one word inside the piece, the ``word``-th
    (1-based, negative from the end), compared as a word ("'river' is the
    second word of the fourth sentence": ``position(sentences, k=4, is,
    river, word=2)``).

    ``same_as``: the text is not a literal but a word of the answer itself
    (``text`` empty): ``first_word``, the piece ends with the word it began
    with ("each paragraph ends with the word it began with"); or
    ``previous_last_word``, the piece begins with the last word of the piece
    before it (the first piece is free: "the last word of each sentence is
    the first word of the next").
    """

    unit: Unit
    op: Predicate
    text: str
    k: int = 1
    word_class: WordClass | None = None
    word: int | None = None
    same_as: Echo | None = None

    @property
    def plain(self) -> bool:
        """A literal or class at a piece's edge (what the position controllers read): no word
        inside the piece, no echo of another word, no containment."""
        return self.word is None and self.same_as is None and self.op != "contains"


class Wrap(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The answer (or each sentence / paragraph / line of it) is wrapped as ``left ... right``."""

    left: str
    right: str
    unit: Unit = Unit.ANSWER


class Layout(StrEnum):
    """Layouts of :class:`Structure`."""

    LIST = "list"
    NESTED_LIST = "nested_list"
    NUMBERED_LIST = "numbered_list"
    TABLE = "table"
    NO_LIST = "no_list"
    RESPONSES = "responses"


Beside = Literal["paragraph", "sentence"]
Drop = Literal["first_sentence", "last_sentence"]


class Structure(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The answer has ``layout`` (``no_list``: has none of the list layouts).

    - ``responses``: ``n`` different responses separated by ``marker``;
    - lists: ``n`` top-level items when set; ``sub_items`` (a nested list): exactly
      that many nested items under every top-level item ("three points, each with two
      sub-points", a two-level outline); with ``sub_at_least``, at least that many
      ("under every main point at least one sub-point");
    - ``table``: a Markdown table (a header row, a ``---`` rule, body rows)
      of ``n`` body rows and ``columns`` columns when set, its header cells
      ``headers`` when given (compared without case);
    - ``before`` / ``after`` (lists and tables): prose stands before / after
      the list or table, a ``paragraph`` (one or more sentences) or exactly
      one ``sentence``.
    """

    layout: Layout
    marker: str | None = None
    n: int | None = None
    columns: int | None = None
    sub_items: int | None = None
    sub_at_least: bool = False
    headers: tuple[str, ...] = ()
    before: Beside | None = None
    after: Beside | None = None


class Copy(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The answer starts by repeating ``text``: verbatim, or (``change``) changed.

    A change may be stated (``reasoning.constraints.form.copying.changed``
    computes the changed text): ``replace`` swaps each ``(old, new)`` pair
    (whole words, without case), ``case`` writes the copy in ``upper`` or
    ``lower`` case, ``drop`` leaves out its first or last sentence; with none
    of them the change is unstated (some words changed).
    """

    text: str
    change: bool = False
    replace: tuple[tuple[str, str], ...] = ()
    case: Literal["upper", "lower"] | None = None
    drop: Drop | None = None


#: "Roughly equal in length": the longest piece at most this many times the shortest.
ROUGHLY_EQUAL = 1.5


class Spread(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """The ``per`` pieces are balanced in length, measured in ``unit`` (words, characters, letters).

    ``max_diff``: the longest piece holds at most that many more items than
    the shortest ("no sentence more than four words longer than another");
    ``max_ratio``: the longest is at most that many times the shortest
    ("roughly equal in length" is 1.5). Both may be set; an answer of fewer
    than two pieces is balanced.

    ``step``: a sequence rather than a balance, each piece exactly ``step``
    items longer than the one before ("each sentence exactly two words
    longer than the previous one"; negative: shorter).
    """

    unit: Unit
    per: Unit
    max_diff: int | None = None
    max_ratio: float | None = None
    step: int | None = None


Form = Count | Position | Wrap | Structure | Copy | Spread
