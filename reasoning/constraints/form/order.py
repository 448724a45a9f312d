"""Which counted quantities can never exceed which: the order of measures.

``within(a, b)`` is True when every item measure ``a`` counts in any text is
also counted by ``b`` in that text, so ``count(a) <= count(b)`` always. The
constraint graph uses it to relate bounds on *different* quantities: "at
least 3 '!'" and "no exclamation marks" bound the letter '!' and the
punctuation marks '!' / '！'; the first is within the second, and 3 > 0 makes
the two exclusive. The same holds for "at least 40 unique words" and "at
most 30 words", or "at least 5 words starting with 'b'" and "at most 3
words".

Only orders that hold for every text are reported (the relation is used to
draw ``excludes`` edges, which must be sound):

- a measure is within itself;
- a measure of single characters with a finite set (``chars``, or a letter
  ``text`` in either case) is within any character-level measure that counts
  each of those characters as one item (all characters but spaces, letters,
  punctuation marks, digits, emoji, or a larger set);
- two measures of the same unit whose items are split the same way, the
  first filter restricting the second: every field the second sets, the
  first sets to the same value (filters are conjunctions);
- ``unique_words`` is within ``words`` with the same or a looser filter
  (each distinct word occurs at least once).
"""

from __future__ import annotations

from reasoning.constraints.form import units
from reasoning.constraints.form.model import Filter, Measure, Unit

__all__ = ["CHARACTER_UNITS", "within"]

#: Units whose items are single characters.
CHARACTER_UNITS = frozenset(
    {Unit.CHARACTERS, Unit.LETTERS, Unit.PUNCTUATION, Unit.DIGITS, Unit.EMOJI}
)

#: Filter fields that only drop items (a conjunction of tests on each item).
_RESTRICTING = ("starts_with", "ends_with", "contains", "case", "script", "stop_words", "nonempty",
                "min_length", "max_length", "same_as_previous", "nonspace", "length_class", "palindrome",
                "occurrence", "one_of")
#: Filter fields that decide what an item is (which text, how a text is split); ``negated`` turns
#: the restricting tests round, so two filters relate only when both are negated or neither is.
_DEFINING = ("text", "chars", "separator", "marker", "left", "right", "negated")
#: Units whose filter applies the restricting fields to each item.
_FILTERED_UNITS = frozenset(
    {
        Unit.WORDS,
        Unit.UNIQUE_WORDS,
        Unit.SENTENCES,
        Unit.LINES,
        Unit.PARAGRAPHS,
        Unit.CHARACTERS,
        Unit.LETTERS,
    }
)


def _finite_chars(m: Measure) -> frozenset[str] | None:
    """The characters ``m`` counts, when it counts single characters from a finite set only."""
    f = m.filter
    if m.unit in (Unit.CHARACTERS, Unit.PUNCTUATION) and f.chars:
        rest = Filter(chars=f.chars)
        if f != rest:
            return None
        chars = frozenset(f.chars)
        return (
            chars
            if m.unit is Unit.CHARACTERS
            else frozenset(c for c in chars if units.count(m, c) == 1)
        )
    if m.unit is Unit.LETTERS and f.text and len(f.text) == 1 and f == Filter(text=f.text):
        return frozenset({f.text, f.text.lower(), f.text.upper()})
    return None


def _restricts(a: Filter, b: Filter) -> bool:
    """Every item ``a`` keeps, ``b`` keeps: ``a`` sets each restricting field ``b`` sets, equally,
    and both define their items alike."""
    for name in _DEFINING:
        if getattr(a, name) != getattr(b, name):
            return False
    for name in _RESTRICTING:
        wanted = getattr(b, name)
        if wanted not in (None, False) and getattr(a, name) != wanted:
            return False
    return a.whole_word or not b.whole_word


def within(a: Measure, b: Measure) -> bool:
    """True when ``count(a) <= count(b)`` holds for every text (see the module doc)."""
    if a == b:
        return True
    chars = _finite_chars(a)
    if chars is not None and b.unit in CHARACTER_UNITS:
        return all(units.count(b, c) == 1 for c in chars)
    if a.unit is b.unit and a.unit in _FILTERED_UNITS | {Unit.KEYWORDS}:
        return _restricts(a.filter, b.filter)
    if a.unit is Unit.UNIQUE_WORDS and b.unit is Unit.WORDS:
        return _restricts(a.filter, b.filter)
    return False
