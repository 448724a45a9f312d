"""Schemas of ``POST /v1/constraints``."""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Any, Literal

import msgspec

from reasoning.budget import Budget
from reasoning.constraints.extract.accounting import Reading
from reasoning.constraints.form import GENERIC_KINDS
from reasoning.constraints.model import Constraint, Hardness, Kind, Premise, Relation, Span
from reasoning.entropy import Entropy
from reasoning.evidence.model import LinkedEntity

__all__ = [
    "ConflictOut",
    "ConstraintsRequest",
    "ConstraintsResponse",
    "EntropyOut",
    "GraphFormat",
    "Profile",
    "ProfileDefault",
]

GraphFormat = Literal["json", "turtle", "jsonld"]


#: Parameters each kind needs, with their JSON types (``Kind``'s documented
#: contract). ``citation_time_window`` needs at least one of its two dates.
_PARAMS: dict[Kind, dict[str, type | tuple[type, ...]]] = {
    Kind.RESPONSE_LANGUAGE: {"language": str},
    Kind.KEYWORDS_PRESENT: {"keywords": list},
    Kind.FORBIDDEN_WORDS: {"words": list},
    Kind.KEYWORD_FREQUENCY: {"keyword": str, "relation": str, "n": int},
    Kind.LETTER_FREQUENCY: {"letter": str, "relation": str, "n": int},
    Kind.WORD_COUNT: {"relation": str, "n": int},
    Kind.SENTENCE_COUNT: {"relation": str, "n": int},
    Kind.CAPITAL_WORD_FREQUENCY: {"relation": str, "n": int},
    Kind.PARAGRAPH_COUNT: {"n": int},
    Kind.NTH_PARAGRAPH_FIRST_WORD: {"n": int, "nth": int, "first_word": str},
    Kind.BULLET_COUNT: {"n": int},
    Kind.HIGHLIGHTED_SECTIONS: {"n": int},
    Kind.SECTIONS: {"splitter": str, "n": int},
    Kind.PLACEHOLDERS: {"n": int},
    Kind.POSTSCRIPT: {"marker": str},
    Kind.REGEX_FORMAT: {"pattern": str},
    Kind.CONSTRAINED_RESPONSE: {"options": list},
    Kind.REPEAT_PROMPT: {"prompt_to_repeat": str},
    Kind.START_PHRASE: {"phrase": str},
    Kind.END_PHRASE: {"phrase": str},
    Kind.CITE_SOURCES: {"min": int},
    Kind.JURISDICTION: {"code": str},
    Kind.NUMERIC_PRECISION: {"decimals": int},
}
_DATES = ("not_before", "not_after")


def check_params(kind: Kind, params: dict[str, Any]) -> str | None:
    """Why ``params`` do not fit ``kind``'s contract, or None when they do.

    Checks presence and JSON type of each documented parameter, that
    ``relation`` is one of IFEval's relations, counts are non-negative, word
    lists hold strings, and dates are ISO dates. Extra parameters are allowed
    (kinds may grow optional ones). The generic kinds' params must be their
    form's fields exactly (``count``: ``unit``, ``relation``, ``n``, ...).
    """
    shape = GENERIC_KINDS.get(kind)
    if shape is not None:
        try:
            msgspec.convert(params, shape)
        except msgspec.ValidationError as error:
            return f"{kind.value} params do not fit its form: {error}"
        return None
    for name, expected in _PARAMS.get(kind, {}).items():
        value = params.get(name)
        if value is None:
            return f"{kind.value} needs the parameter {name!r}"
        if isinstance(value, bool) or not isinstance(value, expected):
            return f"{kind.value}.{name} has the wrong type"
        if isinstance(value, int) and value < 0:
            return f"{kind.value}.{name} must not be negative"
        if isinstance(value, list) and not (value and all(isinstance(v, str) and v for v in value)):
            return f"{kind.value}.{name} must be a non-empty list of non-empty strings"
    if "relation" in params and params["relation"] not in {r.value for r in Relation}:
        return f"{kind.value}.relation must be one of {[r.value for r in Relation]}"
    if kind is Kind.CITATION_TIME_WINDOW:
        given = [params.get(d) for d in _DATES if params.get(d) is not None]
        if not given:
            return "citation_time_window needs not_before and / or not_after"
        for value in given:
            try:
                _dt.date.fromisoformat(str(value))
            except ValueError:
                return f"citation_time_window dates must be ISO dates (YYYY-MM-DD), not {value!r}"
    return None


class ProfileDefault(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A profile default: applies unless the user's own instructions say otherwise.

    Its ``params`` must fit the kind's contract (:func:`check_params`).
    """

    kind: Kind
    params: dict[str, Any] = msgspec.field(default_factory=dict)
    hardness: Hardness = Hardness.HARD

    def __post_init__(self) -> None:
        problem = check_params(self.kind, self.params)
        if problem is not None:
            raise ValueError(problem)


class Profile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    defaults: Annotated[list[ProfileDefault], msgspec.Meta(max_length=64)] = msgspec.field(
        default_factory=list
    )


class ConstraintsRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    prompt: str
    domain: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None
    profile: Profile | None = None
    graph_format: GraphFormat = "json"


class ConflictOut(msgspec.Struct, frozen=True, kw_only=True):
    a: str
    b: str
    reason: str
    spans: list[Span | None]


class EntropyOut(msgspec.Struct, frozen=True, kw_only=True):
    score: float
    breakdown: dict[str, float]
    features: dict[str, float]

    @classmethod
    def of(cls, entropy: Entropy) -> EntropyOut:
        return cls(score=entropy.score, breakdown=entropy.breakdown, features=entropy.features)


class ConstraintsResponse(msgspec.Struct, frozen=True, kw_only=True):
    """``graph`` is a node-link object for ``json``, else a Turtle or JSON-LD string.

    ``linked`` / ``unlinked_terms`` are filled when the request names a domain.
    ``unrecognised``: spans of sentences that read as requirements on the
    answer's form (an imperative or modal about units, case, layout ...) but
    map to no constraint kind, and clauses that say more than the readings
    made of them carry (a quantity, position, unit, filter or mark no reading
    uses); they are not checked or steered.
    ``readings``: per reading, its clause and the words of it the reading
    used; a reading dropped because its clause said more has no
    ``constraint`` and lists the ``unaccounted`` words.
    """

    status: Literal["ok", "needs_confirmation"]
    language: str
    constraints: list[Constraint]
    premises: list[Premise]
    graph: dict[str, Any] | str
    graph_format: GraphFormat
    conflicts: list[ConflictOut]
    inactive: list[str]
    entropy: EntropyOut
    budget: Budget
    timings: dict[str, float]
    cached: bool
    linked: list[LinkedEntity]
    unlinked_terms: int
    unrecognised: list[Span] = msgspec.field(default_factory=list)
    readings: list[Reading] = msgspec.field(default_factory=list)
