"""One generic verifier per shape of the form, on complete and partial texts.

``check(form, text)`` decides a complete answer. ``check(form, text,
partial=True)`` is what the decoder asks at step boundaries: ``certain`` is
True only when no continuation can change the verdict. For counts that is
the monotone rule (a count of a monotone unit already above its maximum is
certainly violated; one that has reached its minimum is certainly met);
positions and wrappers are certain once the item they talk about is
complete and wrong; everything else stays uncertain until the end.
"""

from __future__ import annotations

import re
from itertools import pairwise

import msgspec

from reasoning.constraints import textstats
from reasoning.constraints.form import units
from reasoning.constraints.form.blocks import Block, list_block, table_block
from reasoning.constraints.form.classes import CLASS_NAMES, in_class
from reasoning.constraints.form.copying import changed
from reasoning.constraints.form.model import (
    Copy,
    Count,
    Form,
    Layout,
    Measure,
    Position,
    Spread,
    Structure,
    Unit,
    Wrap,
)
from reasoning.constraints.model import Relation

__all__ = ["Check", "check", "compare", "matches"]


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """A form's verdict on a text (see the module docstring for ``certain``)."""

    satisfied: bool
    detail: str
    certain: bool = True


def compare(value: float, relation: str, n: float) -> bool:
    """``value <relation> n`` for the relations of :class:`Relation`."""
    if relation == Relation.LESS_THAN:
        return value < n
    if relation == Relation.AT_MOST:
        return value <= n
    if relation == Relation.MORE_THAN:
        return value > n
    if relation == Relation.EXACTLY:
        return value == n
    return value >= n


_LOWER_BOUNDS = frozenset({Relation.AT_LEAST, Relation.MORE_THAN})


def _certain(count: int, relation: Relation, n: int, ok: bool) -> bool:
    """Whether a monotone count's verdict is final however the text grows."""
    if relation in _LOWER_BOUNDS:
        return ok
    if relation is Relation.EXACTLY:
        return count > n
    return not ok


def _label(form: Count) -> str:
    what = form.unit.value.replace("_", " ")
    f = form.filter
    if f.text:
        what = f"occurrences of {f.text!r}"
    elif f.chars:
        what = f"{what} among {f.chars!r}"
    for name in ("starts_with", "ends_with", "contains", "case", "script", "min_length", "max_length",
                 "same_as_previous", "length_class", "occurrence"):
        value = getattr(f, name)
        if value is not None:
            what += f" ({name.replace('_', ' ')} {value!r})"
    if f.palindrome:
        what += " (palindromes)"
    if f.negated:
        what += " (failing the tests)"
    return what


def _check_count(form: Count, text: str, partial: bool) -> Check:
    if form.of is not None:
        return _check_ratio(form, text, partial)
    if form.per is not None:
        return _check_per(form, text, partial)
    measure = form.measure
    value = units.count(measure, text, partial=partial)
    wanted = f"{form.relation} {form.n} required"
    if value < 0:
        return Check(satisfied=False, detail="an empty paragraph between dividers", certain=not partial)
    ok = compare(value, form.relation, form.n)
    detail = f"{value} {_label(form)} ({wanted})"
    if not partial:
        return Check(satisfied=ok, detail=detail)
    if form.unit is Unit.SENTENCES and value and not re.search(r"[.!?。！？][\"'”’)\]]*\s*$", text):
        value -= 1
        ok = compare(value, form.relation, form.n)
        detail = f"{value} {_label(form)} ({wanted})"
    if form.unit is Unit.BULLETS:
        complete = text[: text.rfind("\n") + 1] if "\n" in text else ""
        if compare(units.count(measure, complete), Relation.AT_MOST, form.n) or form.relation in _LOWER_BOUNDS:
            return Check(satisfied=ok, detail=detail, certain=ok and form.relation in _LOWER_BOUNDS)
        return Check(satisfied=False, detail=detail)
    certain = form.unit in units.MONOTONE_UNITS and _certain(value, form.relation, form.n, ok)
    return Check(satisfied=ok, detail=detail, certain=certain)


