"""compile_steering: what it controls, what it refuses, how it reads parameters."""

from __future__ import annotations

from typing import Any

import pytest

from inference.decoder.compile import branch_steerings, compile_steering
from inference.decoder.token_controllers.citing import Citations
from inference.decoder.token_controllers.keywords import Keywords
from inference.decoder.token_controllers.template import Free, Literal
from reasoning.constraints.model import Constraint, Hardness, Kind, Scope
from reasoning.errors import ConflictError, InvalidInput, LimitExceeded


def c(kind: str, cid: str | None = None, **params: Any) -> Constraint:
    return Constraint(id=cid or kind, kind=Kind(kind), params=params)


def test_controlled_assisted_and_uncontrolled_are_reported(tokenizer: Any) -> None:
    constraints = [
        c("no_comma"),
        c("title"),
        c("capital_word_frequency", relation="less than", n=2),
        c("response_language", language="de"),
        Constraint(id="window", kind=Kind.CITATION_TIME_WINDOW, params={"not_before": "2020-01-01"}, scope=Scope.EVIDENCE),
    ]
    steering = compile_steering(constraints, tokenizer, prompt="x")
    assert steering.controlled == {"no_comma", "title"}
    assert steering.assisted == {"response_language"}  # a Latin mask does not pin German
    assert steering.uncontrolled == {"capital_word_frequency", "window"}


def test_script_languages_are_controlled(tokenizer: Any) -> None:
    steering = compile_steering([c("response_language", language="zh")], tokenizer, prompt="x")
    assert steering.controlled == {"response_language"}


def test_soft_static_constraint_is_a_bias_not_a_mask(tokenizer: Any) -> None:
    import torch

    soft = Constraint(id="s", kind=Kind.NO_COMMA, hardness=Hardness.SOFT)
    steering = compile_steering([soft], tokenizer, prompt="x")
    assert steering.assisted == {"s"} and not steering.controlled
    comma = tokenizer.encode(",", add_special_tokens=False)[0]
    lp = torch.log_softmax(torch.zeros(1, steering.tables.size), dim=-1)
    out = steering.apply([steering.initial_state()], lp)
    assert torch.isfinite(out[0, comma]) and out[0, comma] < lp[0, comma]


def test_layout_literals_follow_the_case_policy(tokenizer: Any) -> None:
    steering = compile_steering(
        [c("all_lowercase"), c("postscript", marker="P.S."), c("end_phrase", phrase="Any Questions?")],
        tokenizer,
        prompt="x",
    )
    literals = [s.segment.text for s in steering._segments if isinstance(s.segment, Literal)]
    assert any("p.s." in text for text in literals)
    assert literals[-1].endswith("any questions?")


def test_bullets_layout_has_one_literal_per_bullet(tokenizer: Any) -> None:
    steering = compile_steering([c("bullet_count", n=4)], tokenizer, prompt="x")
    segments = [s.segment for s in steering._segments]
    assert sum(isinstance(s, Literal) and "* " in s.text for s in segments) == 4
    assert sum(isinstance(s, Free) and s.gate for s in segments) == 1


