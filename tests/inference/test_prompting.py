"""The prompt: chat template, restated constraints, numbered evidence, a token-level shared prefix."""

from __future__ import annotations

from typing import Any

import pytest

from inference.loader import LoadedModel
from inference.prompting import common_prefix_length, plan_prompt
from reasoning.constraints.model import Constraint, Kind
from reasoning.evidence.model import EvidenceSubgraph
from tests.inference.evidence_samples import fact

pytestmark = pytest.mark.model


VIEWS = [
    EvidenceSubgraph(
        view="compliance",
        relevance=0.9,
        seeds=("s",),
        facts=(
            fact(
                "E1",
                "compliance",
                "Rule R7 requires escalation of PEP transfers.",
                modified="2024-05-11",
            ),
        ),
    ),
    EvidenceSubgraph(
        view="fund_flow",
        relevance=0.6,
        seeds=("s",),
        facts=(
            fact("E2", "fund_flow", "Acme Ltd sent EUR 2,000,000 to Jon Doe."),
            fact("E3", "fund_flow", "Jon Doe holds an account in Cyprus."),
        ),
    ),
]
CONSTRAINTS = [
    Constraint(id="c1", kind=Kind.WORD_COUNT, params={"relation": "less than", "n": 80}),
    Constraint(id="c2", kind=Kind.FORBIDDEN_WORDS, params={"words": ["Globex"]}),
]


def test_every_branch_is_prefix_plus_its_suffix(loaded_model: LoadedModel) -> None:
    tok = loaded_model.tokenizer
    plan = plan_prompt(tok, "Should this transfer be escalated?", CONSTRAINTS, VIEWS)
    assert plan.views == ("compliance", "fund_flow") and plan.relevance == (0.9, 0.6)
    for b, text in enumerate(plan.texts):
        assert list(plan.branch_ids(b)) == tok(text, add_special_tokens=False)["input_ids"]
        assert plan.suffixes[b]
    assert len(plan.prefix_ids) <= common_prefix_length([plan.branch_ids(0), plan.branch_ids(1)])
    prefix_text = tok.decode(list(plan.prefix_ids))
    assert prefix_text.rstrip().endswith("Should this transfer be escalated?")
    assert "Evidence" not in prefix_text.split("<|im_start|>user")[1]


def test_prompt_restates_constraints_and_numbers_evidence(loaded_model: LoadedModel) -> None:
    plan = plan_prompt(
        loaded_model.tokenizer, "Should this transfer be escalated?", CONSTRAINTS, VIEWS
    )
    first, second = plan.texts
    assert "80" in first and "Globex" in first
    assert "[E1] Rule R7 requires escalation of PEP transfers. (2024-05-11)" in first
    assert "[E2] Acme Ltd sent EUR 2,000,000 to Jon Doe." in second and "[E3]" in second
    assert "[E2] " not in first and "[E1] Rule" not in second
    assert first.startswith("<|im_start|>system") and first.rstrip().endswith(
        "<|im_start|>assistant"
    )


def test_without_evidence_the_suffix_is_the_generation_prompt(loaded_model: LoadedModel) -> None:
    tok = loaded_model.tokenizer
    plan = plan_prompt(tok, "必须用中文回答。什么是洗钱？", [], [], language="zh")
    assert plan.views == ("",) and plan.language == "zh"
    assert tok.decode(list(plan.suffixes[0])).strip() == "<|im_start|>assistant"
    assert "洗钱" in tok.decode(list(plan.prefix_ids))


def test_a_merge_across_the_boundary_stays_out_of_the_prefix(loaded_model: LoadedModel) -> None:
    tok = loaded_model.tokenizer
    views = [
        EvidenceSubgraph(view=v, relevance=1.0, seeds=(), facts=(fact("E1", v, text),))
        for v, text in (("a", "aaa"), ("a", "aab"))
    ]
    plan = plan_prompt(tok, "x", [], views)
    for b, text in enumerate(plan.texts):
        assert list(plan.branch_ids(b)) == tok(text, add_special_tokens=False)["input_ids"]
    assert plan.suffixes[0] != plan.suffixes[1]


def test_common_prefix_length() -> None:
    assert common_prefix_length([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix_length([[5], [6]]) == 0
    assert common_prefix_length([]) == 0


RULE_FACTS = (
    fact("E7", "rules", "Rule R7 states Transfers to a PEP are escalated to the MLRO.", modified="2021-03-01"),
    fact("E8", "rules", "Rule R7 rule id R7.", modified="2021-03-01"),
)
SHARING = [
    EvidenceSubgraph(view="compliance", relevance=0.9, seeds=(), facts=(VIEWS[0].facts[0], *RULE_FACTS)),
    EvidenceSubgraph(view="fund_flow", relevance=0.6, seeds=(), facts=(*VIEWS[1].facts, *RULE_FACTS)),
    EvidenceSubgraph(view="rules_only", relevance=0.5, seeds=(), facts=RULE_FACTS[::-1]),
]


def test_the_facts_every_branch_shows_come_first_in_a_block_of_their_own(tokenizer: Any) -> None:
    plan = plan_prompt(tokenizer, "Escalate?", [], SHARING, notes=[(), (), ("Assumption [p1]: x",)])
    rules = "Evidence:\n[E7] Rule R7 states Transfers to a PEP are escalated to the MLRO. (2021-03-01)\n[E8] Rule R7"
    for b, text in enumerate(plan.texts):
        assert list(plan.branch_ids(b)) == tokenizer(text, add_special_tokens=False)["input_ids"]
        assert rules in text and text.index(rules) < text.find("Evidence (") % len(text)
    first, second, third = plan.texts
    assert "Evidence (compliance):\n[E1] " in first and "[E7]" not in first.split("Evidence (compliance)")[1]
    assert "Evidence (fund_flow):\n[E2] " in second and "[E3]" in second
    assert "Evidence (rules_only)" not in third  # every fact it shows is shared
    assert plan.facts == tuple(g.facts for g in SHARING)  # what each branch may cite is unchanged
    n = plan.shared[0]
    assert n > 0 and plan.shared == (n, n, n)
    assert len({plan.suffixes[b][:n] for b in range(3)}) == 1
    assert "[E8] Rule R7 rule id R7" in tokenizer.decode(list(plan.suffixes[0][:n]))
    assert all(len(s) > n + 1 for s in plan.suffixes)


def test_a_branch_without_evidence_is_outside_the_group(tokenizer: Any) -> None:
    empty = EvidenceSubgraph(view="assumptions", relevance=0.3, seeds=(), facts=())
    plan = plan_prompt(tokenizer, "Escalate?", [], [*SHARING[:2], empty])
    assert plan.shared[2] == 0 and plan.shared[0] == plan.shared[1] > 0
    assert "Evidence" not in plan.texts[2]


def test_one_evidence_branch_and_the_reference_layout_render_as_before(tokenizer: Any) -> None:
    alone = plan_prompt(tokenizer, "Escalate?", [], SHARING[:1])
    assert alone.shared == () and "Evidence (compliance):\n[E1] " in alone.texts[0]
    assert "\nEvidence:\n" not in alone.texts[0]
    reference = plan_prompt(tokenizer, "Escalate?", [], SHARING, share_evidence=False)
    assert reference.shared == ()
    assert "Evidence (rules_only):\n[E8] Rule R7 rule id R7. (2021-03-01)\n[E7]" in reference.texts[2]
    assert all("\nEvidence:\n" not in text for text in reference.texts)
