"""Token controllers over the real tokenizer, driven by random logits (fast)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import torch

from inference.decoder.compile import compile_steering
from inference.decoder.token_controllers import CharPolicy, ForbiddenWords
from inference.decoder.token_controllers.charset import split_utf8
from inference.decoder.token_controllers.count_tallies import Counts, count_text
from inference.decoder.vocab import vocab_tables
from reasoning.constraints.model import Constraint, Kind, Scope
from reasoning.constraints.verifiers import verify as verify_constraint
from reasoning.constraints.verifiers import verify_all

# The stand-in "model" below emits seeded random logits: the tokenizer, the
# vocabulary tables and the controllers are the real ones. It prefers nothing
# in particular and never wants to stop, so it reaches every corner of the
# controllers (odd tokens, byte fragments, forced closings).


def drive(steering: Any, steps: int, seed: int, spread: float = 4.0) -> Any:
    """Sample ``steps`` tokens from steered random logits; return the last state."""
    return drive_with_bias(steering, steps, seed, None, spread)


def drive_with_bias(
    steering: Any, steps: int, seed: int, bias: dict[int, float] | None, spread: float = 4.0
) -> Any:
    """Like ``drive``; ``bias`` adds a fixed logit to some token ids every step."""
    generator = torch.Generator().manual_seed(seed)
    size = steering.tables.size
    state = steering.initial_state()
    boost = torch.zeros(size)
    for token, value in (bias or {}).items():
        boost[token] = value
    for _ in range(steps):
        logits = torch.randn(1, size, generator=generator) * spread + boost
        adjusted = steering.apply([state], torch.log_softmax(logits, dim=-1))
        assert adjusted.shape == (1, size)
        assert torch.isfinite(adjusted[0]).any(), "a live row was left without any allowed token"
        probs = torch.softmax(adjusted[0], dim=-1)
        token = int(torch.multinomial(probs, 1, generator=generator))
        state = steering.advance(state, token)
        if state.finished:
            break
    return state



def c(kind: str, **params: Any) -> Constraint:
    return Constraint(id=kind, kind=Kind(kind), params=params)


def test_vocab_tables_describe_tokens(tokenizer: Any) -> None:
    tables = vocab_tables(tokenizer)
    comma = tokenizer.encode(",", add_special_tokens=False)[0]
    space_the = tokenizer.encode(" the", add_special_tokens=False)[0]
    assert tables.has_comma[comma] and not tables.has_comma[space_the]
    assert tables.starts_space[space_the] and tables.word_runs[space_the] == 1
    assert tables.special[tokenizer.eos_token_id]
    # A byte piece of a multi-byte character is a fragment, never "letter-free".
    pieces = tokenizer.encode("好", add_special_tokens=False)
    assert len(pieces) > 1 and all(tables.fragment[p] for p in pieces)
    assert b"".join(tables.token_bytes[p] for p in pieces).decode() == "好"
    assert vocab_tables(tokenizer) is tables


def test_vocab_tables_are_built_once_per_tokenizer_content(tokenizer: Any) -> None:
    """A tokenizer loaded again from the same files (another model load) shares the tables;
    one whose vocabulary differs (an added token) gets tables of its own."""
    from transformers import AutoTokenizer

    tables = vocab_tables(tokenizer)
    again = AutoTokenizer.from_pretrained(tokenizer.name_or_path)
    assert again is not tokenizer and vocab_tables(again) is tables
    grown = AutoTokenizer.from_pretrained(tokenizer.name_or_path)
    grown.add_tokens(["<tenet-test-token>"])
    other = vocab_tables(grown)
    assert other is not tables and other.size == tables.size + 1


def test_split_utf8_keeps_incomplete_tail() -> None:
    assert split_utf8("a好".encode()[:-1]) == ("a", "好".encode()[:-1])
    assert split_utf8(b"\xff\x00")[0] is None


@pytest.mark.parametrize(
    ("policy", "bad"),
    [
        (CharPolicy(no_comma=True), lambda t: "," in t or "\uff0c" in t),
        (CharPolicy(case="lower"), lambda t: any(ch.isupper() for ch in t)),
        (CharPolicy(case="upper"), lambda t: any(ch.islower() for ch in t)),
    ],
)
def test_policy_mask_admits_no_forbidden_character(tokenizer: Any, policy: CharPolicy, bad: Any) -> None:
    tables = vocab_tables(tokenizer)
    allowed = policy.allowed_mask(tables).nonzero().flatten().tolist()
    assert len(allowed) > 1000
    assert not any(bad(tables.texts[i]) for i in allowed)


def test_no_comma_refuses_the_full_width_comma_too(tokenizer: Any) -> None:
    """Our verifier refuses "，" under no_comma; its byte pieces must not slip through."""
    from reasoning.constraints.verifiers import verify_all

    steering = compile_steering([c("no_comma")], tokenizer, prompt="x", max_new_tokens=60)
    pieces = tokenizer.encode("\uff0c", add_special_tokens=False) + tokenizer.encode("好\uff0c", add_special_tokens=False)
    for seed in range(2):
        state = drive_with_bias(steering, 60, seed, {t: 9.0 for t in pieces})
        assert "\uff0c" not in state.text and "," not in state.text
        assert all(v.satisfied for v in verify_all([c("no_comma")], state.text))


def test_masked_mass_moves_to_case_folded_variant(tokenizer: Any) -> None:
    steering = compile_steering([c("all_lowercase")], tokenizer, prompt="x")
    tables = steering.tables
    upper = tokenizer.encode(" The", add_special_tokens=False)[0]
    lower = tokenizer.encode(" the", add_special_tokens=False)[0]
    logits = torch.full((1, tables.size), -20.0)
    logits[0, upper] = 10.0
    logits[0, lower] = 5.0
    lp = torch.log_softmax(logits, dim=-1)
    out = steering.apply([steering.initial_state()], lp)
    assert out[0, upper] == float("-inf")
    assert out[0, lower] > lp[0, upper] - 1e-3  # " The"'s mass now sits on " the"
    assert int(out[0].argmax()) == lower


@pytest.mark.parametrize("seed", range(2))
def test_random_model_obeys_case_comma_and_closes_structure(tokenizer: Any, seed: int) -> None:
    constraints = [
        c("no_comma"),
        c("all_lowercase"),
        c("title"),
        c("bullet_count", n=3),
        c("end_phrase", phrase="Is there anything else I can help with?"),
        c("quotation"),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=90)
    state = drive(steering, 90, seed)
    text = state.text
    assert "," not in text and text == text.lower()
    assert text.startswith('"<<') and text.endswith('is there anything else i can help with?"')
    assert re.search(r"<<[^\n]+>>", text)
    bullets = re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE) + re.findall(r"^\s*-.*$", text, flags=re.MULTILINE)
    assert len(bullets) == 3
    assert steering.unmet(state) == ()


def test_forbidden_word_split_across_tokens_never_appears(tokenizer: Any) -> None:
    word = "financial"
    pieces = tokenizer.encode(" " + word, add_special_tokens=False)
    parts = [tokenizer.encode(p, add_special_tokens=False) for p in (" fin", "anc", "ial")]
    assert all(len(p) == 1 for p in parts)
    split_ids = [p[0] for p in parts]
    steering = compile_steering([c("forbidden_words", words=[word, "risk"])], tokenizer, prompt="x", max_new_tokens=80)
    bias = {t: 9.0 for t in split_ids + pieces}
    bias[tokenizer.encode(".", add_special_tokens=False)[0]] = 7.0
    for seed in range(2):
        state = drive_with_bias(steering, 80, seed, bias)
        assert "fin" in state.text  # the model kept trying
        assert not re.search(rf"\b{word}\b", state.text, flags=re.IGNORECASE)


def test_forbidden_words_checker_window() -> None:
    words = ForbiddenWords(("risk",))
    assert words.token_ok("the ri", "sk") and words.ends_open("the risk")  # open: "risky" may follow
    assert not words.token_ok("the risk", " ")  # closed: now it is the word
    assert not words.token_ok("the ri", "sk.")
    assert words.token_ok("the ri", "sky") and not words.ends_open("the risky")
    assert words.token_ok("the b", "risk")  # "brisk" is another word
    assert not words.ends_ok("a RISK")


def test_overlapping_forbidden_phrases_are_all_seen() -> None:
    words = ForbiddenWords(("a b c", "b"))
    assert not words.token_ok("x a b", " c")  # "a b c" is open, but "b" inside it is closed


BANK_WORDS = [" bank", "bank", " Bank", " banking", "ing", "s"]


@pytest.mark.parametrize("extra", [[], [("no_comma", {})], [("word_count", {"relation": "less than", "n": 30})]])
def test_forbidden_prefix_word_never_dead_ends_nor_bans_longer_words(tokenizer: Any, extra: list[Any]) -> None:
    """"bank" banned as a whole word: the model that keeps reaching for it is
    never left without a token, never writes it, and may still write
    "banking" / "banks" by continuing the word (the verifier's semantics)."""
    from reasoning.constraints.verifiers import verify_all

    constraints = [c("forbidden_words", words=["bank"]), *[c(k, **p) for k, p in extra]]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=80)
    ids = {w: tokenizer.encode(w, add_special_tokens=False)[0] for w in BANK_WORDS}
    bias = {ids[" bank"]: 9.0, ids["bank"]: 8.0, ids[" Bank"]: 8.0, ids["ing"]: 6.0, ids["s"]: 6.0}
    bias[tokenizer.encode(".", add_special_tokens=False)[0]] = 7.0
    bias[tokenizer.encode(" the", add_special_tokens=False)[0]] = 7.0
    longer = 0
    for seed in range(3):
        state = drive_with_bias(steering, 80, seed, bias)
        assert not re.search(r"\bbank\b", state.text, flags=re.IGNORECASE), state.text
        assert steering.unmet(state) == (), state.text
        assert all(v.satisfied for v in verify_all(constraints, state.text)), state.text
        longer += len(re.findall(r"bank\w", state.text, flags=re.IGNORECASE))
    assert longer > 0  # " bank" + "s" / "ing" was written, not refused