@pytest.mark.parametrize(
    ("constraints", "ids"),
    [
        ([c("all_lowercase"), c("all_capitals")], {"all_lowercase", "all_capitals"}),
        ([c("no_comma"), c("end_phrase", phrase="Thanks, bye.")], {"no_comma", "end_phrase"}),
        ([c("json_format"), c("bullet_count", n=3)], {"json_format", "bullet_count"}),
        ([c("json_format"), c("title")], {"json_format", "title"}),
        ([c("word_count", relation="at least", n=100), c("word_count", "w2", relation="less than", n=50)], {"word_count", "w2"}),
        ([c("response_language", language="zh"), c("response_language", "r2", language="ru")], {"response_language", "r2"}),
        ([c("all_capitals"), c("constrained_response", options=["My answer is yes."])], {"all_capitals", "constrained_response"}),
        # Keywords: written with a banned comma, holding a forbidden word, more often than allowed.
        ([c("no_comma"), c("keywords_present", keywords=["Hello, world"])], {"no_comma", "keywords_present"}),
        ([c("forbidden_words", words=["risk"]), c("keywords_present", keywords=["risk appetite"])], {"forbidden_words", "keywords_present"}),
        (
            [c("keyword_frequency", keyword="risk", relation="at least", n=3), c("keyword_frequency", "k2", keyword="Risk", relation="less than", n=2)],
            {"keyword_frequency", "k2"},
        ),
        (
            [c("keywords_present", keywords=["risky bet"]), c("keyword_frequency", keyword="risk", relation="less than", n=1)],
            {"keywords_present", "keyword_frequency"},
        ),
        (
            [c("end_phrase", phrase="No risk, no risk."), c("keyword_frequency", keyword="risk", relation="at most", n=1)],
            {"keyword_frequency"},
        ),
        (
            [c("keyword_frequency", keyword="river bank", relation="at least", n=4), c("word_count", relation="less than", n=8)],
            {"keyword_frequency", "word_count"},
        ),
    ],
)
def test_impossible_sets_are_refused_with_their_ids(tokenizer: Any, constraints: list[Constraint], ids: set[str]) -> None:
    with pytest.raises(ConflictError) as raised:
        compile_steering(constraints, tokenizer, prompt="x")
    assert set(raised.value.extra["constraint_ids"]) == ids


def test_budget_too_small_for_minimum_is_refused(tokenizer: Any) -> None:
    with pytest.raises(LimitExceeded):
        compile_steering([c("word_count", relation="at least", n=300)], tokenizer, prompt="x", max_new_tokens=100)
    with pytest.raises(LimitExceeded):
        compile_steering(
            [c("keyword_frequency", keyword="risk", relation="at least", n=30)], tokenizer, prompt="x", max_new_tokens=20
        )


def test_keywords_are_controlled_where_they_can_be_written(tokenizer: Any) -> None:
    """A keyword minimum needs running text: in a JSON answer, or with layout
    characters in the keyword, it is left to the prompt; a maximum is a
    per-token check and holds in a JSON answer too."""
    present = c("keywords_present", keywords=["risk"])
    capped = c("keyword_frequency", keyword="risk", relation="less than", n=2)
    assert compile_steering([present, capped], tokenizer, prompt="x").controlled == {"keywords_present", "keyword_frequency"}
    in_json = compile_steering([present, capped, c("json_format")], tokenizer, prompt="x")
    assert in_json.uncontrolled == {"keywords_present"}
    assert "keyword_frequency" in in_json.controlled
    markup = compile_steering([c("keywords_present", keywords=["*risk*"])], tokenizer, prompt="x")
    assert markup.uncontrolled == {"keywords_present"}


def test_keywords_follow_the_case_policy_and_merge(tokenizer: Any) -> None:
    steering = compile_steering(
        [
            c("all_capitals"),
            c("keywords_present", keywords=["Risk"]),
            c("keyword_frequency", keyword="risk", relation="at least", n=2),
            c("keyword_frequency", "k2", keyword="RISK", relation="less than", n=4),
        ],
        tokenizer,
        prompt="x",
    )
    keywords = steering.spec(Keywords)
    assert keywords is not None
    (only,) = keywords.items
    assert (only.text, only.at_least, only.at_most) == ("RISK", 2, 3)
    assert set(only.sources) == {"keywords_present", "keyword_frequency", "k2"}


@pytest.mark.parametrize(
    "constraint",
    [
        c("word_count", relation="about", n=3),
        c("word_count", relation="at least"),
        c("regex_format", pattern="(unclosed"),
        c("letter_frequency", letter="ab", relation="at least", n=2),
        c("nth_paragraph_first_word", n=2, nth=3, first_word="so"),
        c("end_phrase", phrase="  "),
    ],
)
def test_malformed_parameters_are_invalid_input(tokenizer: Any, constraint: Constraint) -> None:
    with pytest.raises(InvalidInput):
        compile_steering([constraint], tokenizer, prompt="x")


