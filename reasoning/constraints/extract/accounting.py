"""Every reading accounts for the whole clause it came from, or the clause is left unrecognised.

A reader recognises a requirement by some of its words; a clause may say
more than the reader used ("words that contain only three types of vowels"
holds "three words" to a word counter, "include the keyword eat in the 6-th
sentence" holds "keyword eat" to a keyword reader). Steering such a smaller
reading forces the answer against the request while its verdict says
"satisfied", which is worse than no reading. So, after every reader has run,
each English clause that holds readings is checked as a whole, in the terms
of the constraint form (:func:`reasoning.constraints.form.form_of`), whatever
reader made the readings:

- a *quantity* (a number counting a unit of the answer: "three types of
  vowels", "20 words", "one sub-bullet point") must be carried by a reading
  whose form counts that unit, with that number;
- a *position* (an ordinal on a unit: "the 6-th sentence", "every 29th
  word", "the last paragraph") must be carried by a reading whose form
  places something at that position of that unit;
- a *unit* bound by a quantifier ("each bullet point", "every sentence", "per
  line") must be a unit of some reading's form (counted, placed, wrapped, or
  the piece a rule holds per);
- a *filter* on a counted unit (a relative or participle clause or a with /
  containing phrase that names another unit, a number or a quoted text: "words
  that contain only ... vowels", "sentences with two commas") needs a reading
  that counts that unit with a filter, or holds per piece of it;
- a *separator or marker* (a symbol the clause names: "denoted by *", "use
  !?!? instead", "separated by ~") must be a text of some reading's form or
  a mark its kind implies (``*`` and ``-`` for bullets).

- a *ratio* between counts ("the ratio of ...", "twice as many X as Y") must
  be carried by a share or a spread; a *bounded number* ("exactly three
  remarks") by a reading carrying that number, whatever it counts;
- an *edge* (a verb placing a text at a start or an end, with the verbs
  coordinated with it) must be carried by a reading placing there.

A reading is also dropped when its clause uses its text as a description (a
common noun after "a" / "an": "start each item with an arrow"), when it
refuses lists with a negation of another clause, when it wraps the whole
answer and its sentence names no whole answer, and when it holds the whole
answer's words in a sentence that lays out pieces relative to one another
("..., followed on the next line by a one-sentence summary").

A clause with something unaccounted keeps none of its readings: they are
dropped and the clause is reported ``unrecognised`` (the model is left to
follow it). Words in an example ("such as ...", "e.g. ...") or in quotes
are content, never quantities or positions; numbers counting something that
is no unit of the answer ("three cities") are content too.

The result also says which words of its clause each kept reading used
(:class:`Reading`), and for dropped readings what was left unaccounted.
Chinese clauses are not checked here (their readers match whole phrases).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
from spacy.tokens import Doc, Token
from spacy.tokens import Span as DocSpan

from reasoning.constraints.extract.found import Found
from reasoning.constraints.extract.lexicon import EN_EVERY, EN_UNITS
from reasoning.constraints.extract.sentence_bounds import MARKS, sentence_bounds
from reasoning.constraints.form import (
    Copy,
    Count,
    Form,
    Layout,
    Position,
    Spread,
    Structure,
    Unit,
    Wrap,
    form_of,
)
from reasoning.constraints.model import Kind, Span
from reasoning.constraints.quantities import ordinal, parse_number, parse_zh_number

__all__ = ["Accounting", "Reading", "account_readings", "numbers_in", "strings_in"]


class Reading(msgspec.Struct, frozen=True, kw_only=True):
    """One reading of a clause and the words it used.

    ``constraint`` is the id of the constraint the reading became, or None
    when it was dropped because its clause said more than its readings
    carry; ``unaccounted`` then lists those words (empty for a kept reading).
    ``used``: the words of the clause the reading stands on: those it was
    read from and the quantities, positions, units and marks it carries.
    """

    kind: str
    constraint: str | None
    clause: Span
    used: tuple[Span, ...]
    unaccounted: tuple[Span, ...] = ()


class Accounting(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`account_readings` kept, dropped and reports.

    ``kept`` are the input readings that stand (in input order); ``used``
    maps each kept reading's index in ``kept`` to its clause and words;
    ``dropped`` are readings of clauses left unrecognised, whose spans are
    ``unrecognised``.
    """

    kept: tuple[Found, ...]
    used: tuple[tuple[Span, tuple[Span, ...]], ...]
    dropped: tuple[Reading, ...]
    unrecognised: tuple[Span, ...]


# --- units the clause names -------------------------------------------------

#: Noun lemmas naming a unit of the answer -> the unit's name (a form Unit's value where one exists).
_UNIT_NOUNS: Mapping[str, str] = {
    "word": "words", "keyword": "keywords", "term": "words", "sentence": "sentences",
    "paragraph": "paragraphs", "line": "lines", "bullet": "bullets", "item": "bullets",
    "section": "sections", "part": "sections", "letter": "letters", "character": "characters",
    "char": "characters", "vowel": "vowels", "consonant": "consonants", "syllable": "syllables",
    "comma": "punctuation", "period": "punctuation", "semicolon": "punctuation", "colon": "punctuation",
    "mark": "punctuation", "punctuation": "punctuation", "exclamation": "punctuation", "dash": "punctuation",
    "hyphen": "punctuation", "emoji": "emoji", "emojis": "emoji", "emoticon": "emoji", "digit": "digits",
    "numeral": "numbers", "number": "numbers", "hashtag": "hashtags", "heading": "headings",
    "subheading": "headings", "header": "headings", "placeholder": "placeholders",
    "stanza": "stanzas", "verse": "stanzas", "quote": "quotes", "quotation": "quotes",
    "bracket": "brackets", "parenthesis": "brackets", "parentheses": "brackets", "row": "rows",
    "column": "columns", "level": "levels", "layer": "levels", "pronoun": "words",
    "conjunction": "words", "noun": "words", "verb": "words", "adjective": "words", "adverb": "words",
    "highlight": "highlights", "break": "breaks", "newline": "breaks",
    "question": "sentences", "statement": "sentences",
}
#: Units a reading's unit implies it names too ("40 unique words" counts words).
_IMPLIED: Mapping[str, frozenset[str]] = {
    "unique_words": frozenset({"words"}), "capital_words": frozenset({"words", "letters"}),
    "keywords": frozenset({"words"}), "highlights": frozenset({"sections", "words", "keywords", "titles"}),
    "nested_bullets": frozenset({"bullets"}), "placeholders": frozenset({"brackets"}),
    "spans": frozenset({"brackets", "quotes", "words"}), "headings": frozenset({"sections", "titles"}),
    "sections": frozenset({"paragraphs"}), "paragraphs": frozenset({"breaks", "stanzas", "sections"}),
    "hashtags": frozenset({"words"}),
}
#: Marks a unit is written with ("at least 4 hashtags, starting with '#'").
_UNIT_MARKS: Mapping[str, str] = {"hashtags": "#", "headings": "#", "bullets": "*-•+", "nested_bullets": "*-•+",
                                  "placeholders": "[]", "highlights": "*_", "rows": "|-:", "columns": "|"}
#: Unit nouns said with "point": a list's point ("bullet point", "3 points") is a bullet.
_POINT = "point"
#: Words before a list noun that make it a nested one ("sub-bullet", "nested item").
_NESTED = frozenset({"sub", "nested", "subpoint", "sub-point", "sub-bullet", "sub-item", "child", "second-level"})
#: Nouns naming a kind or amount of another unit ("three types of vowels", "a pair of words").
_CONTAINERS = frozenset({"type", "kind", "sort", "variety", "set", "group", "pair", "number", "amount",
                         "instance", "occurrence", "count", "total", "maximum", "minimum"})
#: Units a filter may name inside a reading's filter (a letter, vowel, character set ...).
_FILTER_UNITS = frozenset({"letters", "characters", "vowels", "consonants", "syllables", "punctuation",
                           "digits", "numbers", "emoji", "words", "keywords"})

# --- what a reading's form carries ------------------------------------------