def test_after_an_open_forbidden_word_only_its_continuations_stay(tokenizer: Any) -> None:
    steering = compile_steering([c("forbidden_words", words=["bank"])], tokenizer, prompt="x", max_new_tokens=40)
    state = steering.initial_state()
    for token in tokenizer.encode("The bank", add_special_tokens=False):
        state = steering.advance(state, token)
    assert state.text == "The bank"
    lp = torch.log_softmax(torch.randn(1, steering.tables.size, generator=torch.Generator().manual_seed(0)), dim=-1)
    out = steering.apply([state], lp)[0]
    kept = torch.isfinite(out).nonzero().flatten().tolist()
    assert kept and tokenizer.eos_token_id not in kept
    assert all(re.match(r"\w", steering.tables.texts[i]) for i in kept)
    assert not any(re.search(r"\bbank\b", "The bank" + steering.tables.texts[i]) for i in kept)


def test_json_schema_output_parses(tokenizer: Any) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    steering = compile_steering([c("json_format", schema=schema)], tokenizer, prompt="x", max_new_tokens=60)
    state = drive(steering, 60, 1)
    assert state.finished and steering.unmet(state) == ()
    value = json.loads(state.text)
    assert set(value) == {"name", "age"} and isinstance(value["age"], int)


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_depth(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_json_answer_against_a_model_that_nests_objects_closes_in_its_budget(tokenizer: Any, seed: int) -> None:
    """IFEval 1094 once ran out of budget 26 objects deep: the schema-free object nests objects at
    most three deep, so the landing always has a closing path."""
    steering = compile_steering([c("json_format")], tokenizer, prompt="x", max_new_tokens=60)
    nesting = {t: 8.0 for t in range(steering.tables.size) if "{" in steering.tables.texts[t]}
    state = drive_with_bias(steering, 60, seed, nesting)
    value = json.loads(state.text)
    assert isinstance(value, dict) and value and _depth(value) <= 3, state.text


def test_json_keys_asked_for_are_written_and_verified(tokenizer: Any) -> None:
    constraint = c("json_format", keys=["name", "city"])
    steering = compile_steering([constraint], tokenizer, prompt="x", max_new_tokens=60)
    assert steering.controlled == {"json_format"}
    # A model that closes its strings soon (the budget's landing closes the object only once
    # no required key is left to write).
    quotes = {t: 6.0 for t in range(steering.tables.size) if steering.tables.texts[t].startswith('"')}
    state = drive_with_bias(steering, 60, 2, quotes)
    assert {"name", "city"} <= set(json.loads(state.text)), state.text
    assert [v.satisfied for v in verify_all([constraint], state.text)] == [True]
    assert [v.satisfied for v in verify_all([constraint], '{"name": "Ann"}')] == [False]


def test_section_markers_are_heading_lines_with_a_colon(tokenizer: Any) -> None:
    constraint = c("sections", splitter="Part", n=3)
    steering = compile_steering([constraint], tokenizer, prompt="x", max_new_tokens=60)
    state = drive(steering, 60, 4)
    assert re.findall(r"^Part (\d):$", state.text, flags=re.MULTILINE) == ["1", "2", "3"], state.text
    assert [v.satisfied for v in verify_all([constraint], state.text)] == [True]


def test_word_limit_holds_inside_a_json_answer(tokenizer: Any) -> None:
    """A JSON string is text: the word bound masks it too (the format, not the
    bound, is what a random model may fail, and that is reported)."""
    from reasoning.constraints.textstats import count_words

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
              "additionalProperties": False}
    steering = compile_steering(
        [c("json_format", schema=schema), c("word_count", relation="less than", n=10)],
        tokenizer, prompt="x", max_new_tokens=60,
    )
    assert steering.controlled == {"json_format", "word_count"}
    for seed in range(2):
        state = drive(steering, 60, seed)
        assert count_words(state.text) < 10, state.text
        assert set(steering.unmet(state)) <= {"format"}


