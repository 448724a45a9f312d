"""A constraint's normal form: what it says about the answer, kind-independently.

Relations between constraints are not looked up in a table of kind pairs. Each
constraint is first translated into *facets*, a small vocabulary of statements
about the answer that every kind shares:

- ``bounds``: integer intervals on counted quantities ("words", "occurrences of
  'risk'", "bullets", "citation dates" as ordinal days, ...);
- ``values``: exclusive categorical attributes (response language, letter case,
  decimals of every number, the first word of paragraph *k*);
- ``required``: literal texts the answer must contain (a tuple of alternatives:
  the answer contains at least one of them);
- ``forbidden_chars``: characters that may not occur at all;
- ``prefix`` / ``suffix``: what the answer must start / end with, either a
  literal text or a set of allowed first / last characters.

``complete`` says whether the facets are the constraint's *whole* meaning (so
anything implying every facet implies the constraint); only complete
constraints can be the target of an ``entails`` edge. Facets are always
*necessary* conditions, which is what makes an ``excludes`` edge sound.

Text comparisons are case-insensitive (``str.casefold``) because the catalog's
verifiers, like IFEval's, match keywords and start / end phrases without
regard to case; therefore case rules never exclude literals.

Keyword occurrences are one quantity for required, counted and forbidden
words alike. IFEval's verifier finds a required keyword as a substring and a
forbidden one as a whole word, so "risky" would satisfy both "include risk"
and "never say risk"; the graph reads the two instructions as the user meant
them, as contradictory.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from reasoning.constraints.form import (
    Count,
    Filter,
    Form,
    Layout,
    Measure,
    Position,
    Structure,
    Unit,
    Wrap,
    form_of,
)
from reasoning.constraints.model import Constraint, Kind, Relation

__all__ = [
    "JSON_FIRST_CHARS",
    "JSON_LAST_CHARS",
    "Boundary",
    "Facets",
    "Interval",
    "facets_of",
    "interval_for",
]

Quantity = tuple[str, ...]
Attribute = tuple[str, ...]
Builder = Callable[[dict[str, Any]], "Facets"]

# A JSON text (RFC 8259), optionally inside a markdown code fence as the
# verifiers accept, can only start and end with these characters.
JSON_FIRST_CHARS = frozenset('{["-0123456789tfn`')
JSON_LAST_CHARS = frozenset('}]"0123456789el`')


@dataclass(frozen=True, slots=True)
class Interval:
    """A closed interval of integers; ``hi is None`` means unbounded above."""

    lo: int
    hi: int | None

    @property
    def empty(self) -> bool:
        return self.hi is not None and self.hi < self.lo

    def within(self, other: Interval) -> bool:
        """True when every integer of ``self`` lies in ``other`` (an empty self is within anything)."""
        if self.empty:
            return True
        if self.lo < other.lo:
            return False
        if other.hi is None:
            return True
        return self.hi is not None and self.hi <= other.hi

    def disjoint(self, other: Interval) -> bool:
        """True when no integer lies in both intervals."""
        if self.empty or other.empty:
            return True
        if self.hi is not None and self.hi < other.lo:
            return True
        return other.hi is not None and other.hi < self.lo

    def __str__(self) -> str:
        if self.hi is None:
            return f"[{self.lo}, ∞)"
        return f"[{self.lo}, {self.hi}]"


@dataclass(frozen=True, slots=True)
class Boundary:
    """What the answer must start (or end) with.

    Either ``literal`` (a text, compared case-insensitively after stripping
    whitespace) or ``chars`` (the set of allowed first / last characters).
    """

    literal: str | None = None
    chars: frozenset[str] | None = None

    def compatible(self, other: Boundary, *, at_end: bool) -> bool:
        """Whether some answer can satisfy both boundaries."""
        if self.literal is not None and other.literal is not None:
            a, b = self.literal, other.literal
            if at_end:
                return a.endswith(b) or b.endswith(a)
            return a.startswith(b) or b.startswith(a)
        if self.literal is not None and other.chars is not None:
            return _edge_char(self.literal, at_end) in other.chars
        if self.chars is not None and other.literal is not None:
            return _edge_char(other.literal, at_end) in self.chars
        if self.chars is not None and other.chars is not None:
            return bool(self.chars & other.chars)
        return True

    def implies(self, other: Boundary, *, at_end: bool) -> bool:
        """Whether satisfying ``self`` guarantees ``other``."""
        if other.literal is not None:
            if self.literal is None:
                return False
            if at_end:
                return self.literal.endswith(other.literal)
            return self.literal.startswith(other.literal)
        if other.chars is not None:
            if self.literal is not None:
                return _edge_char(self.literal, at_end) in other.chars
            return self.chars is not None and self.chars <= other.chars
        return True


def _edge_char(literal: str, at_end: bool) -> str:
    return literal[-1] if at_end else literal[0]


@dataclass(frozen=True, slots=True)
class Facets:
    """The normal form of one constraint (see the module docstring)."""

    bounds: dict[Quantity, Interval] = field(default_factory=dict)
    values: dict[Attribute, str] = field(default_factory=dict)
    required: tuple[tuple[str, ...], ...] = ()
    forbidden_chars: frozenset[str] = frozenset()
    prefix: Boundary | None = None
    suffix: Boundary | None = None
    complete: bool = False
    #: The form measure each bounded quantity counts, where a count form gave it (so bounds
    #: on different quantities can be compared: ``reasoning.constraints.form.order``).
    measures: dict[Quantity, Measure] = field(default_factory=dict)

    @property
    def forbidden_words(self) -> frozenset[str]:
        """Words whose occurrence count is bounded to zero."""
        return frozenset(
            q[1] for q, iv in self.bounds.items() if q[0] == "occurrences" and iv.hi == 0
        )


def interval_for(relation: str | Relation, n: int) -> Interval:
    """The integers a count may take under ``relation n`` (IFEval's relations).

    >>> str(interval_for("less than", 50))
    '[0, 49]'
    """
    rel = Relation(relation)
    if rel is Relation.LESS_THAN:
        return Interval(0, n - 1)
    if rel is Relation.AT_MOST:
        return Interval(0, n)
    if rel is Relation.AT_LEAST:
        return Interval(max(n, 0), None)
    if rel is Relation.MORE_THAN:
        return Interval(max(n + 1, 0), None)
    return Interval(n, n)


def _norm(text: Any) -> str | None:
    if not isinstance(text, str):
        return None
    value = " ".join(text.split()).casefold()
    return value or None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _counted(params: dict[str, Any]) -> Interval | None:
    n = _int(params.get("n"))
    relation = params.get("relation", Relation.EXACTLY.value)
    if n is None:
        return None
    try:
        return interval_for(relation, n)
    except (ValueError, TypeError):
        return None


def _date_ordinal(value: Any) -> int | None:
    if isinstance(value, _dt.datetime):
        return value.date().toordinal()
    if isinstance(value, _dt.date):
        return value.toordinal()
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip()[:10]).toordinal()
        except ValueError:
            return None
    return None


def _words(value: Any) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)):
        return []
    return [w for w in (_norm(v) for v in value) if w]


def facets_of(constraint: Constraint) -> Facets:
    """Translate one constraint into facets; malformed params give empty, incomplete facets.

    Never raises: the graph must be buildable from whatever extraction or a
    profile produced, and an unreadable parameter simply yields no relation.
    """
    builder = _BUILDERS.get(constraint.kind)
    facets = builder(constraint.params) if builder is not None else Facets()
    try:
        forms = form_of(constraint.kind, constraint.params)
    except (TypeError, ValueError, KeyError):
        return facets
    return _with_forms(facets, forms or (), generic=builder is None)


_PLAIN_QUANTITIES: dict[Unit, Quantity] = {
    Unit.WORDS: ("words",),
    Unit.SENTENCES: ("sentences",),
    Unit.CAPITAL_WORDS: ("capital_words",),
    Unit.BULLETS: ("bullets",),
    Unit.HIGHLIGHTS: ("highlights",),
    Unit.PLACEHOLDERS: ("placeholders",),
    Unit.PARAGRAPHS: ("blank_line_paragraphs",),
}


def _quantity(form: Count) -> Quantity:
    """The quantity a count bounds, named as the named kinds' facets name it where they do."""
    f = form.filter
    if f == type(f)() and form.unit in _PLAIN_QUANTITIES:
        return _PLAIN_QUANTITIES[form.unit]
    if form.unit is Unit.KEYWORDS and f.text and _norm(f.text):
        return ("occurrences", str(_norm(f.text)))
    if form.unit is Unit.LETTERS and f.text and f.case is None:
        return ("letter", f.text.casefold())
    if form.unit is Unit.PARAGRAPHS and f.separator == "***":
        return ("paragraphs",)
    if form.unit is Unit.SECTIONS and f.marker and _norm(f.marker):
        return ("sections", str(_norm(f.marker)))
    return ("count", form.unit.value, msgspec.json.encode(f).decode())


#: The item an opening or closing of a class holds at least once (``Position.word_class``).
_CLASS_ITEMS: dict[str, Count] = {
    "capital": Count(unit=Unit.LETTERS, filter=Filter(case="upper"), relation=Relation.AT_LEAST, n=1),
    "lowercase": Count(unit=Unit.LETTERS, filter=Filter(case="lower"), relation=Relation.AT_LEAST, n=1),
    "emoji": Count(unit=Unit.EMOJI, relation=Relation.AT_LEAST, n=1),
    "number": Count(unit=Unit.DIGITS, relation=Relation.AT_LEAST, n=1),
}


def _form_facets(form: Form) -> Facets:
    """Facets of one form: its count's interval, a position's value, a wrapper's edges, a layout's bullets."""
    if isinstance(form, Count):
        if form.of is not None:
            return Facets()
        quantity = _quantity(form)
        if form.per is not None:
            quantity += ("per", form.per.value)
        measures = {quantity: form.measure} if form.per is None else {}
        return Facets(bounds={quantity: interval_for(form.relation, form.n)}, complete=True, measures=measures)
    if isinstance(form, Position) and form.word_class in _CLASS_ITEMS:
        # An opening (closing) of a class needs at least one such item ("every sentence starts with a
        # capital letter" and "all lowercase" exclude): the answer without pieces fails the position.
        item = _CLASS_ITEMS[form.word_class]
        quantity = _quantity(item)
        return Facets(bounds={quantity: Interval(1, None)}, measures={quantity: item.measure})
    if isinstance(form, Position):
        text = _norm(form.text)
        if text is None:
            return Facets()
        if not form.plain:
            # A word inside a piece, or one the piece contains: text the answer holds, at no edge.
            return Facets(required=((text,),)) if form.same_as is None else Facets()
        if form.unit is Unit.ANSWER:
            edge = Boundary(literal=text)
            return Facets(prefix=edge if form.op == "starts_with" else None,
                          suffix=edge if form.op == "ends_with" else None, required=((text,),), complete=True)
        # The text at a position is also text the answer contains (so a forbidden word excludes it).
        if form.unit is Unit.PARAGRAPHS and form.op == "starts_with" and " " not in text and form.k > 0:
            return Facets(values={("paragraph_first_word", str(form.k)): text}, required=((text,),), complete=True)
        if form.op == "is" or (form.op == "starts_with" and form.unit is not Unit.WORDS and " " not in text):
            return Facets(values={("position", form.unit.value, str(form.k), "first_word"): text},
                          required=((text,),), complete=True)
        return Facets(required=((text,),))
    if isinstance(form, Wrap):
        if form.unit is not Unit.ANSWER or not form.left or not form.right:
            return Facets()
        return Facets(prefix=Boundary(chars=frozenset(form.left[0])), suffix=Boundary(chars=frozenset(form.right[-1])))
    if isinstance(form, Structure):
        # ``list_lines``: bulleted and numbered lines together (what "no list" forbids, any list needs).
        if form.layout is Layout.NO_LIST:
            return Facets(bounds={("bullets",): Interval(0, 0), ("list_lines",): Interval(0, 0)})
        if form.layout is Layout.NESTED_LIST:
            return Facets(bounds={("bullets",): Interval(2, None), ("list_lines",): Interval(2, None)})
        if form.layout in (Layout.LIST, Layout.NUMBERED_LIST):
            return Facets(bounds={("list_lines",): Interval(1, None)})
    return Facets()


def _with_forms(facets: Facets, forms: tuple[Form, ...], *, generic: bool) -> Facets:
    """``facets`` joined with the facets of the constraint's forms.

    A named kind keeps its own facets and gains the bounds of its counts on
    quantities it does not already bound, so it meets a generic count of the
    same quantity; a generic kind's facets are its forms' only.
    """
    if not forms:
        return facets
    bounds = dict(facets.bounds)
    measures = dict(facets.measures)
    values = dict(facets.values)
    required = list(facets.required)
    prefix, suffix = facets.prefix, facets.suffix
    complete = facets.complete if not generic else True
    for form in forms:
        part = _form_facets(form)
        if not generic and not isinstance(form, Count):
            continue
        for quantity, interval in part.bounds.items():
            bounds.setdefault(quantity, interval)
        for quantity, measure in part.measures.items():
            measures.setdefault(quantity, measure)
        if generic:
            values.update(part.values)
            required.extend(part.required)
            prefix = prefix or part.prefix
            suffix = suffix or part.suffix
            complete = complete and part.complete
    return Facets(bounds=bounds, values=values, required=tuple(required), forbidden_chars=facets.forbidden_chars,
                  prefix=prefix, suffix=suffix, complete=complete, measures=measures)


def _count_builder(quantity: str) -> Builder:
    def build(p: dict[str, Any]) -> Facets:
        iv = _counted(p)
        return Facets(bounds={(quantity,): iv}, complete=True) if iv else Facets()

    return build


def _exact_builder(quantity: str, rel: Relation) -> Builder:
    def build(p: dict[str, Any]) -> Facets:
        n = _int(p.get("n"))
        return (
            Facets(bounds={(quantity,): interval_for(rel, n)}, complete=True)
            if n is not None
            else Facets()
        )

    return build


def _keyword_frequency(p: dict[str, Any]) -> Facets:
    kw, iv = _norm(p.get("keyword")), _counted(p)
    if kw is None or iv is None:
        return Facets()
    required = ((kw,),) if iv.lo >= 1 else ()
    return Facets(bounds={("occurrences", kw): iv}, required=required, complete=True)


def _keywords_present(p: dict[str, Any]) -> Facets:
    kws = _words(p.get("keywords"))
    if not kws:
        return Facets()
    return Facets(
        bounds={("occurrences", k): Interval(1, None) for k in kws},
        required=tuple((k,) for k in kws),
        complete=True,
    )


def _forbidden_words(p: dict[str, Any]) -> Facets:
    words = _words(p.get("words"))
    if not words:
        return Facets()
    return Facets(bounds={("occurrences", w): Interval(0, 0) for w in words}, complete=True)


def _letter_frequency(p: dict[str, Any]) -> Facets:
    letter, iv = _norm(p.get("letter")), _counted(p)
    if letter is None or iv is None:
        return Facets()
    return Facets(bounds={("letter", letter): iv}, complete=True)


def _response_language(p: dict[str, Any]) -> Facets:
    lang = _norm(p.get("language"))
    if lang is None:
        return Facets()
    return Facets(values={("language",): lang.split("-")[0]}, complete=True)


def _all_lowercase(p: dict[str, Any]) -> Facets:
    # Lowercase text has no all-capital word.
    return Facets(
        values={("letter_case",): "lower"},
        bounds={("capital_words",): Interval(0, 0)},
        complete=True,
    )


def _all_capitals(p: dict[str, Any]) -> Facets:
    # str.isupper() needs at least one cased character, whose word is then all capitals.
    return Facets(
        values={("letter_case",): "upper"},
        bounds={("capital_words",): Interval(1, None)},
        complete=True,
    )


def _no_comma(p: dict[str, Any]) -> Facets:
    return Facets(forbidden_chars=frozenset(","), complete=True)


def _start_phrase(p: dict[str, Any]) -> Facets:
    phrase = _norm(p.get("phrase"))
    if phrase is None:
        return Facets()
    return Facets(prefix=Boundary(literal=phrase), required=((phrase,),), complete=True)


def _end_phrase(p: dict[str, Any]) -> Facets:
    phrase = _norm(p.get("phrase"))
    if phrase is None:
        return Facets()
    return Facets(suffix=Boundary(literal=phrase), required=((phrase,),), complete=True)


def _repeat_prompt(p: dict[str, Any]) -> Facets:
    text = _norm(p.get("prompt_to_repeat"))
    if text is None:
        return Facets()
    return Facets(prefix=Boundary(literal=text), required=((text,),), complete=True)


def _quotation(p: dict[str, Any]) -> Facets:
    quote = frozenset('"')
    return Facets(prefix=Boundary(chars=quote), suffix=Boundary(chars=quote))


def _json_format(p: dict[str, Any]) -> Facets:
    # A JSON line cannot start with "* " or "- " (a minus must touch its digits),
    # so a JSON answer holds no markdown bullet.
    return Facets(
        bounds={("bullets",): Interval(0, 0)},
        prefix=Boundary(chars=JSON_FIRST_CHARS),
        suffix=Boundary(chars=JSON_LAST_CHARS),
    )


def _postscript(p: dict[str, Any]) -> Facets:
    # Deliberately no suffix: an end phrase can close the postscript itself,
    # so "add a P.S." and "end with X" are compatible.
    marker = _norm(p.get("marker"))
    return Facets(required=((marker,),)) if marker else Facets()


def _sections(p: dict[str, Any]) -> Facets:
    splitter, n = _norm(p.get("splitter")), _int(p.get("n"))
    if splitter is None or n is None:
        return Facets()
    required = ((splitter,),) if n >= 1 else ()
    return Facets(bounds={("sections", splitter): Interval(n, n)}, required=required, complete=True)


def _nth_paragraph(p: dict[str, Any]) -> Facets:
    n, nth, word = _int(p.get("n")), _int(p.get("nth")), _norm(p.get("first_word"))
    bounds: dict[Quantity, Interval] = (
        {("blank_line_paragraphs",): Interval(n, n)} if n is not None else {}
    )
    values: dict[Attribute, str] = (
        {("paragraph_first_word", str(nth)): word} if nth is not None and word else {}
    )
    return Facets(bounds=bounds, values=values, complete=bool(bounds) and bool(values))


def _constrained_response(p: dict[str, Any]) -> Facets:
    options = _words(p.get("options"))
    return Facets(required=(tuple(options),)) if options else Facets()


def _citation_time_window(p: dict[str, Any]) -> Facets:
    lo, hi = _date_ordinal(p.get("not_before")), _date_ordinal(p.get("not_after"))
    if lo is None and hi is None:
        return Facets()
    return Facets(bounds={("citation_date",): Interval(lo or 0, hi)}, complete=True)


def _cite_sources(p: dict[str, Any]) -> Facets:
    n = _int(p.get("min"))
    return (
        Facets(bounds={("cited_sources",): Interval(max(n, 0), None)}, complete=True)
        if n is not None
        else Facets()
    )


def _numeric_precision(p: dict[str, Any]) -> Facets:
    decimals = _int(p.get("decimals"))
    return (
        Facets(values={("decimals",): str(decimals)}, complete=True)
        if decimals is not None
        else Facets()
    )


_BUILDERS: dict[Kind, Builder] = {
    Kind.WORD_COUNT: _count_builder("words"),
    Kind.SENTENCE_COUNT: _count_builder("sentences"),
    Kind.CAPITAL_WORD_FREQUENCY: _count_builder("capital_words"),
    Kind.PARAGRAPH_COUNT: _exact_builder("paragraphs", Relation.EXACTLY),
    Kind.BULLET_COUNT: _exact_builder("bullets", Relation.EXACTLY),
    Kind.HIGHLIGHTED_SECTIONS: _exact_builder("highlights", Relation.AT_LEAST),
    Kind.PLACEHOLDERS: _exact_builder("placeholders", Relation.AT_LEAST),
    Kind.KEYWORD_FREQUENCY: _keyword_frequency,
    Kind.KEYWORDS_PRESENT: _keywords_present,
    Kind.FORBIDDEN_WORDS: _forbidden_words,
    Kind.LETTER_FREQUENCY: _letter_frequency,
    Kind.RESPONSE_LANGUAGE: _response_language,
    Kind.ALL_LOWERCASE: _all_lowercase,
    Kind.ALL_CAPITALS: _all_capitals,
    Kind.NO_COMMA: _no_comma,
    Kind.START_PHRASE: _start_phrase,
    Kind.END_PHRASE: _end_phrase,
    Kind.REPEAT_PROMPT: _repeat_prompt,
    Kind.QUOTATION: _quotation,
    Kind.JSON_FORMAT: _json_format,
    Kind.POSTSCRIPT: _postscript,
    Kind.SECTIONS: _sections,
    Kind.NTH_PARAGRAPH_FIRST_WORD: _nth_paragraph,
    Kind.CONSTRAINED_RESPONSE: _constrained_response,
    Kind.CITATION_TIME_WINDOW: _citation_time_window,
    Kind.CITE_SOURCES: _cite_sources,
    Kind.NUMERIC_PRECISION: _numeric_precision,
}