#: Units a named kind covers beyond those of its form (what its wording names around it).
_KIND_UNITS: Mapping[Kind, frozenset[str]] = {
    Kind.KEYWORDS_PRESENT: frozenset({"words"}),
    Kind.FORBIDDEN_WORDS: frozenset({"words"}),
    Kind.KEYWORD_FREQUENCY: frozenset({"words"}),
    Kind.CAPITAL_WORD_FREQUENCY: frozenset({"words", "letters"}),
    Kind.ALL_LOWERCASE: frozenset({"words", "characters"}),
    Kind.ALL_CAPITALS: frozenset({"words", "characters"}),
    Kind.PARAGRAPH_COUNT: frozenset({"breaks", "lines", "sections"}),
    Kind.NTH_PARAGRAPH_FIRST_WORD: frozenset({"breaks", "lines", "words"}),
    Kind.HIGHLIGHTED_SECTIONS: frozenset({"sections", "words", "keywords", "titles"}),
    Kind.START_PHRASE: frozenset({"words", "sentences", "lines"}),
    Kind.END_PHRASE: frozenset({"words", "sentences", "lines"}),
    Kind.SECTIONS: frozenset({"paragraphs", "headings"}),
    Kind.PLACEHOLDERS: frozenset({"brackets", "words"}),
    Kind.TITLE: frozenset({"titles", "brackets", "headings"}),
    Kind.POSTSCRIPT: frozenset({"sections", "paragraphs", "lines"}),
    Kind.QUOTATION: frozenset({"quotes", "punctuation"}),
    Kind.NO_COMMA: frozenset({"punctuation"}),
    Kind.TWO_RESPONSES: frozenset({"responses", "paragraphs", "sections", "punctuation"}),
    Kind.CONSTRAINED_RESPONSE: frozenset({"words", "sentences"}),
    Kind.JSON_FORMAT: frozenset({"sections", "brackets", "quotes"}),
    Kind.RESPONSE_LANGUAGE: frozenset({"words", "letters", "characters"}),
    Kind.CITE_SOURCES: frozenset({"sentences"}),
    Kind.NUMERIC_PRECISION: frozenset({"numbers", "digits"}),
}
#: Marks a named kind or layout writes, so a clause naming them has them accounted for.
_KIND_MARKS: Mapping[Kind, str] = {
    Kind.BULLET_COUNT: "*-•+",
    Kind.HIGHLIGHTED_SECTIONS: "*",
    Kind.PARAGRAPH_COUNT: "*",
    Kind.TITLE: "<>《》",
    Kind.PLACEHOLDERS: "[]",
    Kind.QUOTATION: "\"'“”",
    Kind.JSON_FORMAT: "{}[]`\"",
    Kind.TWO_RESPONSES: "*",
    Kind.POSTSCRIPT: ".",
}
_LIST_MARKS = "*-•+#."
#: Units a structure of each layout covers.
_LAYOUT_UNITS: Mapping[Layout, frozenset[str]] = {
    Layout.LIST: frozenset({"bullets", "lines"}),
    Layout.NESTED_LIST: frozenset({"bullets", "nested_bullets", "lines", "levels"}),  # two levels at least
    Layout.NUMBERED_LIST: frozenset({"bullets", "lines", "numbers"}),
    Layout.TABLE: frozenset({"rows", "columns", "lines"}),
    Layout.NO_LIST: frozenset({"bullets", "lines"}),
    Layout.RESPONSES: frozenset({"responses", "paragraphs", "sections"}),
}
#: The edges of the answer a named kind writes (a postscript opens with its marker at the end).
_KIND_OPS: Mapping[Kind | None, tuple[str, ...]] = {
    Kind.START_PHRASE: ("starts_with",), Kind.END_PHRASE: ("ends_with",),
    Kind.POSTSCRIPT: ("starts_with", "ends_with"), Kind.TITLE: ("starts_with",),
    Kind.REPEAT_PROMPT: ("starts_with",), Kind.COPY: ("starts_with",), Kind.QUOTATION: ("starts_with", "ends_with"),
    Kind.SECTIONS: ("starts_with",), Kind.NTH_PARAGRAPH_FIRST_WORD: ("starts_with",),
}
#: Kinds whose form is the whole answer's text or layout (they account for any unit named around them).
_WHOLE = frozenset({Kind.REPEAT_PROMPT, Kind.COPY, Kind.REGEX_FORMAT, Kind.JSON_FORMAT})


class _Carries(msgspec.Struct, kw_only=True):
    """What one reading's form carries: units, numbers, positions, texts, filters."""

    units: set[str]
    numbers: set[float]
    positions: set[int]
    texts: list[str]
    filtered: bool
    per: set[str]
    whole: bool
    marks: str
    ops: set[str] = msgspec.field(default_factory=set)
    positive: bool = False
    refusing: bool = False
    chars: str = ""
    kind: Kind | None = None
    counted: set[int] = msgspec.field(default_factory=set)
    edges: set[str] = msgspec.field(default_factory=set)
    answer_edge: bool = False
    ratio: bool = False
    answer_wrap: bool = False
    no_list: bool = False
    placed: list[str] = msgspec.field(default_factory=list)


def _form_units(form: Form, carried: _Carries) -> None:
    if isinstance(form, Count):
        carried.units.add(form.unit.value)
        carried.numbers.update(_said_numbers(form.relation.value, form.n))
        carried.counted.add(form.n)
        if form.unit is Unit.PUNCTUATION and form.filter.chars:
            carried.numbers.add(float(form.n + 1))  # n separators stand between n + 1 items
        if form.relation.value in ("at least", "more than", "exactly") and form.n >= 1 and form.fraction is None:
            carried.positive = True
        if form.relation.value in ("at most", "less than"):
            carried.refusing = True
        if form.fraction is not None:
            carried.numbers.update({form.fraction, round(form.fraction * 100, 6)})
            carried.ratio = True
        if form.of is not None:
            carried.units.add(form.of.unit.value)
        if form.per is not None:
            carried.per.add(form.per.value)
            carried.units.add(form.per.value)
        carried.chars += form.filter.chars or ""
        fields = msgspec.structs.asdict(form.filter)
        if any(v not in (None, False, ()) for v in fields.values()):
            carried.filtered = True
        for value in fields.values():
            if isinstance(value, str):
                carried.texts.append(value)
            elif isinstance(value, int) and not isinstance(value, bool):
                carried.numbers.add(float(value))
            elif isinstance(value, tuple):
                carried.texts.extend(str(v) for v in value)
        if form.filter.occurrence is not None:
            carried.numbers.add(float(form.filter.occurrence - 1))  # "more than 3 times" is a fourth use
        for length in (form.filter.min_length, form.filter.max_length):
            if length is not None:
                carried.numbers.update({float(length - 1), float(length + 1)})
                carried.units.update({Unit.LETTERS.value, Unit.CHARACTERS.value})
        if form.unit is Unit.SENTENCES and form.filter.ends_with and not form.filter.ends_with.strip("?!.？！。"):
            carried.units.add("punctuation")  # sentences by their end mark count those marks ("one exclamation")
        if form.filter.starts_with or form.filter.ends_with:
            carried.placed.append(form.filter.starts_with or form.filter.ends_with or "")
            carried.positions.add(1 if form.filter.starts_with else -1)
            carried.units.add(Unit.LETTERS.value)
        if form.filter.same_as_previous is not None:
            carried.numbers.add(2.0)
            carried.positions.add(1)
            carried.units.add(Unit.LETTERS.value)
    elif isinstance(form, Position):
        carried.units.add(form.unit.value)
        if form.k:
            carried.positions.add(form.k)
        if form.k == 0:
            carried.per.add(form.unit.value)
        if form.word is not None:
            carried.positions.add(form.word)
            carried.units.add(Unit.WORDS.value)
        if form.text or form.word_class or form.same_as:
            carried.units.add(Unit.WORDS.value)
        if form.same_as is not None:
            carried.positions.update({1, -1})
            carried.edges.update({"starts_with", "ends_with"})  # one text at both edges
        carried.texts.append(form.text)
        carried.placed.append(form.text)
        if form.op in ("starts_with", "ends_with"):
            carried.ops.add(form.op)
            carried.edges.add(form.op)
            carried.answer_edge = carried.answer_edge or form.unit is Unit.ANSWER
        if form.op in ("starts_with", "ends_with") and form.word is None:
            carried.positions.add(1 if form.op == "starts_with" else -1)
        if form.word_class == "emoji":
            carried.units.add(Unit.EMOJI.value)
        if form.word_class in ("capital", "lowercase"):
            carried.units.add(Unit.LETTERS.value)
    elif isinstance(form, Wrap):
        carried.answer_wrap = carried.answer_wrap or form.unit is Unit.ANSWER
        carried.edges.update({"starts_with", "ends_with"})
        carried.units.add(form.unit.value)
        carried.per.add(form.unit.value)
        carried.texts.extend((form.left, form.right))
    elif isinstance(form, Structure):
        carried.no_list = carried.no_list or form.layout is Layout.NO_LIST
        carried.units.update(_LAYOUT_UNITS.get(form.layout, frozenset()))
        for number in (form.n, form.columns, form.sub_items):
            if number is not None:
                carried.numbers.add(float(number))
        if form.sub_items is not None:
            carried.per.add(Unit.BULLETS.value)
        if form.before == "sentence" or form.after == "sentence":
            carried.units.add(Unit.SENTENCES.value)
            carried.numbers.add(1.0)
        if form.before or form.after:
            carried.units.update({Unit.PARAGRAPHS.value, Unit.SENTENCES.value})
            carried.edges.update({"starts_with"} if form.before else set())
            carried.edges.update({"ends_with"} if form.after else set())
        if form.marker:
            carried.texts.append(form.marker)
        carried.texts.extend(form.headers)
        if form.layout in (Layout.LIST, Layout.NESTED_LIST, Layout.NUMBERED_LIST, Layout.NO_LIST):
            carried.marks += _LIST_MARKS
        if form.layout is Layout.NESTED_LIST:
            carried.numbers.add(2.0)
        if form.layout is Layout.TABLE:
            carried.marks += "|-:"
    elif isinstance(form, Spread):
        carried.units.update({form.unit.value, form.per.value})
        carried.per.add(form.per.value)
        carried.ratio = True
        for number in (form.max_diff, form.step):
            if number is not None:
                carried.numbers.update({float(abs(number))})
        if form.max_ratio is not None:
            carried.numbers.add(form.max_ratio)
            carried.ratio = True
    elif isinstance(form, Copy):
        carried.whole = True


def _said_numbers(relation: str, n: int) -> set[float]:
    """The numbers a clause may say for a bound read as ``relation n`` ("fewer than 20" is at most 19)."""
    if relation == "at least":
        return {float(n), float(n - 1)}
    if relation == "at most":
        return {float(n), float(n + 1)}
    if relation == "less than":
        return {float(n), float(n - 1)}
    if relation == "more than":
        return {float(n), float(n + 1)}
    return {float(n)}


