"""Controllers of the constraint form: a random-logits model biased towards
what each constraint forbids never violates it, judged by the form's own
verifiers and by independent restatements; a few runs on the bundled model;
impossible combinations are refused (the pipeline asks for confirmation)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import emoji
import pytest
from test_controllers import drive_with_bias

from inference.decoder.compile import compile_steering
from reasoning.constraints.form.kinds import form_of
from reasoning.constraints.form.verify import check
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.verifiers import verify_all
from reasoning.errors import ConflictError

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BUDGET = 90
SEEDS = (3, 17, 101)


def gen(kind: Kind, cid: str = "f", **params: Any) -> Constraint:
    return Constraint(id=cid, kind=kind, params=params)


def bias_towards(tokenizer: Any, pattern: str, value: float = 6.0) -> dict[int, float]:
    """A logit bonus on every token whose text matches ``pattern`` (the adversary)."""
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    found: dict[int, float] = {}
    for index, piece in enumerate(vocab):
        text = tokenizer.convert_tokens_to_string([piece])
        if re.search(pattern, text):
            found[index] = value
    return found


def judged(constraints: list[Constraint], text: str) -> list[str]:
    """Ids of the constraints the verifiers find violated."""
    failed = [v.constraint_id for v in verify_all(constraints, text) if not v.satisfied]
    for c in constraints:
        for form in form_of(c.kind, c.params) or ():
            if not check(form, text).satisfied and c.id not in failed:
                failed.append(c.id)
    return failed



def steered_answer(
    loaded_model: Any, prompt: str, budget: int, constraints: list[Constraint] | None = None
) -> tuple[list[Constraint], Any, str]:
    """The request as the service steers it: read (unless ``constraints`` are given), compiled
    and decoded by the bundled model on two beams without pruning. Returns the constraints,
    the compiled steering and the answer, so a test asserts on what was steered and kept."""
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt
    from reasoning.constraints.extraction import extract

    tokenizer = loaded_model.tokenizer
    if constraints is None:
        constraints = list(extract(prompt).constraints)
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    result = decode(
        loaded_model.model,
        tokenizer,
        plan_prompt(tokenizer, prompt, constraints),
        steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False),
        constraints=constraints,
    )
    return constraints, steering, result.answer

CAPPED = [
    ("digits", {"unit": "digits", "relation": "at most", "n": 0}, r"\d", lambda t: not re.search(r"\d", t)),
    ("numbers", {"unit": "numbers", "relation": "at most", "n": 2}, r"\d",
     lambda t: len(re.findall(r"(?<![\w.])\d+(?:[.,]\d+)*", t)) <= 2),
    ("punctuation", {"unit": "punctuation", "relation": "at most", "n": 3}, r"[.,!?;:]",
     lambda t: sum(unicodedata.category(ch).startswith("P") for ch in t) <= 3),
    ("exclamations", {"unit": "punctuation", "filter": {"chars": "!"}, "relation": "less than", "n": 1}, r"!",
     lambda t: "!" not in t),
    ("emoji", {"unit": "emoji", "relation": "at most", "n": 0}, r"[\U0001F300-\U0001FAFF]",
     lambda t: emoji.emoji_count(t) == 0),
    ("t-words", {"unit": "words", "filter": {"starts_with": "t"}, "relation": "at most", "n": 1}, r"^\s?[Tt]",
     lambda t: sum(w.lower().startswith("t") for w in re.findall(r"\w+", t)) <= 1),
    ("ing-words", {"unit": "words", "filter": {"ends_with": "ing"}, "relation": "at most", "n": 0}, r"ing\b",
     lambda t: not any(w.lower().endswith("ing") for w in re.findall(r"\w+", t))),
    ("a-words", {"unit": "words", "filter": {"contains": "a"}, "relation": "at most", "n": 3}, r"a",
     lambda t: sum("a" in w.lower() for w in re.findall(r"\w+", t)) <= 3),
]


@pytest.mark.parametrize(("name", "params", "pattern", "ok"), CAPPED, ids=[row[0] for row in CAPPED])
def test_capped_counts_hold_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any], pattern: str,
                                             ok: Any) -> None:
    constraints = [gen(Kind.COUNT, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, pattern)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "tally" not in steering.unmet(state)


def _sentences(text: str) -> list[str]:
    """Sentences as an independent restatement splits them: after . ! ? and a space, after 。！？ at once."""
    return [p for p in re.split(r"(?<=[.!?])[\"'”’)\]]*\s+|(?<=[。！？])[\"'”’)\]]*\s*", text.strip()) if p.strip()]


PER_PIECE = [
    ("words per sentence", {"unit": "words", "relation": "at most", "n": 6, "per": "sentences"},
     r"^\s?[a-z]+$", lambda t: all(len(re.findall(r"\w+", s)) <= 6 for s in _sentences(t))),
    ("commas per sentence", {"unit": "punctuation", "filter": {"chars": ","}, "relation": "at most", "n": 1,
                             "per": "sentences"}, r",",
     lambda t: all(s.count(",") <= 1 for s in _sentences(t))),
    ("words per line", {"unit": "words", "relation": "less than", "n": 5, "per": "lines"}, r"^\s?[a-z]+$",
     lambda t: all(len(re.findall(r"\w+", ln)) < 5 for ln in t.splitlines())),
]


@pytest.mark.parametrize(("name", "params", "pattern", "ok"), PER_PIECE, ids=[row[0] for row in PER_PIECE])
def test_per_piece_caps_hold_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any], pattern: str,
                                              ok: Any) -> None:
    constraints = [gen(Kind.COUNT, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, pattern, 4.0)  # long runs of words, commas
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "tally" not in steering.unmet(state)


LISTS = [
    ("list", lambda t: len(re.findall(r"^\*[ ]+\S", t, flags=re.MULTILINE)) == 3),
    ("numbered_list", lambda t: re.findall(r"^(\d)\.[ ]+\S", t, flags=re.MULTILINE) == ["1", "2", "3"]),
    ("nested_list", lambda t: len(re.findall(r"^  -[ ]+\S", t, flags=re.MULTILINE)) == 1
     and len(re.findall(r"^\*[ ]+\S", t, flags=re.MULTILINE)) == 3),
]


@pytest.mark.parametrize(("layout", "ok"), LISTS, ids=[row[0] for row in LISTS])
def test_lists_to_write_hold_on_random_logits(tokenizer: Any, layout: str, ok: Any) -> None:
    constraints = [gen(Kind.STRUCTURE, layout=layout)]
    steering = compile_steering(constraints, tokenizer, prompt="List reasons to visit a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, None)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text


def test_a_list_beside_another_body_is_left_to_that_body(tokenizer: Any) -> None:
    constraints = [gen(Kind.STRUCTURE, layout="numbered_list"),
                   Constraint(id="b", kind=Kind.SECTIONS, params={"n": 2, "splitter": "Part"})]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled and "b" in steering.controlled


PLACED = [
    ("third word is", {"unit": "words", "k": 3, "op": "is", "text": "river"}, "river", False),
    ("fifth word starts with", {"unit": "words", "k": 5, "op": "starts_with", "text": "blue"}, "blue", True),
    ("second word is, capitalised", {"unit": "words", "k": 2, "op": "is", "text": "Water"}, "water", False),
]


@pytest.mark.parametrize(("name", "params", "word", "prefix"), PLACED, ids=[row[0] for row in PLACED])
def test_a_word_at_a_middle_position_holds_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any],
                                                             word: str, prefix: bool) -> None:
    constraints = [gen(Kind.POSITION, **params), gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "digits"}
    bias = bias_towards(tokenizer, r"^\s", 3.0)  # new pieces everywhere
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        pieces = state.text.split()
        assert len(pieces) >= params["k"], state.text
        bare = pieces[params["k"] - 1].strip(".,;:!?\"'()[]{}*`“”‘’").lower()
        assert (bare.startswith(word) if prefix else bare == word), state.text
        assert judged(constraints, state.text) == [], state.text
        assert "placing" not in steering.unmet(state)


def test_a_middle_word_follows_the_letter_case_and_yields_to_a_cap_it_would_break(tokenizer: Any) -> None:
    lower = [gen(Kind.POSITION, unit="words", k=2, op="is", text="Water"), Constraint(id="low", kind=Kind.ALL_LOWERCASE)]
    steering = compile_steering(lower, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f", "low"}
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, None)
        assert state.text.split()[1].strip(".,;:!?") == "water", state.text
        assert judged(lower, state.text) == [], state.text
    capped = [gen(Kind.POSITION, unit="words", k=2, op="is", text="water"),
              gen(Kind.COUNT, "no-e", unit="letters", filter={"text": "e"}, relation="at most", n=0)]
    steering = compile_steering(capped, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled
    named = [gen(Kind.POSITION, unit="words", k=2, op="is", text="water"),
             Constraint(id="no-a", kind=Kind.LETTER_FREQUENCY, params={"letter": "a", "relation": "less than", "n": 1})]
    steering = compile_steering(named, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled


def test_a_middle_word_beside_an_inserting_controller_is_left_to_the_prompt(tokenizer: Any) -> None:
    constraints = [gen(Kind.POSITION, unit="words", k=3, op="is", text="river"),
                   Constraint(id="kw", kind=Kind.KEYWORDS_PRESENT, params={"keywords": ["delta"]})]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert "f" in steering.uncontrolled and "kw" in steering.controlled


def test_no_list_holds_on_random_logits(tokenizer: Any) -> None:
    constraints = [gen(Kind.STRUCTURE, layout="no_list")]
    steering = compile_steering(constraints, tokenizer, prompt="List three rivers.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^\s*(?:[-*]|\d+[.)])|\n", 8.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        listed = re.findall(r"^\s*\*[^\*].*$", state.text, flags=re.MULTILINE)
        listed += re.findall(r"^\s*-.*$", state.text, flags=re.MULTILINE)
        listed += re.findall(r"^\s*\d+[.)]\s+\S", state.text, flags=re.MULTILINE)
        assert listed == [], state.text
        assert judged(constraints, state.text) == [], state.text


MINIMA = [
    ("exclamations", {"unit": "punctuation", "filter": {"chars": "!"}, "relation": "at least", "n": 3},
     lambda t: t.count("!") >= 3),
    ("semicolons", {"unit": "characters", "filter": {"chars": ";"}, "relation": "exactly", "n": 2},
     lambda t: t.count(";") == 2),
    ("digits", {"unit": "digits", "relation": "at least", "n": 4}, lambda t: sum(ch.isdigit() for ch in t) >= 4),
    ("emoji", {"unit": "emoji", "relation": "at least", "n": 2}, lambda t: emoji.emoji_count(t) >= 2),
    ("a mark of two widths", {"unit": "punctuation", "filter": {"chars": ";；"}, "relation": "at least", "n": 2},
     lambda t: t.count(";") + t.count("；") >= 2),
]


@pytest.mark.parametrize(("name", "params", "ok"), MINIMA, ids=[row[0] for row in MINIMA])
def test_paced_minima_hold_on_random_logits(tokenizer: Any, name: str, params: dict[str, Any], ok: Any) -> None:
    constraints = [gen(Kind.COUNT, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, None)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text


EXACT_MARKS = [
    ("a mark of two widths", gen(Kind.COUNT, unit="punctuation", filter={"chars": "?？"}, relation="exactly", n=3)),
    ("a mark read as a letter", gen(Kind.LETTER_FREQUENCY, letter="?", relation="exactly", n=3)),
]


@pytest.mark.parametrize(("name", "constraint"), EXACT_MARKS, ids=[row[0] for row in EXACT_MARKS])
def test_an_exact_count_of_a_mark_holds_against_a_model_that_overuses_it(
    tokenizer: Any, name: str, constraint: Constraint
) -> None:
    steering = compile_steering([constraint], tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"[?？]", 5.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert state.text.count("?") + state.text.count("？") == 3, state.text
        assert judged([constraint], state.text) == [], state.text


PLACED_MARKS = [
    ("questions", gen(Kind.COUNT, unit="punctuation", filter={"chars": "?"}, relation="at least", n=3), "?"),
    ("semicolons", gen(Kind.COUNT, unit="characters", filter={"chars": ";"}, relation="exactly", n=2), ";"),
    ("exclamations read as letters", gen(Kind.LETTER_FREQUENCY, letter="!", relation="at least", n=2), "!"),
]


@pytest.mark.parametrize(("name", "constraint", "mark"), PLACED_MARKS, ids=[row[0] for row in PLACED_MARKS])
def test_an_owed_mark_is_written_as_punctuation_after_a_word(
    tokenizer: Any, name: str, constraint: Constraint, mark: str
) -> None:
    """A model that writes words and now and then ends a sentence or a clause: each owed mark
    follows its word with no space and is followed by whitespace or the end, never by another
    mark (it took the place of the model's own end, not a place mid-phrase)."""
    steering = compile_steering([constraint], tokenizer, prompt="Describe a walk.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    bias = bias_towards(tokenizer, r"^ [a-z]+$", 3.0)
    bias.update(bias_towards(tokenizer, r"^[.,]$", 2.0))
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        text = state.text
        assert judged([constraint], text) == [], text
        for found in re.finditer(re.escape(mark), text):
            before, after = text[found.start() - 1 : found.start()], text[found.end() : found.end() + 1]
            assert before.isalnum() or before in "\"')", (text, found.start())
            assert after == "" or after.isspace() or after in "\"')", (text, found.start())


FORCED = [
    ("wrap", Kind.WRAP, {"left": "(", "right": ")"}, lambda t: t.strip().startswith("(") and t.strip().endswith(")")),
    ("first word", Kind.POSITION, {"unit": "words", "k": 1, "op": "is", "text": "Rivers"},
     lambda t: re.sub(r"\W", "", t.split()[0]).lower() == "rivers"),
    ("first sentence", Kind.POSITION, {"unit": "sentences", "k": 1, "op": "starts_with", "text": "In short"},
     lambda t: t.lower().startswith("in short")),
    ("last word", Kind.POSITION, {"unit": "words", "k": -1, "op": "is", "text": "done"},
     lambda t: re.sub(r"\W", "", t.split()[-1]).lower() == "done"),
    ("last sentence", Kind.POSITION, {"unit": "sentences", "k": -1, "op": "ends_with", "text": "the end."},
     lambda t: t.strip().lower().endswith("the end.")),
]


@pytest.mark.parametrize(("name", "kind", "params", "ok"), FORCED, ids=[row[0] for row in FORCED])
def test_forced_texts_hold_on_random_logits(tokenizer: Any, name: str, kind: Kind, params: dict[str, Any],
                                            ok: Any) -> None:
    constraints = [gen(kind, **params)]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"f"}
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, None)
        assert ok(state.text), state.text
        assert judged(constraints, state.text) == [], state.text


