"""The counterfactual check scheduler: distinct claims, partial variants, retries, reasons;
every fact-stating step of a short answer contrasted; threshold variants from an ontology."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from inference.decoder.batch import prefill_branches, prefill_prefix
from inference.decoder.beam import decode_step
from inference.decoder.checks import (
    DROPPED,
    SKIP_BUDGET,
    SKIP_NO_VARIANT,
    CheckScheduler,
    ClaimTokens,
    _aligned,
    claim_rank,
)
from inference.decoder.contrast import RowContext, _windows, window_cost
from inference.decoder.decode import DecodeResult, decode
from inference.decoder.kv_slab import PrefixKV
from inference.decoder.options import DecodeOptions
from inference.decoder.pruning import step_states_fact
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.counterfactual import variants
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph
from reasoning.rules.engine import RuleBook
from reasoning.rules.thresholds import rule_thresholds

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PROMPT = "Evidence: Acme Ltd sent EUR 2,000,000 to Jon Doe.\nState one fact:"
CLAIM = "Acme Ltd sent EUR 2,000,000 to Jon Doe."
LEXICON = {"Acme Ltd": "Company", "Globex Corp": "Company"}
IMPORTS_TTL = Path(__file__).resolve().parents[2] / "data" / "imports.ttl"


@dataclass(frozen=True)
class _Prompt:
    prompt_kv: PrefixKV
    prompt_len: int
    first_logprobs: torch.Tensor


def test_claims_rank_decision_facts_then_quantities_then_entities() -> None:
    assert claim_rank("Globex Corp owns Initech.", ["Initech"]) == 0
    assert claim_rank("Acme Ltd sent EUR 4,000.", ["Initech"]) == 1
    assert claim_rank("Acme Ltd owns Globex Corp.", []) == 2
    assert claim_rank("[E2] Acme Ltd owns Globex Corp.", []) == 2


def test_variants_keep_the_decodes_own_tokens_around_the_change(tokenizer: object) -> None:
    """The decode may split a text as the tokenizer would not (' J' + 'on'); a variant keeps
    those tokens before and after its change, so its window is the change, not the rest."""

    def encode(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])  # type: ignore[operator]

    def decode(ids: Sequence[int]) -> str:
        return str(tokenizer.decode(list(ids), skip_special_tokens=True))  # type: ignore[attr-defined]

    ids = encode(" Acme Ltd sent EUR 2,000,000 to") + encode(" J") + encode("on Doe.")
    assert decode(ids) == " " + CLAIM and ids != encode(" " + CLAIM)
    aligned = {v.kind: t for v, t in _aligned(ids, decode, encode, variants(CLAIM, LEXICON))}
    assert set(aligned) == {"entity", "number"}
    assert decode(aligned["number"]) == " " + CLAIM.replace("2,000,000", "3,000,000")
    assert decode(aligned["entity"]) == " " + CLAIM.replace("Acme Ltd", "Globex Corp")
    for tokens in aligned.values():
        start, _, end = _windows(ids, tokens, 2)
        assert tokens[end:] == ids[len(ids) - len(tokens) + end :]  # the claim's own tail
        assert end - start <= 5


@pytest.mark.model
def test_scheduler_counts_claims_once_takes_what_fits_and_retries(
    loaded_model: LoadedModel,
) -> None:
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)

    def encode(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    def decode(ids: Sequence[int]) -> str:
        return str(tok.decode(list(ids), skip_special_tokens=True))

    prompt = encode(PROMPT)
    with torch.inference_mode():
        kv = prefill_prefix(runner, prompt)
        first = torch.log_softmax(
            loaded_model.model(torch.tensor([prompt], device=loaded_model.device))
            .logits[0, -1]
            .float(),
            -1,
        )
        base = runner.counters.flops["prefill"]
        per_token = 2.0 * runner.parameters
        # The claim's variants, ranked: the number, then the entity (no negation site).
        ids = encode(CLAIM)
        number = encode(CLAIM.replace("2,000,000", "3,000,000"))
        one = window_cost(ids, [number]) * per_token
        # The share buys the first variant and not both: one is scored, not none.
        options = DecodeOptions(counterfactual_flops_share=(one + per_token / 2) / base)
        prompts = [_Prompt(kv, len(prompt), first)]
        checks = CheckScheduler(runner, options, encode, decode, prompts, LEXICON)
        got = checks.settle(0, CLAIM)
        assert got is not None and got.variants == 1 and got.variant.kind == "number"
        assert runner.counters.flops["counterfactual"] == pytest.approx(one)
        # Met again (another beam): reused, still one claim wanted.
        assert checks.check(0, " " + CLAIM, None) is got
        assert (checks.wanted, checks.scored, checks.reused, checks.skipped) == (1, 1, 1, 0)
        # A second claim finds the share spent: skipped for budget, counted once however often met.
        other = "Acme Ltd sent EUR 5,000 to Jon Doe."
        assert checks.check(0, other, None) is None
        assert checks.check(0, other, None) is None
        assert checks.skip_reasons == {SKIP_BUDGET: 1}
        assert (checks.wanted, checks.skipped) == (2, 1)
        # A claim with nothing to vary is a reason of its own.
        assert checks.check(0, "Jon Doe.", None) is None
        assert checks.skip_reasons == {SKIP_BUDGET: 1, SKIP_NO_VARIANT: 1}
        # The decode goes on (more FLOPs of other purposes): the skipped claim is scored when met.
        prefill_prefix(runner, prompt)
        assert checks.check(0, other, None) is not None
        assert checks.skip_reasons == {SKIP_NO_VARIANT: 1}
        assert (checks.wanted, checks.scored, checks.skipped) == (3, 2, 1)
        spent = runner.counters.flops["counterfactual"]
        others = sum(v for k, v in runner.counters.flops.items() if k != "counterfactual")
        assert spent <= options.counterfactual_flops_share * others


@pytest.mark.model
def test_deferred_claims_are_scored_over_the_beam_that_kept_them(loaded_model: LoadedModel) -> None:
    """With a scarce share a deferrable claim waits: a later judge call on a beam whose answer
    extends it scores it over that beam's row; a claim no such beam held is reported dropped."""
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)

    def encode(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    def decode(ids: Sequence[int]) -> str:
        return str(tok.decode(list(ids), skip_special_tokens=True))

    prompt = encode(PROMPT)
    claim = encode(" " + CLAIM)
    dropped = encode(" Acme Ltd sent EUR 9,000 to Jon Doe.")
    answer = claim + encode(" It was")
    with torch.inference_mode():
        state, _ = prefill_branches(runner, 0, (), [prompt], width=1, max_new_tokens=len(answer) + 1)
        for token in answer[:-1]:
            decode_step(runner, state, torch.tensor([token]))
        lp = [-1.0] * len(answer)
        context = RowContext(state.cache, 0, state.mask[0, : state.columns], len(prompt), prompt[-1])
        base = runner.counters.flops["prefill"] + runner.counters.flops["decode"]
        per_token = 2.0 * runner.parameters
        options = DecodeOptions(counterfactual_flops_share=8 * per_token / base)  # < four checks
        checks = CheckScheduler(runner, options, encode, decode, [], LEXICON)
        for ids in (claim, dropped):
            held = ClaimTokens(ids, 0, len(ids), lp, context, deferrable=True)
            assert checks.check(0, decode(ids), held) is None
        assert runner.counters.flops["counterfactual"] == 0.0
        # The beam that closed the claim was kept: its next step is judged on the same row.
        checks.observe(0, ClaimTokens(answer, len(claim), len(answer), lp, context))
        got = checks.known(0, CLAIM)
        assert got is not None and checks.scored == 1
        assert runner.counters.flops["counterfactual"] > 0
        assert checks.skip_reasons == {DROPPED: 1} and checks.wanted == 1


def _evidence() -> list[EvidenceSubgraph]:
    facts = (
        ("E1", "Acme Ltd", "Jon Doe", "Acme Ltd sent EUR 2,000,000 to Jon Doe on 2024-03-02."),
        ("E2", "Jon Doe", "Malta", "Jon Doe holds an account in Malta."),
    )
    return [
        EvidenceSubgraph(
            view="fund_flow",
            relevance=1.0,
            seeds=(),
            facts=tuple(
                EvidenceFact(
                    id=i, subject=s, predicate="related", object=o, text=t, view="fund_flow",
                    score=1.0, hops=1, ontology_version="v1", modified="2024-05-11",
                )
                for i, s, o, t in facts
            ),
        )
    ]


def _answer(loaded_model: LoadedModel, share: float) -> DecodeResult:
    request = "Where did Acme Ltd send the money, and how much?"
    plan = plan_prompt(loaded_model.tokenizer, request, [], _evidence())
    options = DecodeOptions(
        width=2,
        max_new_tokens=40,
        counterfactual_checks=True,
        counterfactual_flops_share=share,
        prune=False,
    )
    return decode(
        loaded_model.model,
        loaded_model.tokenizer,
        plan,
        options=options,
        lexicon={"Malta": "Country", "Cyprus": "Country", "Jon Doe": "Person", "Mary Major": "Person"},
        request_text=request,
    )


@pytest.mark.model
def test_every_step_of_the_answer_that_states_a_fact_carries_a_contrast(
    loaded_model: LoadedModel,
) -> None:
    """Within the 5% share: claims wait for their answer's end and are scored over its row,
    the last text the token limit cut included; junk states no fact and gets none."""
    result = _answer(loaded_model, 0.05)
    labels = ["Acme Ltd", "Jon Doe", "Malta", "Cyprus", "Mary Major"]
    facts = [s for s in result.steps if step_states_fact(s.text, s.violation, labels)]
    assert facts, [s.text for s in result.steps]
    assert all(s.contrast is not None and s.contrast_variant for s in facts), [
        (s.text, s.contrast) for s in result.steps
    ]
    assert result.counterfactual_flops_share <= 0.05
    pruning = result.pruning
    assert pruning.counterfactual_skipped == 0
    assert pruning.counterfactual_wanted == pruning.counterfactual_scored >= len(facts)


@pytest.mark.model
def test_a_skipped_check_names_its_reason(loaded_model: LoadedModel) -> None:
    """No share at all: every claim the answer holds is wanted, none scored, each with its reason."""
    result = _answer(loaded_model, 0.0)
    pruning = result.pruning
    assert pruning.counterfactual_wanted >= 1 and pruning.counterfactual_scored == 0
    assert result.flops.get("counterfactual", 0.0) == 0.0
    wanted_reasons = {k: v for k, v in pruning.counterfactual_skip_reasons.items() if k != DROPPED}
    assert wanted_reasons.get(SKIP_BUDGET, 0) >= 1
    assert sum(wanted_reasons.values()) == pruning.counterfactual_skipped == pruning.counterfactual_wanted
    assert all(s.contrast is None for s in result.steps)


@pytest.mark.model
def test_a_threshold_the_ontology_holds_gives_the_first_variant_scored(
    loaded_model: LoadedModel,
) -> None:
    """The food-imports rules (a domain no code mentions) read EUR 100,000: a claim of EUR
    150,000 is contrasted with EUR 90,000 first, within the share."""
    tok = loaded_model.tokenizer
    runner = ModelRunner(loaded_model.model)
    index = ingest_ontology(IMPORTS_TTL.read_bytes(), "text/turtle").index.with_version("imports-cf")
    lines = rule_thresholds(RuleBook(index))

    def encode(text: str) -> list[int]:
        return list(tok(text, add_special_tokens=False)["input_ids"])

    def decode_ids(ids: Sequence[int]) -> str:
        return str(tok.decode(list(ids), skip_special_tokens=True))

    prompt = encode("Evidence: Nord Foods declared a consignment at EUR 150,000.\nState one fact:")
    claim = "Nord Foods declared a consignment at EUR 150,000."
    with torch.inference_mode():
        kv = prefill_prefix(runner, prompt)
        first = torch.log_softmax(
            loaded_model.model(torch.tensor([prompt], device=loaded_model.device)).logits[0, -1].float(),
            -1,
        )
        options = DecodeOptions(counterfactual_flops_share=10.0, max_variants=1)
        checks = CheckScheduler(
            runner, options, encode, decode_ids, [_Prompt(kv, len(prompt), first)], {}, thresholds=lines
        )
        got = checks.settle(0, claim)
    assert got is not None and got.variants == 1
    assert got.variant.kind == "threshold" and got.variant.replacement == "90,000"