def test_constrained_options_give_exactly_one_option(tokenizer: Any) -> None:
    options = ["My answer is yes.", "My answer is no.", "My answer is maybe."]
    steering = compile_steering([c("constrained_response", options=options)], tokenizer, prompt="x")
    state = drive(steering, 30, 3)
    assert state.text in options


def test_chinese_language_keeps_han_script(tokenizer: Any) -> None:
    steering = compile_steering([c("response_language", language="zh")], tokenizer, prompt="x", max_new_tokens=60)
    han = [tokenizer.encode(ch, add_special_tokens=False) for ch in "中文你好世界我们"]
    bias = {t: 6.0 for ids in han for t in ids}
    state = drive_with_bias(steering, 60, 0, bias)
    letters = [ch for ch in state.text if ch.isalpha()]
    assert letters and all("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in letters)
    assert "\ufffd" not in state.text


def test_word_and_sentence_limits_hold(tokenizer: Any) -> None:
    steering = compile_steering(
        [c("word_count", relation="less than", n=25), c("sentence_count", relation="less than", n=3)],
        tokenizer,
        prompt="x",
        max_new_tokens=120,
    )
    period = tokenizer.encode(".", add_special_tokens=False)[0]
    for seed in range(2):
        state = drive_with_bias(steering, 120, seed, {period: 5.0})
        assert len(re.findall(r"\w+", state.text)) < 25
        ends = re.findall(r"[.!?]+(?=\s)", state.text + " ")
        assert len(ends) <= 2


def test_word_limit_counts_byte_pieces_and_han_characters(tokenizer: Any) -> None:
    """Han characters arrive as byte pieces that are words only once complete;
    our verifier counts each Han character as a word, IFEval a run as one.
    The limit holds under both counts."""
    from reasoning.constraints.textstats import count_words

    steering = compile_steering(
        [c("word_count", relation="less than", n=20)], tokenizer, prompt="x", max_new_tokens=120
    )
    han = [t for ch in "中文你好世界我们的是在有人" for t in tokenizer.encode(ch, add_special_tokens=False)]
    assert any(steering.tables.fragment[t] for t in han)
    for seed in range(2):
        state = drive_with_bias(steering, 120, seed, {t: 7.0 for t in han})
        assert any("\u4e00" <= ch <= "\u9fff" for ch in state.text)
        assert count_words(state.text) < 20, state.text
        assert len(re.findall(r"\w+", state.text)) < 20
        assert steering.unmet(state) == ()


def test_forced_first_word_stays_a_word_of_its_own(tokenizer: Any) -> None:
    steering = compile_steering(
        [c("nth_paragraph_first_word", n=2, nth=1, first_word="then"), c("all_lowercase")],
        tokenizer, prompt="x", max_new_tokens=60,
    )
    glue = {tokenizer.encode(w, add_special_tokens=False)[0]: 12.0 for w in ("ce", "ore", "ername")}
    for seed in range(3):
        state = drive_with_bias(steering, 60, seed, glue)
        first = state.text.split("\n\n")[0].split()[0]
        assert re.split(r"[.,?!'\"]", first)[0] == "then", state.text


@pytest.mark.parametrize("opening", [("quotation", {}), ("start_phrase", {"phrase": "Here you go"})])
def test_bullets_start_their_own_line_after_an_opening(tokenizer: Any, opening: tuple[str, dict[str, Any]]) -> None:
    from reasoning.constraints.textstats import count_bullets

    kind, params = opening
    steering = compile_steering([c("bullet_count", n=3), c(kind, **params)], tokenizer, prompt="x", max_new_tokens=90)
    state = drive(steering, 90, 0)
    assert count_bullets(state.text) == 3, state.text


@pytest.mark.parametrize("enders", [['."', " "], ["\u3002"], ['!)', " ", "?"]])
def test_sentence_limit_counts_quoted_and_chinese_ends(tokenizer: Any, enders: list[str]) -> None:
    """A period before a closing quote, or a "。", ends a sentence for our verifier
    (and for Punkt); the bound must count them."""
    from reasoning.constraints.textstats import count_sentences

    steering = compile_steering([c("sentence_count", relation="less than", n=3)], tokenizer, prompt="x", max_new_tokens=100)
    bias = {t: 8.0 for e in enders for t in tokenizer.encode(e, add_special_tokens=False)}
    for seed in range(2):
        state = drive_with_bias(steering, 100, seed, bias)
        assert count_sentences(state.text) < 3, state.text
        assert steering.unmet(state) == ()


@pytest.mark.parametrize(
    ("text", "firm"),
    [
        ("The cat sat. The dog ran! Is it? Yes. No", 4),
        ("The cat sat... The dog ran. The end", 1),
        ("It is 3. Then we go. Done", 1),
        ("See e.g. this. And Mr. Smith left. Ok", 2),
        ('He said "stop." Then he left.\n\nNew one', 2),
        ("你好。好的！", 2),
    ],
)
def test_firm_sentence_ends_never_exceed_either_judge(text: str, firm: int) -> None:
    """Minima count only the ends that our verifier and Punkt both count (an
    ellipsis, "3." or "Mr." may not end a sentence for one of them)."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    from reasoning.constraints.textstats import count_sentences

    counts = count_text(text)
    assert counts.firm_sentences == firm
    assert counts.firm_sentences <= count_sentences(text)
    if text.isascii():
        assert counts.firm_sentences <= len(PunktSentenceTokenizer().tokenize(text))
    # Token by token, the tally is the same.
    pieces = Counts()
    for ch in text:
        pieces = pieces.add(ch, None)
    assert pieces.firm_sentences == firm


def test_final_sentence_end_counts_for_a_minimum(tokenizer: Any) -> None:
    """A text ending in "word." has that sentence for every judge; an ellipsis does not."""
    steering = compile_steering([c("sentence_count", relation="at least", n=2)], tokenizer, prompt="x", max_new_tokens=60)
    for text, unmet in (("The cat sat. The dog ran.", ()), ("The cat sat. The dog ran...", ("minimum",))):
        state = steering.initial_state()
        for token in tokenizer.encode(text, add_special_tokens=False):
            state = steering.advance(state, token)
        assert steering.unmet(state) == unmet, text


@pytest.mark.parametrize(
    ("constraints", "budget"),
    [
        ([c("sentence_count", relation="at least", n=5)], 60),
        ([c("sentence_count", relation="at least", n=4), c("word_count", relation="less than", n=40)], 70),
        (
            [
                c("sentence_count", relation="at least", n=5),
                c("sentence_count", relation="less than", n=7),
                c("all_capitals"),
            ],
            70,
        ),
        ([c("sentence_count", relation="at least", n=4), c("no_comma"), c("title"), c("postscript", marker="P.S.")], 70),
    ],
)
def test_minimum_sentences_close_sentences_before_the_budget_runs_out(
    tokenizer: Any, constraints: list[Constraint], budget: int
) -> None:
    """A model that never ends a sentence is pushed to end them once the token
    budget (or a word maximum) left is tight for the sentences still owed, so
    the minimum holds by our verifier and by IFEval's rule (Punkt, untrained
    as the steering bench runs it), with the other bounds and the layout."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    from reasoning.constraints.textstats import count_sentences
    from reasoning.constraints.verifiers import verify_all

    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=budget)
    tables = steering.tables
    enders = [t for t in range(tables.size) if tables.sentence_ends[t] or tables.ends_terminal[t]]
    need = max(int(k.params["n"]) for k in constraints if k.params.get("relation") == "at least")
    punkt = PunktSentenceTokenizer()
    for seed in range(3):
        state = drive_with_bias(steering, budget, seed, {t: -30.0 for t in enders})
        assert state.n_tokens <= budget
        assert count_sentences(state.text) >= need, state.text
        assert len(punkt.tokenize(state.text)) >= need, state.text
        assert all(v.satisfied for v in verify_all(constraints, state.text)), state.text
        assert steering.unmet(state) == (), state.text