def _check_ratio(form: Count, text: str, partial: bool) -> Check:
    assert form.of is not None
    part = units.count(form.measure, text, partial=partial)
    whole = units.count(form.of, text, partial=partial)
    fraction = form.fraction if form.fraction is not None else 0.0
    if whole <= 0:
        return Check(satisfied=False, detail=f"no {form.of.unit.value} to take a share of", certain=not partial)
    share = part / whole
    ok = compare(share, form.relation, fraction)
    detail = f"{part} of {whole} {form.of.unit.value} ({share:.2f}; {form.relation} {fraction:g} required)"
    return Check(satisfied=ok, detail=detail, certain=not partial)


def _check_per(form: Count, text: str, partial: bool) -> Check:
    assert form.per is not None
    items = units.pieces(form.per, text)
    if partial and items and form.relation in _LOWER_BOUNDS | {Relation.EXACTLY}:
        complete = items[:-1]
    else:
        complete = items
    measure = form.measure
    for index, item in enumerate(items):
        value = units.count(measure, item, partial=partial and index == len(items) - 1)
        if compare(value, form.relation, form.n):
            continue
        final = not partial or item is not items[-1] or _certain(value, form.relation, form.n, False)
        if item in complete or final:
            where = f"{form.per.value[:-1]} {index + 1}"
            return Check(
                satisfied=False,
                detail=f"{where} has {value} {_label(form)} ({form.relation} {form.n} required)",
                certain=final,
            )
    if not items:
        return Check(satisfied=False, detail=f"no {form.per.value}", certain=not partial)
    return Check(satisfied=True, detail=f"every {form.per.value[:-1]}: {form.relation} {form.n}", certain=not partial)


def _first_word(piece: str) -> str:
    """IFEval's first word of a paragraph: leading quotes dropped, cut at punctuation, lowercased."""
    parts = piece.split()
    if not parts:
        return ""
    word = parts[0].strip().lstrip("'").lstrip('"')
    first = ""
    for letter in word:
        if letter in {".", ",", "?", "!", "'", '"'}:
            break
        first += letter.lower()
    return first


_MARKS_AFTER = " .!?\u3002\uff01\uff1f\"'\u201d\u2019)"  # what may follow the last word of a piece


def _bare(word: str) -> str:
    return word.strip(".,;:!?\"'“”‘’()[]{}*`").lower()


def matches(piece: str, op: str, wanted: str, unit: Unit) -> bool:
    """Whether one word / sentence / paragraph / line satisfies ``op wanted``, as the position
    verifier judges it (the decoder's position controllers ask the same question)."""
    return _matches(piece, op, wanted, unit)


def _matches(piece: str, op: str, wanted: str, unit: Unit) -> bool:
    """Whether one word / sentence / paragraph / line satisfies ``op wanted`` (case-insensitive).

    A one-word text is compared with the piece's first or last word (without
    punctuation, IFEval's rule for first words); anything else as a prefix
    or suffix of the piece's text.
    """
    if op == "contains":
        return _contains(piece, wanted)
    low = piece.strip().lower()
    target = wanted.strip().lower()
    one_word = len(target.split()) == 1 and re.search(r"\w", target) is not None
    if unit is Unit.WORDS:
        word = _bare(piece)
        if op == "is":
            return word == _bare(target)
        return word.startswith(target) if op == "starts_with" else word.endswith(target)
    if op == "starts_with":
        return _first_word(piece) == _bare(target) if one_word else low.startswith(target)
    if op == "ends_with":
        if one_word:
            words = low.split()
            return bool(words) and _bare(words[-1]) == _bare(target)
        # A sentence ends with its mark: a phrase without marks of its own is compared without them.
        return low.endswith(target) or target[-1:] not in _MARKS_AFTER and low.rstrip(_MARKS_AFTER).endswith(target)
    return low.rstrip(" .!?") == target.rstrip(" .!?")


_OP_WORDS = {"starts_with": ("starts with", "does not start with"),
             "ends_with": ("ends with", "does not end with"),
             "is": ("is", "is not"),
             "contains": ("contains", "does not contain")}


def _check_answer_position(form: Position, text: str, partial: bool) -> Check:
    wanted = form.text.strip().lower()
    if form.op == "starts_with":
        written = text.lstrip().lower()
        if written.startswith(wanted):
            return Check(satisfied=True, detail="starts with the phrase")
        if partial and wanted.startswith(written):
            return Check(satisfied=False, detail="phrase in progress", certain=False)
        return Check(satisfied=False, detail="does not start with the phrase")
    if form.op == "ends_with":
        ok = text.strip().strip('"').lower().endswith(wanted)
        return Check(satisfied=ok, detail="ends with the phrase" if ok else "does not end with the phrase", certain=not partial)
    ok = text.strip().lower() == wanted
    return Check(satisfied=ok, detail="is the text" if ok else "is not the text", certain=not partial)


