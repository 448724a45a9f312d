"""Prompt language, response language and script detection."""

from __future__ import annotations

import pytest

from reasoning.language import (
    FULL_MODELS_BELOW,
    detect_prompt_language,
    detect_response_language,
    dominant_script,
    is_language,
    language_code,
    script_counts,
)


@pytest.mark.parametrize(
    ("text", "language"),
    [("必须用中文回答", "zh"), ("Answer in English please.", "en"), ("", "en"), ("12345 !!", "en"),
     ("请用中文回答这个关于AML的问题", "zh"), ("Please summarise the AML report, 谢谢", "en")],
)
def test_prompt_language(text: str, language: str) -> None:
    assert detect_prompt_language(text) == language


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("这是一个用中文写的回答，内容很简单。", "zh"),
        ("これは日本語で書かれた文章です。", "ja"),
        ("이 질문은 많은 사람들 사이에서 논쟁의 주제입니다.", "ko"),
        ("Я думаю, что этот вопрос обсуждают многие люди.", "ru"),
        ("ಈ ಪ್ರಶ್ನೆಯು ಅನೇಕ ಜನರ ನಡುವೆ ಚರ್ಚೆಯ ವಿಷಯವಾಗಿದೆ.", "kn"),
        ("This question is a topic of debate among many people.", "en"),
        ("Ich denke, dass diese Frage von vielen Menschen diskutiert wird.", "de"),
    ],
)
def test_response_language(text: str, code: str) -> None:
    assert detect_response_language(text) == code
    assert is_language(text, code)


_LONG_RESPONSES = {
    "fr": "La banque doit signaler toute opération suspecte à la cellule de renseignement "
    "financier dans les meilleurs délais, sans en informer le client concerné.",
    "pl": "Bank musi niezwłocznie zgłosić każdą podejrzaną transakcję jednostce analityki "
    "finansowej, nie informując o tym zainteresowanego klienta.",
    "id": "Bank harus segera melaporkan setiap transaksi mencurigakan kepada unit intelijen "
    "keuangan tanpa memberi tahu nasabah yang bersangkutan.",
    "uk": "Банк повинен негайно повідомляти про кожну підозрілу операцію підрозділ "
    "фінансової розвідки, не інформуючи про це відповідного клієнта.",
}


@pytest.mark.parametrize(("code", "text"), _LONG_RESPONSES.items())
def test_a_long_response_is_told_apart_from_its_scripts_neighbours_by_trigrams(
    code: str, text: str
) -> None:
    assert len(text) >= FULL_MODELS_BELOW
    assert detect_response_language(text) == code
    # Its first words alone go to the full models, which tell the language as well.
    assert detect_response_language(text[:60]) == code


def test_text_without_letters_passes_any_language() -> None:
    assert detect_response_language("123 456") is None
    assert is_language("123 456", "zh")


def test_scripts_and_names() -> None:
    assert script_counts("ab中文")["Han"] == 2
    assert dominant_script("abc 中文") == "Han"
    assert dominant_script("...") is None
    assert (language_code("Kannada"), language_code("中文"), language_code("英语"), language_code("Klingon")) == (
        "kn", "zh", "en", None)