def test_repeat_prompt_falls_back_to_the_prompt(tokenizer: Any) -> None:
    steering = compile_steering([c("repeat_prompt")], tokenizer, prompt="Say hi.")
    first = steering._segments[0].segment
    assert isinstance(first, Literal) and first.text.startswith("Say hi.")


# One constraint of every kind, with parameters under which a controllable kind
# is controlled (a script language, a letter maximum, highlights that fit).
EXAMPLE_PARAMS: dict[Kind, dict[str, Any]] = {
    Kind.RESPONSE_LANGUAGE: {"language": "zh"},
    Kind.KEYWORDS_PRESENT: {"keywords": ["river"]},
    Kind.FORBIDDEN_WORDS: {"words": ["bank"]},
    Kind.KEYWORD_FREQUENCY: {"keyword": "river", "relation": "at least", "n": 2},
    Kind.LETTER_FREQUENCY: {"letter": "z", "relation": "less than", "n": 3},
    Kind.WORD_COUNT: {"relation": "less than", "n": 50},
    Kind.SENTENCE_COUNT: {"relation": "at most", "n": 4},
    Kind.PARAGRAPH_COUNT: {"n": 2},
    Kind.NTH_PARAGRAPH_FIRST_WORD: {"n": 2, "nth": 2, "first_word": "then"},
    Kind.BULLET_COUNT: {"n": 3},
    Kind.HIGHLIGHTED_SECTIONS: {"n": 1},
    Kind.SECTIONS: {"splitter": "Section", "n": 2},
    Kind.PLACEHOLDERS: {"n": 1},
    Kind.POSTSCRIPT: {"marker": "P.S."},
    Kind.TITLE: {},
    Kind.JSON_FORMAT: {},
    Kind.REGEX_FORMAT: {"pattern": "[a-z]+"},
    Kind.CONSTRAINED_RESPONSE: {"options": ["yes", "no"]},
    Kind.ALL_LOWERCASE: {},
    Kind.ALL_CAPITALS: {},
    Kind.CAPITAL_WORD_FREQUENCY: {"relation": "at least", "n": 2},
    Kind.NO_COMMA: {},
    Kind.QUOTATION: {},
    Kind.TWO_RESPONSES: {},
    Kind.REPEAT_PROMPT: {"prompt_to_repeat": "Describe a river."},
    Kind.START_PHRASE: {"phrase": "Well"},
    Kind.END_PHRASE: {"phrase": "That is all."},
    Kind.CITATION_TIME_WINDOW: {"not_before": "2020-01-01"},
    Kind.CITE_SOURCES: {"min": 1},
    Kind.JURISDICTION: {"code": "EU"},
    Kind.NUMERIC_PRECISION: {"decimals": 2},
    Kind.COUNT: {"unit": "emoji", "relation": "at most", "n": 0},
    Kind.POSITION: {"unit": "words", "k": 3, "op": "is", "text": "river"},
    Kind.WRAP: {"left": "(", "right": ")"},
    Kind.STRUCTURE: {"layout": "table"},
    Kind.COPY: {"text": "Describe a river.", "change": True, "replace": [["river", "lake"]]},
    Kind.SPREAD: {"unit": "words", "per": "sentences", "max_diff": 4},
}


@pytest.mark.parametrize("kind", list(Kind))
def test_catalog_controllable_flag_matches_what_compile_controls(tokenizer: Any, kind: Kind) -> None:
    """The catalog is the one source of truth: a kind it calls controllable gets
    a controller, and a kind it does not is never reported controlled."""
    from inference.decoder.compile import CONTROLLED_KINDS
    from reasoning.constraints.catalog import CATALOG

    spec = CATALOG[kind]
    constraint = Constraint(id="k", kind=kind, params=EXAMPLE_PARAMS[kind], scope=spec.scope)
    steering = compile_steering(
        [constraint], tokenizer, prompt="Describe a river.", max_new_tokens=200, evidence_ids=["E1", "E2"]
    )
    assert ("k" in steering.controlled) == spec.controllable, (kind, spec.controller)
    assert (kind in CONTROLLED_KINDS) == spec.controllable