def test_a_word_minimum_keeps_the_last_allowed_sentence_open(tokenizer: Any) -> None:
    """With at most 2 sentences and at least 40 words, a model eager to end sentences
    may end its second (last) one only once the 40 words are there."""
    from reasoning.constraints.textstats import count_sentences

    constraints = [
        c("sentence_count", relation="less than", n=3),
        c("word_count", relation="at least", n=40),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=200)
    tables = steering.tables
    enders = [t for t in range(tables.size) if tables.sentence_ends[t] or tables.ends_terminal[t]]
    for seed in range(3):
        state = drive_with_bias(steering, 200, seed, {t: 8.0 for t in enders})
        assert len(re.findall(r"\w+", state.text)) >= 40, state.text
        assert count_sentences(state.text) <= 2, state.text
        assert steering.unmet(state) == (), state.text


def test_minimum_words_hold_back_the_end(tokenizer: Any) -> None:
    steering = compile_steering([c("word_count", relation="at least", n=30)], tokenizer, prompt="x", max_new_tokens=200)
    eos = tokenizer.eos_token_id
    state = drive_with_bias(steering, 200, 0, {eos: 30.0})
    assert state.finished
    assert len(re.findall(r"\w+", state.text)) >= 30


@pytest.mark.parametrize("need", [30, 60])
def test_a_word_minimum_is_met_by_a_model_that_spends_its_budget_on_no_words(
    tokenizer: Any, need: int
) -> None:
    """A model that prefers punctuation, markup and newlines to words would end the budget
    short of the minimum; once the minimum needs a word from nearly every token left,
    every token adds one."""
    budget = need + need // 2
    steering = compile_steering(
        [c("word_count", relation="at least", n=need)], tokenizer, prompt="x", max_new_tokens=budget
    )
    wordless = (steering.tables.word_runs == 0) & ~steering.tables.special
    bias = {int(t): 6.0 for t in torch.nonzero(wordless).flatten()}
    for seed in range(3):
        state = drive_with_bias(steering, budget, seed, bias)
        assert len(re.findall(r"\w+", state.text)) >= need, state.text
        assert steering.unmet(state) == (), state.text


