"""Compile the form's whole-answer structures: tables, a list beside prose, changed copies.

Each is written by the layout, so it is reported ``controlled`` only where
the layout's literals make it hold whatever the model writes:

- ``lower_structures`` rewrites, before the named kinds are compiled, a copy
  whose text is known (verbatim, or with a stated change:
  ``form.copying.changed``) into the repeated request the layout writes
  first (``repeat_prompt`` with the changed text; a copy in a given case as
  the start phrase, whose literal keeps its case, so that a contrary case
  policy is a conflict instead of a silent fold), and a list with an item
  count or prose before / after it into the bullet layout
  (``bullet_count`` with ``intro`` / ``outro``), when no other constraint
  gives the answer its body. A changed copy whose change is unstated is
  left to the prompt.
- ``structure_layout`` gives a free body the table layout: the header row (the
  given headers as literals, else cells the model writes), the ``---``
  rule, ``n`` rows (default ``TABLE_ROWS``) of ``columns`` cells (default
  the headers' count, else ``TABLE_COLUMNS``), ``|`` between cells and at
  row ends, and prose before / after it when asked. The cells are single
  lines kept free of ``|`` (``Free.cell``). Or ``n`` responses (default
  two) between lines of their marker, a marker of marks only (``###``),
  which no token of a response may hold, so the answer splits into exactly
  ``n`` parts (as for ``two_responses``, that they differ is the model's).

Refused (``ConflictError``, the pipeline asks for confirmation): a table
or responses in a formal answer (JSON, a regex, fixed options); headers whose count is not
the columns asked for; header literals with more words than a word maximum
allows; a sentence maximum below what the table's prose parts need. A
table's least tokens above the token budget raise ``LimitExceeded``. A
table beside another body (bullets, sections, paragraphs, highlighted
sections) is left to the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import msgspec

from inference.decoder.compile.forms import BODY_KINDS, LIST_ITEMS, LISTS, form_of_constraint
from inference.decoder.token_controllers.charset import CharPolicy
from inference.decoder.token_controllers.count_tallies import Limits, count_text
from inference.decoder.token_controllers.layout import MIN_SEGMENT_TOKENS
from inference.decoder.token_controllers.sentences import sentence_floor
from inference.decoder.token_controllers.template import (
    Body,
    Free,
    Layout,
    Literal,
    Segment,
    build_layout,
)
from inference.decoder.vocab import VocabTables
from reasoning.constraints.form.copying import changed
from reasoning.constraints.form.model import Copy, Structure
from reasoning.constraints.form.model import Layout as FormLayout
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError, InvalidInput, LimitExceeded

__all__ = ["TABLE_COLUMNS", "TABLE_ROWS", "lower_structures", "structure_layout"]


#: Body rows and columns of a table the request asks for without saying how many.
TABLE_ROWS = 3
TABLE_COLUMNS = 2


def _lower_copy(c: Constraint, form: Copy) -> Constraint:
    text = changed(form)
    if not text:
        return c  # an unstated change (or nothing left to repeat): left to the prompt
    if form.case is not None:
        return msgspec.structs.replace(c, kind=Kind.START_PHRASE, params={"phrase": text})
    return msgspec.structs.replace(c, kind=Kind.REPEAT_PROMPT, params={"prompt_to_repeat": text})


def _shaped(form: Structure) -> bool:
    return form.n is not None or form.before is not None or form.after is not None or form.sub_items is not None


def lower_structures(constraints: Sequence[Constraint]) -> list[Constraint]:
    """``constraints`` with the copies and lists the layout writes rewritten (see the module doc)."""
    taken = {c.kind for c in constraints}
    # "No list" beside a list is no rival structure: the lowered list meets it and is refused (the tally family's step).
    structures = [c for c in constraints if isinstance(f := form_of_constraint(c), Structure)
                  and f.layout is not FormLayout.NO_LIST]
    out: list[Constraint] = []
    for c in constraints:
        form = form_of_constraint(c)
        if isinstance(form, Copy):
            out.append(_lower_copy(c, form))
            continue
        if isinstance(form, Structure) and form.layout in LISTS and _shaped(form) \
                and not taken & BODY_KINDS and len(structures) == 1:
            if form.n is not None and form.n < 1:
                raise InvalidInput(f"a list needs at least one item, not {form.n}")
            taken.add(Kind.BULLET_COUNT)
            params = {"n": form.n if form.n is not None else LIST_ITEMS,
                      "numbered": form.layout is FormLayout.NUMBERED_LIST,
                      "nested": form.layout is FormLayout.NESTED_LIST,
                      "sub_items": form.sub_items if form.layout is FormLayout.NESTED_LIST else None,
                      "intro": form.before, "outro": form.after}
            out.append(msgspec.structs.replace(c, kind=Kind.BULLET_COUNT, params=params))
            continue
        out.append(c)
    return out


def _conflict(detail: str, *constraints: Constraint) -> ConflictError:
    return ConflictError(detail, constraint_ids=list(dict.fromkeys(c.id for c in constraints)))


def structure_layout(
    constraints: Sequence[Constraint],
    layout: Layout,
    *,
    policy: CharPolicy,
    limits: Limits,
    tables: VocabTables,
    max_new_tokens: int | None,
    controlled: set[str],
    sources: dict[str, Constraint],
) -> Layout:
    """``layout`` with the body of the first hard ``structure(table)`` or
    ``structure(responses)`` (unchanged: none, or another body shapes the answer);
    ``sources`` gains a table's header literals (see the module doc for what is refused)."""
    found = [(c, f) for c in constraints if isinstance(f := form_of_constraint(c), Structure)
             and f.layout in (FormLayout.TABLE, FormLayout.RESPONSES)]
    if not found:
        return layout
    c, form = found[0]
    if layout.body.kind == "formal":
        formal = [q for q in constraints if q.kind in (Kind.JSON_FORMAT, Kind.REGEX_FORMAT, Kind.CONSTRAINED_RESPONSE)]
        raise _conflict(f"a formal answer (JSON, regex, options) cannot be {form.layout.value}", c, *formal)
    if layout.body.kind != "free" or layout.highlights:
        return layout
    if form.layout is FormLayout.RESPONSES:
        body = _responses(form)
        if body is None:
            return layout
        headers: tuple[str, ...] = ()
    else:
        body = _table(c, form, policy)
        headers = body.headers
    shaped = replace(layout, body=body)
    _fits(c, constraints, build_layout(shaped), limits, tables, max_new_tokens)
    for header in headers:
        sources[header] = c
    controlled.add(c.id)
    return shaped


