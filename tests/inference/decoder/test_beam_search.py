"""Our beam search against Hugging Face's, on the bundled model (short generations)."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

from inference.decoder.batch import prefill_branches, prefill_prefix
from inference.decoder.beam import BeamConfig, SearchStats, generate
from inference.decoder.boundaries import boundary_table
from inference.decoder.decode import decode
from inference.decoder.options import DecodeOptions
from inference.decoder.runner import ModelRunner
from inference.decoder.unsteered import Unsteered
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.evidence.model import EvidenceSubgraph
from tests.inference.evidence_samples import fact

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("one_torch_thread")]


PROMPT = "Explain in one sentence what a politically exposed person is."


@pytest.fixture(scope="module")
def exact_model(loaded_model: LoadedModel) -> LoadedModel:
    """The model in float32, for token-for-token comparisons with ``generate``.

    In bfloat16 (CUDA) our attention and Hugging Face's round differently, so
    near-ties between two tokens may break either way; float32 decides them alike.
    """
    if loaded_model.dtype == torch.float32:
        return loaded_model
    model = copy.deepcopy(loaded_model.model).float()
    return dataclasses.replace(loaded_model, model=model, dtype=torch.float32)


def _ids(lm: LoadedModel, text: str) -> list[int]:
    messages = [{"role": "user", "content": text}]
    rendered = lm.tokenizer.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True
    )
    return list(lm.tokenizer(rendered, add_special_tokens=False)["input_ids"])


def _ours(
    lm: LoadedModel, ids: list[int], width: int, new: int, split: int = 4, least: int = 0
) -> list[tuple[int, ...]]:
    runner = ModelRunner(lm.model)
    with torch.inference_mode():
        kv = prefill_prefix(runner, ids[:-split])
        state, first = prefill_branches(
            runner, len(ids) - split, kv, [ids[-split:]], width=width, max_new_tokens=new
        )
        config = BeamConfig(
            DecodeOptions(width=width, max_new_tokens=new, min_new_tokens=least),
            eos_ids=frozenset({lm.tokenizer.eos_token_id}),
        )
        table = boundary_table(lm.tokenizer, int(first.shape[-1]))
        outcome = generate(runner, state, first, [Unsteered()], config, table, None, SearchStats())[
            0
        ]
    return [h.tokens for h in outcome.hypotheses], [h.normalized for h in outcome.hypotheses]


def _theirs(lm: LoadedModel, ids: list[int], width: int, new: int) -> list[int]:
    x = torch.tensor([ids], device=lm.device)
    with torch.inference_mode():
        out = lm.model.generate(
            x,
            attention_mask=torch.ones_like(x),
            num_beams=width,
            do_sample=False,
            max_new_tokens=new,
            pad_token_id=lm.tokenizer.pad_token_id,
        )
    tokens = out[0, len(ids) :].tolist()
    eos = lm.tokenizer.eos_token_id
    return tokens[: tokens.index(eos)] if eos in tokens else tokens


def test_width_one_is_greedy_token_for_token(exact_model: LoadedModel) -> None:
    ids = _ids(exact_model, PROMPT)
    hyps, _ = _ours(exact_model, ids, width=1, new=16)
    assert list(hyps[0]) == _theirs(exact_model, ids, width=1, new=16)


def test_width_four_matches_hf_beam_search_and_is_ordered(exact_model: LoadedModel) -> None:
    ids = _ids(exact_model, PROMPT)
    hyps, scores = _ours(exact_model, ids, width=4, new=12)
    assert list(hyps[0]) == _theirs(exact_model, ids, width=4, new=12)
    assert len(hyps) == 4 and len(set(hyps)) == 4
    assert scores == sorted(scores, reverse=True)
    again, again_scores = _ours(exact_model, ids, width=4, new=12)
    assert again == hyps and again_scores == scores


def test_a_minimum_length_keeps_eos_off_every_beam_until_it(exact_model: LoadedModel) -> None:
    ids = _ids(exact_model, "What is 2 + 2? Answer with the number only.")
    free, _ = _ours(exact_model, ids, width=4, new=10)
    assert min(len(h) for h in free) < 10  # left alone, the model ends answers itself
    held, _ = _ours(exact_model, ids, width=4, new=10, least=10)
    assert len(held) == 4 and all(len(h) == 10 for h in held)


def test_batched_branches_equal_each_branch_alone(loaded_model: LoadedModel) -> None:
    tok = loaded_model.tokenizer
    views = [
        EvidenceSubgraph(
            view="compliance",
            relevance=0.9,
            seeds=(),
            facts=(fact("E1", "compliance", "Rule R7 requires escalation of transfers to PEPs."),),
        ),
        EvidenceSubgraph(
            view="fund_flow",
            relevance=0.5,
            seeds=(),
            facts=(
                fact(
                    "E2",
                    "fund_flow",
                    "Acme Ltd sent EUR 2,000,000 to Jon Doe, a PEP, through an account in Cyprus.",
                ),
            ),
        ),
    ]
    request = "Should the transfer be escalated?"
    together = decode(
        loaded_model.model,
        tok,
        plan_prompt(tok, request, [], views),
        options=DecodeOptions(width=1, max_new_tokens=12, prune=False),
    )
    assert len(together.branches) == 2
    assert (
        len({len(s) for s in plan_prompt(tok, request, [], views).suffixes}) == 2
    )  # really ragged
    for b, view in enumerate(views):
        alone = decode(
            loaded_model.model,
            tok,
            plan_prompt(tok, request, [], [view]),
            options=DecodeOptions(width=1, max_new_tokens=12, prune=False),
        )
        assert alone.branches[0].text == together.branches[b].text
    assert together.decode_steps <= 12


def test_greedy_decode_result_reports_tokens_flops_and_timings(loaded_model: LoadedModel) -> None:
    tok = loaded_model.tokenizer
    plan = plan_prompt(tok, PROMPT)
    result = decode(
        loaded_model.model, tok, plan, options=DecodeOptions(width=2, max_new_tokens=16)
    )
    assert result.answer and result.reasoning_path == tuple(s.id for s in result.steps)
    assert result.generated_tokens <= 16 and result.decode_steps <= 16
    params = loaded_model.identity.parameters
    assert result.flops["decode"] == pytest.approx(2 * params * 2 * result.decode_steps)
    assert result.timings.prefill_s > 0 and result.timings.decode_s > 0
    assert 0 < result.timings.forward_s < result.timings.decode_s
    assert all(0.0 <= s.confidence <= 1.0 for s in result.steps)
    assert "".join(s.text for s in result.steps).split() == result.answer.split()


def test_real_token_controllers_hold_through_the_beam_search(loaded_model: LoadedModel) -> None:
    from inference.decoder.compile import compile_steering
    from reasoning.constraints.model import Constraint, Kind
    from reasoning.constraints.verifiers import verify

    tok = loaded_model.tokenizer
    constraints = [
        Constraint(id="c1", kind=Kind.NO_COMMA),
        Constraint(id="c2", kind=Kind.ALL_LOWERCASE),
    ]
    request = "Describe, in two sentences, what a bank does with a suspicious transfer."
    steering = compile_steering(constraints, tok, prompt=request, max_new_tokens=24)
    result = decode(
        loaded_model.model,
        tok,
        plan_prompt(tok, request, constraints),
        steering=steering,
        options=DecodeOptions(width=3, max_new_tokens=24),
        constraints=constraints,
        request_text=request,
    )
    assert result.answer.strip()
    for constraint in constraints:
        assert verify(constraint, result.answer).satisfied, (constraint.kind, result.answer)
    assert result.constraint_check_share > 0.0
    assert not result.violations