def test_form_caps_combine_with_named_kinds(tokenizer: Any) -> None:
    constraints = [
        gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0),
        gen(Kind.STRUCTURE, "nolist", layout="no_list"),
        gen(Kind.WRAP, "wrap", left="[", right="]"),
        Constraint(id="lower", kind=Kind.ALL_LOWERCASE),
        Constraint(id="words", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 40}),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == {"digits", "nolist", "wrap", "lower", "words"}
    bias = bias_towards(tokenizer, r"\d|^\s*-", 6.0)
    for seed in SEEDS:
        state = drive_with_bias(steering, BUDGET, seed, bias)
        assert judged(constraints, state.text) == [], state.text


def test_uncontrollable_forms_are_reported_uncontrolled(tokenizer: Any) -> None:
    constraints = [
        gen(Kind.POSITION, "third", unit="paragraphs", k=3, op="is", text="Rivers run."),  # a piece being a text
        gen(Kind.COUNT, "numbers", unit="numbers", relation="at least", n=2),
        gen(Kind.COPY, "copy", text="Describe a river.", change=True),
        gen(Kind.STRUCTURE, "responses", layout="responses", n=3, marker="Answer"),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
    assert steering.controlled == frozenset()
    assert steering.uncontrolled == {"third", "numbers", "copy", "responses"}


def test_impossible_form_combinations_are_conflicts(tokenizer: Any) -> None:
    cases = [
        [gen(Kind.STRUCTURE, "a", layout="no_list"), Constraint(id="b", kind=Kind.BULLET_COUNT, params={"n": 3})],
        [gen(Kind.WRAP, "a", left="(", right=")"), Constraint(id="b", kind=Kind.QUOTATION)],
        [gen(Kind.COUNT, "a", unit="punctuation", filter={"chars": "!"}, relation="at most", n=0),
         Constraint(id="b", kind=Kind.END_PHRASE, params={"phrase": "Thanks!"})],
        [gen(Kind.COUNT, "a", unit="words", relation="at most", n=5, per="sentences"),
         Constraint(id="b", kind=Kind.SENTENCE_COUNT, params={"relation": "at most", "n": 3}),
         Constraint(id="c", kind=Kind.WORD_COUNT, params={"relation": "at least", "n": 40})],
        [gen(Kind.COUNT, "a", unit="words", relation="at most", n=2, per="sentences"),
         Constraint(id="b", kind=Kind.START_PHRASE, params={"phrase": "Rivers run to the sea."})],
    ]
    for constraints in cases:
        with pytest.raises(ConflictError) as refused:
            compile_steering(constraints, tokenizer, prompt="Describe a river.", max_new_tokens=BUDGET)
        assert "a" in refused.value.extra["constraint_ids"]


@pytest.mark.model
def test_bundled_model_keeps_form_constraints(loaded_model: Any) -> None:
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 56
    prompt = "Give three reasons to visit a river, with dates if you know them."
    constraints = [
        gen(Kind.COUNT, "digits", unit="digits", relation="at most", n=0),
        gen(Kind.STRUCTURE, "nolist", layout="no_list"),
        gen(Kind.WRAP, "wrap", left="(", right=")"),
        gen(Kind.COUNT, "bang", unit="punctuation", filter={"chars": "!"}, relation="at least", n=2),
    ]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"digits", "nolist", "wrap", "bang"}
    plan = plan_prompt(tokenizer, prompt, constraints)
    result = decode(
        loaded_model.model, tokenizer, plan, steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert judged(constraints, result.answer) == [], result.answer
    assert len(re.findall(r"[A-Za-z]{3,}", result.answer)) >= 3, result.answer


@pytest.mark.model
def test_bundled_model_writes_owed_question_marks_as_punctuation(loaded_model: Any) -> None:
    """Three question marks owed: each ends a sentence or a clause after a word, where the
    model ended one (they were written at the next word end, "a timeless way to ???...")."""
    from inference.decoder.decode import decode
    from inference.decoder.options import DecodeOptions
    from inference.prompting import plan_prompt

    tokenizer = loaded_model.tokenizer
    budget = 48
    prompt = "Tell me about a morning walk by the sea."
    constraints = [gen(Kind.COUNT, "q", unit="punctuation", filter={"chars": "?"}, relation="at least", n=3)]
    steering = compile_steering(constraints, tokenizer, prompt=prompt, max_new_tokens=budget)
    assert steering.controlled == {"q"}
    result = decode(
        loaded_model.model, tokenizer, plan_prompt(tokenizer, prompt, constraints), steering=steering,
        options=DecodeOptions(width=2, max_new_tokens=budget, prune=False), constraints=constraints,
    )
    assert judged(constraints, result.answer) == [], result.answer
    assert re.findall(r"(?<![\w\"')])\?|\?(?![\s\"')]|$)", result.answer) == [], result.answer