def _responses(form: Structure) -> Body | None:
    """The body of ``n`` responses between markers (None: a marker with letters, digits or
    spaces, which the responses' own text could write)."""
    marker = (form.marker or "******").strip()
    n = form.n if form.n is not None else 2
    if n < 1:
        raise InvalidInput(f"structure: responses need at least one, not {n}")
    if not marker or any(ch.isalnum() or ch.isspace() for ch in marker):
        return None
    return Body(kind="responses", n=n, splitter=marker)


def _table(c: Constraint, form: Structure, policy: CharPolicy) -> Body:
    headers = tuple(CharPolicy(case=policy.case).transform(" ".join(h.split())) for h in form.headers)
    if any(not h or "|" in h for h in headers):
        raise InvalidInput(f"structure: a table header must be text without '|', got {list(form.headers)!r}")
    columns = form.columns if form.columns is not None else len(headers) or TABLE_COLUMNS
    if headers and columns != len(headers):
        raise _conflict(f"a table of {columns} columns cannot have the {len(headers)} headers {list(headers)}", c)
    rows = form.n if form.n is not None else TABLE_ROWS
    if rows < 1 or columns < 1:
        raise InvalidInput(f"structure: a table needs a row and a column, not {rows} x {columns}")
    return Body(kind="table", n=rows, columns=columns, headers=headers, intro=form.before, outro=form.after)


def _fits(
    c: Constraint,
    constraints: Sequence[Constraint],
    segments: Sequence[Segment],
    limits: Limits,
    tables: VocabTables,
    max_new_tokens: int | None,
) -> None:
    """Refuse a structure whose fixed text holds more words than a maximum, whose parts
    need more sentences than a maximum, or that needs more tokens than the budget."""
    literals = [s.text for s in segments if isinstance(s, Literal)]
    words = sum(count_text(text).units for text in literals)
    if limits.max_words is not None and words > limits.max_words:
        capped = [q for q in constraints if q.kind == Kind.WORD_COUNT]
        raise _conflict(f"the structure's fixed text holds {words} words, more than the {limits.max_words} allowed",
                        c, *capped)
    floor = sentence_floor(segments)
    if limits.max_sentences is not None and floor > limits.max_sentences:
        capped = [q for q in constraints if q.kind == Kind.SENTENCE_COUNT]
        raise _conflict(f"the structure's parts need {floor} sentences, more than the "
                        f"{limits.max_sentences} allowed", c, *capped)
    least = sum(len(tables.encode(text)) for text in literals)
    least += MIN_SEGMENT_TOKENS * sum(1 for s in segments if isinstance(s, Free))
    if max_new_tokens is not None and least > max_new_tokens:
        raise LimitExceeded(
            f"the structure needs at least {least} tokens, more than the {max_new_tokens} new tokens allowed",
            constraint_ids=[c.id],
        )