def _contains(piece: str, wanted: str) -> bool:
    """Whether ``piece`` holds ``wanted`` as a whole word or phrase, without case (a Han text as a substring)."""
    target = " ".join(wanted.split()).lower()
    if not target:
        return False
    if units.has_han(target):
        return target in piece.lower()
    return re.search(r"(?<!\w)" + re.escape(target).replace(r"\ ", r"\s+") + r"(?!\w)", piece.lower()) is not None


def _bare_words(piece: str) -> list[str]:
    """The piece's words without their surrounding punctuation (a lone mark is no word); Han text in the
    words the segmenter cuts (as a length said of Chinese words counts them), not one word per character."""
    parts = units._segmented_words(piece) if units.has_han(piece) else piece.split()
    return [w for w in (_bare(part) for part in parts) if re.search(r"\w", w)]


def _nth(items: list[str], k: int) -> str | None:
    """The k-th item (1-based; negative from the end), None when there is none."""
    index = k - 1 if k > 0 else len(items) + k
    return items[index] if 0 <= index < len(items) else None


def _satisfies(piece: str, form: Position) -> bool:
    """Whether one piece meets the position's predicate: its text, the class of its first / last item,
    the text among its words (``contains``), or its ``word``-th word's."""
    if form.word is not None:
        word = _nth(_bare_words(piece), form.word)
        return word is not None and _matches(word, form.op, form.text, Unit.WORDS)
    if form.op == "contains":
        return _contains(piece, form.text)
    if form.word_class is not None:
        return in_class(piece, form.op, form.word_class)
    return _matches(piece, form.op, form.text, form.unit)


def _echoes(piece: str, previous: str | None, form: Position) -> bool:
    """Whether a piece repeats the word ``same_as`` names: its own first word as its last (a piece of
    two words at least), or the previous piece's last word as its first (the first piece is free)."""
    found = _bare_words(piece)
    if form.same_as == "first_word":
        return len(found) >= 2 and found[0] == found[-1]
    if previous is None:
        return True
    before = _bare_words(previous)
    return bool(found) and bool(before) and found[0] == before[-1]


def _check_echo(form: Position, text: str, partial: bool) -> Check:
    """``same_as``: every piece (``k = 0``) or the k-th repeats the word named; on a partial text
    the open piece is judged only once its first word is written (``previous_last_word``)."""
    items = units.pieces(form.unit, text)
    name = form.unit.value[:-1]
    what = "its own first word" if form.same_as == "first_word" else "the last word of the one before"
    for index, item in enumerate(items):
        if form.k and index != (form.k - 1 if form.k > 0 else len(items) + form.k):
            continue
        last = index == len(items) - 1
        if partial and last and (form.same_as == "first_word" or len(item.split()) < 2):
            continue
        if not _echoes(item, items[index - 1] if index else None, form):
            return Check(satisfied=False, detail=f"{name} {index + 1} does not repeat {what}",
                         certain=not partial or not last or form.same_as == "previous_last_word")
    if not items:
        return Check(satisfied=False, detail=f"no {form.unit.value}", certain=not partial)
    return Check(satisfied=True, detail=f"each {name} repeats {what}", certain=not partial)


def _what(form: Position) -> str:
    if form.word is not None:
        return f"{form.text!r} as word {form.word}"
    return CLASS_NAMES[form.word_class] if form.word_class is not None else repr(form.text)


def _opens_with_word(piece: str, form: Position) -> bool:
    """A one-word opening followed by any mark ("Note: ...", "Today—"), which IFEval's first word keeps."""
    parts = piece.split()
    return form.word_class is None and form.op == "starts_with" and bool(parts) and len(form.text.split()) == 1 \
        and _bare(parts[0]) == _bare(form.text) != ""