def strings_in(value: Any) -> Iterable[str]:
    """Every string in a reading's parameters (nested mappings and sequences included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings_in(item)


def numbers_in(value: Any) -> Iterable[float]:
    """Every number in a reading's parameters (booleans are no numbers)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from numbers_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from numbers_in(item)


def _carries(found: Found) -> _Carries:
    carried = _Carries(units=set(_KIND_UNITS.get(found.kind, frozenset())), numbers=set(), positions=set(),
                       texts=list(strings_in(found.params)), filtered=False, per=set(),
                       whole=found.kind in _WHOLE, marks=_KIND_MARKS.get(found.kind, ""), kind=found.kind)
    try:
        forms = form_of(found.kind, found.params) or ()
    except (ValueError, TypeError):
        forms = ()
    for form in forms:
        _form_units(form, carried)
    if found.kind is Kind.START_PHRASE:
        carried.positions.add(1)
    if found.kind in (Kind.END_PHRASE, Kind.POSTSCRIPT):
        carried.positions.add(-1)
    if found.kind is Kind.NTH_PARAGRAPH_FIRST_WORD:
        carried.positions.add(1)
        if found.params.get("nth") == found.params.get("n"):
            carried.positions.add(-1)
    if found.kind is Kind.CONSTRAINED_RESPONSE:
        carried.numbers.add(1.0)
    if found.kind in (Kind.HIGHLIGHTED_SECTIONS, Kind.PLACEHOLDERS, Kind.SECTIONS):
        carried.per.add(Unit.SECTIONS.value)  # each highlight / placeholder / section is written the same way
    if found.kind in (Kind.KEYWORD_FREQUENCY, Kind.LETTER_FREQUENCY, Kind.WORD_COUNT, Kind.SENTENCE_COUNT,
                      Kind.CAPITAL_WORD_FREQUENCY) and found.params.get("relation") in ("at least", "more than", "exactly"):
        carried.positive = int(found.params.get("n") or 0) >= 1
    if not forms:
        carried.numbers.update(numbers_in(found.params))
    for unit in tuple(carried.units):
        carried.units.update(_IMPLIED.get(unit, frozenset()))
    for unit in tuple(carried.units):
        carried.marks += _UNIT_MARKS.get(unit, "")
    for text in carried.texts:
        if len(text) > 1 and len(set(text)) == 1 and not text[0].isalnum():
            carried.numbers.add(float(len(text)))
    return carried


# --- the clause's words -----------------------------------------------------

_CLAUSE_DEPS = frozenset({"conj", "parataxis"})
_VERBS = frozenset({"VERB", "AUX"})
_EXAMPLE = re.compile(r"\b(?:such\s+as|e\.\s?g\.|i\.\s?e\.|for\s+example|for\s+instance|like\s+this|as\s+in)(?!\w)",
                      re.IGNORECASE)