def test_placeholders_are_inserted_when_the_model_stops(tokenizer: Any) -> None:
    steering = compile_steering([c("placeholders", n=2)], tokenizer, prompt="x", max_new_tokens=120)
    state = drive_with_bias(steering, 120, 2, {tokenizer.eos_token_id: 12.0})
    assert len(re.findall(r"\[.*?\]", state.text)) >= 2
    assert steering.unmet(state) == ()


def test_placeholders_are_paced_when_the_model_never_stops_or_opens_one(tokenizer: Any) -> None:
    """A model that avoids both EOS and brackets still gets every owed placeholder,
    spread over the text rather than piled up where the budget ends."""
    steering = compile_steering([c("placeholders", n=5)], tokenizer, prompt="x", max_new_tokens=160)
    brackets = [t for t in range(steering.tables.size) if steering.tables.has_bracket[t]]
    bias = {t: -30.0 for t in brackets} | {tokenizer.eos_token_id: -30.0}
    for seed in range(3):
        state = drive_with_bias(steering, 160, seed, bias)
        spans = [m.start() for m in re.finditer(r"\[[^\]]+\]", state.text)]
        assert len(spans) >= 5, state.text
        assert spans[0] < len(state.text) / 2, state.text
        assert steering.unmet(state) == (), state.text


