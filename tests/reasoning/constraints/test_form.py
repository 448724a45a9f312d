"""The compositional form: generic verifiers per shape, named kinds as forms, forms back to kinds."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.form import (
    Copy,
    Count,
    Filter,
    Layout,
    Measure,
    Position,
    Spread,
    Structure,
    Unit,
    Wrap,
    canonical,
    check,
    form_of,
    params_of,
)
from reasoning.constraints.model import Constraint, Kind, Relation
from reasoning.constraints.verifiers import verify
from reasoning.graph.relations import compute_relations

AT_MOST, AT_LEAST, EXACTLY = Relation.AT_MOST, Relation.AT_LEAST, Relation.EXACTLY

COMPLETE: list[tuple[Any, str, bool]] = [
    (Count(unit=Unit.PUNCTUATION, relation=AT_MOST, n=2), "Hi, there. Bye", True),
    (Count(unit=Unit.PUNCTUATION, relation=AT_MOST, n=2), "Hi, there! Bye?", False),
    (Count(unit=Unit.PUNCTUATION, filter=Filter(chars="!"), relation=AT_MOST, n=0), "Calm. Quiet.", True),
    (Count(unit=Unit.NUMBERS, relation=AT_LEAST, n=3), "In 2019 we had 3.5 and 1,200 units.", True),
    (Count(unit=Unit.NUMBERS, relation=AT_LEAST, n=3), "In 2019 we had 3.5 units.", False),
    (Count(unit=Unit.DIGITS, relation=AT_MOST, n=0), "no digits here", True),
    (Count(unit=Unit.EMOJI, relation=EXACTLY, n=2), "Good 👍 and fun 🎉", True),
    (Count(unit=Unit.EMOJI, relation=AT_MOST, n=0), "Good 👍", False),
    (Count(unit=Unit.UNIQUE_WORDS, relation=AT_MOST, n=3), "the cat the cat the dog", True),
    (Count(unit=Unit.UNIQUE_WORDS, relation=AT_LEAST, n=4), "the cat the cat the dog", False),
    (Count(unit=Unit.WORDS, filter=Filter(starts_with="b"), relation=AT_LEAST, n=3), "Big blue boats sail", True),
    (Count(unit=Unit.WORDS, filter=Filter(ends_with="ing"), relation=AT_MOST, n=0), "She keeps singing", False),
    (Count(unit=Unit.WORDS, filter=Filter(case="title"), relation=AT_LEAST, n=2), "Paris and Rome", True),
    (Count(unit=Unit.WORDS, filter=Filter(stop_words=True), relation=AT_MOST, n=1), "cats chase the mice", True),
    (Count(unit=Unit.WORDS, relation=AT_MOST, n=4, per=Unit.SENTENCES), "One two three. Four five.", True),
    (Count(unit=Unit.WORDS, relation=AT_MOST, n=2, per=Unit.SENTENCES), "One two three. Four five.", False),
    (Count(unit=Unit.LINES, relation=EXACTLY, n=3), "a\nb\n\nc", True),
    # A reader's length: every character counts, spaces and line breaks included ...
    (Count(unit=Unit.CHARACTERS, relation=EXACTLY, n=11), "Hi there.\nO", True),
    (Count(unit=Unit.CHARACTERS, relation=AT_MOST, n=10), "Hi there.\nO", False),
    # ... and "excluding spaces" leaves white space out.
    (Count(unit=Unit.CHARACTERS, filter=Filter(nonspace=True), relation=EXACTLY, n=9), "Hi there.\nO", True),
    (Count(unit=Unit.HASHTAGS, relation=AT_LEAST, n=2), "#sun and #sea2024!", True),
    (Count(unit=Unit.HASHTAGS, relation=AT_LEAST, n=1), "a#b, ## and # alone", False),
    (Count(unit=Unit.NESTED_BULLETS, relation=AT_LEAST, n=1), "* top\n  * inner", True),
    (Count(unit=Unit.SPANS, filter=Filter(left="(", right=")"), relation=AT_LEAST, n=2), "a (b) c (d)", True),
    (Count(unit=Unit.LETTERS, filter=Filter(case="upper"), relation=AT_MOST, n=0,
           of=None), "quiet", True),
    (Count(unit=Unit.WORDS, filter=Filter(case="upper"), relation=AT_LEAST, n=0,
           of=Measure(unit=Unit.WORDS), fraction=0.5), "BIG BIG small", True),
    (Count(unit=Unit.WORDS, filter=Filter(case="upper"), relation=AT_LEAST, n=0,
           of=Measure(unit=Unit.WORDS), fraction=0.5), "BIG small small", False),
    (Position(unit=Unit.WORDS, k=3, op="is", text="river"), "A long river flows.", True),
    (Position(unit=Unit.WORDS, k=-1, op="is", text="end"), "This is the end.", True),
    (Position(unit=Unit.SENTENCES, k=2, op="starts_with", text="However"), "Yes. However, no.", True),
    (Position(unit=Unit.SENTENCES, k=-1, op="ends_with", text="?"), "Yes. Really?", True),
    # a sentence mark said in one width is met in both (a Chinese question ends with '？')
    (Count(unit=Unit.SENTENCES, filter=Filter(ends_with="?"), relation=EXACTLY, n=2), "你好吗？今天好。真的吗?", True),
    (Count(unit=Unit.SENTENCES, filter=Filter(ends_with="。"), relation=EXACTLY, n=1), "你好吗？今天好.", True),
    (Position(unit=Unit.PARAGRAPHS, k=1, op="starts_with", text="Dear"), "Hello\n\nDear", False),
    (Wrap(left="(", right=")"), " (all of it) ", True),
    (Wrap(left="(", right=")"), "(half) of it", False),
    (Wrap(left="[", right="]", unit=Unit.SENTENCES), "[One.] [Two.]", True),
    (Wrap(left="[", right="]", unit=Unit.SENTENCES), "[One.] Two.", False),
    (Structure(layout=Layout.TABLE), "| a | b |\n|---|---|\n| 1 | 2 |", True),
    (Structure(layout=Layout.TABLE), "a, b\n1, 2", False),
    (Structure(layout=Layout.NESTED_LIST), "- fruit\n  - apple\n- veg", True),
    (Structure(layout=Layout.NESTED_LIST), "- fruit\n- apple", False),
    # sub_items: that many nested items under every top-level item (a two-level outline)
    (Structure(layout=Layout.NESTED_LIST, n=2, sub_items=2), "Plan:\n* a\n  - x\n  - y\n* b\n  - z\n  - w", True),
    (Structure(layout=Layout.NESTED_LIST, n=2, sub_items=2), "* a\n  - x\n* b\n  - z\n  - w", False),
    (Structure(layout=Layout.NESTED_LIST, sub_items=1), "1. a\n   - x\n2. b", False),
    # sub_at_least: at least that many under every item
    (Structure(layout=Layout.NESTED_LIST, n=2, sub_items=1, sub_at_least=True), "* a\n  - x\n* b\n  - z\n  - w", True),
    (Structure(layout=Layout.NESTED_LIST, n=2, sub_items=2, sub_at_least=True), "* a\n  - x\n* b\n  - z\n  - w", False),
    (Structure(layout=Layout.NO_LIST), "Plain prose only.", True),
    (Structure(layout=Layout.NO_LIST), "Items:\n1. one", False),
    (Structure(layout=Layout.NUMBERED_LIST), "1. one\n2. two", True),
    (Copy(text="Name a red fruit.", change=True), "Name a green fruit. Apple.", True),
    (Copy(text="Name a red fruit.", change=True), "Name a red fruit. Apple.", False),
    # k = 0: every piece ...
    (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="Note"), "Note: one. Note that two.", True),
    (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="Note"), "Note: one. Then two.", False),
    (Position(unit=Unit.PARAGRAPHS, k=0, op="ends_with", text="Over."), "A. Over.\n\nB, over.", True),
    (Position(unit=Unit.PARAGRAPHS, k=0, op="ends_with", text="Over."), "A. Over.\n\nB.", False),
    (Position(unit=Unit.LINES, k=0, op="ends_with", text="。"), "第一行。\n第二行。", True),
    (Position(unit=Unit.LINES, k=0, op="ends_with", text="。"), "第一行。\n第二行", False),
    # ... list items without their marker; an answer without any fails
    (Position(unit=Unit.BULLETS, k=0, op="starts_with", text="✅"), "Plan:\n- ✅ a\n2. ✅ b", True),
    (Position(unit=Unit.BULLETS, k=0, op="starts_with", text="✅"), "- ✅ a\n- b", False),
    (Position(unit=Unit.BULLETS, k=0, op="starts_with", text="✅"), "✅ a, ✅ b", False),
    # Markdown headings, all or of one level ('#' glued to a word is no heading)
    (Count(unit=Unit.HEADINGS, relation=EXACTLY, n=2), "# Title\ntext\n### Part\n#tag", True),
    (Count(unit=Unit.HEADINGS, filter=Filter(marker="###"), relation=AT_LEAST, n=2), "# A\n### B\n## C", False),
    # bold spans are their own delimiters, not IFEval's single-asterisk highlights
    (Count(unit=Unit.SPANS, filter=Filter(left="**", right="**", nonempty=True), relation=EXACTLY, n=2),
     "**one** and *two* and **three**", True),
]


@pytest.mark.parametrize(("form", "text", "expected"), COMPLETE)
def test_generic_verifier_on_complete_text(form: Any, text: str, expected: bool) -> None:
    result = check(form, text)
    assert result.satisfied is expected, result.detail
    assert result.certain


PARTIAL: list[tuple[Any, str, bool, bool]] = [
    (Count(unit=Unit.EMOJI, relation=AT_MOST, n=0), "ok 👍 and", False, True),
    (Count(unit=Unit.PUNCTUATION, relation=AT_MOST, n=1), "a, b", True, False),
    (Count(unit=Unit.NUMBERS, relation=AT_LEAST, n=1), "in 2020 we", True, True),
    (Count(unit=Unit.WORDS, relation=EXACTLY, n=5), "one two", False, False),
    (Count(unit=Unit.WORDS, relation=EXACTLY, n=1), "one two three", False, True),
    (Count(unit=Unit.WORDS, relation=AT_MOST, n=2, per=Unit.SENTENCES), "One two three four", False, True),
    (Count(unit=Unit.WORDS, relation=AT_LEAST, n=3, per=Unit.SENTENCES), "One two. Three", False, True),
    (Count(unit=Unit.WORDS, relation=AT_LEAST, n=3, per=Unit.SENTENCES), "One two three. Fo", True, False),
    (Position(unit=Unit.WORDS, k=2, op="is", text="cat"), "the dog sat", False, True),
    (Position(unit=Unit.WORDS, k=2, op="is", text="cat"), "the ca", False, False),
    (Wrap(left="(", right=")"), "No bracket", False, True),
    (Structure(layout=Layout.NO_LIST), "Text\n- item\n", False, True),
    (Structure(layout=Layout.TABLE), "| a |", False, False),
    (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="Today"), "Today I ran. Tod", True, False),
    (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="Today"), "Today I ran. Then", False, True),
    (Position(unit=Unit.PARAGRAPHS, k=0, op="ends_with", text="Over."), "A. Over.\n\nB", True, False),
]


@pytest.mark.parametrize(("form", "text", "satisfied", "certain"), PARTIAL)
def test_generic_verifier_on_partial_text(form: Any, text: str, satisfied: bool, certain: bool) -> None:
    result = check(form, text, partial=True)
    assert (result.satisfied, result.certain) == (satisfied, certain), result.detail


def test_a_certain_violation_stays_violated() -> None:
    form = Count(unit=Unit.PUNCTUATION, filter=Filter(chars="!?"), relation=AT_MOST, n=1)
    text = "Wow! Really?"
    assert check(form, text, partial=True).certain
    for suffix in (" yes", ".", " and more!"):
        assert not check(form, text + suffix).satisfied


@pytest.mark.parametrize(
    ("form", "kind", "params"),
    [
        (Count(unit=Unit.LETTERS, filter=Filter(case="lower"), relation=AT_MOST, n=0), Kind.ALL_CAPITALS, {}),
        (Count(unit=Unit.LETTERS, filter=Filter(case="upper"), relation=AT_MOST, n=0), Kind.ALL_LOWERCASE, {}),
        (Count(unit=Unit.WORDS, relation=AT_MOST, n=50), Kind.WORD_COUNT, {"relation": "at most", "n": 50}),
        (Count(unit=Unit.CHARACTERS, filter=Filter(chars=","), relation=AT_MOST, n=0), Kind.NO_COMMA, {}),
        (Count(unit=Unit.KEYWORDS, filter=Filter(text="risk", whole_word=True), relation=AT_MOST, n=0),
         Kind.FORBIDDEN_WORDS, {"words": ["risk"]}),
        (Count(unit=Unit.BULLETS, relation=EXACTLY, n=3), Kind.BULLET_COUNT, {"n": 3}),
        (Wrap(left='"', right='"'), Kind.QUOTATION, {}),
        (Position(unit=Unit.ANSWER, op="ends_with", text="Bye."), Kind.END_PHRASE, {"phrase": "Bye."}),
        (Copy(text="Say hi."), Kind.REPEAT_PROMPT, {"prompt_to_repeat": "Say hi."}),
    ],
)
def test_a_form_that_is_a_named_kind_is_reported_as_that_kind(form: Any, kind: Kind, params: dict[str, Any]) -> None:
    assert canonical(form) == (kind, params)


def test_other_forms_become_generic_kinds_whose_params_round_trip() -> None:
    form = Count(unit=Unit.EMOJI, relation=AT_MOST, n=2, per=Unit.PARAGRAPHS)
    kind, params = canonical(form)
    assert kind is Kind.COUNT and params == params_of(form)
    assert form_of(kind, params) == (form,)
    constraint = Constraint(id="c1", kind=kind, params=params)
    assert verify(constraint, "Fun 🎉🎉\n\nMore 🎉").satisfied
    assert not verify(constraint, "Fun 🎉🎉🎉").satisfied


@pytest.mark.parametrize(
    ("kind", "params", "text"),
    [
        (Kind.ALL_CAPITALS, {}, "LOUD AND CLEAR."),
        (Kind.NTH_PARAGRAPH_FIRST_WORD, {"n": 2, "nth": 2, "first_word": "summary"}, "Intro.\n\nSummary, done."),
        (Kind.TITLE, {}, "<<Joy>>\nText"),
        (Kind.TWO_RESPONSES, {}, "A.\n******\nB."),
    ],
)
def test_named_kinds_are_verified_through_their_forms(kind: Kind, params: dict[str, Any], text: str) -> None:
    forms = form_of(kind, params)
    assert forms
    assert all(check(form, text).satisfied for form in forms)
    assert verify(Constraint(id="c1", kind=kind, params=params), text).satisfied


def _generic(cid: str, form: Any) -> Constraint:
    kind, params = canonical(form)
    return Constraint(id=cid, kind=kind, params=params)


def test_generic_counts_relate_to_each_other_and_to_named_kinds() -> None:
    few = _generic("a", Count(unit=Unit.EMOJI, relation=AT_MOST, n=1))
    many = _generic("b", Count(unit=Unit.EMOJI, relation=AT_LEAST, n=3))
    some = _generic("c", Count(unit=Unit.EMOJI, relation=AT_MOST, n=5))
    capitals = _generic("d", Count(unit=Unit.LETTERS, filter=Filter(case="upper"), relation=AT_LEAST, n=5))
    lower = Constraint(id="e", kind=Kind.ALL_LOWERCASE)
    no_list = _generic("f", Structure(layout=Layout.NO_LIST))
    bullets = Constraint(id="g", kind=Kind.BULLET_COUNT, params={"n": 3})
    edges = {(e.source, e.relation.value, e.target) for e in compute_relations([few, many, some, capitals, lower, no_list, bullets])}
    assert ("a", "excludes", "b") in edges
    assert ("a", "entails", "c") in edges
    assert ("d", "excludes", "e") in edges
    assert ("f", "excludes", "g") in edges


@pytest.mark.parametrize(
    ("spread", "text", "satisfied"),
    [
        (Spread(unit=Unit.WORDS, per=Unit.SENTENCES, max_diff=4), "One two three. One two three four five six.", True),
        (Spread(unit=Unit.WORDS, per=Unit.SENTENCES, max_diff=2), "One two three. One two three four five six.", False),
        (Spread(unit=Unit.WORDS, per=Unit.PARAGRAPHS, max_ratio=1.5), "a b c d\n\na b c d e f", True),
        (Spread(unit=Unit.WORDS, per=Unit.PARAGRAPHS, max_ratio=1.5), "a b c d\n\na b c d e f g", False),
        (Spread(unit=Unit.CHARACTERS, per=Unit.LINES, max_diff=3), "abcd\nabcdefg", True),
        (Spread(unit=Unit.WORDS, per=Unit.SENTENCES, max_diff=0), "Just one sentence here.", True),
    ],
)
def test_spread_bounds_the_longest_piece_against_the_shortest(spread: Spread, text: str, satisfied: bool) -> None:
    assert check(spread, text).satisfied is satisfied


def test_a_spread_already_too_wide_among_complete_pieces_is_certain_on_a_partial_text() -> None:
    spread = Spread(unit=Unit.WORDS, per=Unit.SENTENCES, max_diff=2)
    early = check(spread, "One. One two three four five. And", partial=True)
    assert not early.satisfied and early.certain
    assert not check(spread, "One two three. One", partial=True).certain


@pytest.mark.parametrize(
    ("position", "text", "satisfied"),
    [
        (Position(unit=Unit.BULLETS, k=0, op="starts_with", text="", word_class="emoji"), "- 🍎 apples\n- 🍐 pears", True),
        (Position(unit=Unit.BULLETS, k=0, op="starts_with", text="", word_class="emoji"), "- 🍎 apples\n- pears", False),
        (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="", word_class="capital"), 'Yes. "No," he said.', True),
        (Position(unit=Unit.SENTENCES, k=0, op="starts_with", text="", word_class="capital"), "Yes. no.", False),
        (Position(unit=Unit.LINES, k=0, op="starts_with", text="", word_class="number"), "1 egg\n2 cups", True),
        (Position(unit=Unit.BULLETS, k=0, op="starts_with", text="", word_class="verb"),
         "- Buy milk\n- Call the plumber\n- Review the report", True),
        (Position(unit=Unit.BULLETS, k=0, op="starts_with", text="", word_class="verb"),
         "- Buy milk\n- Fresh bread", False),
        (Position(unit=Unit.SENTENCES, k=0, op="ends_with", text="", word_class="emoji"), "Sunny today 🌞. Rain 🌧", True),
        (Position(unit=Unit.ANSWER, k=1, op="starts_with", text="", word_class="capital"), "hello there", False),
    ],
)
def test_a_class_opening_or_closing_of_every_piece(position: Position, text: str, satisfied: bool) -> None:
    assert check(position, text).satisfied is satisfied


def test_class_openings_and_spreads_are_generic_kinds_with_their_own_verdicts() -> None:
    opening = Position(unit=Unit.ANSWER, k=1, op="starts_with", text="", word_class="emoji")
    assert canonical(opening)[0] is Kind.POSITION  # no start phrase of an empty text
    spread = Spread(unit=Unit.WORDS, per=Unit.SENTENCES, max_diff=1)
    kind, params = canonical(spread)
    assert (kind, params) == (Kind.SPREAD, {"unit": "words", "per": "sentences", "max_diff": 1})
    constraint = Constraint(id="s", kind=kind, params=params)
    assert not verify(constraint, "Short one. A much much longer sentence.").satisfied
    assert verify(constraint, "Short one. Short two.").satisfied


@pytest.mark.parametrize(
    ("word_class", "other"),
    [
        ("capital", Constraint(id="b", kind=Kind.ALL_LOWERCASE)),
        ("lowercase", Constraint(id="b", kind=Kind.ALL_CAPITALS)),
        ("emoji", Constraint(id="b", kind=Kind.COUNT, params={"unit": "emoji", "relation": "at most", "n": 0})),
        ("number", Constraint(id="b", kind=Kind.COUNT, params={"unit": "digits", "relation": "at most", "n": 0})),
    ],
)
def test_an_opening_of_a_class_excludes_a_text_without_such_items(word_class: str, other: Constraint) -> None:
    opening = Constraint(id="a", kind=Kind.POSITION, params={"unit": "sentences", "op": "starts_with", "text": "",
                                                             "k": 0, "word_class": word_class})
    edges = compute_relations([opening, other])
    assert [e.relation.value for e in edges] == ["excludes"]
    assert not compute_relations([opening, Constraint(id="c", kind=Kind.WORD_COUNT,
                                                      params={"relation": "at most", "n": 50})])