_QUOTES = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»|(?<![\w'])'[^'\n]+'(?![\w'])|‘[^’\n]*’|`[^`\n]*`")
#: Punctuation of ordinary prose: such a mark is a separator only where the clause names it as one.
_PROSE = frozenset(".,;:!?()'\"’‘“”-–—/。，、；：！？（）《》「」『』…[]【】")
_NAMING = frozenset({"by", "with", "use", "as", "using", "of", "between", "mark", "symbol", "character", "emoji",
                     "icon", "sign", "tag", "label",
                     "separator", "delimiter", "marker"})
_LAST = {"last": -1, "final": -1, "penultimate": -2}
_FROM_END = re.compile(r"^\s*(?:-\s*)?(?:[a-z]+\s+)?(?:to\s*-?\s*last|from\s+(?:the\s+)?(?:end|last|bottom))\b", re.IGNORECASE)
_NO_COUNT = frozenset({"no", "not"})
_TO_LAST = re.compile(r"\s*-?\s*to\s*-?\s*last\b", re.IGNORECASE)
#: Nouns a section heading is labelled with ("Part 2", "Section 1", "Chapter 3").
_LABELS = frozenset({"part", "section", "chapter"})


def _clause_head(token: Token) -> Token:
    node = token
    while node.head.i != node.i:
        if node.dep_ in _CLAUSE_DEPS and node.pos_ in _VERBS and node.head.pos_ in _VERBS:
            return node
        node = node.head
    return node


def _clauses(doc: Doc) -> list[list[Token]]:
    """The clauses of each sentence: coordinated verbs head their own, and a semicolon ends one."""
    clauses: dict[tuple[int, int], list[Token]] = {}
    for sent in doc.sents:
        part = sent.start
        for token in sent:
            if token.text in (";", "；"):
                part = token.i
            clauses.setdefault((part, _clause_head(token).i), []).append(token)
    return [tokens for _, tokens in sorted(clauses.items())]


def _unit_of(noun: Token) -> str | None:
    """The unit a noun names, with its compounds read ("sub-bullet point": nested bullets;
    "exclamation point": punctuation; "three types of vowels": vowels)."""
    node = noun
    for _ in range(3):
        if node.lemma_.lower() not in _CONTAINERS:
            break
        inner = [c for c in node.children if c.dep_ == "prep" and c.lower_ == "of"]
        objects = [g for c in inner for g in c.children if g.dep_ == "pobj"]
        if not objects:
            return None
        node = objects[0]
    lemma = node.lemma_.lower()
    doc = node.doc
    joined = node.i >= 2 and doc[node.i - 1].text == "-" and not doc[node.i - 1].whitespace_ \
        and not doc[node.i - 2].whitespace_  # "sub-bullets": the hyphen's first part is the noun's own
    before = [t.lemma_.lower() for t in doc[min(node.i - 2 if joined else node.i, max(node.left_edge.i, node.i - 4)):
                                            node.i]]
    words = (*before, lemma)
    for size in range(len(words), 0, -1):
        entry = EN_UNITS.get(words[-size:])
        if entry is not None and (size > 1 or lemma not in _UNIT_NOUNS):
            return entry[0].value
    nested = any(w in _NESTED or w.startswith("sub") for w in before)
    if lemma in (_POINT, "bullet", "item", "bullet-point", "subpoint", "sub-point", "sub-bullet", "sub-item"):
        return "nested_bullets" if nested or lemma.startswith("sub") else "bullets"
    if lemma in ("line", "new") and any(w in ("blank", "empty", "new") for w in before):
        return "breaks"
    if lemma == "break" and not any(w in ("line", "paragraph", "page") for w in before):
        return None
    return _UNIT_NOUNS.get(lemma)


def _counted_noun(token: Token) -> Token | None:
    """The noun a number or ordinal counts or places: up its head chain, else the next noun in a few words."""
    node = token
    for _ in range(4):
        if node.head.i == node.i:
            break
        if node.dep_ not in ("nummod", "quantmod", "amod", "compound", "nmod", "advmod", "npadvmod", "punct"):
            break
        node = node.head
        if node.pos_ in ("NOUN", "PROPN"):
            return _compound_end(node)
    for nxt in token.doc[token.i + 1: token.i + 5]:
        if nxt.pos_ in ("NOUN", "PROPN"):
            return _compound_end(nxt)
        if nxt.pos_ in ("VERB", "AUX", "ADP", "PUNCT") and nxt.text != "-":
            break
    return None


def _compound_end(noun: Token) -> Token:
    """The last noun of a hyphenated compound starting at ``noun`` ("sub-bullets": bullets)."""
    doc = noun.doc
    while noun.i + 2 < len(doc) and doc[noun.i + 1].text == "-" and not noun.whitespace_ \
            and not doc[noun.i + 1].whitespace_ and doc[noun.i + 2].pos_ in ("NOUN", "PROPN"):
        noun = doc[noun.i + 2]
    return noun


class _Need(msgspec.Struct, frozen=True, kw_only=True):
    """Something the clause says that a reading must carry."""

    what: str  # "quantity" | "position" | "unit" | "filter" | "mark"
    tokens: tuple[int, ...]
    unit: str | None = None
    value: float | None = None
    text: str | None = None
    named: tuple[str, ...] = ()


def _masked(text: str, tokens: Sequence[Token]) -> tuple[set[int], set[int]]:
    """Token indices in an example (after "such as", "e.g." ...) and in quotes."""
    if not tokens:
        return set(), set()
    start, end = tokens[0].idx, tokens[-1].idx + len(tokens[-1])
    piece = text[start:end]
    quoted = [(m.start() + start, m.end() + start) for m in _QUOTES.finditer(piece)]
    inside = {t.i for t in tokens if any(s < t.idx and t.idx + len(t) < e for s, e in quoted)}
    examples: set[int] = set()
    for cue in _EXAMPLE.finditer(piece):
        cue_end = cue.end() + start
        for t in tokens:
            if t.idx < cue.start() + start:
                continue
            if t.idx >= cue_end and t.i not in inside and _ends_example(t):
                break  # "such as 'the' or 'a' may make up a third of the words": the example ends at its verb
            examples.add(t.i)
    depth = 0
    opened: list[Token] = []
    for t in tokens:
        if t.text in ("(", "（"):
            depth += 1
            opened = []
        elif t.text in (")", "）"):
            depth = max(0, depth - 1)
            if any(c.isalnum() for o in opened for c in o.text):
                examples.update(o.i for o in opened)
            opened = []
        elif depth:
            opened.append(t)  # "an arrow (->)": a parenthesised mark alone is the named thing's literal
    return examples, inside


def _ends_example(token: Token) -> bool:
    """Whether ``token`` ends an example: a finite verb (the clause goes on) or a clause mark."""
    if token.text in (";", "；") or token.is_sent_start:
        return True
    return token.pos_ in _VERBS and token.tag_ not in ("VBG", "VBN")


def _ordinal_value(token: Token) -> int | None:
    """The position an ordinal names, negative when counted from the end ("second to last": -2)."""
    value = _ordinal_from_start(token)
    if value is None or value < 0:
        return value
    rest = token.doc.text[token.idx + len(token): token.idx + len(token) + 24]
    rest = re.sub(r"^\s*-?\s*(?:th|st|nd|rd)\b", "", rest)
    return -value if _FROM_END.match(rest) else value


def _ordinal_from_start(token: Token) -> int | None:
    value = ordinal(token.text)
    if value is not None:
        return value
    if token.lower_ in _LAST:
        before = [t.lower_ for t in token.doc[max(0, token.i - 2): token.i]]
        return None if "to" in before else _LAST[token.lower_]
    if token.lower_ == "next" and _TO_LAST.match(token.doc.text, token.idx + len(token)):
        return 2  # "the next-to-last sentence": the second from the end
    if token.like_num and token.text.isdigit():
        following = token.doc[token.i + 1: token.i + 3]
        words = [t.lower_ for t in following]
        if words[:1] in (["th"], ["st"], ["nd"], ["rd"]) or (words[:1] == ["-"] and words[1:2] in (["th"], ["st"], ["nd"], ["rd"])):
            return int(token.text)
    return None


def _number_value(token: Token) -> float | None:
    if not token.like_num:
        return None
    raw = token.text.replace(",", "")
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        value = parse_number([token.text])
    except ValueError:  # a digit int() does not read ("¹")
        return None
    return float(value) if value is not None else None


def _run_value(token: Token) -> float | None:
    """The number ending at ``token``, read with the number words before it ("two hundred": 200)."""
    value = _number_value(token)
    if value is None:
        return None
    start = token.i
    doc = token.doc
    while start > 0 and (_number_value(doc[start - 1]) is not None or (
            doc[start - 1].text == "-" and start > 1 and not doc[start - 2].whitespace_) or (
            doc[start - 1].lower_ == "and" and start > 1 and _number_value(doc[start - 2]) is not None)):
        start -= 1
    if start == token.i:
        return value
    words = [t.text for t in doc[start: token.i + 1] if t.text != "-"]
    try:
        whole = parse_number(words)
    except ValueError:
        return value
    return float(whole) if whole is not None else value


def _needs(text: str, tokens: Sequence[Token]) -> list[_Need]:
    examples, quoted = _masked(text, tokens)
    inside = {t.i for t in tokens}
    needs: list[_Need] = []
    bound: set[int] = set()
    for token in tokens:
        if token.i in examples:
            continue
        if token.i in quoted:
            continue
        nxt = token.doc[token.i + 1] if token.i + 1 < len(token.doc) else None
        after = token.doc[token.i + 2] if token.i + 2 < len(token.doc) else None
        if nxt is not None and _number_value(token) is not None and (
                _number_value(nxt) is not None
                or (nxt.lower_ in ("and", "-") and after is not None and _number_value(after) is not None)):
            continue  # a number written in several words ("two hundred", "twenty-five"): read at its last word
        position = _ordinal_value(token)
        number = None if position is not None else _run_value(token)
        if position is None and number is None:
            continue
        if number is not None and token.i > 0 and token.doc[token.i - 1].lower_ in _NO_COUNT:
            continue
        if number is not None and token.i > 0 and token.doc[token.i - 1].lower_ in _BACK:
            continue  # "keep the two paragraphs balanced": the paragraphs counted elsewhere
        noun = _counted_noun(token)
        label = token.head if token.dep_ in ("nummod", "appos", "npadvmod", "dobj") and token.head.i == token.i - 1 else None
        if number is not None and label is not None and label.pos_ in ("NOUN", "PROPN") and _unit_of(label):
            if label.lemma_.lower() in _LABELS and label.text[:1].isupper():
                continue  # a heading's own label ("Part 2.", "Section 1")
            noun, position, number = label, int(number), None
        bounded = number is not None and _bounded(token)
        if noun is None or noun.i not in inside:
            if bounded:
                needs.append(_Need(what="quantity", tokens=(token.i,), unit="*", value=number))
            continue
        unit = _unit_of(noun)
        if unit is None:
            if bounded:  # "exactly three notes in brackets": a bound on the answer, whatever it counts
                needs.append(_Need(what="quantity", tokens=(token.i, noun.i), unit="*", value=number))
            continue
        bound.add(noun.i)
        if number is not None and _for_each(noun):
            needs.append(_Need(what="unit", tokens=(token.i, noun.i), unit="*"))  # "one paragraph for each"
            continue
        if position is not None:
            if token.lower_ == "first" and noun.lemma_.lower() not in ("sentence", "paragraph", "line", "bullet",
                                                                       "item", "section", "word", "letter"):
                continue
            needs.append(_Need(what="position", tokens=(token.i, noun.i), unit=unit, value=float(position)))
        elif number is not None:
            needs.append(_Need(what="quantity", tokens=(token.i, noun.i), unit=unit, value=number))
    for token in tokens:
        if token.i in examples or token.i in quoted or token.pos_ not in ("NOUN", "PROPN"):
            continue
        unit = _unit_of(token)
        if unit is None:
            continue
        every = [c for c in token.children if c.lower_ in EN_EVERY or c.lower_ == "per"]
        if token.dep_ == "pobj" and token.head.lower_ == "per":
            every.append(token.head)
        if every:
            needs.append(_Need(what="unit", tokens=(every[0].i, token.i), unit=unit))
        relative = [c for c in token.children if c.lower_ in _RELATIVE]
        if relative and unit in _PIECE_UNITS and token.dep_ == "pobj" and token.head.lower_ in _PLACING:  # "on the next line", "on the line below": where a piece goes
            needs.append(_Need(what="unit", tokens=(relative[0].i, token.i), unit=unit, text=_LAID_OUT))
        if token.i in bound:
            needs.extend(_filters(token, unit, inside, examples, quoted))
    needs.extend(_marks(tokens, examples))
    needs.extend(_edges(tokens, examples | quoted))
    for token in tokens:
        if token.lower_ in EN_EVERY and token.i not in examples:
            following = list(token.doc[token.i + 1: token.i + 6])
            rest = [t.lower_ for t in following]
            size = 2 if rest[:2] == ["single", "one"] else 1 if rest[:1] == ["one"] else 0
            if rest[size: size + 2] in (["of", "them"], ["of", "these"], ["of", "those"]):
                size += 2
            after = following[size] if size < len(following) else None
            if size and not (after is not None and after.pos_ in ("NOUN", "ADJ", "PROPN")):
                needs.append(_Need(what="unit", tokens=(token.i,), unit="*"))  # "in every one of them"
    for token in tokens:
        if token.i not in examples and token.i not in quoted and _multiplies(token):
            needs.append(_Need(what="ratio", tokens=(token.i,)))
    for token in tokens:
        if token.i in examples or token.i in quoted or token.lemma_.lower() not in _RATIOS or token.pos_ != "NOUN":
            continue
        if any(_unit_of(t) for t in tokens if t.pos_ in ("NOUN", "PROPN") and t.i != token.i):
            needs.append(_Need(what="ratio", tokens=(token.i,)))
    return needs


#: Words before a number that bound it: the number is then a count the answer must meet, whatever it counts.
_BOUNDS = frozenset({"exactly", "precisely", "least", "most", "than", "maximum", "minimum", "up"})
#: Words placing a piece relative to another ("the next line", "the line below").
_RELATIVE = frozenset({"next", "subsequent", "below", "above"})
_PLACING = frozenset({"on", "in", "at", "onto", "into"})
#: The mark of a need placing a piece relative to another: its sentence lays out pieces of the answer.
_LAID_OUT = "laid out"
#: Kinds that hold the whole answer's words or case.
_WHOLE_WORDS = frozenset({Kind.WORD_COUNT, Kind.SENTENCE_COUNT, Kind.ALL_CAPITALS, Kind.ALL_LOWERCASE,
                          Kind.CAPITAL_WORD_FREQUENCY})


def _of_whole_answer(found: Found) -> bool:
    """Whether a reading holds the whole answer's words, sentences or case (a count with no piece it holds per).

    A sentence laying out pieces ("a name in Title Case, followed on the next
    line by a one-sentence summary") states each piece's properties, so such a
    reading of one of its clauses is no reading of the whole answer.
    """
    if found.kind in _WHOLE_WORDS:
        return True
    if found.kind is not Kind.COUNT:
        return False
    try:
        forms = form_of(found.kind, found.params) or ()
    except (ValueError, TypeError):
        return False
    return all(isinstance(f, Count) and f.per is None and f.of is None and f.unit in (
        Unit.WORDS, Unit.SENTENCES, Unit.CHARACTERS, Unit.LETTERS, Unit.UNIQUE_WORDS, Unit.CAPITAL_WORDS)
        for f in forms) and bool(forms)
_PIECE_UNITS = frozenset({"lines", "paragraphs", "sentences", "sections", "bullets"})


#: Words before a number that refer back to pieces counted elsewhere ("the two paragraphs", "these three").
_BACK = frozenset({"the", "these", "those", "both", "its", "their"})


def _for_each(noun: Token) -> bool:
    """Whether a counted noun is counted per piece ("one paragraph for each", "two examples per point")."""
    following = noun.doc[noun.i + 1: noun.i + 3]
    rest = [t.lower_ for t in following]
    if rest[:1] == ["each"]:  # "two examples each.", not "3 paragraphs each separated by ***"
        return len(following) < 2 or following[1].is_punct
    return rest[:2] in (["for", "each"], ["for", "every"]) or rest[:1] == ["per"]


def _bounded(token: Token) -> bool:
    """Whether a relation word bounds the number at ``token`` ("exactly three", "at least 2", "no more than 5")."""
    if token.pos_ != "NUM" or token.lower_ == "one" and token.dep_ != "nummod":
        return False  # "longer than the one before it": a pronoun
    before = [t.lower_ for t in token.doc[max(0, token.i - 2): token.i]]
    if before[-1:] == ["up"] or before[-2:-1] == ["up"]:
        return before[-1:] == ["to"]
    return bool(set(before) & _BOUNDS)


def _multiplies(token: Token) -> bool:
    """Whether ``token`` states a ratio between two counts: "twice as many", "three times as many
    X as Y", "as many X as Y", "half as many"."""
    doc = token.doc
    rest = [t.lower_ for t in doc[token.i + 1: token.i + 3]]
    if token.lower_ in ("twice", "thrice", "half") and rest[:1] == ["as"] and rest[1:2] in (["many"], ["much"]):
        return True
    if token.lemma_.lower() == "time" and token.i > 0 and doc[token.i - 1].like_num and rest[:1] in (
            ["as"], ["more"], ["fewer"], ["less"]):
        return True
    if token.lower_ == "as" and rest[:1] in (["many"], ["much"]) and not (
            token.i > 0 and doc[token.i - 1].lower_ in ("twice", "thrice", "half", "times")):
        return any(t.lower_ == "as" for t in doc[token.i + 2: token.i + 8])
    return False


#: Nouns that state a ratio or share between counts ("the ratio of overlapping words", "half of the sentences").
_RATIOS = frozenset({"ratio", "proportion", "percentage", "percent", "share", "fraction", "half", "balance",
                     "third", "quarter", "fifth", "tenth"})


#: Verbs that place a text at the start / the end of the answer or a piece ("begin with a verdict").
_EDGE_VERBS: Mapping[str, str] = {"begin": "starts_with", "start": "starts_with", "open": "starts_with",
                                  "lead": "starts_with", "preface": "starts_with", "kick": "starts_with",
                                  "end": "ends_with", "finish": "ends_with", "close": "ends_with",
                                  "conclude": "ends_with"}


def _edges(tokens: Sequence[Token], masked: set[int]) -> list[_Need]:
    """A verb placing something at a start or an end, with what it places ("begin with X", "close it with X")."""
    needs: list[_Need] = []
    for token in tokens:
        op = _EDGE_VERBS.get(token.lemma_.lower())
        if op is None or token.pos_ != "VERB" or token.i in masked or token.dep_ in ("amod", "acl", "relcl") \
                or token.tag_ == "VBG":
            continue
        if any(c.dep_ in ("nsubj", "nsubjpass") and c.lower_ in ("that", "which", "who") for c in token.children):
            continue  # a relative clause describes a piece ("a sub-bullet that starts with a dash")
        preps = [c for c in token.children if c.dep_ in ("prep", "prt", "agent") and c.lower_ in ("with", "by", "off")]
        if not preps and token.dep_ == "conj":
            preps = [c for c in token.head.children if c.dep_ == "prep" and c.lower_ in ("with", "by")]
        if not preps:  # "open and close it with the same sentence": the coordinated verb's object is both's
            preps = [c for conj in token.children if conj.dep_ == "conj" and conj.pos_ == "VERB"
                     for c in conj.children if c.dep_ == "prep" and c.lower_ in ("with", "by")]
        if preps:
            needs.append(_Need(what="edge", tokens=(token.i,), text=op))
            needs.extend(_Need(what="edge", tokens=(partner.i,), text=_EDGE_VERBS[partner.lemma_.lower()])
                         for partner in _sharing(token))
    return needs


def _sharing(verb: Token) -> list[Token]:
    """Edge verbs coordinated with ``verb`` that have no object of their own: they place ``verb``'s
    ("start and end the answer with the same line": the line opens it too)."""
    partners = [c for c in verb.children if c.dep_ == "conj"]
    if verb.dep_ == "conj":
        partners.append(verb.head)
    return [p for p in partners if p.lemma_.lower() in _EDGE_VERBS and _EDGE_VERBS[p.lemma_.lower()]
            != _EDGE_VERBS.get(verb.lemma_.lower()) and not any(
                c.dep_ in ("prep", "dobj") and c.lower_ not in ("and",) for c in p.children
                if c.i > p.i and c.i < verb.i or c.dep_ == "prep" and c.lower_ in ("with", "by"))]


_FILTER_DEPS = frozenset({"relcl", "acl"})
#: Verbs of a modifier that says how pieces are separated ("paragraphs separated by two new lines"):
#: a reading of those pieces implies their separator, unless a mark is named (a need of its own).
_SEPARATING = frozenset({"separate", "divide", "split", "delimit"})
_FILTER_PREPS = frozenset({"with", "without", "containing", "of"})


def _filters(noun: Token, unit: str, inside: set[int], examples: set[int], quotes: set[int]) -> list[_Need]:
    """Restrictive modifiers of a counted or placed unit that name another unit, a number or a text."""
    needs: list[_Need] = []
    if unit in ("breaks", "levels", "responses"):
        return needs
    for child in noun.children:
        if child.dep_ in _FILTER_DEPS or (child.dep_ == "prep" and child.lower_ in _FILTER_PREPS):
            sub = [t for t in child.subtree if t.i in inside and t.i not in examples]
            if child.lower_ == "of" and unit not in ("sentences", "paragraphs", "lines", "bullets", "sections"):
                continue
            if child.lemma_.lower() in _SEPARATING:
                needs.append(_Need(what="filter", tokens=(noun.i, child.i), unit=unit, named=(unit,)))
                continue
            named = [t for t in sub if t.i not in quotes and _unit_of(t) is not None and (
                t.pos_ in ("NOUN", "PROPN") or t.dep_ in ("amod", "compound") and t.head.pos_ == "NOUN")]
            quoted = [t for t in sub if t.i in quotes or _letter(t)]
            if named or quoted:
                needs.append(_Need(what="filter", tokens=(noun.i, child.i, *(t.i for t in named)), unit=unit,
                                   named=tuple(u for t in named if (u := _unit_of(t)) is not None),
                                   text=" ".join(t.text for t in quoted) or None))
    return needs


def _letter(token: Token) -> bool:
    """A letter named as a text ("lines beginning with R, A, I and N"): one capital, or one letter
    coordinated with another; not the article "a" or the pronoun "I" alone."""
    if len(token.text) != 1 or not token.text.isalpha():
        return False
    listed = any(len(t.text) == 1 and t.text.isalpha() for t in (*token.conjuncts, token.head) if t.i != token.i)
    if listed:
        return True
    return token.text.isupper() and token.text not in ("A", "I") and token.pos_ != "DET"


def _marks(tokens: Sequence[Token], examples: set[int]) -> list[_Need]:
    """Marks the clause names as a separator or marker: quoted ("'~'"), or right after a word that
    names one ("denoted by *", "use !?!? to separate", "the mark ~"). A run of marks written without
    spaces is one mark. Prose punctuation between words, a number's own sign ("300+", "25%") and
    marks in an example are none."""
    runs: list[list[Token]] = []
    for token in tokens:
        raw = token.text
        if token.i in examples or any(c.isalnum() or c.isspace() for c in raw) or raw in _OPENERS or raw in _CLOSERS:
            continue
        if runs and runs[-1][-1].i == token.i - 1 and not runs[-1][-1].whitespace_:
            runs[-1].append(token)
        else:
            runs.append([token])
    needs: list[_Need] = []
    for run in runs:
        while len(run) > 1 and run[-1].text in _CLAUSE_MARKS:
            run = run[:-1]
        raw = "".join(t.text for t in run)
        doc = run[0].doc
        before = doc[run[0].i - 1] if run[0].i > 0 else None
        after = doc[run[-1].i + 1] if run[-1].i + 1 < len(doc) else None
        if before is not None and before.like_num and not before.whitespace_ and raw in ("+", "%", "％"):
            continue
        quoted = (before is not None and after is not None and before.text in _OPENERS and after.text in _CLOSERS
                  and not before.whitespace_ and not run[-1].whitespace_)
        final = after is None or after.is_sent_start or (after.is_punct and after.i == len(doc) - 1)
        named = before is not None and before.lower_ in _NAMING and raw not in _CLAUSE_MARKS and not (
            final and len(raw) == 1 and raw in "!?！？.") and raw not in ("—", "–")
        if quoted or named:
            needs.append(_Need(what="mark", tokens=tuple(t.i for t in run), text=raw))
    return needs


_OPENERS = frozenset({"'", '"', "“", "‘", "`", "(", "[", "【", "「", "«"})
_CLOSERS = frozenset({"'", '"', "”", "’", "`", ")", "]", "】", "」", "»"})
#: Marks that end or join clauses: named only when quoted.
_CLAUSE_MARKS = frozenset({",", ";", ":", ".", "，", "；", "：", "。", "、"})


# --- accounting ---------------------------------------------------------------


def _accounts(need: _Need, carried: _Carries) -> bool:
    if carried.whole:
        return True
    unit = need.unit
    if need.what == "quantity":
        if unit == "breaks":
            return unit in carried.units
        value = need.value or 0.0
        near = any(abs(n - value) <= 0.25 * value for n in carried.numbers) if value >= 8 else value in carried.numbers
        return (unit == "*" or unit in carried.units) and near
    if need.what == "position":
        return unit in carried.units and need.value is not None and int(need.value) in carried.positions
    if need.what == "unit":
        if unit == "*":
            return bool(carried.per)
        return unit in carried.units or unit in carried.per
    if need.what == "filter":
        if carried.filtered or unit in carried.per:
            return True
        marked = any(t and not t.isalnum() for t in carried.texts) or bool(carried.marks)
        if need.named and all(n in carried.units or (n == "punctuation" and marked) for n in need.named):
            return True
        quoted = (need.text or "").lower()
        if quoted and all(c in carried.marks or c.isspace() for c in quoted):
            return True
        return bool(quoted) and any(t and t.lower() in quoted for t in carried.texts)
    if need.what == "ratio":
        return carried.ratio
    if need.what == "edge":
        return need.text in carried.edges or carried.filtered or need.text in _KIND_OPS.get(carried.kind, ())
    if need.what == "mark":
        mark = need.text or ""
        return any(mark in t for t in carried.texts if t) or all(c in carried.marks for c in mark)
    return False


def _per_piece(need: _Need, needs: Sequence[_Need], carried: _Carries) -> bool:
    """Whether a reading carrying a count of sub-items (or of what no unit names) holds it per piece where the
    clause counts it under every piece of a list or text ("at least three sub-bullets under every bullet point"
    is no total of three)."""
    if need.what != "quantity" or carried.whole or need.unit not in ("nested_bullets", "*") or carried.filtered:
        return True
    every = {n.unit for n in needs if n.what == "unit" and n.unit in _PIECE_UNITS and n.unit != need.unit
             and n.text != _LAID_OUT}
    held = {u for p in carried.per for u in (p, *_SAME_PIECES.get(p, ()))}
    return not every or bool(every & held)


#: Pieces a reading per one of them holds per the other too (a bullet is a line of the list).
_SAME_PIECES: Mapping[str, tuple[str, ...]] = {"lines": ("bullets",), "bullets": ("lines",),
                                               "paragraphs": ("sections",), "sections": ("paragraphs",)}


def _word_span(token: Token, prompt: str) -> Span:
    return Span(start=token.idx, end=token.idx + len(token), text=prompt[token.idx: token.idx + len(token)])


def account_readings(doc: Doc | None, text: str, prompt: str, found: Sequence[Found]) -> Accounting:
    """Keep the readings whose clauses they account for; drop the others and report their clauses.

    ``doc`` is the English parse of ``text`` (the cleaned ``prompt``, same
    offsets); without one every reading is kept (with no words reported).
    A clause that holds no reading but names a separator or marker ("use
    !?!? to separate the items") is reported too: no reader read it.
    """
    carried = [_carries(f) for f in found]
    dropped_ids: set[int] = set()
    clause_of: dict[int, Span] = {}
    used_tokens: dict[int, set[int]] = {}
    dropped: list[Reading] = []
    unrecognised: list[Span] = []

    def drop(i: int, clause: Span, unaccounted: tuple[Span, ...]) -> None:
        if i in dropped_ids:
            return
        dropped_ids.add(i)
        dropped.append(Reading(kind=found[i].kind.value, constraint=None, clause=clause,
                               used=_words_of(doc, found[i], used_tokens.get(i, set()), prompt),
                               unaccounted=unaccounted))

    for i, f in enumerate(found):
        invented = _invented(f, text)
        if invented is not None:
            start, end = _sentence_around(text, f.start, f.end)
            sentence = Span(start=start, end=end, text=prompt[start:end])
            dropped_ids.add(i)
            dropped.append(Reading(kind=f.kind.value, constraint=None, clause=sentence,
                                   used=_words_of(doc, f, set(), prompt), unaccounted=()))
            unrecognised.append(sentence)
    clauses = [sorted((t for t in tokens if not t.is_space), key=lambda t: t.i)
               for tokens in (_clauses(doc) if doc is not None else [])]
    home = _homes(found, clauses, carried)
    clause_index = {t.i: number for number, tokens in enumerate(clauses) for t in tokens}
    all_needs = [_needs(text, ordered) if ordered and doc is not None else [] for ordered in clauses]
    laid_out: dict[int, list[int]] = {}
    for need in (n for needs in all_needs for n in needs if n.what == "unit" and n.text == _LAID_OUT):
        assert doc is not None
        laid_out.setdefault(doc[need.tokens[-1]].sent.start, []).extend(need.tokens)
    for number, ordered in enumerate(clauses):
        if not ordered or doc is None:
            continue
        start = ordered[0].idx
        end = max(t.idx + len(t) for t in ordered)
        clause = Span(start=start, end=end, text=prompt[start:end])
        members = [i for i in range(len(found)) if number in home[i]]
        needs = all_needs[number]
        if not members:
            if _unread(needs, carried, ordered):
                unrecognised.append(clause)
            continue
        for i in members:
            if i not in clause_of or clause_of[i].end - clause_of[i].start < end - start:
                clause_of[i] = clause
        each = [n for n in needs if n.what == "unit"]
        for i in list(members):
            span = _reading_span(doc, found[i])
            negated = _negated(span, carried[i], clause_index)
            if not _supported(found[i], carried[i], _said(doc, found[i], ordered), each, negated):
                drop(i, clause, tuple(_word_span(doc[t], prompt) for t in sorted(_own(doc, found[i]))))
                members.remove(i)
                continue
            wrong = _described(span, carried[i]) + _refused_elsewhere(span, carried[i], ordered)
            if not wrong and ordered[0].sent.start in laid_out and _of_whole_answer(found[i]):
                wrong = laid_out[ordered[0].sent.start]  # a piece's property, said beside another piece
            if wrong:
                drop(i, clause, tuple(_word_span(doc[t], prompt) for t in wrong))
                members.remove(i)
        open_needs: list[_Need] = []
        for need in needs:
            takers = [i for i in members if _accounts(need, carried[i]) and _per_piece(need, needs, carried[i])]
            if not takers and need.what in ("quantity", "unit") and need.unit != "*" and any(
                    _accounts(need, c) for i, c in enumerate(carried) if i not in members and i not in dropped_ids):
                continue  # the clause restates what another clause asked ("your one-sentence answer")
            if not takers:
                open_needs.append(need)
            for i in takers:
                used_tokens.setdefault(i, set()).update(need.tokens)
        if not open_needs and (members or not any(i in dropped_ids for i in clause_of if clause_of[i] == clause)):
            continue
        missing = sorted({i for need in open_needs for i in need.tokens})
        unaccounted = tuple(_word_span(doc[i], prompt) for i in missing)
        for i in members:
            drop(i, clause, unaccounted)
        unrecognised.append(clause)
    for index, clause, unaccounted in _chinese(text, prompt, found, carried, dropped_ids):
        if index is None:
            unrecognised.append(clause)
        elif index not in dropped_ids:
            dropped_ids.add(index)
            dropped.append(Reading(kind=found[index].kind.value, constraint=None, clause=clause,
                                   used=_words_of(doc, found[index], set(), prompt), unaccounted=unaccounted))
    kept: list[Found] = []
    used: list[tuple[Span, tuple[Span, ...]]] = []
    for i, f in enumerate(found):
        if i in dropped_ids:
            continue
        kept.append(_clipped(f, clause_of.get(i), unrecognised))
        clause = clause_of.get(i, Span(start=f.start, end=f.end, text=prompt[f.start:f.end]))
        used.append((clause, _words_of(doc, f, used_tokens.get(i, set()), prompt)))
    return Accounting(kept=tuple(kept), used=tuple(used), dropped=tuple(dropped), unrecognised=_merged(unrecognised))


def _clipped(found: Found, clause: Span | None, unrecognised: Sequence[Span]) -> Found:
    """``found`` with its span cut to its clause where the rest of the span is a clause left unrecognised.

    A reader may take a whole sentence as its span ("list the risks as bullet
    points, and open each bullet with a label: ..."); the reading came from
    one clause, and the other clause, which no reading carries, is no source of it.
    """
    if clause is None:
        return found
    start, end = found.start, found.end
    for other in unrecognised:
        if not (other.start < end and start < other.end) or other.start <= clause.start < other.end:
            continue
        if other.start > clause.start:
            end = min(end, other.start)
        else:
            start = max(start, other.end)
    if start >= end or (start, end) == (found.start, found.end):
        return found
    return msgspec.structs.replace(found, start=start, end=end)


#: Marks a reader may write for words that name them ("bold": **, "italics": *, "HTML italics": <i>).
_IMPLIED_MARK = re.compile(r"^(?:[*_#`~<>|\-+•.:;,!?\"'()\[\]{}«»“”‘’。，；：！？、…—]+|</?[a-z]+>)$")
#: Chinese names of marks -> the marks they name (书名号 is 《》).
_ZH_MARK_NAMES: Mapping[str, str] = {"书名号": "《》〈〉", "方括号": "[]【】", "括号": "()（）【】[]", "引号": "“”‘’「」『』",
                                     "直角引号": "「」『』", "尖括号": "<>〈〉《》", "花括号": "{}", "大括号": "{}"}
_GENERIC = frozenset({Kind.COUNT, Kind.POSITION, Kind.WRAP, Kind.STRUCTURE})


def _invented(found: Found, text: str) -> str | None:
    """A literal of a generic reading (a delimiter, a marker, a placed text) the prompt never wrote, or None.

    A reading of "describe autumn in one sentence" with 「 」 around spans read
    marks the request does not name; such a reading is no reading of it.
    """
    if found.kind not in _GENERIC:
        return None
    params = found.params
    raw_filter = params.get("filter")
    filters: Mapping[str, Any] = raw_filter if isinstance(raw_filter, Mapping) else {}
    literals = [params.get("left"), params.get("right"), params.get("marker"),
                filters.get("left"), filters.get("right"), filters.get("marker")]
    lowered = text.casefold()
    for literal in literals:
        if not isinstance(literal, str) or not literal.strip():
            continue
        mark = literal.strip()
        if _IMPLIED_MARK.match(mark) or mark.casefold() in lowered:
            continue
        if any(name in text and set(mark) <= set(marks) for name, marks in _ZH_MARK_NAMES.items()):
            continue
        return mark
    return None


def _sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence of ``text`` holding ``text[start:end]`` (split at sentence marks and line breaks)."""
    left, right = sentence_bounds(text, start, end, MARKS)
    while left < right and text[left].isspace():
        left += 1
    return left, min(right, len(text))


def _homes(found: Sequence[Found], clauses: Sequence[Sequence[Token]],
           carried: Sequence[_Carries] = ()) -> list[set[int]]:
    """The clause (or clauses, on a tie) holding the reading's own texts and numbers, else most of its
    words: where it came from.

    A reader may take a whole sentence as its span ("Write three sections;
    each section begins with a thesis", "write two paragraphs, and close each
    with the phrase 'at a price'"); the reading comes from the clause that
    holds what it carries ('at a price'), else most of what it read, not
    from every clause its span touches.
    """
    homes: list[set[int]] = []
    for index, f in enumerate(found):
        inside = [[t for t in tokens if f.start < t.idx + len(t) and t.idx < f.end and not t.is_punct]
                  for tokens in clauses]
        if index < len(carried):
            own = _carried_words(carried[index])
            hits = [sum(1 for t in tokens if t.lower_ in own[0] or _number_value(t) in own[1]) for tokens in inside]
            best_hit = max(hits, default=0)
            if best_hit > 0 and hits.count(best_hit) < len([x for x in inside if x]):
                homes.append({n for n, hit in enumerate(hits) if hit == best_hit})
                continue
        shares = [len(tokens) for tokens in inside]
        best = max(shares, default=0)
        homes.append({n for n, share in enumerate(shares) if share == best and best > 0}
                     or {n for n, tokens in enumerate(clauses)
                         if any(f.start < t.idx + len(t) and t.idx < f.end for t in tokens)})
    return homes


def _carried_words(carried: _Carries) -> tuple[set[str], set[float]]:
    """The words of the texts a reading carries (two letters or more) and its numbers (no 0 or 1, too common)."""
    words = {w for text in carried.texts if text for w in re.findall(r"\w{2,}", text.lower())}
    return words, {n for n in carried.numbers if n >= 2}


def _unread(needs: Sequence[_Need], carried: Sequence[_Carries], tokens: Sequence[Token]) -> bool:
    """Whether a clause no reading came from states a quantity, position or mark of the answer that no
    reading of the prompt carries, or places a text at the edge of every piece (reported unrecognised:
    "Write three sections", "use !?!? to separate", "open each bullet with a label"). A question asks; it
    states nothing."""
    if any(t.text in ("?", "？") for t in tokens[-2:]) and not any(n.what == "mark" for n in needs):
        return False
    edges = [n for n in needs if n.what == "edge"]
    pieces = [n for n in needs if n.what == "unit" and n.unit != "*"]
    if edges and pieces and not any(all(_accounts(n, c) for n in (*edges, *pieces)) for c in carried):
        return True  # "open each bullet with a severity label": a start of every piece no reading placed
    return any(n.what in ("quantity", "position", "mark") and n.unit != "*"
               and not any(_accounts(n, c) for c in carried) for n in needs)


#: Words that say where a text stands: a reading placing it at a start or an end needs one of them.
_START_CUES = frozenset({"start", "begin", "open", "first", "lead", "beginning", "opening", "precede", "preface",
                         "prefix", "initial", "introduce", "head", "opener", "starting", "kick", "top"})
#: Sentence types by the mark that ends them ("the third sentence is a question": it ends with '?').
_TYPED_ENDS: Mapping[str, str] = {"question": "?", "exclamation": "!"}
_END_CUES = frozenset({"end", "finish", "close", "last", "conclude", "final", "ending", "closing", "terminate",
                       "sign", "suffix", "append", "follow", "conclusion", "wrap", "finally"})


def _said(doc: Doc, found: Found, clause: Sequence[Token]) -> set[str] | None:
    """The lemmas of the clause and of the sentences the reading was read from; None for Chinese text."""
    tokens = list(clause)
    for sent in doc.sents:
        if sent.start_char < found.end and found.start < sent.end_char:
            tokens.extend(sent)
    if any("\u3400" <= c <= "\u9fff" for t in tokens for c in t.text):
        return None
    return {t.lemma_.lower() for t in tokens} | {t.lower_ for t in tokens}


#: Words naming the whole answer, or referring back to it, as what a wrapper holds.
_WHOLE_ANSWER = frozenset({"response", "answer", "reply", "output", "entire", "whole", "full", "it", "everything",
                           "all", "result"})


def _reading_span(doc: Doc, found: Found) -> DocSpan | None:
    """The tokens a reading was read from (its characters widened to whole tokens), or None where none fit.

    Found once per reading and clause by :func:`account_readings`, then handed to
    the checks that read it (:func:`_negated`, :func:`_described`, :func:`_refused_elsewhere`).
    """
    return doc.char_span(found.start, found.end, alignment_mode="expand")


def _described(span: DocSpan | None, carried: _Carries) -> list[int]:
    """Words a reading took as a literal text that the clause uses as a description (empty when none).

    A placed text (a start, an end, a filter's first or last letters) that the
    clause writes as a common noun after "a" / "an" names a kind of text ("start
    each item with an arrow", "words that begin with a consonant cluster"), not
    the text to write.
    """
    if span is None:
        return []
    wrong: list[int] = []
    for text in carried.placed:
        words = text.strip().lower().split()
        word = words[0] if words else ""
        if len(word) < 2 or not word.isalpha():
            continue
        for token in span.sent if span.sent is not None else span:
            if token.lower_ != word or token.pos_ not in ("NOUN", "ADJ") or token.text[:1].isupper():
                continue
            before = [t.lower_ for t in span.doc[max(0, token.i - 3): token.i] if t.pos_ != "ADJ"]
            if before[-1:] in (["a"], ["an"]):
                wrong.append(token.i)
    return wrong


def _refused_elsewhere(span: DocSpan | None, carried: _Carries, clause: Sequence[Token]) -> list[int]:
    """Words of a refusal (no list; the whole answer wrapped) that its clause does not say (empty when none).

    A refusal of lists read from a clause that names the list without a
    negation took its negation from another clause ("give them as bullet
    points, and don't start two bullets alike"); a wrapper around the whole
    answer needs its sentence to name the whole answer ("wrap your entire
    response"), not a piece of it ("two remarks in brackets", "within her
    quote, in quotation marks of its own").
    """
    own = {t.i for t in clause}
    if span is None:
        return []
    listed = any(t.lemma_.lower() in ("bullet", "list", "bullet-point") for t in clause)  # the layout itself
    if carried.no_list and listed and not any(t.lower_ in _NEGATORS or t.dep_ == "neg" for t in clause) and any(
            (t.lower_ in _NEGATORS or t.dep_ == "neg") and t.i not in own for t in span):
        return [t.i for t in span if t.i in own and not t.is_punct]
    sentences = {t.sent.start: t.sent for t in span}
    if carried.answer_wrap and not any(t.lower_ in _WHOLE_ANSWER or t.lemma_.lower() in _WHOLE_ANSWER
                                       for sent in sentences.values() for t in sent) and not any(
            _wraps_the_request(t) for sent in sentences.values() for t in sent):
        return [t.i for t in span if not t.is_punct]
    return []


#: Verbs asking for the answer itself ("write a haiku"): their object is the whole answer.
_CREATE = frozenset({"write", "compose", "create", "draft", "give", "produce", "generate", "tell", "make", "put"})
_WRAPPERS = frozenset({"quote", "quotation", "mark", "bracket", "parenthesis", "parentheses", "brace"})


def _wraps_the_request(token: Token) -> bool:
    """Whether ``token`` names marks put around what the prompt asks to write ("write a haiku in double
    quotation marks", "put the haiku in quotes"), not around a piece of it ("within her quote ..., in
    quotation marks of its own")."""
    if token.lemma_.lower() not in _WRAPPERS or token.pos_ != "NOUN":
        return False
    node = token
    while node.dep_ in ("compound", "amod", "conj") and node.head.i != node.i:
        node = node.head
    if node.dep_ != "pobj" or node.head.dep_ != "prep":
        return False
    holder = node.head.head
    if _clause_head(holder).i != _clause_head(token).i:
        return False  # the marks said in another clause than what holds them ("..., and within her quote ...")
    asked = {t.lemma_.lower() for t in token.doc if t.dep_ == "dobj" and t.head.lemma_.lower() in _CREATE
             and _imperative(t.head) and t.pos_ in ("NOUN", "PROPN")}
    if holder.pos_ in ("NOUN", "PROPN"):
        return holder.lemma_.lower() in asked
    if holder.lemma_.lower() in _CREATE and holder.lemma_.lower() != "put" and _imperative(holder):
        return True  # "write a haiku in double quotation marks", not "what a resident told her, in quotation marks"
    return _imperative(holder) and any(c.dep_ == "dobj" and c.lemma_.lower() in asked for c in holder.children)


def _imperative(verb: Token) -> bool:
    """Whether ``verb`` is a request of the prompt: a main or coordinated verb with no subject."""
    return verb.dep_ in ("ROOT", "conj") and not any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in verb.children)


#: Words that make a negated clause a bound rather than a refusal ("do not write fewer than 3 sentences").
_COMPARATIVES = frozenset({"few", "fewer", "less", "more", "than", "under", "over", "exceed", "below", "above",
                           "beyond", "least", "most", "only", "just", "except", "but", "other"})
_NEGATORS = frozenset({"not", "n't", "no", "never", "without", "avoid", "refrain", "nor", "neither", "none"})


def _names_counted(token: Token, carried: _Carries) -> bool:
    """Whether ``token`` names what the reading counts (for marks, one of the marks it counts)."""
    if token.pos_ not in ("NOUN", "PROPN") or _unit_of(token) not in carried.units:
        return False
    entry = EN_UNITS.get((token.lemma_.lower(),))
    marks = str(entry[1].get("chars", "")) if entry is not None else ""
    return not (marks and carried.chars) or bool(set(marks) & set(carried.chars))


def _negated(span: DocSpan | None, carried: _Carries, clause_of: Mapping[int, int]) -> bool:
    """Whether the words a reading was read from negate, in one clause, a unit the reading counts."""
    if span is None or len(span) > _NEGATION_REACH:
        return False  # a reading of a long stretch: a negation in it need not be of what it counts
    negating = {clause_of.get(t.i) for t in span if t.lower_ in _NEGATORS or t.dep_ == "neg"}
    counted = {clause_of.get(t.i) for t in span if _names_counted(t, carried)}
    return bool(negating & counted)


#: Longest reading (in tokens) whose own negation words are read as refusing what it counts.
_NEGATION_REACH = 16


def _supported(found: Found, carried: _Carries, lemmas: set[str] | None, each: Sequence[_Need],
               negated: bool = False) -> bool:
    """Whether the clause says what the reading claims beyond its words.

    A text placed at a start or an end needs a word saying so ("use the word
    green in the second paragraph" places nothing at a start); a text at the
    whole answer's start or end is no reading of a clause about each of its
    pieces ("end each sentence with ~") when another reading holds per piece.
    """
    ops = carried.ops
    if lemmas is None:
        return True
    if carried.positive and not carried.refusing and negated and not lemmas & _COMPARATIVES:
        return False  # "must not contain any colons" is no minimum of colons
    if "starts_with" in ops and not lemmas & _START_CUES:
        return False
    if "ends_with" in ops and not lemmas & _END_CUES and not (
            lemmas & _TYPED_ENDS.keys() and carried.placed and {_TYPED_ENDS.get(w) for w in lemmas} >= set(carried.placed)):
        return False  # (a sentence said to be a question ends with '?': its type names its end)
    return not (carried.answer_edge and any(n.unit not in carried.units for n in each))


#: A Chinese sentence; an English sentence before it (its "." before a space) is a sentence of its own.
_ZH_SENTENCE = re.compile(r"(?:[^。！？；!?;.\n]|\.(?!\s))+(?:[。！？；!?;]|\.(?=\s))?")
_ZH_NUMBER = r"(?:\d+|[零〇一二两三四五六七八九十百千]+)"
#: Measure words and nouns that count a unit of the answer (characters, words, sentences, paragraphs, lines, items).
_ZH_MEASURE = (r"(?:个)?(?:字|词|单词|句子|句话|句|段落|段|行|条|点|项|要点|部分|问句|陈述句|感叹句|标点|逗号|句号|问号"
               r"|感叹号|表情|小标题|标题)")
_ZH_COUNT = re.compile(rf"(?P<ord>第)?(?P<num>{_ZH_NUMBER})\s*(?P<measure>{_ZH_MEASURE})")
_ZH_BACK = re.compile(r"(?:这|那|上述|以上|前面|这些|那些|[”」’\"'])\s*$")
_ZH_EACH = re.compile(r"每(?:一)?(?:条|项|点|部分)")
_ZH_QUOTED = re.compile(r"[“「『\"]([^”」』\"]{1,3})[”」』\"]")
_HAN = re.compile(r"[\u3400-\u9fff]")


def _carries_number(carried: _Carries, value: float) -> bool:
    """Whether a reading carries ``value`` (within a quarter for 8 and more: "about 100 characters" is a range)."""
    if value in carried.numbers:
        return True
    return value >= 8 and any(abs(n - value) <= 0.25 * value for n in carried.numbers)


def _chinese(text: str, prompt: str, found: Sequence[Found], carried: Sequence[_Carries],
             dropped: set[int]) -> list[tuple[int | None, Span, tuple[Span, ...]]]:
    """The Chinese sentences' accounting: (reading index or None for a report, sentence, unaccounted words).

    In a sentence holding Han characters and readings: a number counting a
    unit of the answer (三个部分, 十五个字, 第一行) must be carried by a reading
    of it; a number referring back (这两个词, “安全第一”四个字) is no count,
    and a reading that counts it is dropped; 每条 / 每段 ... (each piece) needs
    a reading that holds per piece; a short quoted mark (“/”, “- ”) must be a
    text of a reading.
    """
    out: list[tuple[int | None, Span, tuple[Span, ...]]] = []
    for match in _ZH_SENTENCE.finditer(text):
        piece = match.group(0).lstrip()
        start, end = match.end() - len(piece), match.end()
        if not _HAN.search(piece):
            continue
        members = [i for i, f in enumerate(found) if i not in dropped and start <= f.start and f.end <= end + 1]
        if not members:
            continue
        clause = Span(start=start, end=end, text=prompt[start:end])
        quoted = [(m.start() + start, m.end() + start) for m in re.finditer(r"[“「『\"][^”」』\"]*[”」』\"]", piece)]
        missing: list[tuple[int, int]] = []
        for count in _ZH_COUNT.finditer(piece):
            where = (count.start() + start, count.end() + start)
            if any(a <= where[0] < b for a, b in quoted):
                continue
            value = parse_zh_number(count.group("num"))
            if value is None:
                continue
            if _ZH_BACK.search(piece[: count.start()]) and not count.group("ord"):
                back = (Span(start=where[0], end=where[1], text=prompt[where[0]:where[1]]),)
                counting = [i for i in members
                            if value in carried[i].counted and not carried[i].whole and carried[i].positive]
                out.extend((i, clause, back) for i in counting)
                if counting:
                    out.append((None, clause, back))
                continue
            if count.group("ord"):
                if piece[: count.start()].endswith("倒数"):
                    value = -value  # 倒数第二句: the second from the end
                if not any(value in carried[i].positions or carried[i].whole for i in members):
                    missing.append(where)
            elif value >= 2 and not re.search(r"(?:每|最后|任何|哪|任一)\s*$", piece[: count.start()]) and not any(
                    _carries_number(carried[i], float(value)) or carried[i].whole for i in members):
                missing.append(where)  # 一 is too often "a" (一句话, 一段) to be a count
        each = _ZH_EACH.search(piece)
        if each is not None and not any(carried[i].per or carried[i].filtered or carried[i].whole for i in members):
            missing.append((each.start() + start, each.end() + start))
        for mark in _ZH_QUOTED.finditer(piece):
            raw = mark.group(1)
            if _HAN.search(raw) or raw.strip().isalnum() or not raw.strip():
                continue
            if not any(raw.strip() in t for i in members for t in carried[i].texts if t) and not any(
                    set(raw.strip()) <= set(carried[i].marks) for i in members):
                missing.append((mark.start() + start, mark.end() + start))
        if not missing:
            continue
        unaccounted = tuple(Span(start=a, end=b, text=prompt[a:b]) for a, b in sorted(set(missing)))
        for i in members:
            out.append((i, clause, unaccounted))
        out.append((None, clause, unaccounted))
    return out


def _words_of(doc: Doc | None, found: Found, extra: set[int], prompt: str) -> tuple[Span, ...]:
    """The words a reading used: its own and ``extra`` (token indices); without an English parse, its span."""
    if doc is None:
        return (Span(start=found.start, end=found.end, text=prompt[found.start:found.end]),)
    return tuple(_word_span(doc[t], prompt) for t in sorted(_own(doc, found) | extra))


def _own(doc: Doc, found: Found) -> set[int]:
    """The words (not punctuation or white space) a reading was read from."""
    span = _reading_span(doc, found)
    if span is None:
        return set()
    return {t.i for t in span if not t.is_space and not (t.is_punct and len(t.text) == 1 and t.text in _PROSE)}


def _merged(spans: Sequence[Span]) -> tuple[Span, ...]:
    seen: dict[tuple[int, int], Span] = {}
    for span in spans:
        seen.setdefault((span.start, span.end), span)
    return tuple(seen[key] for key in sorted(seen))
