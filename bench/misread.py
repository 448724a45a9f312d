"""Whether a reading contradicts the judge's parameters: the ``misread`` figure of the held-out benches.

A recognised instruction is *misread* when the constraints read from its span
say something other than what its judge checks. A misreading steers the
answer away from the request while its verdict says "satisfied", so it is
counted apart from instructions that are missed or reported unrecognised.

The judge's side is read from the set itself, never from the product: the
judge id's words (``keyword_in_sentence``: keywords, sentences) and its
``args`` (``{"keyword": "eat", "k": 6}``). The reading's side is the
constraints' kinds and params, through the constraint form
(:func:`reasoning.constraints.form.form_of`, the product's public meaning of a
constraint). A reading contradicts the judge when any of these holds:

- *unit*: the judge id names units of the answer (words, sentences,
  paragraphs, lines or list items, characters, syllables) and no constraint
  of the reading counts, places, wraps or holds per piece of any of them
  ("words that contain only three types of vowels" judged on vowels, read as
  a word count);
- *position*: an integer argument naming a position (``k``, ``*position*``,
  ``*index*``, ``nth``; "last" for -1) is carried by no constraint's ``k`` /
  ``nth`` / ``word`` ("the keyword eat in the 6-th sentence" read as the
  keyword alone);
- *number*: another number of the args (a count, a bound, a depth, a share)
  is carried by no constraint (within one for bounds, a quarter for
  approximate counts of 8 and more, a share as a fraction or a percentage);
- *text*: a text argument (a keyword, a mark, a marker, a separator, a letter, a
  sentence type, which the form writes as its end mark;
  for a list, any of its items; for a template line with ``{}`` slots, each
  of its literal pieces) appears in no constraint's params ("instead of
  bullet points use !?!?" read as a plain list);
- *bound*: the judge bounds a count (``relation``, ``n``) and the readings of
  that count, taken together, allow values the judge's bound does not
  ("exactly 3" read as "at least 3").

Arguments a judge uses only internally (``regex``, ``type``, ``language``,
pairs and nested mappings) are not compared.

``python -m bench.misread [--sets heldout,heldout3,...]`` extracts every
held-out set in-process (no server, no model; the ``--extraction-only`` report
of each set's bench) and prints, per set, its misread instructions (the
clause, the reading, why) to stderr, and as the last stdout line one JSON
object: per set ``misread_share`` and the extraction counts, and
``max_misread_share`` over the sets.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from reasoning.constraints.extract.accounting import numbers_in, strings_in
from reasoning.constraints.form import Copy, Count, Position, Spread, Structure, Wrap, form_of
from reasoning.constraints.model import Kind

__all__ = ["SETS", "main", "misread"]

#: Judge-id words naming a unit of the answer -> the class of units compared.
_JUDGE_UNITS: Mapping[str, str] = {
    "word": "words", "words": "words", "keyword": "words", "keywords": "words", "caps": "words",
    "pronoun": "words", "conjunction": "words", "palindromes": "words", "hashtags": "words", "initial": "words",
    "sentence": "sentences", "sentences": "sentences", "question": "sentences",
    "paragraph": "paragraphs", "paragraphs": "paragraphs", "section": "paragraphs", "sections": "paragraphs",
    "line": "lines", "lines": "lines", "item": "lines", "items": "lines", "bullet": "lines", "bullets": "lines",
    "list": "lines", "table": "lines", "rows": "lines", "columns": "lines", "heading": "lines",
    "char": "chars", "chars": "chars", "character": "chars", "characters": "chars", "letter": "chars",
    "letters": "chars", "emoji": "chars", "punctuation": "chars", "marks": "chars", "bracket": "chars",
    "vowel": "chars", "vowels": "chars", "consonant": "chars", "consonants": "chars", "han": "chars",
    "latin": "chars", "digit": "chars", "digits": "chars", "numbers": "chars",
    "syllable": "syllables", "syllables": "syllables",
}
#: The form's units -> the same classes.
_FORM_UNITS: Mapping[str, str] = {
    "words": "words", "unique_words": "words", "keywords": "words", "capital_words": "words",
    "hashtags": "words", "sentences": "sentences", "paragraphs": "paragraphs", "sections": "paragraphs",
    "lines": "lines", "bullets": "lines", "nested_bullets": "lines", "headings": "lines",
    "characters": "chars", "letters": "chars", "punctuation": "chars", "digits": "chars", "numbers": "chars",
    "emoji": "chars", "spans": "chars", "highlights": "chars", "placeholders": "chars",
}
_LAYOUT_UNITS: Mapping[str, frozenset[str]] = {
    "list": frozenset({"lines"}), "nested_list": frozenset({"lines"}), "numbered_list": frozenset({"lines"}),
    "table": frozenset({"lines"}), "no_list": frozenset({"lines"}), "responses": frozenset({"paragraphs"}),
}
#: Kinds whose reading is the whole answer's text or shape: any unit is theirs.
_ANY_UNIT = frozenset({Kind.REPEAT_PROMPT, Kind.COPY, Kind.JSON_FORMAT, Kind.REGEX_FORMAT,
                       Kind.CONSTRAINED_RESPONSE, Kind.RESPONSE_LANGUAGE})
#: A sentence type's name by the mark that ends it (the judges name types, the form marks).
_TYPE_NAMES: Mapping[str, str] = {"?": "question", ".": "statement", "!": "exclamation"}
_INTERNAL = frozenset({"relation", "type", "regex", "language", "pairs", "counts"})
_POSITION = re.compile(r"^(?:k|nth|.*position.*|.*index.*)$")
_NAMED_POSITIONS = {"last": -1, "first": 1, "every": 0, "each": 0, "all": 0}
_BOUNDS = {"at least": (0, None), "more than": (1, None), "at most": (None, 0), "less than": (None, -1),
           "exactly": (0, 0)}


class _Reading:
    """What the constraints read from one instruction's span carry, in the form's terms."""

    def __init__(self, extracted: Sequence[Mapping[str, Any]]) -> None:
        self.units: set[str] = set()
        self.any_unit = False
        self.changed_copy = False
        self.numbers: set[float] = set()
        self.positions: set[int] = set()
        self.texts: list[str] = []
        self.counts: list[tuple[str | None, str, int]] = []
        for item in extracted:
            self._add(item)

    def _add(self, item: Mapping[str, Any]) -> None:
        try:
            kind = Kind(item["kind"])
        except ValueError:
            return
        params: Mapping[str, Any] = item.get("params", {})
        self.texts.extend(strings_in(params))
        for value in numbers_in(params):
            self.numbers.update({value, value - 1, value + 1, value * 100})
        for name in ("k", "nth", "word"):
            place = params.get(name)
            if isinstance(place, int) and not isinstance(place, bool) and place:
                self.positions.add(place)
        if kind in _ANY_UNIT:
            self.any_unit = True
        try:
            forms = form_of(kind, params) or ()
        except (ValueError, TypeError):
            forms = ()
        if kind in (Kind.TITLE, Kind.SECTIONS):
            self.units.add("lines")
        for form in forms:
            built = msgspec.to_builtins(form)
            self.texts.extend(strings_in(built))
            for value in numbers_in(built):
                self.numbers.update({value, value - 1, value + 1})
            if isinstance(form, Count):
                for measure in (form.measure, form.of):  # a sentence type is its end mark in the form
                    if measure is not None and measure.unit.value == "sentences":
                        named = _TYPE_NAMES.get(measure.filter.ends_with or "")
                        self.texts.extend((named, f"{named}s") if named else ())
                self._unit(form.unit.value)
                if form.per is not None:
                    self._unit(form.per.value)
                if form.of is not None:
                    self._unit(form.of.unit.value)
                if form.fraction is None and form.of is None:
                    self.counts.append((_FORM_UNITS.get(form.unit.value), form.relation.value, form.n))
            elif isinstance(form, Position):
                self._unit(form.unit.value)
                if form.unit.value == "answer":
                    self.units.update({"words", "chars"})
                if form.text or form.word is not None or form.word_class:
                    self.units.update({"words", "chars"})
                if form.k == -1 or form.op == "ends_with":
                    self.positions.add(-1)
                if form.op == "starts_with":
                    self.positions.add(1)
            elif isinstance(form, Wrap):
                self._unit(form.unit.value)
                self.units.add("chars")
            elif isinstance(form, Structure):
                self.units.update(_LAYOUT_UNITS.get(form.layout.value, frozenset()))
            elif isinstance(form, Spread):
                self._unit(form.unit.value)
                self._unit(form.per.value)
            elif isinstance(form, Copy):
                self.any_unit = True
                self.changed_copy = self.changed_copy or form.change

    def _unit(self, unit: str) -> None:
        named = _FORM_UNITS.get(unit)
        if named is not None:
            self.units.add(named)

    def carries_number(self, value: float) -> bool:
        if value in self.numbers:
            return True
        return value >= 8 and any(abs(n - value) <= 0.25 * value for n in self.numbers)

    def carries_text(self, text: str) -> bool:
        if "{}" in text:  # a template line with slots ("Name: {}"): its literal pieces
            return all(self.carries_text(piece) for piece in text.split("{}"))
        wanted = text.strip().lower()
        if not wanted:
            return True
        return any(wanted in t.lower() or (len(t) > 1 and t.lower() in wanted) for t in self.texts if t)


def _interval(relation: str, n: int) -> tuple[float, float]:
    low, high = _BOUNDS.get(relation, (None, None))
    return (float("-inf") if low is None else n + low, float("inf") if high is None else n + high)


def _bound_misread(judge_units: set[str], args: Mapping[str, Any], reading: _Reading) -> bool:
    relation, n = args.get("relation"), args.get("n")
    if not isinstance(relation, str) or not isinstance(n, int) or relation not in _BOUNDS:
        return False
    matching = [(r, m) for unit, r, m in reading.counts
                if (not judge_units or unit in judge_units) and abs(m - n) <= 1 and r in _BOUNDS]
    if not matching:
        return False
    low, high = float("-inf"), float("inf")
    for r, m in matching:
        a, b = _interval(r, m)
        low, high = max(low, a), min(high, b)
    want_low, want_high = _interval(relation, n)
    return low < want_low or high > want_high


def misread(
    judge_id: str,
    args: Mapping[str, Any],
    extracted: Sequence[Mapping[str, Any]],
    prompt_constraints: Sequence[Mapping[str, Any]] = (),
) -> str | None:
    """Why the reading ``extracted`` (``[{kind, params}]``) contradicts judge ``judge_id`` with ``args``, or None.

    ``extracted`` empty (a missed or unrecognised instruction) is never a
    misreading. A number or text the judge names may be carried by any of
    ``prompt_constraints`` (all the prompt's constraints: an instruction may
    restate a count read elsewhere, "keep the two paragraphs ... balanced");
    units, positions and bounds must be the instruction's own reading's.
    """
    if not extracted:
        return None
    reading = _Reading(extracted)
    context = _Reading([*extracted, *prompt_constraints])
    judge_units = {_JUDGE_UNITS[w] for w in judge_id.split("_") if w in _JUDGE_UNITS}
    if judge_units and not reading.any_unit and not judge_units & reading.units:
        return f"unit: the judge counts {sorted(judge_units)}, the reading {sorted(reading.units) or 'none'}"
    for name, value in args.items():
        if name in _INTERNAL:
            continue
        if isinstance(value, str) and _POSITION.match(name) and value.lower() in _NAMED_POSITIONS:
            value = _NAMED_POSITIONS[value.lower()]
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and _POSITION.match(name):
            if value and value not in reading.positions and not reading.any_unit:
                return f"position: {name}={value} is carried by no constraint"
        elif isinstance(value, (int, float)):
            if not context.carries_number(float(value)) and not reading.any_unit:
                return f"number: {name}={value} is carried by no constraint"
        elif reading.changed_copy:
            continue  # the copy's own text is the request unchanged; the judge holds the changed one
        elif isinstance(value, str):
            if name == "chars":
                if not any(context.carries_text(c) for c in value):
                    return f"text: none of {value!r} is in the reading"
            elif not context.carries_text(value):
                return f"text: {name}={value!r} is not in the reading"
        elif (isinstance(value, list) and value and all(isinstance(v, str) for v in value)
              and not any(context.carries_text(v) for v in value)):
            return f"text: none of {name}={value!r} is in the reading"
    if _bound_misread(judge_units, args, reading):
        return f"bound: the judge wants {args.get('relation')} {args.get('n')}, the readings allow more"
    return None


#: The held-out sets' bench modules, in order.
SETS = ("heldout", "heldout2", "heldout3", "heldout4", "heldout5")


def main(argv: Sequence[str] | None = None) -> int:
    """Extract every held-out set in-process and report its misread instructions and shares."""
    from bench import heldout

    parser = argparse.ArgumentParser(description="Misread instructions of the held-out sets (extraction only)")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated set modules (default: all)")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    for name in (s.strip() for s in args.sets.split(",") if s.strip()):
        module = importlib.import_module(f"bench.{name}")
        suite = getattr(module, "SUITE", None) or heldout.HELDOUT
        report = heldout.extraction_report(heldout.load(suite.data, suite.judges), suite)
        for row in report["misreadings"]:
            reading = "; ".join(f"{c['kind']} {json.dumps(c['params'], ensure_ascii=False)}" for c in row["extracted"])
            print(f"{name} {row['key']} [{row['judge']}] {row['span']!r} -> {reading} ({row['why']})", file=sys.stderr)
        figures[name] = {"n_instructions": report["n_instructions"], **report["extraction"],
                         "misread_share": report["misread_share"]}
    shares = [f["misread_share"] for f in figures.values()]
    print(json.dumps({"benchmark": "misread", "mode": "extraction_only", "sets": figures,
                      "max_misread_share": max(shares, default=0.0)}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
