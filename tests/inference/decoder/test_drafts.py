"""Prompt-lookup drafts: what is proposed, what the steering cuts, and that decoding is unchanged.

The lookup and a row's draft are checked on token ids and on a compiled
steering (the bundled tokenizer, no weights); then the bundled model decodes
prompts of the steering set and a stated decision with drafts on and off:
the tokens, steps, verdicts and violations are the same, and with drafts on
guessed positions were fed ahead and some were taken.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from inference.decisions import statement_of
from inference.decoder.compile import compile_steering
from inference.decoder.decode import DecodeResult, decode
from inference.decoder.drafts import MIN_NGRAM, PromptLookup, row_draft
from inference.decoder.options import DecodeOptions
from inference.decoder.unsteered import Unsteered
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.constraints.extraction import extract
from reasoning.constraints.model import Constraint, Kind
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.ingest import ingest_ontology
from reasoning.rules.decide import DecisionEngine

SET = Path(__file__).resolve().parents[3] / "bench" / "data" / "steering_set.jsonl"
PEP_CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
SUMMARY = (
    "Summarise this text in two sentences: The Eiffel Tower was built in 1889 for the World's Fair in "
    "Paris. It is 330 metres tall and was the tallest structure in the world until 1930."
)


def test_the_longest_match_proposes_what_follows_its_last_occurrence() -> None:
    lookup = PromptLookup([[1, 2, 3, 4, 9, 2, 3, 5, 6, 7], [8, 8]])
    assert lookup.propose(0, [0, 2, 3], 3) == [5, 6, 7]  # (2, 3) last occurs before 5
    assert lookup.propose(0, [1, 2, 3], 2) == [4, 9]  # (1, 2, 3) is longer than (2, 3)
    assert lookup.propose(0, [7, 3], 4) == []  # no n-gram of MIN_NGRAM tokens occurs
    assert lookup.propose(0, [6, 7], 4) == []  # it ends the prompt: nothing follows
    assert lookup.propose(0, [3], 4) == [] and MIN_NGRAM == 2
    assert lookup.propose(1, [2, 3], 4) == []  # each branch looks in its own prompt
    assert lookup.propose(0, [2, 3], 0) == []


def test_a_row_draft_guesses_at_most_its_share_and_stops_at_eos() -> None:
    lookup = PromptLookup([[5, 6, 7, 8, 9, 10, 11]])
    plain = Unsteered()
    common: dict[str, Any] = {"lookup": lookup, "branch": 0, "vocab": 16, "device": torch.device("cpu")}
    draft = row_draft(plain, plain.initial_state(), [5, 6], limit=10, eos_ids=frozenset(), guesses=3, **common)
    assert draft.tokens == (7, 8, 9) and draft.certain == (False, False, False)
    draft = row_draft(plain, plain.initial_state(), [5, 6], limit=2, eos_ids=frozenset(), guesses=3, **common)
    assert draft.tokens == (7, 8)
    draft = row_draft(plain, plain.initial_state(), [5, 6], limit=10, eos_ids=frozenset({9}), guesses=8, **common)
    assert draft.tokens == (7, 8)


def test_forced_text_is_certain_and_a_proposal_the_masks_refuse_is_cut(tokenizer: Any) -> None:
    prompt = "Describe apples, pears and plums. Do not use any commas."
    constraints = list(extract(prompt).constraints)
    assert any(c.kind is Kind.NO_COMMA for c in constraints)
    vocab = len(tokenizer)
    steering = compile_steering(constraints, tokenizer, prompt=prompt, vocab_size=vocab, max_new_tokens=64)
    ids = tokenizer.encode(prompt)
    lookup = PromptLookup([ids])
    apples = tokenizer.encode("Describe apples")
    state = steering.initial_state()
    for token in apples:
        state = steering.advance(state, token)
    proposed = lookup.propose(0, apples, 4)
    assert proposed and "," in tokenizer.decode(proposed[:1])  # the prompt continues with a comma
    draft = row_draft(
        steering, state, apples, limit=8, eos_ids=frozenset(), lookup=lookup, branch=0, guesses=4,
        vocab=vocab, device=torch.device("cpu"),
    )
    assert draft.tokens == ()  # the no-comma rule masks it: never fed

    copy = "Repeat the request word for word, then answer it. Why is the sea blue?"
    copying = list(extract(copy).constraints)
    assert any(c.kind in (Kind.COPY, Kind.REPEAT_PROMPT) for c in copying)
    steering = compile_steering(copying, tokenizer, prompt=copy, vocab_size=vocab, max_new_tokens=64)
    draft = row_draft(
        steering, steering.initial_state(), [], limit=6, eos_ids=frozenset(), lookup=None, branch=0,
        guesses=0, vocab=vocab, device=torch.device("cpu"),
    )
    assert len(draft.tokens) == 6 and all(draft.certain)  # the copy is written by the steering


def _set_rows(keys: set[str]) -> list[tuple[str, list[Constraint]]]:
    rows = []
    for line in SET.read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        if raw["key"] in keys:
            constraints = [
                Constraint(id=f"c{i}", kind=Kind(item["kind"]), params=item.get("params", {}))
                for i, item in enumerate(raw["constraints"])
            ]
            rows.append((raw["prompt"], constraints))
    assert len(rows) == len(keys)
    return rows


def _both(
    model: LoadedModel, prompt: str, constraints: list[Constraint], budget: int, width: int, **compile_args: Any
) -> tuple[DecodeResult, DecodeResult]:
    steering = compile_steering(
        constraints, model.tokenizer, prompt=prompt, device=model.device,
        vocab_size=int(model.model.config.vocab_size), max_new_tokens=budget, **compile_args,
    )
    plan = plan_prompt(model.tokenizer, prompt, constraints)
    plain, drafted = (
        decode(model.model, model.tokenizer, plan, steering=steering, constraints=constraints, request_text=prompt,
               options=DecodeOptions(width=width, max_new_tokens=budget, draft_tokens=k))
        for k in (0, 8)
    )
    return plain, drafted


def _same(plain: DecodeResult, drafted: DecodeResult) -> None:
    assert drafted.answer == plain.answer
    assert [b.text for b in drafted.branches] == [b.text for b in plain.branches]
    assert [(s.text, s.token_start, s.token_end, s.verdicts, s.violation) for s in drafted.steps] == [
        (s.text, s.token_start, s.token_end, s.verdicts, s.violation) for s in plain.steps
    ]
    assert drafted.violations == plain.violations and drafted.end == plain.end
    assert drafted.decode_steps == plain.decode_steps and plain.draft_fed == 0
    assert [b.score for b in drafted.branches] == pytest.approx([b.score for b in plain.branches], abs=1e-3)
    assert drafted.decode_forwards == drafted.decode_steps - drafted.forced_tokens - drafted.draft_tokens


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize("width", [1, 2])
def test_steering_set_prompts_decode_the_same_with_drafts(loaded_model: LoadedModel, width: int) -> None:
    fed = 0
    for prompt, constraints in _set_rows({"copy-replace", "copy-drop-last", "no-digits"}):
        plain, drafted = _both(loaded_model, prompt, constraints, 32, width)
        _same(plain, drafted)
        fed += drafted.draft_fed
    summary = list(extract(SUMMARY).constraints)
    plain, drafted = _both(loaded_model, SUMMARY, summary, 32, width)
    _same(plain, drafted)
    fed += drafted.draft_fed
    if width == 1:
        assert fed > 0 and drafted.draft_tokens > 0  # the summary copies its text: guesses were taken
    else:
        assert fed == 0  # guesses are drafted for one row only (DecodeOptions.draft_tokens)


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
def test_a_grounded_decision_decodes_the_same_with_drafts(loaded_model: LoadedModel) -> None:
    index = ingest_ontology(dict(bundled_domains())["aml"].read_bytes(), "text/turtle").index
    decision = DecisionEngine(index.with_version("aml-test")).decide(PEP_CASE)
    assert decision.status == "decided"
    statement = statement_of(decision, index, "en", ())
    constraints = list(extract(PEP_CASE).constraints)
    plain, drafted = _both(loaded_model, PEP_CASE, constraints, 48, 1, statement=statement)
    assert plain.answer.startswith(statement.text)
    _same(plain, drafted)