@pytest.mark.parametrize(("owed", "limit", "budget"), [(4, 25, 120), (3, 12, 80), (2, 8, 60)])
def test_paced_placeholders_never_break_a_tight_word_maximum(
    tokenizer: Any, owed: int, limit: int, budget: int
) -> None:
    """A due placeholder opens a bracket, and a placeholder is a word: under a word maximum
    that leaves little room the placeholders still fit, whether the model avoids brackets
    and the end or wants to stop early."""
    constraints = [c("placeholders", n=owed), c("word_count", relation="less than", n=limit)]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=budget)
    brackets = [t for t in range(steering.tables.size) if steering.tables.has_bracket[t]]
    avoid = {t: -30.0 for t in brackets} | {tokenizer.eos_token_id: -30.0}
    for bias in (avoid, {tokenizer.eos_token_id: 5.0}):
        for seed in range(3):
            state = drive_with_bias(steering, budget, seed, bias)
            verdicts = [verify_constraint(k, state.text) for k in constraints]
            assert all(v.satisfied for v in verdicts), (state.text, verdicts)
            assert steering.unmet(state) == (), state.text


def test_dead_end_is_reported_not_hidden(tokenizer: Any) -> None:
    # Two required properties need a comma between them; no_comma forbids it.
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    steering = compile_steering([c("json_format", schema=schema), c("no_comma")], tokenizer, prompt="x", max_new_tokens=40)
    state = drive(steering, 40, 0)
    assert "," not in state.text
    assert "format" in steering.unmet(state)


