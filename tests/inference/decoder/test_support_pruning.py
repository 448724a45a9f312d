"""Every sentence earned (issue 32): a model scripted to write an invented rule id, an
invented number, a fragment or an echo of the request has it refused or pruned; a
supported paraphrase of a rule text is kept, with the evidence that supports it.

The model is real (the bundled one) and pushed along a text by ``Push`` (a test
double of the steering protocol only); the rules, the decision, the support
check, the judge, the search and the repair are the real ones. The token-level
refusal of an invented rule id drives the real steering with scripted logits
(no model), as ``test_stating`` does.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from inference.decisions import claim_guard, refusing_invented_ids, support_basis
from inference.decoder.compile import compile_steering
from inference.decoder.decode import DecodeResult, decode
from inference.decoder.options import DecodeOptions
from inference.decoder.pruning import ClaimGuard, SupportBasis
from inference.decoder.token_controllers.stating import Statement
from inference.loader import LoadedModel
from inference.prompting import plan_prompt
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology
from reasoning.evidence.model import EvidenceFact, EvidenceSubgraph
from reasoning.rules.decide import DecisionEngine
from reasoning.rules.model import Decision
from tests.inference.decoder.steering_doubles import Push, drive_towards

CASE = "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list. Should this be escalated?"
RULE_TEXT = (
    "AML-R-017: Transfers to or from a politically exposed person require enhanced due "
    "diligence and escalation to the MLRO."
)


@pytest.fixture(scope="module")
def domain() -> tuple[OntologyIndex, Decision]:
    data = dict(bundled_domains())["aml"].read_bytes()
    index = ingest_ontology(data, "text/turtle").index.with_version("aml-support-test")
    decision = DecisionEngine(index).decide(CASE)
    assert decision.status == "decided" and "AML-R-017" in decision.rule_ids()
    return index, decision


@pytest.fixture(scope="module")
def basis(domain: tuple[OntologyIndex, Decision]) -> SupportBasis:
    index, decision = domain
    return support_basis(decision, index, "en")


@pytest.fixture(scope="module")
def guard(domain: tuple[OntologyIndex, Decision]) -> ClaimGuard:
    return claim_guard(domain[1], domain[0])


def _evidence() -> list[EvidenceSubgraph]:
    facts = tuple(
        EvidenceFact(
            id=fid, subject=subject, predicate="text", object="", text=text, view="compliance",
            score=1.0, hops=1, ontology_version="v1",
        )
        for fid, subject, text in (
            ("E1", "Jon Doe", "Jon Doe is a politically exposed person."),
            ("E2", "AML-R-017", RULE_TEXT),
        )
    )
    return [EvidenceSubgraph(view="compliance", relevance=1.0, seeds=(), facts=facts)]


def _decode(lm: LoadedModel, text: str, guard: ClaimGuard, basis: SupportBasis, *, prune: bool = True) -> DecodeResult:
    tok = lm.tokenizer
    target = list(tok(text, add_special_tokens=False)["input_ids"])
    return decode(
        lm.model,
        tok,
        plan_prompt(tok, CASE, [], _evidence()),
        steering=Push(target),  # type: ignore[arg-type]
        options=DecodeOptions(width=1, max_new_tokens=len(target) + 6, prune=prune),
        request_text=CASE,
        claims=guard,
        basis=basis,
    )


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    ("text", "rule", "unwanted"),
    [
        ("Escalation to the MLRO is required within 24 hours.", "evidence", "24 hours"),
        ("Escalation to the MLRO is required under rule AEM-R-009.", "evidence", "AEM-R-009"),
        # After a supported sentence: an answer that cannot repair it ends before it.
        ("Jon Doe is a politically exposed person [E1]. Evidence.", "entropy", "Evidence."),
        (
            "Acme Ltd (Cyprus) sent EUR 2,000,000 to Jon Doe, who is on our PEP list.",
            "entropy",
            "who is on our PEP list",
        ),
    ],
    ids=["invented-number", "invented-rule-id", "fragment", "echo"],
)
def test_an_unsupported_or_junk_step_is_pruned(
    loaded_model: LoadedModel, guard: ClaimGuard, basis: SupportBasis, text: str, rule: str, unwanted: str
) -> None:
    result = _decode(loaded_model, text, guard, basis)
    assert result.pruning.pruned.get(rule, 0) >= 1, result.pruning
    assert unwanted not in result.answer, result.answer
    # Pruning off: the same step is kept, flagged, its confidence capped with a hint.
    kept = _decode(loaded_model, text, guard, basis, prune=False)
    step = next(s for s in kept.steps if unwanted in s.text)
    assert step.kind == "flagged" and step.violation and step.violation.startswith(rule), step
    assert step.confidence <= 0.3 or rule == "entropy", step


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
def test_an_answer_ending_before_a_step_leaves_out_the_break_that_opened_it(
    loaded_model: LoadedModel, guard: ClaimGuard, basis: SupportBasis
) -> None:
    # The unearned paragraph goes, and so does the paragraph break before it: the answer
    # ends where its last sentence does, as it would had the model stopped there.
    first = "Jon Doe is a politically exposed person [E1]."
    result = _decode(loaded_model, first + "\n\nThe evidence is a person of TRF.", guard, basis)
    assert result.pruning.pruned, result.pruning
    assert result.answer == first, result.answer


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
def test_a_supported_paraphrase_of_a_rule_text_is_kept(
    loaded_model: LoadedModel, guard: ClaimGuard, basis: SupportBasis
) -> None:
    paraphrase = (
        "Enhanced due diligence and escalation to the MLRO are required for transfers "
        "to a politically exposed person."
    )
    result = _decode(loaded_model, paraphrase, guard, basis)
    assert result.answer.startswith(paraphrase), result.answer
    assert not result.pruning.pruned, result.pruning
    step = result.steps[0]
    assert step.kind == "supported" and step.violation is None, step
    assert "E2" in step.support, step


def test_an_invented_rule_id_cannot_be_written(
    tokenizer: Any, domain: tuple[OntologyIndex, Decision], basis: SupportBasis
) -> None:
    index, decision = domain
    engine = DecisionEngine(index)
    statement = Statement(
        text="This case requires escalation to the MLRO (AML-R-017).",
        contradicts=lambda s: engine.check_claim(s, decision).contradicts,
    )
    refusing = refusing_invented_ids(statement, basis, [CASE, RULE_TEXT])
    wanted = statement.text + " The bank must also apply AEM-R-009 to this payment."

    def written(stating: Any) -> str:
        steering = compile_steering(
            [], tokenizer, prompt=CASE, max_new_tokens=120, statement=stating
        )
        return drive_towards(steering, wanted, tokenizer, 120)

    plain = written(statement)
    assert "AEM-R-009" in plain, plain  # the same logits write it without the check
    checked = written(refusing)
    assert checked.startswith(statement.text), checked
    assert "AEM-R" not in checked, checked
    # An id the evidence holds is written as it is.
    held = refusing_invented_ids(statement, basis, [CASE, RULE_TEXT]).invented
    assert held is not None and held("see AML-R-017.") is None and held("see AML-R-01") is None


CASE_ZH = "阿克米有限公司（塞浦路斯）向乔恩·多伊转账200万欧元，乔恩·多伊在我们的PEP名单上。是否需要上报？"
RULE_TEXT_ZH = "AML-R-017：与政治公众人物之间的转账须进行强化尽职调查并上报反洗钱报告官。"
FIRST_ZH = "乔恩·多伊是政治公众人物[E1]。"


@pytest.fixture(scope="module")
def domain_zh(domain: tuple[OntologyIndex, Decision]) -> tuple[OntologyIndex, Decision, SupportBasis]:
    index = domain[0]
    decision = DecisionEngine(index).decide(CASE_ZH)
    assert decision.status == "decided" and "AML-R-017" in decision.rule_ids()
    return index, decision, support_basis(decision, index, "zh")


def _decode_zh(lm: LoadedModel, text: str, domain_zh: tuple[OntologyIndex, Decision, SupportBasis]) -> DecodeResult:
    index, decision, basis = domain_zh
    tok = lm.tokenizer
    target = list(tok(text, add_special_tokens=False)["input_ids"])
    facts = tuple(
        EvidenceFact(
            id=fid, subject=subject, predicate="text", object="", text=fact, view="compliance",
            score=1.0, hops=1, ontology_version="v1",
        )
        for fid, subject, fact in (("E1", "乔恩·多伊", "乔恩·多伊是政治公众人物。"), ("E2", "AML-R-017", RULE_TEXT_ZH))
    )
    evidence = [EvidenceSubgraph(view="compliance", relevance=1.0, seeds=(), facts=facts)]
    return decode(
        lm.model,
        tok,
        plan_prompt(tok, CASE_ZH, [], evidence, language="zh"),
        steering=Push(target),  # type: ignore[arg-type]
        options=DecodeOptions(width=1, max_new_tokens=len(target) + 6, prune=True),
        request_text=CASE_ZH,
        claims=claim_guard(decision, index),
        basis=basis,
    )


@pytest.mark.model
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    ("second", "rule"),
    [
        ("法院将审查本案的适用法律。", "evidence"),  # no source holds it
        ("乔恩·多伊是政治公众。", "entropy"),  # an echo of the sentence before it
        ("本案需要上报反洗。", "entropy"),  # closed inside a word (反洗钱)
    ],
    ids=["unsupported", "echo", "broken-off"],
)
def test_a_chinese_answer_ends_before_its_unsupported_or_junk_sentence(
    loaded_model: LoadedModel, domain_zh: tuple[OntologyIndex, Decision, SupportBasis], second: str, rule: str
) -> None:
    result = _decode_zh(loaded_model, FIRST_ZH + second, domain_zh)
    assert result.pruning.pruned.get(rule, 0) >= 1, result.pruning
    assert result.answer.startswith(FIRST_ZH), result.answer
    assert second not in result.answer, result.answer


def test_an_answer_may_end_right_after_the_decision_and_its_grounds(
    tokenizer: Any, domain: tuple[OntologyIndex, Decision]
) -> None:
    # A model with nothing supported left to say (it wants to stop) ends the answer after the
    # sentences the rules stated: nothing of its own is owed.
    index, decision = domain
    engine = DecisionEngine(index)
    grounds = tuple(g.text_en for g in engine.grounds(decision) if g.text_en)
    statement = Statement(
        text="This case requires escalation to the MLRO (AML-R-017).",
        contradicts=lambda s: engine.check_claim(s, decision).contradicts,
        grounds=grounds,
    )
    steering = compile_steering([], tokenizer, prompt=CASE, max_new_tokens=400, statement=statement)
    vocab = len(steering.tables.token_bytes)
    state = steering.initial_state()
    for _ in range(400):
        logits = torch.full((1, vocab), -10.0)
        logits[0, tokenizer.eos_token_id] = 0.0
        out = steering.apply([state], torch.log_softmax(logits, dim=-1))
        token = int(out[0].argmax())
        if token == tokenizer.eos_token_id:
            break
        state = steering.advance(state, token)
    else:
        pytest.fail("the answer never ended")
    assert grounds and str(state.text).strip() == " ".join((statement.text, *grounds)), state.text
