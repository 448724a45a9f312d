"""Controllers of whole-answer structures: tables, a list beside prose, copies with a
stated change. A random-logits model biased towards what breaks each structure
(``|`` and newlines in cells, sentence ends in a one-sentence part) never breaks it,
judged by the form's verifiers and by independent restatements; one short decode of
the bundled model per structure; impossible combinations are refused."""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_controllers import drive_with_bias
from test_form_controllers import bias_towards, gen, judged

from inference.decoder.compile import compile_steering
from reasoning.constraints.model import Constraint, Kind
from reasoning.errors import ConflictError, LimitExceeded

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 96
SEEDS = (3, 17)


def _table_rows(text: str) -> list[list[str]]:
    """Pipe rows of the text as a reader splits them (outer pipes dropped)."""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.strip().startswith("|")]


TABLES = [
    ("free header", {"layout": "table", "n": 2, "columns": 3}, 3, 2, None),
    ("given headers", {"layout": "table", "headers": ["Name", "Colour"]}, 2, 3, ["Name", "Colour"]),
    ("with prose", {"layout": "table", "n": 1, "columns": 2, "before": "sentence", "after": "paragraph"}, 2, 1, None),
]


@pytest.mark.parametrize(("name", "params", "columns", "rows", "headers"), TABLES, ids=[t[0] for t in TABLES])
def test_tables_hold_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any], columns: int, rows: int,
                                      headers: list[str] | None) -> None:
    constraints = [gen(Kind.STRUCTURE, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Compare two rivers.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"\||\n", 5.0)  # the adversary splits cells and rows
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert judged(constraints, state.text) == [], state.text
        table = _table_rows(state.text)
        assert len(table) == rows + 2, state.text  # header, rule, body rows
        assert all(len(row) == columns for row in table), state.text
        assert all(re.fullmatch(r"-{3,}", cell) for cell in table[1]), state.text
        assert all(re.search(r"[^\W\d_]", cell) for row in table[2:] for cell in row), state.text
        if headers is not None:
            assert table[0] == headers, state.text
        if params.get("before") == "sentence":
            before = state.text.split("\n|")[0].split("|")[0].strip()
            assert len(re.findall(r"[.!?](?:\s|$)", before)) <= 1 and before, state.text


LISTS = [
    ("intro and summary", {"layout": "list", "n": 3, "before": "paragraph", "after": "sentence"}, r"^\* +\S", 3),
    ("numbered after a sentence", {"layout": "numbered_list", "n": 4, "before": "sentence"}, r"^\d\. +\S", 4),
    ("nested of two", {"layout": "nested_list", "n": 2}, r"^\* +\S", 2),
]


@pytest.mark.parametrize(("name", "params", "item", "n"), LISTS, ids=[row[0] for row in LISTS])
def test_lists_beside_prose_hold_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any], item: str,
                                                  n: int) -> None:
    constraints = [gen(Kind.STRUCTURE, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Give tips for sleep.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"[.!?]|^\s?[\d+-]", 5.0)  # sentence ends early and often, item markers
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert judged(constraints, state.text) == [], state.text
        lines = state.text.split("\n")
        items = [line for line in lines if re.match(item, line)]
        assert len(items) == n, state.text
        if "before" in params:
            intro = state.text.split("\n\n")[0]
            assert intro.strip() and not re.match(item, intro), state.text
            if params["before"] == "sentence":
                assert len([p for p in re.split(r"(?<=[.!?])\s+", intro.strip()) if p]) == 1, state.text
        if "after" in params:
            outro = state.text.split("\n\n")[-1]
            assert outro.strip() and not re.match(r"\s*(?:[*+-]|\d)", outro), state.text
            assert len([p for p in re.split(r"(?<=[.!?])\s+", outro.strip()) if p]) == 1, state.text
        if params["layout"] == "nested_list":
            assert len([line for line in lines if re.match(r"^  - +\S", line)]) == 1, state.text


COPIES = [
    ("replace", {"text": "Tell me about the cat. Be brief.", "change": True, "replace": [["cat", "dog"]]},
     "Tell me about the dog. Be brief."),
    ("capitals", {"text": "What makes rain fall?", "change": True, "case": "upper"}, "WHAT MAKES RAIN FALL?"),
    ("drop last", {"text": "Explain wind. Keep it short.", "change": True, "drop": "last_sentence"},
     "Explain wind."),
]


@pytest.mark.parametrize(("name", "params", "start"), COPIES, ids=[c[0] for c in COPIES])
def test_changed_copies_are_written_first(tokenizer: Any, name: str, params: dict[str, Any], start: str) -> None:
    constraints = [gen(Kind.COPY, **params)]
    steering = compile_steering(constraints, tokenizer, prompt=params["text"], max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    state = drive_with_bias(steering, 40, 5, None)
    assert state.text.startswith(start), state.text
    assert judged(constraints, state.text) == [], state.text


def test_unstated_change_is_left_to_the_prompt(tokenizer: Any) -> None:
    constraints = [gen(Kind.COPY, text="Tell me about the cat.", change=True)]
    steering = compile_steering(constraints, tokenizer, prompt="Tell me about the cat.", max_new_tokens=BUDGET)
    assert steering.uncontrolled == {"f"}


def test_table_fits_beside_other_constraints(tokenizer: Any) -> None:
    constraints = [gen(Kind.STRUCTURE, "table", layout="table", headers=["City", "River"]),
                   gen(Kind.STRUCTURE, "nolist", layout="no_list"),
                   Constraint(id="lower", kind=Kind.ALL_LOWERCASE, params={}),
                   Constraint(id="end", kind=Kind.END_PHRASE, params={"phrase": "that is all."})]
    steering = compile_steering(constraints, tokenizer, prompt="Name cities and rivers.", max_new_tokens=BUDGET)
    assert steering.controlled == {"table", "nolist", "lower", "end"}
    state = drive_with_bias(steering, BUDGET, 11, bias_towards(tokenizer, r"\|", 5.0))
    assert state.text.startswith("| city | river |\n| --- | --- |\n| "), state.text
    assert state.text.endswith("|\n\nthat is all."), state.text
    assert judged(constraints, state.text) == [], state.text


def test_responses_between_markers_hold_on_random_logits(tokenizer: Any) -> None:
    constraints = [gen(Kind.STRUCTURE, layout="responses", n=3, marker="###")]
    steering = compile_steering(constraints, tokenizer, prompt="Name a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias_towards(tokenizer, r"#", 6.0))
        assert judged(constraints, state.text) == [], state.text
        assert len([p for p in state.text.split("###") if p.strip()]) == 3, state.text
    worded = gen(Kind.STRUCTURE, layout="responses", n=2, marker="Response")
    steering = compile_steering([worded], tokenizer, prompt="Name a river.", max_new_tokens=BUDGET)
    assert steering.uncontrolled == {"f"}  # its own words could split a response


def test_table_meets_a_word_minimum(tokenizer: Any) -> None:
    constraints = [gen(Kind.STRUCTURE, "table", layout="table", n=1, columns=2),
                   Constraint(id="words", kind=Kind.WORD_COUNT, params={"relation": "at least", "n": 25})]
    steering = compile_steering(constraints, tokenizer, prompt="Compare two rivers.", max_new_tokens=BUDGET)
    assert steering.controlled == {"table", "words"}
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias_towards(tokenizer, r"\||\n", 5.0))
        assert judged(constraints, state.text) == [], state.text


def test_impossible_structures_are_refused(tokenizer: Any) -> None:
    table = gen(Kind.STRUCTURE, "a", layout="table", columns=3, headers=["One", "Two"])
    with pytest.raises(ConflictError) as refused:
        compile_steering([table], tokenizer, prompt="x", max_new_tokens=BUDGET)
    assert refused.value.extra["constraint_ids"] == ["a"]
    cases = [
        [gen(Kind.STRUCTURE, "a", layout="table"), Constraint(id="b", kind=Kind.JSON_FORMAT, params={})],
        [gen(Kind.STRUCTURE, "a", layout="table", headers=["Name", "Notes"]),
         Constraint(id="b", kind=Kind.WORD_COUNT, params={"relation": "at most", "n": 1})],
        [gen(Kind.STRUCTURE, "a", layout="table", before="sentence", after="sentence"),
         Constraint(id="b", kind=Kind.SENTENCE_COUNT, params={"relation": "at most", "n": 1})],
        [gen(Kind.COPY, "a", text="What is rain?", change=True, case="upper"),
         Constraint(id="b", kind=Kind.ALL_LOWERCASE, params={})],
        [gen(Kind.STRUCTURE, "a", layout="list", n=2, after="sentence"),
         gen(Kind.STRUCTURE, "b", layout="no_list")],
    ]
    for constraints in cases:
        with pytest.raises(ConflictError) as refused:
            compile_steering(constraints, tokenizer, prompt="Describe rain.", max_new_tokens=BUDGET)
        assert "a" in refused.value.extra["constraint_ids"], constraints
    with pytest.raises(LimitExceeded):
        compile_steering([gen(Kind.STRUCTURE, layout="table", n=8, columns=4)], tokenizer, prompt="x",
                         max_new_tokens=40)


@pytest.mark.model
def test_bundled_model_writes_structures(loaded_model: Any) -> None:
    """One short decode per structure: a table with headers, a list before a
    one-sentence summary, a copy with a word replaced; each judged by the verifiers."""
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 48
    cases = [
        ("Name two rivers and their countries in a table with the columns River and Country.",
         gen(Kind.STRUCTURE, "s", layout="table", n=2, headers=["River", "Country"])),
        ("Give tips for sleep as a bulleted list of two items, then a one-sentence summary.",
         gen(Kind.STRUCTURE, "s", layout="list", n=2, after="sentence")),
        ("First repeat the request but replace 'cat' with 'dog', then answer. Why is a cat a good pet?",
         gen(Kind.COPY, "s", text="Why is a cat a good pet?", change=True, replace=[["cat", "dog"]])),
    ]
    for prompt, constraint in cases:
        steering = compile_steering([constraint], tokenizer, prompt=prompt, max_new_tokens=budget)
        assert steering.controlled == {"s"}
        plan = plan_prompt(tokenizer, prompt, [constraint])
        result = decode(
            loaded_model.model, tokenizer, plan, steering=steering,
            options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=[constraint],
        )
        assert judged([constraint], result.answer) == [], result.answer
        assert len(re.findall(r"[A-Za-z]{3,}", result.answer)) >= 4, result.answer