SHOWN = ["E1", "E2", "E3", "E12"]


@pytest.mark.parametrize(
    "extra",
    [[], [("word_count", {"relation": "less than", "n": 20})], [("bullet_count", {"n": 3}), ("quotation", {})]],
)
def test_citation_of_a_shown_fact_is_written_before_the_end(tokenizer: Any, extra: list[Any]) -> None:
    """A model that wants to stop at once still cites ``min`` distinct shown facts,
    and cites only facts that exist (a strong pull towards E9 changes nothing)."""
    from reasoning.constraints.citations import evidence_ids
    from reasoning.constraints.verifiers import verify_all

    cite = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 2}, scope=Scope.CITATION)
    constraints = [cite, *[c(k, **p) for k, p in extra]]
    steering = compile_steering(constraints, tokenizer, prompt="x", max_new_tokens=70, evidence_ids=SHOWN)
    assert "cite" in steering.controlled
    nine = tokenizer.encode("9", add_special_tokens=False)[0]
    for seed in range(2):
        state = drive_with_bias(steering, 70, seed, {tokenizer.eos_token_id: 15.0, nine: 8.0})
        cited = evidence_ids(state.text)
        assert len(cited) >= 2 and set(cited) <= set(SHOWN), state.text
        assert steering.unmet(state) == ()
        assert all(v.satisfied for v in verify_all(constraints, state.text)), state.text


