"""Script drift is judged against the answer language's own scripts, whatever they are."""

from __future__ import annotations

import pytest

from inference.decoder.beam import SearchStats
from inference.decoder.degeneracy import answer_scripts, degeneracy
from inference.decoder.options import DecodeOptions
from inference.decoder.pruning import PruningJudge
from inference.decoder.runner import ModelRunner
from inference.loader import LoadedModel
from reasoning.constraints.model import Constraint, Kind
from reasoning.constraints.verifiers import verify

RUSSIAN = "Москва является столицей России и крупнейшим городом страны."
ARABIC = "القاهرة هي عاصمة مصر وأكبر مدنها."
HINDI = "दिल्ली भारत की राजधानी है।"
ENGLISH = "Moscow is the capital of Russia and its largest city."


def _drift(text: str, language: str) -> str | None:
    # Distinct token ids: only the text-level checks are under test here.
    return degeneracy(text, list(range(len(text))), (), answer_scripts(language))


@pytest.mark.parametrize(
    ("text", "language"),
    [(RUSSIAN, "ru"), (ARABIC, "ar"), (HINDI, "hi"), (ENGLISH, "en"), ("巴黎是法国的首都。", "zh")],
)
def test_an_answer_in_its_own_script_is_not_drift(text: str, language: str) -> None:
    assert _drift(text, language) is None


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (RUSSIAN, "en"),  # a Latin answer drifting into Cyrillic
        (ARABIC, "fr"),  # ... into Arabic
        ("巴黎是法国的首都。", "en"),  # ... into Han
        ("Москва 首都是北京上海广州深圳", "ru"),  # a Cyrillic answer drifting into Han
        (ENGLISH, "ar"),  # a long Latin step with no Arabic at all
    ],
)
def test_a_step_in_another_script_is_drift(text: str, language: str) -> None:
    reason = _drift(text, language)
    assert reason is not None and reason.startswith("script drift"), reason


def test_latin_names_in_a_non_latin_answer_are_tolerated() -> None:
    assert _drift("Компания Acme Ltd перевела деньги в банк.", "ru") is None
    assert _drift("使用 Python 编写程序。", "zh") is None


@pytest.mark.model
def test_the_judge_expects_the_required_languages_script(loaded_model: LoadedModel) -> None:
    """A response_language constraint, not the prompt's language, sets the expected script."""
    tok = loaded_model.tokenizer
    tokens = list(tok(RUSSIAN, add_special_tokens=False)["input_ids"])

    def judged(constraints: list[Constraint]) -> tuple[str | None, str]:
        judge = PruningJudge(
            tokenizer=tok,
            runner=ModelRunner(loaded_model.model),
            constraints=constraints,
            branches=[],
            options=DecodeOptions(),
            stats=SearchStats(),
            verify=verify,
            language="en",
        )
        check = judge.judge(0, tokens, 0, len(tokens), [0.1] * len(tokens), final=False)
        return check.rule, check.detail

    russian = Constraint(id="c1", kind=Kind.RESPONSE_LANGUAGE, params={"language": "ru"})
    assert judged([russian]) == (None, "")
    rule, detail = judged([])
    assert rule == "entropy" and "script drift" in detail