def _check_every(form: Position, text: str, partial: bool) -> Check:
    """``k = 0``: every piece satisfies the predicate; an answer without pieces fails.

    On a partial text the last piece may still grow, so only a complete
    piece that fails (or, for ``starts_with``, any piece long enough to
    have its opening written) is a certain violation.
    """
    # Every word is every word the form counts ("don't" is two, a dash between spaces none), as the
    # word counts and the decoder's cap on words that open otherwise split them.
    items = units.words(text) if form.unit is Unit.WORDS else units.pieces(form.unit, text)
    name = form.unit.value[:-1] if form.unit is not Unit.BULLETS else "list item"
    for index, item in enumerate(items):
        last = index == len(items) - 1
        if partial and last and form.word_class is not None:
            continue  # the open piece's first or last item may still be in progress
        if _satisfies(item, form) or _opens_with_word(item, form):
            continue
        if partial and last:
            opening = item.strip().lower()
            target = form.text.strip().lower()
            if form.op != "starts_with" or target.startswith(opening) or opening.startswith(target):
                continue
        return Check(satisfied=False, detail=f"{name} {index + 1} {_OP_WORDS[form.op][1]} {_what(form)}",
                     certain=not partial or not last or form.op == "starts_with")
    if not items:
        return Check(satisfied=False, detail=f"no {name}s", certain=not partial)
    return Check(satisfied=True, detail=f"every {name} {_OP_WORDS[form.op][0]} {_what(form)}", certain=not partial)


def _check_position(form: Position, text: str, partial: bool) -> Check:
    if form.same_as is not None:
        return _check_echo(form, text, partial)
    if form.unit is Unit.ANSWER and (form.word is not None or form.op == "contains"):
        ok = _satisfies(text, form)
        return Check(satisfied=ok, detail=f"the answer {_OP_WORDS[form.op][0 if ok else 1]} {_what(form)}",
                     certain=not partial or (ok and form.op == "contains"))
    if form.unit is Unit.ANSWER and form.word_class is not None:
        ok = in_class(text, form.op, form.word_class)
        return Check(satisfied=ok, detail=f"the answer {_OP_WORDS[form.op][0 if ok else 1]} {_what(form)}",
                     certain=not partial)
    if form.unit is Unit.ANSWER:
        return _check_answer_position(form, text, partial)
    if form.k == 0:
        return _check_every(form, text, partial)
    if form.unit is Unit.PARAGRAPHS:
        raw = textstats.blank_line_paragraphs(text)
        present = [p for p in raw if p.strip()]
        if form.k > 0:
            piece = raw[form.k - 1] if form.k <= len(raw) and form.k <= len(present) else ""
        else:  # counted from the end of the paragraphs that hold text
            piece = present[form.k] if len(present) >= -form.k else ""
        later = form.k > 0 and len(raw) > form.k
    else:
        items = units.pieces(form.unit, text)
        piece = _nth(items, form.k) or ""
        later = form.k > 0 and len(items) > form.k
    name = f"{form.unit.value[:-1]} {form.k if form.k > 0 else 'last' if form.k == -1 else form.k}"
    if not piece.strip():
        return Check(satisfied=False, detail=f"{name} missing", certain=not partial)
    ok = _satisfies(piece, form)
    detail = f"{name} {_OP_WORDS[form.op][0 if ok else 1]} {_what(form)}"
    return Check(satisfied=ok, detail=detail, certain=not partial or (later and form.op != "ends_with") or (later and not ok))


def _wrapped(piece: str, left: str, right: str) -> bool:
    stripped = piece.strip()
    return len(stripped) >= max(2, len(left) + len(right)) and stripped.startswith(left) and stripped.endswith(right)


def _check_wrap(form: Wrap, text: str, partial: bool) -> Check:
    what = f"{form.left}...{form.right}"
    if form.unit is Unit.ANSWER:
        stripped = text.strip()
        opening = stripped[: len(form.left)]
        if partial and stripped and not form.left.startswith(opening):
            return Check(satisfied=False, detail=f"does not open with {form.left!r}")
        ok = _wrapped(stripped, form.left, form.right)
        return Check(satisfied=ok, detail=f"{'wrapped' if ok else 'not wrapped'} in {what}", certain=not partial)
    items = units.pieces(form.unit, text)
    for index, item in enumerate(items):
        last = index == len(items) - 1
        if partial and last:
            if not form.left.startswith(item[: len(form.left)]) and not item.startswith(form.left):
                return Check(satisfied=False, detail=f"{form.unit.value[:-1]} {index + 1} does not open with {form.left!r}")
            continue
        if not _wrapped(item, form.left, form.right):
            return Check(satisfied=False, detail=f"{form.unit.value[:-1]} {index + 1} not wrapped in {what}")
    if not items:
        return Check(satisfied=False, detail=f"no {form.unit.value}", certain=not partial)
    return Check(satisfied=True, detail=f"every {form.unit.value[:-1]} wrapped in {what}", certain=not partial)


