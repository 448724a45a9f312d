"""Immutable value objects shared by every stage that handles constraints.

These are the contract between extraction, the constraint graph, the steered
decoder, the HTTP layer and the store: msgspec Structs, frozen, so they can be
cached, hashed by id and serialised to JSON without a schema of their own.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

__all__ = [
    "Constraint",
    "Hardness",
    "Kind",
    "Origin",
    "Premise",
    "Relation",
    "Scope",
    "Span",
    "Verdict",
]


class Kind(StrEnum):
    """Every constraint kind of the catalog.

    Parameters per kind (``Constraint.params``), the contract every stage uses:

    - ``response_language``: ``language`` (ISO 639-1 code, e.g. ``"zh"``)
    - ``keywords_present``: ``keywords`` (list of str, each must appear)
    - ``forbidden_words``: ``words`` (list of str, none may appear as a word)
    - ``keyword_frequency``: ``keyword`` (str), ``relation``, ``n`` (int)
    - ``letter_frequency``: ``letter`` (one lowercase letter), ``relation``, ``n``
    - ``word_count`` / ``sentence_count``: ``relation``, ``n``
    - ``paragraph_count``: ``n`` (paragraphs separated by markdown ``***``)
    - ``nth_paragraph_first_word``: ``n`` (paragraph count, blank-line
      separated), ``nth`` (1-based), ``first_word`` (lowercase)
    - ``bullet_count``: ``n`` (exactly n markdown bullets ``* `` / ``- ``)
    - ``highlighted_sections``: ``n`` (at least n ``*highlighted*`` spans)
    - ``sections``: ``splitter`` (e.g. ``"Section"``), ``n`` (exact count)
    - ``placeholders``: ``n`` (at least n ``[placeholder]``)
    - ``postscript``: ``marker`` (e.g. ``"P.S."``)
    - ``title``: no params (a title wrapped in ``<<...>>``)
    - ``json_format``: optional ``schema`` (JSON Schema object)
    - ``regex_format``: ``pattern`` (the whole answer matches)
    - ``constrained_response``: ``options`` (list of allowed exact answers)
    - ``all_lowercase`` / ``all_capitals`` / ``no_comma`` / ``quotation`` /
      ``two_responses``: no params
    - ``capital_word_frequency``: ``relation``, ``n`` (all-capital words)
    - ``repeat_prompt``: ``prompt_to_repeat`` (answer starts with it verbatim)
    - ``start_phrase`` / ``end_phrase``: ``phrase`` (answer starts / ends with it)
    - ``citation_time_window``: ``not_before`` and / or ``not_after``
      (ISO dates; evidence and citations outside are not allowed)
    - ``cite_sources``: ``min`` (int >= 1; cite at least that many evidence ids)
    - ``jurisdiction``: ``code`` (ISO 3166 alpha-2 or ``"EU"``)
    - ``numeric_precision``: ``decimals`` (int; numbers carry that many decimals)
    - ``count`` / ``position`` / ``wrap`` / ``structure`` / ``copy`` / ``spread``: the
      generic kinds of the compositional form; their params are the builtins
      of :class:`reasoning.constraints.form.Count` (``unit``, ``relation``,
      ``n``, optional ``filter``, ``of`` and ``fraction``, ``per``),
      ``Position`` (``unit``, ``k``, ``op``, ``text``), ``Wrap`` (``left``,
      ``right``, ``unit``), ``Structure`` (``layout``, optional ``marker``,
      ``n``), ``Copy`` (``text``, ``change``) and ``Spread`` (``unit``, ``per``,
      ``max_diff`` / ``max_ratio``: balanced lengths). A requirement that one of
      the named kinds above means exactly is always reported as that kind.
    """

    RESPONSE_LANGUAGE = "response_language"
    KEYWORDS_PRESENT = "keywords_present"
    FORBIDDEN_WORDS = "forbidden_words"
    KEYWORD_FREQUENCY = "keyword_frequency"
    LETTER_FREQUENCY = "letter_frequency"
    WORD_COUNT = "word_count"
    SENTENCE_COUNT = "sentence_count"
    PARAGRAPH_COUNT = "paragraph_count"
    NTH_PARAGRAPH_FIRST_WORD = "nth_paragraph_first_word"
    BULLET_COUNT = "bullet_count"
    HIGHLIGHTED_SECTIONS = "highlighted_sections"
    SECTIONS = "sections"
    PLACEHOLDERS = "placeholders"
    POSTSCRIPT = "postscript"
    TITLE = "title"
    JSON_FORMAT = "json_format"
    REGEX_FORMAT = "regex_format"
    CONSTRAINED_RESPONSE = "constrained_response"
    ALL_LOWERCASE = "all_lowercase"
    ALL_CAPITALS = "all_capitals"
    CAPITAL_WORD_FREQUENCY = "capital_word_frequency"
    NO_COMMA = "no_comma"
    QUOTATION = "quotation"
    TWO_RESPONSES = "two_responses"
    REPEAT_PROMPT = "repeat_prompt"
    START_PHRASE = "start_phrase"
    END_PHRASE = "end_phrase"
    CITATION_TIME_WINDOW = "citation_time_window"
    CITE_SOURCES = "cite_sources"
    JURISDICTION = "jurisdiction"
    NUMERIC_PRECISION = "numeric_precision"
    COUNT = "count"
    POSITION = "position"
    WRAP = "wrap"
    STRUCTURE = "structure"
    COPY = "copy"
    SPREAD = "spread"


class Relation(StrEnum):
    """Comparison of a counted quantity with ``n`` (IFEval's wording kept)."""

    LESS_THAN = "less than"
    AT_LEAST = "at least"
    AT_MOST = "at most"
    MORE_THAN = "more than"
    EXACTLY = "exactly"


class Hardness(StrEnum):
    HARD = "hard"
    SOFT = "soft"


class Scope(StrEnum):
    RESPONSE = "response"
    EVIDENCE = "evidence"
    CITATION = "citation"
    SESSION = "session"


class Origin(StrEnum):
    USER = "user"
    PROFILE = "profile"
    ONTOLOGY = "ontology"


class Span(msgspec.Struct, frozen=True, kw_only=True):
    """Where in the prompt a constraint or premise was read: ``text == prompt[start:end]``."""

    start: int
    end: int
    text: str


class Constraint(msgspec.Struct, frozen=True, kw_only=True):
    """One typed, parameterised requirement on the response or the evidence."""

    id: str
    kind: Kind
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    hardness: Hardness = Hardness.HARD
    scope: Scope = Scope.RESPONSE
    origin: Origin = Origin.USER
    source: Span | None = None
    confidence: float = 1.0
    weight: float = 1.0


class Premise(msgspec.Struct, frozen=True, kw_only=True):
    """A stated assumption of the user ("assume a tax rate of 20%").

    ``topic`` holds the content words a later retraction is matched against
    ("tax rate"); ``value`` the asserted value where there is one ("20%").
    """

    id: str
    text: str
    topic: str
    value: str | None = None
    negated: bool = False
    source: Span | None = None
    language: str = "en"


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of checking one constraint against a (partial) text.

    ``certain`` is True when the verdict cannot change however the text
    continues (a forbidden word already written, a word limit already passed);
    on a complete text every verdict is certain.
    """

    constraint_id: str
    satisfied: bool
    detail: str = ""
    certain: bool = True