def test_citations_are_controlled_only_with_shown_evidence(tokenizer: Any) -> None:
    cite = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 1}, scope=Scope.CITATION)
    assert compile_steering([cite], tokenizer, prompt="x").uncontrolled == {"cite"}
    shown = compile_steering([cite], tokenizer, prompt="x", evidence_ids=["E1", "E4"])
    assert shown.controlled == {"cite"} and not shown.uncontrolled
    soft = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 1}, scope=Scope.CITATION, hardness=Hardness.SOFT)
    assert compile_steering([soft], tokenizer, prompt="x", evidence_ids=["E1"]).uncontrolled == {"cite"}


def test_citations_that_cannot_be_written_are_refused(tokenizer: Any) -> None:
    cite = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 3}, scope=Scope.CITATION)
    with pytest.raises(LimitExceeded) as too_many:
        compile_steering([cite], tokenizer, prompt="x", evidence_ids=["E1", "E2"])
    assert too_many.value.extra["constraint_ids"] == ["cite"]
    with pytest.raises(ConflictError) as lowercase:
        compile_steering([cite, c("all_lowercase")], tokenizer, prompt="x", evidence_ids=["E1", "E2", "E3"])
    assert set(lowercase.value.extra["constraint_ids"]) == {"cite", "all_lowercase"}


def test_each_branch_is_bound_to_the_ids_it_shows(tokenizer: Any) -> None:
    """``branch_steerings``: one steering per branch with that branch's ids;
    refused only when no branch shows enough ids for the minimum."""
    cite = Constraint(id="cite", kind=Kind.CITE_SOURCES, params={"min": 2}, scope=Scope.CITATION)
    steering = compile_steering([cite], tokenizer, prompt="x", evidence_ids=["E1", "E2", "E3"])
    bound = branch_steerings(steering, [["E1", "E2"], ["E3"]])
    cited = [found for s in bound if (found := s.spec(Citations)) is not None]
    assert [(x.ids, x.need) for x in cited] == [(("E1", "E2"), 2), (("E3",), 2)]
    assert ["cite" in s.controlled for s in bound] == [True, False]
    with pytest.raises(LimitExceeded) as none_can:
        branch_steerings(steering, [["E1"], ["E2"], ["E3"]])
    assert none_can.value.extra["constraint_ids"] == ["cite"]
    plain = compile_steering([c("no_comma")], tokenizer, prompt="x", evidence_ids=["E1", "E2"])
    assert branch_steerings(plain, [["E1"], []]) == (plain, plain)


@pytest.mark.parametrize("unit", ["sentences", "lines", "paragraphs", "bullets"])
def test_class_openings_and_spreads_are_left_to_the_prompt(tokenizer: Any, unit: str) -> None:
    """An opening of a class no mask can promise (a verb; emoji, case and digit openings are
    controlled) and a spread have no controller: both are reported uncontrolled, and a
    controlled constraint beside them keeps its controller."""
    opening = Constraint(id="o", kind=Kind.POSITION,
                         params={"unit": unit, "k": 0, "op": "starts_with", "text": "", "word_class": "verb"})
    spread = Constraint(id="s", kind=Kind.SPREAD, params={"unit": "words", "per": unit, "max_ratio": 1.5})
    no_comma = Constraint(id="c", kind=Kind.NO_COMMA)
    steering = compile_steering([opening, spread, no_comma], tokenizer, prompt="Describe a river.", max_new_tokens=80)
    assert {"o", "s"} <= steering.uncontrolled
    assert "c" in steering.controlled
