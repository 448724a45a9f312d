"""bench.heldout_judge: one table of verifiers, the sets as data, the variants told apart (no model).

Each set's test module (``test_heldout*_bench.py``) judges an answer that
meets and one that breaks every instruction id of its set; here the sets'
tables are checked to cover every verifier exactly, so each verifier is
judged on right and wrong answers somewhere.
"""

from __future__ import annotations

import importlib
import json

import pytest

from bench import heldout
from bench.heldout_judge import VERIFIERS, judge, sets

DQ = [["“", "”"]]


def test_every_verifier_is_judged_by_some_set_and_every_set_id_has_a_verifier() -> None:
    described = json.loads(sets.SETS.read_text(encoding="utf-8"))
    used = set()
    for name, entry in described.items():
        suite = sets.suite(name)
        assert suite.data.is_file() and suite.data.name == entry["data"]
        assert set(suite.judges) == set(entry["judges"])
        assert set(entry["verifiers"]) <= set(entry["judges"])
        used |= {entry["verifiers"].get(i, i) for i in entry["judges"]}
        assert set(suite.new_families) <= set(suite.judges)
    assert used == set(VERIFIERS)
    assert sets.names() == list(described)
    assert all(reading for _, reading in VERIFIERS.values())


def test_a_set_judges_with_the_verifier_it_names_for_an_id() -> None:
    # The first set's `wrapped` asks only for a pair at both ends; the third set's
    # also asks that the opening mark be closed by the last character.
    broken = "“a”是b“c”"
    assert judge("wrapped_ends", {"pairs": DQ}, broken)
    assert not judge("wrapped", {"pairs": DQ}, broken)
    assert sets.suite("heldout").grade("wrapped", {"pairs": DQ}, broken)
    assert not sets.suite("heldout3").grade("wrapped", {"pairs": DQ}, broken)
    for verifier in ("wrapped", "wrapped_ends"):
        assert judge(verifier, {"pairs": DQ}, "“合规是底线。”")
        assert not judge(verifier, {"pairs": DQ}, "“合规”是底线。")
    # A Latin keyword touching a Han character: the second set's keywords stand
    # apart from any letter, the third set's only from Latin letters and digits.
    text = "识别UBO，然后核实。"
    once = {"keyword": "UBO", "relation": "exactly", "n": 1}
    assert judge("keyword_count", once, text) and not judge("keyword_count_isolated", once, text)
    assert judge("keywords_all", {"words": ["UBO"]}, text)
    assert not judge("keywords_all_isolated", {"words": ["UBO"]}, text)
    assert not judge("forbidden_words", {"words": ["UBO"]}, text)
    assert judge("forbidden_words_isolated", {"words": ["UBO"]}, text)
    assert sets.suite("heldout2").grade("keyword_count", once, text) is False
    assert sets.suite("heldout4").grade("keyword_count", once, text) is True
    for verifier in ("keyword_count", "keyword_count_isolated"):
        assert not judge(verifier, once, "Two UBOs and no other.")
    with pytest.raises(KeyError):
        judge("no_such_verifier", {}, "text")


def test_the_empty_answer_rule_is_the_sets() -> None:
    none = {"relation": "at most", "n": 0}
    assert judge("numbers", none, "")
    assert sets.suite("heldout").grade("numbers", none, "")
    assert not sets.suite("heldout2").grade("numbers", none, "")
    assert not sets.suite("heldout2").grade("numbers", none, " \n ")
    assert sets.suite("heldout2").grade("numbers", none, "No digits here.")
    with pytest.raises(KeyError):
        sets.suite("heldout").grade("json", {}, "{}")  # the first set has no JSON instruction


@pytest.mark.parametrize("name", ["heldout2", "heldout3", "heldout4", "heldout5"])
def test_the_old_commands_run_the_named_set(name: str) -> None:
    alias = importlib.import_module(f"bench.{name}")
    assert alias.SUITE is sets.suite(name) and alias.DATA == sets.suite(name).data


def test_the_runner_takes_the_set_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert heldout.main(["--set", "heldout3", "--extraction-only", "--limit", "1"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["benchmark"] == "heldout3" and report["data"] == "heldout3.jsonl"
    assert report["n_prompts"] == 1
