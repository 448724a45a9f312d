"""The catalog's kinds as instances of the form, and forms back to kinds.

:func:`form_of` gives the forms whose conjunction *is* a constraint's
meaning, for every kind but those decided by something other than counting,
positions and layout (a response language's detector, a JSON or regex
grammar, fixed answers, a postscript marker pattern, the evidence-bound
domain kinds): for those it returns None and the kind keeps its own verifier.

:func:`canonical` goes the other way for extraction: a form that is a named
kind's form is reported as that kind, with that kind's parameters, so the
ids, kinds and API output of the catalog stay what they were; any other
form becomes one of the generic kinds (``count``, ``position``, ``wrap``,
``structure``, ``copy``, ``spread``) whose params are the form's builtins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from reasoning.constraints.form.model import (
    Copy,
    Count,
    Filter,
    Form,
    Layout,
    Position,
    Spread,
    Structure,
    Unit,
    Wrap,
)
from reasoning.constraints.model import Kind, Relation

__all__ = ["GENERIC_KINDS", "canonical", "form_of", "params_of"]

#: The generic kinds and the shape their params hold.
GENERIC_KINDS: Mapping[Kind, type[Count | Position | Wrap | Structure | Copy | Spread]] = {
    Kind.COUNT: Count,
    Kind.POSITION: Position,
    Kind.WRAP: Wrap,
    Kind.STRUCTURE: Structure,
    Kind.COPY: Copy,
    Kind.SPREAD: Spread,
}

_KIND_OF_SHAPE: Mapping[type, Kind] = {shape: kind for kind, shape in GENERIC_KINDS.items()}

_COMMAS = ",，"
_RESPONSES_MARKER = "******"


def _rel(p: Mapping[str, Any], default: Relation = Relation.AT_LEAST) -> Relation:
    return Relation(str(p.get("relation", default)))


def _n(p: Mapping[str, Any], name: str = "n", default: int | None = None) -> int:
    value = p.get(name, default)
    if value is None or isinstance(value, bool):
        raise ValueError(f"{name} is missing")
    return int(value)


def _counted(unit: Unit, **filter_fields: Any) -> Callable[[Mapping[str, Any]], tuple[Form, ...]]:
    def build(p: Mapping[str, Any]) -> tuple[Form, ...]:
        return (Count(unit=unit, filter=Filter(**filter_fields), relation=_rel(p), n=_n(p, default=0)),)

    return build


def _fixed(unit: Unit, relation: Relation, **filter_fields: Any) -> Callable[[Mapping[str, Any]], tuple[Form, ...]]:
    def build(p: Mapping[str, Any]) -> tuple[Form, ...]:
        return (Count(unit=unit, filter=Filter(**filter_fields), relation=relation, n=_n(p, default=1)),)

    return build


def _str_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)):
        raise TypeError("a list of words is needed")
    return [str(v) for v in value]


def _keywords_present(p: Mapping[str, Any]) -> tuple[Form, ...]:
    return tuple(
        Count(unit=Unit.KEYWORDS, filter=Filter(text=k), relation=Relation.AT_LEAST, n=1)
        for k in _str_list(p.get("keywords", []))
    )


def _forbidden_words(p: Mapping[str, Any]) -> tuple[Form, ...]:
    return tuple(
        Count(unit=Unit.KEYWORDS, filter=Filter(text=w, whole_word=True), relation=Relation.AT_MOST, n=0)
        for w in _str_list(p.get("words", []))
    )


def _keyword_frequency(p: Mapping[str, Any]) -> tuple[Form, ...]:
    keyword = str(p.get("keyword", ""))
    return (Count(unit=Unit.KEYWORDS, filter=Filter(text=keyword), relation=_rel(p), n=_n(p, default=0)),)


def _letter_frequency(p: Mapping[str, Any]) -> tuple[Form, ...]:
    letter = str(p.get("letter", "")).lower()
    return (Count(unit=Unit.LETTERS, filter=Filter(text=letter), relation=_rel(p), n=_n(p, default=0)),)


def _one_case(wanted: str) -> Callable[[Mapping[str, Any]], tuple[Form, ...]]:
    other = "upper" if wanted == "lower" else "lower"

    def build(p: Mapping[str, Any]) -> tuple[Form, ...]:
        return (
            Count(unit=Unit.LETTERS, filter=Filter(case=other), relation=Relation.AT_MOST, n=0),  # type: ignore[arg-type]
            Count(unit=Unit.LETTERS, filter=Filter(case=wanted), relation=Relation.AT_LEAST, n=1),  # type: ignore[arg-type]
        )

    return build


def _nth_paragraph(p: Mapping[str, Any]) -> tuple[Form, ...]:
    return (
        Count(unit=Unit.PARAGRAPHS, relation=Relation.EXACTLY, n=_n(p, default=0)),
        Position(unit=Unit.PARAGRAPHS, k=_n(p, "nth", 1), op="starts_with", text=str(p.get("first_word", ""))),
    )


def _phrase(op: str) -> Callable[[Mapping[str, Any]], tuple[Form, ...]]:
    def build(p: Mapping[str, Any]) -> tuple[Form, ...]:
        return (Position(unit=Unit.ANSWER, op=op, text=str(p.get("phrase", ""))),)  # type: ignore[arg-type]

    return build


def _generic(kind: Kind) -> Callable[[Mapping[str, Any]], tuple[Form, ...]]:
    shape = GENERIC_KINDS[kind]

    def build(p: Mapping[str, Any]) -> tuple[Form, ...]:
        try:
            return (msgspec.convert(dict(p), shape),)
        except msgspec.ValidationError as error:
            raise ValueError(str(error)) from error

    return build


_FORMS: Mapping[Kind, Callable[[Mapping[str, Any]], tuple[Form, ...]]] = {
    Kind.KEYWORDS_PRESENT: _keywords_present,
    Kind.FORBIDDEN_WORDS: _forbidden_words,
    Kind.KEYWORD_FREQUENCY: _keyword_frequency,
    Kind.LETTER_FREQUENCY: _letter_frequency,
    Kind.WORD_COUNT: _counted(Unit.WORDS),
    Kind.SENTENCE_COUNT: _counted(Unit.SENTENCES),
    Kind.CAPITAL_WORD_FREQUENCY: _counted(Unit.CAPITAL_WORDS),
    Kind.PARAGRAPH_COUNT: _fixed(Unit.PARAGRAPHS, Relation.EXACTLY, separator="***"),
    Kind.NTH_PARAGRAPH_FIRST_WORD: _nth_paragraph,
    Kind.BULLET_COUNT: _fixed(Unit.BULLETS, Relation.EXACTLY),
    Kind.HIGHLIGHTED_SECTIONS: _fixed(Unit.HIGHLIGHTS, Relation.AT_LEAST),
    Kind.PLACEHOLDERS: _fixed(Unit.PLACEHOLDERS, Relation.AT_LEAST),
    Kind.SECTIONS: lambda p: (
        Count(unit=Unit.SECTIONS, filter=Filter(marker=str(p.get("splitter", "Section"))),
              relation=Relation.AT_LEAST, n=_n(p, default=1)),
    ),
    Kind.TITLE: lambda p: (
        Count(unit=Unit.SPANS, filter=Filter(left="<<", right=">>", nonempty=True), relation=Relation.AT_LEAST, n=1),
    ),
    Kind.ALL_LOWERCASE: _one_case("lower"),
    Kind.ALL_CAPITALS: _one_case("upper"),
    Kind.NO_COMMA: lambda p: (Count(unit=Unit.CHARACTERS, filter=Filter(chars=_COMMAS), relation=Relation.AT_MOST, n=0),),
    Kind.QUOTATION: lambda p: (Wrap(left='"', right='"'),),
    Kind.TWO_RESPONSES: lambda p: (Structure(layout=Layout.RESPONSES, marker=_RESPONSES_MARKER, n=2),),
    Kind.REPEAT_PROMPT: lambda p: (Copy(text=str(p.get("prompt_to_repeat", ""))),),
    Kind.START_PHRASE: _phrase("starts_with"),
    Kind.END_PHRASE: _phrase("ends_with"),
    **{kind: _generic(kind) for kind in GENERIC_KINDS},
}


def form_of(kind: Kind, params: Mapping[str, Any]) -> tuple[Form, ...] | None:
    """The forms whose conjunction is the meaning of ``kind`` with ``params``, or None.

    Raises ``ValueError`` / ``TypeError`` on parameters that do not fit the kind.

    >>> form_of(Kind.NO_COMMA, {})[0].unit.value
    'characters'
    """
    build = _FORMS.get(kind)
    return build(params) if build is not None else None


def params_of(form: Form) -> dict[str, Any]:
    """The params of the generic kind that carries ``form``: every field, less unset (None) and empty ones.

    >>> params_of(Count(unit=Unit.EMOJI, relation=Relation.AT_MOST, n=0))
    {'unit': 'emoji', 'relation': 'at most', 'n': 0}
    """
    builtins: dict[str, Any] = msgspec.to_builtins(form)
    return {key: value for key, value in builtins.items() if value is not None and value != {}}


def _plain(f: Filter) -> bool:
    return f == Filter()


def _canonical_count(form: Count) -> tuple[Kind, dict[str, Any]] | None:
    if form.of is not None or form.per is not None:
        return None
    f, rel, n = form.filter, form.relation, form.n
    counted = {"relation": str(rel), "n": n}
    simple = {
        Unit.WORDS: Kind.WORD_COUNT,
        Unit.SENTENCES: Kind.SENTENCE_COUNT,
        Unit.CAPITAL_WORDS: Kind.CAPITAL_WORD_FREQUENCY,
    }
    if form.unit in simple and _plain(f):
        return simple[form.unit], counted
    if form.unit is Unit.LETTERS and f.text and _plain(msgspec.structs.replace(f, text=None)):
        return Kind.LETTER_FREQUENCY, {"letter": f.text.lower(), **counted}
    if form.unit is Unit.LETTERS and f.case in ("upper", "lower") and rel is Relation.AT_MOST and n == 0:
        return (Kind.ALL_LOWERCASE if f.case == "upper" else Kind.ALL_CAPITALS), {}
    if form.unit is Unit.KEYWORDS and f.text:
        if rel is Relation.AT_MOST and n == 0 or rel is Relation.LESS_THAN and n == 1:
            return Kind.FORBIDDEN_WORDS, {"words": [f.text]}
        if rel is Relation.AT_LEAST and n == 1 and not f.whole_word:
            return Kind.KEYWORDS_PRESENT, {"keywords": [f.text]}
        return Kind.KEYWORD_FREQUENCY, {"keyword": f.text, **counted}
    if form.unit in (Unit.CHARACTERS, Unit.PUNCTUATION) and f.chars and set(f.chars) <= set(_COMMAS) \
            and rel is Relation.AT_MOST and n == 0:
        return Kind.NO_COMMA, {}
    exact = {Unit.BULLETS: (Kind.BULLET_COUNT, Relation.EXACTLY),
             Unit.HIGHLIGHTS: (Kind.HIGHLIGHTED_SECTIONS, Relation.AT_LEAST),
             Unit.PLACEHOLDERS: (Kind.PLACEHOLDERS, Relation.AT_LEAST)}
    if form.unit in exact and _plain(f) and exact[form.unit][1] is rel:
        return exact[form.unit][0], {"n": n}
    return None


def canonical(form: Form) -> tuple[Kind, dict[str, Any]]:
    """The kind and params a form is reported as (a named kind where one means exactly it; a count of
    exactly 0 as at most 0, the same requirement).

    >>> canonical(Count(unit=Unit.LETTERS, filter=Filter(case="lower"), relation=Relation.AT_MOST, n=0))
    (<Kind.ALL_CAPITALS: 'all_capitals'>, {})
    """
    named: tuple[Kind, dict[str, Any]] | None = None
    if isinstance(form, Count) and form.relation is Relation.EXACTLY and form.n == 0 and form.of is None:
        form = msgspec.structs.replace(form, relation=Relation.AT_MOST)  # "zero exclamation points": none at all
    if isinstance(form, Count):
        named = _canonical_count(form)
    elif isinstance(form, Position) and form.unit is Unit.ANSWER and form.op in ("starts_with", "ends_with") \
            and form.word_class is None and form.plain:
        named = (Kind.START_PHRASE if form.op == "starts_with" else Kind.END_PHRASE), {"phrase": form.text}
    elif isinstance(form, Wrap) and form.unit is Unit.ANSWER and form.left == form.right == '"':
        named = Kind.QUOTATION, {}
    elif isinstance(form, Structure) and form.layout is Layout.RESPONSES and form.n == 2 \
            and form.marker == _RESPONSES_MARKER:
        named = Kind.TWO_RESPONSES, {}
    elif isinstance(form, Copy) and not form.change:
        named = Kind.REPEAT_PROMPT, {"prompt_to_repeat": form.text}
    if named is not None:
        return named
    return _KIND_OF_SHAPE[type(form)], params_of(form)