_NUMBERED = re.compile(r"^\s*\d+[.)]\s+\S", re.MULTILINE)


def _list_lines(text: str) -> int:
    return textstats.count_bullets(text) + len(_NUMBERED.findall(text))


def _two_responses(text: str, marker: str, n: int) -> tuple[bool, str]:
    pieces = text.split(marker)
    valid: list[str] = []
    for index, piece in enumerate(pieces):
        if not piece.strip():
            if index not in (0, len(pieces) - 1):
                return False, f"empty response between {marker} separators"
        else:
            valid.append(piece.strip())
    ok = len(valid) == n and len(set(valid)) == n
    return ok, f"{len(valid)} responses separated by {marker}"


def _beside(form: Structure, block: Block) -> str | None:
    """What the prose around a list or table lacks (None: what ``before`` / ``after`` ask is there)."""
    for where, wanted, prose in (("before", form.before, block.before), ("after", form.after, block.after)):
        if wanted is None:
            continue
        if not re.search(r"[^\W\d_]", prose):
            return f"no prose {where} it"
        if wanted == "sentence" and textstats.count_sentences(prose) != 1:
            return f"{textstats.count_sentences(prose)} sentences {where} it (one required)"
    return None


def _check_table(form: Structure, text: str) -> tuple[bool, str]:
    table = table_block(text)
    if table is None or not table.rows:
        return False, "has no table"
    if form.columns is not None and {len(table.header), *(len(row) for row in table.rows)} != {form.columns}:
        return False, f"a table of {len(table.header)} columns ({form.columns} required)"
    if form.n is not None and len(table.rows) != form.n:
        return False, f"a table of {len(table.rows)} rows ({form.n} required)"
    if form.headers:
        wanted = [h.strip().lower() for h in form.headers]
        written = [h.strip("*_` ").lower() for h in table.header]
        if written != wanted:
            return False, f"table headers {list(table.header)} ({list(form.headers)} required)"
    lacking = _beside(form, table.block)
    if lacking is not None:
        return False, f"a table with {lacking}"
    return True, "has table"


def _check_list(form: Structure, text: str) -> tuple[bool, str]:
    layout = form.layout
    if layout is Layout.LIST:
        ok = _list_lines(text) > 0
    elif layout is Layout.NUMBERED_LIST:
        ok = _NUMBERED.search(text) is not None
    else:
        nested = units.count(Measure(unit=Unit.NESTED_BULLETS), text)
        ok = nested > 0 and _list_lines(text) > nested
    name = layout.value.replace("_", " ")
    if not ok:
        return False, f"has no {name}"
    block = list_block(text)
    if form.n is None and form.before is None and form.after is None and form.sub_items is None:
        return True, f"has {name}"
    if block is None:
        return False, f"has no {name}"
    if form.n is not None and block.items != form.n:
        return False, f"a {name} of {block.items} items ({form.n} required)"
    if form.sub_items is not None and form.sub_at_least and (
            not block.sub_items or min(block.sub_items) < form.sub_items):
        return False, (f"a {name} whose items have {list(block.sub_items)} sub-items "
                       f"(at least {form.sub_items} each required)")
    if form.sub_items is not None and not form.sub_at_least and set(block.sub_items) != {form.sub_items}:
        return False, f"a {name} whose items have {list(block.sub_items)} sub-items ({form.sub_items} each required)"
    lacking = _beside(form, block)
    if lacking is not None:
        return False, f"a {name} with {lacking}"
    return True, f"has {name}"