def test_model_picks_which_fact_to_cite(tokenizer: Any) -> None:
    cite = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 1}, scope=Scope.CITATION)
    steering = compile_steering([cite], tokenizer, prompt="x", max_new_tokens=40, evidence_ids=SHOWN)
    three = tokenizer.encode("3", add_special_tokens=False)[0]
    state = drive_with_bias(steering, 40, 0, {tokenizer.eos_token_id: 15.0, three: 10.0})
    assert "[E3]" in state.text


def test_a_branch_cites_only_the_ids_its_own_prompt_shows(tokenizer: Any) -> None:
    """Bound to one branch's ids, the controller refuses the other branch's id
    however strongly the model pulls towards it (the request-wide steering
    writes it), and binding compiles nothing again."""
    from reasoning.constraints.citations import evidence_ids

    cite = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 1}, scope=Scope.CITATION)
    steering = compile_steering([cite], tokenizer, prompt="x", max_new_tokens=40, evidence_ids=["E1", "E2"])
    first, second = steering.for_evidence(["E1"]), steering.for_evidence(["E2"])
    assert first.tables is steering.tables and first._segments is steering._segments
    assert steering.for_evidence(["E2", "E1", "E1"]) is not steering
    assert steering.for_evidence(["E1", "E2"]) is steering
    one, two = (tokenizer.encode(d, add_special_tokens=False)[0] for d in ("1", "2"))
    eos = tokenizer.eos_token_id
    assert "[E2]" in drive_with_bias(steering, 40, 0, {eos: 15.0, two: 10.0}).text
    for bound, own, other in ((first, "E1", two), (second, "E2", one)):
        assert bound.controlled == {"cite"}
        for seed in range(2):
            state = drive_with_bias(bound, 40, seed, {eos: 15.0, other: 10.0})
            assert set(evidence_ids(state.text)) == {own}, state.text
            assert bound.unmet(state) == ()


def test_a_branch_showing_fewer_ids_than_the_minimum_cites_them_all_and_reports_it(tokenizer: Any) -> None:
    """It cannot meet ``min``: it cites every id it shows (none when it shows
    none), never another branch's, and ``unmet`` says "citations"."""
    from reasoning.constraints.citations import evidence_ids

    cite = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 2}, scope=Scope.CITATION)
    steering = compile_steering([cite], tokenizer, prompt="x", max_new_tokens=40, evidence_ids=SHOWN)
    short = steering.for_evidence(["E3"])
    assert "cite" in short.assisted and "cite" not in short.controlled
    assert "cite" in steering.controlled
    eos = tokenizer.eos_token_id
    for seed in range(2):
        state = drive_with_bias(short, 40, seed, {eos: 15.0})
        assert state.finished and evidence_ids(state.text) == ["E3"], state.text
        assert short.unmet(state) == ("citations",)
    blind = steering.for_evidence([])
    state = drive_with_bias(blind, 40, 0, {eos: 15.0})
    assert state.finished and "[" not in state.text, state.text
    assert blind.unmet(state) == ("citations",)
