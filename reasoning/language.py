"""Language and script detection for prompts and responses.

Two questions are answered here, each as cheaply as it can be:

- *What language is this prompt in?* Only the languages the catalog can
  extract from and restate in (:data:`PROMPT_LANGUAGES`: English and Chinese)
  are candidates, so the lingua detector is built for those two alone (loading
  all 75 lingua models takes seconds; two take milliseconds). Script counts
  decide first; lingua is asked only when the script is ambiguous.
- *Is this response written in language X?* (the ``response_language``
  verifier). Languages with a script of their own (Korean, Thai, Kannada, ...)
  are decided by script share alone; languages that share a script (Latin,
  Cyrillic, Arabic, Devanagari) are decided by a lingua detector restricted to
  the languages of that script, built once per script and cached. A text of
  :data:`FULL_MODELS_BELOW` characters or more is judged by lingua's trigram
  models alone (its low-accuracy mode: 0.2 s and 47 MB to load for the twenty
  Latin-script languages, against 4.5 s and 550 MB for all its n-gram models,
  with the same answers on the texts we checked); a shorter one by all of
  them, loaded on the first short text.

Language names in English and Chinese ("Kannada", "中文", "英语") map to
ISO 639-1 codes through :func:`language_code`, which extraction uses.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

__all__ = [
    "FULL_MODELS_BELOW",
    "LANGUAGE_NAMES",
    "LANGUAGE_SCRIPTS",
    "PROMPT_LANGUAGES",
    "detect_prompt_language",
    "detect_response_language",
    "dominant_script",
    "is_language",
    "language_code",
    "language_name",
    "script_counts",
    "warm_up",
]


PROMPT_LANGUAGES: tuple[str, ...] = ("en", "zh")
"""Languages the catalog extracts from and restates constraints in."""

# ISO 639-1 code -> (English name, Chinese name). Covers IFEval's 30 languages
# and the common languages of compliance settings.
LANGUAGE_NAMES: Mapping[str, tuple[str, str]] = {
    "en": ("English", "英文"),
    "zh": ("Chinese", "中文"),
    "ja": ("Japanese", "日语"),
    "ko": ("Korean", "韩语"),
    "fr": ("French", "法语"),
    "de": ("German", "德语"),
    "es": ("Spanish", "西班牙语"),
    "pt": ("Portuguese", "葡萄牙语"),
    "it": ("Italian", "意大利语"),
    "nl": ("Dutch", "荷兰语"),
    "ru": ("Russian", "俄语"),
    "uk": ("Ukrainian", "乌克兰语"),
    "bg": ("Bulgarian", "保加利亚语"),
    "pl": ("Polish", "波兰语"),
    "cs": ("Czech", "捷克语"),
    "sv": ("Swedish", "瑞典语"),
    "fi": ("Finnish", "芬兰语"),
    "da": ("Danish", "丹麦语"),
    "no": ("Norwegian", "挪威语"),
    "el": ("Greek", "希腊语"),
    "tr": ("Turkish", "土耳其语"),
    "ar": ("Arabic", "阿拉伯语"),
    "he": ("Hebrew", "希伯来语"),
    "fa": ("Persian", "波斯语"),
    "ur": ("Urdu", "乌尔都语"),
    "hi": ("Hindi", "印地语"),
    "mr": ("Marathi", "马拉地语"),
    "ne": ("Nepali", "尼泊尔语"),
    "bn": ("Bengali", "孟加拉语"),
    "pa": ("Punjabi", "旁遮普语"),
    "gu": ("Gujarati", "古吉拉特语"),
    "ta": ("Tamil", "泰米尔语"),
    "te": ("Telugu", "泰卢固语"),
    "kn": ("Kannada", "卡纳达语"),
    "ml": ("Malayalam", "马拉雅拉姆语"),
    "th": ("Thai", "泰语"),
    "vi": ("Vietnamese", "越南语"),
    "id": ("Indonesian", "印尼语"),
    "ms": ("Malay", "马来语"),
    "sw": ("Swahili", "斯瓦希里语"),
    "ro": ("Romanian", "罗马尼亚语"),
    "hu": ("Hungarian", "匈牙利语"),
}

_ALIASES: Mapping[str, str] = {
    "farsi": "fa",
    "mandarin": "zh",
    "simplified chinese": "zh",
    "traditional chinese": "zh",
    "汉语": "zh",
    "中文": "zh",
    "华语": "zh",
    "普通话": "zh",
    "汉字": "zh",
    "英语": "en",
    "英文": "en",
    "日文": "ja",
    "韩文": "ko",
    "法文": "fr",
    "德文": "de",
    "俄文": "ru",
    "西班牙文": "es",
}


def _name_table() -> dict[str, str]:
    table = {name.lower(): code for code, (name, _) in LANGUAGE_NAMES.items()}
    table.update({zh: code for code, (_, zh) in LANGUAGE_NAMES.items()})
    table.update(_ALIASES)
    return table


_NAME_TO_CODE: Mapping[str, str] = _name_table()


def language_code(name: str) -> str | None:
    """ISO 639-1 code of a language name in English or Chinese, or None.

    >>> language_code("Kannada"), language_code("中文"), language_code("Klingon")
    ('kn', 'zh', None)
    """
    return _NAME_TO_CODE.get(name.strip().lower())


def language_name(code: str, in_language: str = "en") -> str:
    """The name of ``code`` in English or Chinese; the code itself when unknown."""
    names = LANGUAGE_NAMES.get(code)
    if names is None:
        return code
    return names[1] if in_language == "zh" else names[0]


# Script of a character: the first word of its Unicode name, with the few
# scripts whose names need care spelled out.
_SCRIPT_PREFIXES: tuple[tuple[str, str], ...] = (
    ("CJK", "Han"),
    ("HIRAGANA", "Kana"),
    ("KATAKANA", "Kana"),
    ("HANGUL", "Hangul"),
    ("LATIN", "Latin"),
    ("CYRILLIC", "Cyrillic"),
    ("GREEK", "Greek"),
    ("ARABIC", "Arabic"),
    ("HEBREW", "Hebrew"),
    ("DEVANAGARI", "Devanagari"),
    ("BENGALI", "Bengali"),
    ("GURMUKHI", "Gurmukhi"),
    ("GUJARATI", "Gujarati"),
    ("TAMIL", "Tamil"),
    ("TELUGU", "Telugu"),
    ("KANNADA", "Kannada"),
    ("MALAYALAM", "Malayalam"),
    ("THAI", "Thai"),
)


@lru_cache(maxsize=4096)
def _script_of(char: str) -> str | None:
    if not char.isalpha():
        return None
    if "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf":
        return "Han"
    if char.isascii():
        return "Latin"
    name = unicodedata.name(char, "")
    for prefix, script in _SCRIPT_PREFIXES:
        if name.startswith(prefix):
            return script
    return "Other"


def script_counts(text: str) -> Counter[str]:
    """Letters per script ("Latin", "Han", "Kana", "Hangul", "Cyrillic", ...)."""
    counts: Counter[str] = Counter()
    for char in text:
        script = _script_of(char)
        if script is not None:
            counts[script] += 1
    return counts


def dominant_script(text: str) -> str | None:
    """The script with most letters, or None for a text without letters.

    Han characters carry a word's worth of meaning each, so they are weighted
    three times against alphabetic letters.
    """
    counts = script_counts(text)
    if "Han" in counts:
        counts["Han"] *= 3
    if not counts:
        return None
    return counts.most_common(1)[0][0]


@lru_cache(maxsize=1)
def _prompt_detector() -> LanguageDetector:
    return LanguageDetectorBuilder.from_languages(Language.ENGLISH, Language.CHINESE).build()


def detect_prompt_language(text: str) -> str:
    """``"zh"`` or ``"en"``: the language a prompt is mainly written in.

    Any text gets an answer: a prompt without letters is taken as English, the
    default language of the catalog.
    """
    counts = script_counts(text)
    han = counts.get("Han", 0)
    other = sum(counts.values()) - han
    if han == 0:
        return "en"
    if han * 3 >= other:
        return "zh"
    detected = _prompt_detector().detect_language_of(text)
    return "zh" if detected is Language.CHINESE else "en"


# Script -> languages written in it (ISO codes) for the response verifier.
# Languages whose script identifies them well enough for a script mask to
# control them; Latin-script languages get only a Latin mask (assisted).
LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {
    "zh": frozenset({"CJK"}),
    "ja": frozenset({"CJK", "HIRAGANA", "KATAKANA"}),
    "ko": frozenset({"HANGUL"}),
    "ru": frozenset({"CYRILLIC"}),
    "bg": frozenset({"CYRILLIC"}),
    "uk": frozenset({"CYRILLIC"}),
    "sr": frozenset({"CYRILLIC"}),
    "mk": frozenset({"CYRILLIC"}),
    "hi": frozenset({"DEVANAGARI"}),
    "mr": frozenset({"DEVANAGARI"}),
    "ne": frozenset({"DEVANAGARI"}),
    "ar": frozenset({"ARABIC"}),
    "fa": frozenset({"ARABIC"}),
    "ur": frozenset({"ARABIC"}),
    "he": frozenset({"HEBREW"}),
    "el": frozenset({"GREEK"}),
    "th": frozenset({"THAI"}),
    "bn": frozenset({"BENGALI"}),
    "pa": frozenset({"GURMUKHI"}),
    "gu": frozenset({"GUJARATI"}),
    "kn": frozenset({"KANNADA"}),
    "te": frozenset({"TELUGU"}),
    "ta": frozenset({"TAMIL"}),
    "ml": frozenset({"MALAYALAM"}),
    "ka": frozenset({"GEORGIAN"}),
    "hy": frozenset({"ARMENIAN"}),
    "si": frozenset({"SINHALA"}),
    "my": frozenset({"MYANMAR"}),
    "km": frozenset({"KHMER"}),
    "am": frozenset({"ETHIOPIC"}),
}


_SCRIPT_LANGUAGES: Mapping[str, tuple[str, ...]] = {
    "Han": ("zh",),
    "Kana": ("ja",),
    "Hangul": ("ko",),
    "Greek": ("el",),
    "Hebrew": ("he",),
    "Bengali": ("bn",),
    "Gurmukhi": ("pa",),
    "Gujarati": ("gu",),
    "Tamil": ("ta",),
    "Telugu": ("te",),
    "Kannada": ("kn",),
    "Malayalam": ("ml",),
    "Thai": ("th",),
    "Cyrillic": ("ru", "uk", "bg", "sr", "mk", "be", "kk", "mn"),
    "Arabic": ("ar", "fa", "ur"),
    "Devanagari": ("hi", "mr", "ne"),
}

_LATIN_LANGUAGES: tuple[str, ...] = (
    "en", "fr", "de", "es", "pt", "it", "nl", "pl", "cs", "sv", "fi", "da", "no",
    "tr", "vi", "id", "ms", "sw", "ro", "hu",
)


def _lingua_language(code: str) -> Language | None:
    if code == "no":
        return Language.BOKMAL
    for language in Language.all():
        if language.iso_code_639_1.name.lower() == code:
            return language
    return None


#: Below this many characters lingua's trigrams alone are not reliable (its documentation), so a
#: response that short is judged with all of its n-gram models.
FULL_MODELS_BELOW = 120


@lru_cache(maxsize=64)
def _script_detector(script: str, *, full: bool) -> LanguageDetector | None:
    codes = _LATIN_LANGUAGES if script == "Latin" else _SCRIPT_LANGUAGES.get(script, ())
    languages = [lang for code in codes if (lang := _lingua_language(code)) is not None]
    if len(languages) < 2:
        return None
    builder = LanguageDetectorBuilder.from_languages(*languages).with_preloaded_language_models()
    return (builder if full else builder.with_low_accuracy_mode()).build()


def warm_up() -> None:
    """Build the prompt detector and every script's trigram detector once.

    lingua loads a language's models on first use; call this at start-up so
    that no request or decode step on a response of ``FULL_MODELS_BELOW``
    characters or more pays for it (the full models of a script load on its
    first shorter response).
    """
    _prompt_detector().detect_language_of("warm up")
    samples = {"Latin": "warm up", "Cyrillic": "разминка", "Arabic": "تسخين", "Devanagari": "अभ्यास"}
    for script, sample in samples.items():
        detector = _script_detector(script, full=False)
        if detector is not None:
            detector.compute_language_confidence_values(sample)


def _code_of(language: Language) -> str:
    if language is Language.BOKMAL or language is Language.NYNORSK:
        return "no"
    return language.iso_code_639_1.name.lower()


def detect_response_language(text: str) -> str | None:
    """ISO code of the language a response is written in, or None without letters.

    Japanese is recognised by kana (a Japanese text also holds kanji); a
    script shared by several languages is resolved by lingua among them.
    Nepali, absent from lingua, is reported as Hindi or Marathi (see
    :func:`is_language`).
    """
    counts = script_counts(text)
    if not counts:
        return None
    if counts.get("Kana", 0) * 5 >= counts.get("Han", 0) and counts.get("Kana", 0) > 0:
        return "ja"
    script = dominant_script(text)
    if script is None:
        return None
    candidates = ("en",) if script == "Latin" else _SCRIPT_LANGUAGES.get(script, ())
    detector = _script_detector(script, full=len(text) < FULL_MODELS_BELOW)
    if detector is None:
        return candidates[0] if candidates else None
    detected = detector.detect_language_of(text)
    return _code_of(detected) if detected is not None else candidates[0]


def is_language(text: str, code: str) -> bool:
    """True when ``text`` is written in language ``code`` (ISO 639-1).

    A text without letters passes, as IFEval's judge lets undetectable text
    pass. Nepali, which lingua lacks, is accepted for any text mainly in
    Devanagari.
    """
    detected = detect_response_language(text)
    if detected is None:
        return True
    if code == "ne":
        return dominant_script(text) == "Devanagari"
    return detected == code