def _check_structure(form: Structure, text: str, partial: bool) -> Check:
    layout = form.layout
    if layout is Layout.NO_LIST:
        complete = text[: text.rfind("\n") + 1] if partial else text
        listed = _list_lines(complete if partial else text)
        if listed:
            return Check(satisfied=False, detail=f"{listed} list lines")
        return Check(satisfied=True, detail="no list", certain=not partial)
    if layout is Layout.RESPONSES:
        ok, detail = _two_responses(text, form.marker or "******", form.n or 2)
        return Check(satisfied=ok, detail=detail, certain=not partial)
    ok, detail = _check_table(form, text) if layout is Layout.TABLE else _check_list(form, text)
    plain = form.n is None and form.columns is None and not form.headers and form.before is None \
        and form.after is None and form.sub_items is None
    return Check(satisfied=ok, detail=detail, certain=(ok and plain) or not partial)


def _check_copy(form: Copy, text: str, partial: bool) -> Check:
    wanted = changed(form)
    if wanted is not None and form.case is None:
        return _check_answer_position(Position(unit=Unit.ANSWER, op="starts_with", text=wanted), text.strip(), partial)
    if wanted is not None:
        # A copy in a given case: the letters' case is part of the copy.
        written = " ".join(text.split())
        target = " ".join(wanted.split())
        if written.startswith(target):
            return Check(satisfied=True, detail=f"starts with the request in {form.case} case")
        if partial and target.startswith(written):
            return Check(satisfied=False, detail="repetition in progress", certain=False)
        return Check(satisfied=False, detail=f"does not start with the request in {form.case} case")
    source = [w.lower() for w in units.words(form.text.strip())]
    written_words = [w.lower() for w in units.words(text)][: len(source) + 3]
    if partial and len(written_words) < len(source):
        return Check(satisfied=False, detail="repetition in progress", certain=False)
    shared = sum(1 for w in set(source) if w in written_words) / max(1, len(set(source)))
    verbatim = text.strip().lower().startswith(form.text.strip().lower())
    ok = shared >= 0.6 and not verbatim
    detail = "verbatim copy, a change was asked" if verbatim else f"{shared:.0%} of the request's words repeated"
    return Check(satisfied=ok, detail=detail, certain=not partial)


def _check_spread(form: Spread, text: str, partial: bool) -> Check:
    """Balanced lengths: adding a piece never narrows the spread, so a spread among complete pieces
    that is already too wide is certain; an answer of fewer than two pieces is balanced."""
    items = units.pieces(form.per, text)
    measure = Measure(unit=form.unit)
    lengths = [units.count(measure, item) for item in items]
    name, what = form.per.value, form.unit.value

    def verdict(values: list[int]) -> str | None:
        if len(values) < 2:
            return None
        if form.step is not None:
            for index, (before, after) in enumerate(pairwise(values), start=2):
                if after - before != form.step:
                    return (f"{name[:-1]} {index} has {after} {what}, the one before {before} "
                            f"(each exactly {form.step} more required)")
            return None
        low, high = min(values), max(values)
        if form.max_diff is not None and high - low > form.max_diff:
            return f"the longest of the {name} has {high} {what}, the shortest {low} (at most {form.max_diff} apart)"
        if form.max_ratio is not None and high > form.max_ratio * max(low, 1):
            return f"the longest of the {name} has {high} {what}, the shortest {low} (at most {form.max_ratio:g} times)"
        return None

    if partial:
        settled = verdict(lengths[:-1])
        if settled is not None:
            return Check(satisfied=False, detail=settled)
    failed = verdict(lengths)
    if failed is not None:
        return Check(satisfied=False, detail=failed, certain=not partial)
    return Check(satisfied=True, detail=f"{len(items)} {name} of {min(lengths, default=0)} to "
                 f"{max(lengths, default=0)} {what}", certain=not partial)


def check(form: Form, text: str, *, partial: bool = False) -> Check:
    """The verdict of ``form`` on ``text`` (see the module docstring).

    >>> from reasoning.constraints.form.model import Count, Filter, Unit
    >>> from reasoning.constraints.model import Relation
    >>> check(Count(unit=Unit.PUNCTUATION, filter=Filter(chars="!"), relation=Relation.AT_MOST, n=0), "Hi!").satisfied
    False
    """
    if isinstance(form, Count):
        return _check_count(form, text, partial)
    if isinstance(form, Position):
        return _check_position(form, text, partial)
    if isinstance(form, Wrap):
        return _check_wrap(form, text, partial)
    if isinstance(form, Structure):
        return _check_structure(form, text, partial)
    if isinstance(form, Spread):
        return _check_spread(form, text, partial)
    return _check_copy(form, text, partial)
