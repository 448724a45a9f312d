"""The answer's layout: the body the named kinds give it (JSON, a regex, options, sections,
paragraphs, bullets, two responses), its literals (a repeated request, a start or end phrase, a
title, a postscript, highlights), an answer-level wrapper and the lead every list item opens with.

``named_layout`` returns the layout and, per literal text, the constraint that requires it (the
checks name it in a refusal); ``form_layout`` adds the form's wrapper and item lead;
``form_paragraph_words`` reports controlled the k-th paragraph's first word a lowered paragraph
count's body writes. Tables and responses are ``structure.structure_layout``'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from inference.decoder.compile.context import conflict
from inference.decoder.compile.forms import (
    case_of,
    form_of_constraint,
    forms_of,
    item_leads,
    opened_paragraph,
)
from inference.decoder.token_controllers.charset import CharPolicy
from inference.decoder.token_controllers.placing import STRIPPED
from inference.decoder.token_controllers.template import Body, Layout
from reasoning.constraints.form.model import Position, Unit, Wrap
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError, InvalidInput

__all__ = ["BODY_PRIORITY", "form_layout", "form_paragraph_words", "named_layout"]


BODY_PRIORITY = (
    Kind.JSON_FORMAT,
    Kind.REGEX_FORMAT,
    Kind.CONSTRAINED_RESPONSE,
    Kind.SECTIONS,
    Kind.PARAGRAPH_COUNT,
    Kind.NTH_PARAGRAPH_FIRST_WORD,
    Kind.BULLET_COUNT,
    Kind.TWO_RESPONSES,
)


_FORMAL = (Kind.JSON_FORMAT, Kind.REGEX_FORMAT, Kind.CONSTRAINED_RESPONSE)


#: The JSON answer without a schema: an object of at least one key (``{}`` answers nothing) whose
#: values nest objects at most two levels deeper. Unbounded nesting let the model open an object
#: per key until the budget ran out, and no closing path fitted what was left.
_SCALAR = {"type": ["string", "number", "boolean", "null"]}


_LEAF = {"anyOf": [_SCALAR, {"type": "array", "items": _SCALAR}]}


_RECORD = {"type": "object", "additionalProperties": _LEAF}


_ANY_OBJECT = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": {"anyOf": [_LEAF, _RECORD, {"type": "array", "items": _RECORD}]},
}


_KEY_VALUE_CHARS = 48  # the longest string value of a key the request names

# Literal text whose checker ignores case may be case-folded to obey a case policy.
_CASE_FREE_LITERALS = (Kind.POSTSCRIPT, Kind.END_PHRASE, Kind.REPEAT_PROMPT, Kind.NTH_PARAGRAPH_FIRST_WORD)


def named_layout(
    constraints: list[Constraint],
    prompt: str,
    policy: CharPolicy,
    controlled: set[str],
    uncontrolled: set[str],
) -> tuple[Layout, dict[str, Constraint]]:
    """The layout and, per literal text, the constraint that requires it."""
    by_kind: dict[Kind, Constraint] = {}
    for c in constraints:
        by_kind.setdefault(c.kind, c)
    sources: dict[str, Constraint] = {}

    def literal(c: Constraint, text: str) -> str:
        if c.kind in _CASE_FREE_LITERALS:
            folded = CharPolicy(case=policy.case).transform(text)
            text = folded
        sources[text] = c
        return text

    body_kind = next((k for k in BODY_PRIORITY if k in by_kind), None)
    body = Body()
    if body_kind is not None:
        c = by_kind[body_kind]
        body = _body(c, literal)
        controlled.add(c.id)
        for rival in BODY_PRIORITY:
            if rival in by_kind and rival != body_kind:
                if body_kind in _FORMAL or rival in _FORMAL:
                    raise conflict("a formal answer (JSON, regex, options) cannot have another structure", c, by_kind[rival])
                uncontrolled.add(by_kind[rival].id)
    layout = Layout(body=body)
    formal = body.kind == "formal"
    for kind in (Kind.QUOTATION, Kind.TITLE, Kind.POSTSCRIPT, Kind.END_PHRASE, Kind.HIGHLIGHTED_SECTIONS):
        if kind in by_kind and formal:
            raise conflict("a formal answer (JSON, regex, options) cannot carry extra text", by_kind[body_kind], by_kind[kind])  # type: ignore[index]
    if Kind.QUOTATION in by_kind:
        layout = replace(layout, quotation=True)
        controlled.add(by_kind[Kind.QUOTATION].id)
    if Kind.TITLE in by_kind:
        layout = replace(layout, title=True)
        controlled.add(by_kind[Kind.TITLE].id)
    prefix_c = by_kind.get(Kind.REPEAT_PROMPT) or by_kind.get(Kind.START_PHRASE)
    if prefix_c is not None:
        key = "prompt_to_repeat" if prefix_c.kind == Kind.REPEAT_PROMPT else "phrase"
        text = str(prefix_c.params.get(key) or (prompt if prefix_c.kind == Kind.REPEAT_PROMPT else "")).strip()
        if not text:
            raise InvalidInput(f"{prefix_c.kind.value} needs a non-empty '{key}'")
        other = by_kind.get(Kind.START_PHRASE) if prefix_c.kind == Kind.REPEAT_PROMPT else None
        if other is not None and not text.lower().startswith(str(other.params.get("phrase", "")).strip().lower()):
            raise conflict("the answer cannot start with both texts", prefix_c, other)
        if formal:
            raise conflict("a formal answer cannot start with other text", by_kind[body_kind], prefix_c)  # type: ignore[index]
        layout = replace(layout, prefix=literal(prefix_c, text))
        controlled.add(prefix_c.id)
        if other is not None:
            controlled.add(other.id)
    if Kind.POSTSCRIPT in by_kind:
        c = by_kind[Kind.POSTSCRIPT]
        layout = replace(layout, postscript=literal(c, str(c.params.get("marker") or "P.S.").strip()))
        controlled.add(c.id)
    if Kind.END_PHRASE in by_kind:
        c = by_kind[Kind.END_PHRASE]
        phrase = str(c.params.get("phrase", "")).strip()
        if not phrase:
            raise InvalidInput("end_phrase needs a non-empty 'phrase'")
        layout = replace(layout, end_phrase=literal(c, phrase))
        controlled.add(c.id)
    if Kind.HIGHLIGHTED_SECTIONS in by_kind:
        c = by_kind[Kind.HIGHLIGHTED_SECTIONS]
        n = int(c.params.get("n", 1))
        slots = {"free": n, "bullets": body.n, "sections": body.n, "paragraphs": body.n,
                 "blank_paragraphs": body.n, "two": 2}.get(body.kind, 0)
        if n <= slots:
            layout = replace(layout, highlights=n)
            controlled.add(c.id)
        else:
            uncontrolled.add(c.id)
    return layout, sources


def _object_of(keys: Sequence[str]) -> dict[str, Any]:
    """The schema of an object holding ``keys``, in that order, each a value of any type whose
    strings stay short (a required key left unwritten would keep the budget's landing from
    closing the object)."""
    return {"type": "object", "properties": {k: {"maxLength": _KEY_VALUE_CHARS} for k in keys}, "required": list(keys)}


def _body(c: Constraint, literal: Any) -> Body:
    p = c.params
    try:
        if c.kind == Kind.JSON_FORMAT:
            from llguidance import LLMatcher

            # An object that holds the keys asked for, or at least one key (never an empty ``{}``).
            keys = [str(k) for k in p.get("keys", ()) if str(k)]
            schema = p.get("schema") or (_object_of(keys) if keys else _ANY_OBJECT)
            grammar = LLMatcher.grammar_from_json_schema(
                json.dumps(schema), defaults={"whitespace_flexible": False}
            )
            return Body(kind="formal", grammar=grammar)
        if c.kind == Kind.REGEX_FORMAT:
            from llguidance import LLMatcher

            pattern = str(p["pattern"])
            re.compile(pattern)
            return Body(kind="formal", grammar=LLMatcher.grammar_from_regex(pattern))
        if c.kind == Kind.CONSTRAINED_RESPONSE:
            from llguidance import LLMatcher

            options = [str(o) for o in p["options"] if str(o)]
            if not options:
                raise InvalidInput("constrained_response needs at least one option")
            for option in options:
                literal(c, option)
            pattern = "|".join(re.escape(o) for o in options)
            return Body(kind="formal", grammar=LLMatcher.grammar_from_regex(f"({pattern})"))
        if c.kind == Kind.SECTIONS:
            splitter = str(p.get("splitter") or "Section").strip()
            literal(c, splitter)
            return Body(kind="sections", n=int(p["n"]), splitter=splitter)
        if c.kind == Kind.PARAGRAPH_COUNT:
            return Body(kind="paragraphs", n=int(p["n"]))
        if c.kind == Kind.NTH_PARAGRAPH_FIRST_WORD and "first_word" not in p:
            return Body(kind="blank_paragraphs", n=int(p["n"]))  # a paragraph count (compile.lowering)
        if c.kind == Kind.NTH_PARAGRAPH_FIRST_WORD:
            n, nth = int(p["n"]), int(p["nth"])
            if not 1 <= nth <= n:
                raise InvalidInput(f"nth_paragraph_first_word: nth={nth} is not within 1..{n}")
            word = literal(c, str(p["first_word"]).strip().capitalize())
            return Body(kind="blank_paragraphs", n=n, nth=nth, first_word=word)
        if c.kind == Kind.BULLET_COUNT:
            # numbered / nested / intro / outro: a list structure of the form lowered to bullets
            # (compile.lowering.lower_forms, compile.structure.lower_structures)
            return Body(kind="bullets", n=int(p["n"]), numbered=bool(p.get("numbered")), nested=bool(p.get("nested")),
                        sub_items=int(p.get("sub_items") or 0), item_lead=literal(c, str(p["lead"])) if p.get("lead") else "",
                        intro=p.get("intro"), outro=p.get("outro"))
        return Body(kind="two")
    except (KeyError, ValueError, TypeError, re.error) as exc:
        raise InvalidInput(f"{c.kind.value}: invalid parameters {p!r}: {exc}") from exc


def form_layout(constraints: Sequence[Constraint], layout: Layout, controlled: set[str]) -> Layout:
    """``layout`` with an answer-level wrapper's delimiters (first and last), and the text every
    list item opens with on the items of a bulleted body (a literal after each marker).

    Raises:
        ConflictError: an answer wrapped in two ways.
    """
    leads = item_leads(constraints)
    if leads and layout.body.kind == "bullets":
        lead = layout.body.item_lead or max((text for _, text in leads), key=len)
        if all(lead.lower().startswith(text.lower()) for _, text in leads):
            fold = {"lower": str.lower, "upper": str.upper}.get(case_of(constraints) or "", str)
            layout = replace(layout, body=replace(layout.body, item_lead=fold(lead)))
            controlled.update(c.id for c, _ in leads)
    for c in constraints:
        form = form_of_constraint(c)
        if not isinstance(form, Wrap) or form.unit is not Unit.ANSWER or not form.left or not form.right:
            continue
        if layout.body.kind == "formal":
            continue
        quoted = next((q for q in constraints if q.kind == Kind.QUOTATION), None)
        current = ('"', '"') if quoted is not None else layout.wrap
        if current is not None:
            if current != (form.left, form.right):
                rivals = [q.id for q in constraints if q.kind == Kind.QUOTATION or form_of_constraint(q) is not None
                          and q.id in controlled and q.kind == Kind.WRAP]
                raise ConflictError("the answer cannot be wrapped in two ways", constraint_ids=[c.id, *rivals])
            controlled.add(c.id)
            continue
        if layout.end_phrase and not layout.end_phrase.endswith(form.right):
            continue
        layout = replace(layout, wrap=(form.left, form.right))
        controlled.add(c.id)
    return layout


def form_paragraph_words(constraints: Sequence[Constraint], layout: Layout, controlled: set[str]) -> None:
    """Report controlled the k-th paragraph's first word that a lowered paragraph count's body
    writes (``_lower_paragraphs``): the same word as the body's literal, in paragraph ``nth``
    (a word the paragraph must hold is written as its first; ``forms.opened_paragraph``)."""
    body = layout.body
    if body.kind != "blank_paragraphs" or not body.first_word or body.nth is None:
        return
    for c in constraints:
        forms = forms_of(c)  # a containment too, which form_of_constraint leaves to the verifier
        form = forms[0] if len(forms) == 1 else None
        if isinstance(form, Position) and opened_paragraph(form, body.n) == body.nth \
                and form.text.strip().strip(STRIPPED).lower() == body.first_word.lower():
            controlled.add(c.id)
