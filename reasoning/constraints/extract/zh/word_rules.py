"""Rules said of every word (or of consecutive words) in Chinese, read onto word counts.

The same forms as :mod:`reasoning.constraints.extract.en.word_rules` reads from English:
每个单词的首字母按字母表顺序排列 (words off the alphabet after the word
before), 每个单词的长度必须是质数 (words of another length class),
只能使用元音字母a和e (characters of the other vowels), 不要有任何空格 (white
space), 每个单词单独占一行 (one word per line), 每个单词最多使用两次 (uses
past the second), 主要单词首字母大写 / 标题式大小写 (title case), 每个单词的首字母
都要大写 (every word opens with a capital), 每个单词都以字母s开头 / 每句话都以字母A开头
(an opening letter of every word / sentence / line / paragraph), 至少包含3个长度
不少于5个字母的回文词 (palindromes). 每隔三个词用一个法语词 has no kind: the
word count or language read from it is dropped.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence

from reasoning.constraints.extract.en.word_rules import SPACES, VOWELS, both_cases
from reasoning.constraints.extract.found import Found, overlaps
from reasoning.constraints.form import Count, Filter, Position, Unit, canonical
from reasoning.constraints.form.model import Form, LengthClass
from reasoning.constraints.model import Kind, Relation
from reasoning.constraints.quantities import ZH_NUMBER, parse_zh_number

__all__ = ["refine_word_rules_chinese"]

_WORD = r"(?:英文单词|单词|词语|词汇|词)"
_EVERY = r"(?:每个|每一个|每|所有的?|全部的?|任何)"
_CLAUSE = r"[^。；;！!？?\n]"
_LETTERS = r"(?P<letters>[A-Za-z](?:\s*[、,，和与及或]\s*[A-Za-z])*)"
_PIECES = {"句": Unit.SENTENCES, "句话": Unit.SENTENCES, "句子": Unit.SENTENCES, "行": Unit.LINES, "段": Unit.PARAGRAPHS,
           "段落": Unit.PARAGRAPHS, "个单词": Unit.WORDS, "个词": Unit.WORDS, "单词": Unit.WORDS, "词": Unit.WORDS}

_ALPHABET = re.compile(_WORD + _CLAUSE + r"{0,12}(?:首字母|第一个字母|开头字母)" + _CLAUSE
                       + r"{0,12}(?:字母表|字母顺序)" + _CLAUSE + r"{0,8}(?:顺序|依次|排列|连续|递增)")
_LENGTH_CLASS = re.compile(_WORD + r"的?(?:长度|字母数|字母个数|字母数量)" + _CLAUSE + r"{0,8}(?P<cls>质数|素数|偶数|奇数)")
_ONLY_VOWELS = re.compile(r"(?:只|仅)(?:能|可以)?(?:使用|用|出现|包含)(?:元音|元音字母)\s*" + _LETTERS)
_NO_VOWELS = re.compile(r"(?:不要|不能|不得|禁止|避免|别|不)(?:使用|用|出现|包含)(?:元音|元音字母)\s*" + _LETTERS)
_ONLY_LETTERS = re.compile(r"(?:只|仅)(?:能|可以)?(?:使用|用)(?:字母)\s*" + _LETTERS)
_NO_SPACES = re.compile(r"(?:不要|不能|不得|禁止|避免|别|不|没有)(?:有|使用|用|包含|出现|留|加)?(?:任何)?"
                        r"(?P<what>空格|空白字符|空白|换行)(?:或|和|、|或者)?(?P<more>换行|空格)?")
_OWN_LINE = re.compile(_EVERY + _WORD + r"(?:都|各)?(?:单独|各自|独自)?(?:占|写在|放在|另起|成)(?:单独的)?(?:一行|新的一行)")
_RECUR = re.compile(_EVERY + _WORD + _CLAUSE + r"{0,4}(?:最多|至多|不超过|不能超过|不得超过|只能)(?:使用|出现|用|重复)?"
                    r"(?P<num>" + ZH_NUMBER + r")次")
_NO_REPEAT = re.compile(r"(?:不要|不能|不得|禁止|避免|别)(?:重复使用|重复)(?:任何|同一个|任何一个)" + _WORD
                        + r"|(?<!相邻的)(?<!相邻)(?<!连续的)(?<!连续)(?<!两个)" + _WORD + r"(?:都)?(?:不能|不要|不得|不可)重复")
_TITLE = re.compile(r"(?:主要|重要|实义)(?:的)?" + _WORD + r"的?首字母" + _CLAUSE + r"{0,4}大写|标题式大小写|标题大小写")
_EVERY_CAPITAL = re.compile(_EVERY + _WORD + r"的?(?:首字母|第一个字母)" + _CLAUSE + r"{0,4}大写")
_PIECE_LETTER = re.compile(r"(?:每|每一|所有的?)(?P<piece>个单词|个词|句话|句子|句|行|段落|段|单词|词)" + _CLAUSE
                           + r"{0,4}以(?:字母)\s*[“\"'‘]?(?P<letter>[A-Za-z])[”\"'’]?\s*(?:开头|开始)")
_NTH_LANGUAGE = re.compile(r"每隔" + ZH_NUMBER + r"?个?" + _WORD + _CLAUSE + r"{0,10}(?:语|文)")
_PALINDROME = re.compile(r"(?P<rel>至少|最少|不少于)?(?P<num>" + ZH_NUMBER + r")个" + _CLAUSE + r"{0,20}?回文")
_MIN_LETTERS = re.compile(r"(?:不少于|至少|最少|大于等于)(?P<num>" + ZH_NUMBER + r")个(?:字母|字符)")


def _add(out: list[Found], form: Form, start: int, end: int, drop: tuple[Kind, ...]) -> list[Found]:
    kept = [f for f in out if not (f.kind in drop and overlaps(f, start, end))]
    kind, params = canonical(form)
    if not any(f.kind == kind and f.params == params for f in kept):
        kept.append(Found(kind=kind, params=params, start=start, end=end, confidence=0.85))
    return kept


def _letters(match: re.Match[str]) -> list[str]:
    return [c.lower() for c in re.findall(r"[A-Za-z]", match.group("letters"))]


def _chars_count(banned: str) -> Count:
    return Count(unit=Unit.CHARACTERS, filter=Filter(chars=banned), relation=Relation.AT_MOST, n=0)


def _alphabet(m: re.Match[str]) -> Form | None:
    return Count(unit=Unit.WORDS, filter=Filter(same_as_previous="alphabet"), relation=Relation.AT_MOST, n=0)


def _length_class(m: re.Match[str]) -> Form | None:
    cls: LengthClass = "prime" if m.group("cls") in ("质数", "素数") else "even" if m.group("cls") == "偶数" else "odd"
    return Count(unit=Unit.WORDS, filter=Filter(length_class=cls, negated=True), relation=Relation.AT_MOST, n=0)


def _only_vowels(m: re.Match[str]) -> Form | None:
    banned = "".join(c for c in VOWELS if c not in _letters(m))
    return _chars_count(both_cases(banned)) if banned else None


def _no_vowels(m: re.Match[str]) -> Form | None:
    banned = "".join(sorted({c for c in _letters(m) if c in VOWELS}))
    return _chars_count(both_cases(banned)) if banned else None


def _only_letters(m: re.Match[str]) -> Form | None:
    banned = "".join(c for c in string.ascii_lowercase if c not in _letters(m))
    return _chars_count(both_cases(banned)) if banned else None


#: The Chinese space words as the English ones whose characters they ban (空白: all white space, the ideographic space too).
_SPACE_WORDS = {"空格": "space", "空白": "whitespace", "空白字符": "whitespace", "换行": "newline"}


def _no_spaces(m: re.Match[str]) -> Form | None:
    chars = "".join(SPACES[_SPACE_WORDS[w]]
                    for w in (m.group("what"), m.group("more")) if w)
    return _chars_count("".join(sorted(set(chars), key=chars.index)))


def _own_line(m: re.Match[str]) -> Form | None:
    return Count(unit=Unit.WORDS, per=Unit.LINES, relation=Relation.EXACTLY, n=1)


def _recur(m: re.Match[str]) -> Form | None:
    n = parse_zh_number(m.group("num"))
    return Count(unit=Unit.WORDS, filter=Filter(occurrence=n + 1), relation=Relation.AT_MOST, n=0) if n else None


def _no_repeat(m: re.Match[str]) -> Form | None:
    return Count(unit=Unit.WORDS, filter=Filter(occurrence=2), relation=Relation.AT_MOST, n=0)


def _title(m: re.Match[str]) -> Form | None:
    return Count(unit=Unit.WORDS, filter=Filter(stop_words=False, case="lower"), relation=Relation.AT_MOST, n=0)


def _every_capital(m: re.Match[str]) -> Form | None:
    if re.search(r"主要|重要|实义", m.group(0)):
        return None  # title case: stop words stay lowercase
    return Position(unit=Unit.WORDS, op="starts_with", text="", k=0, word_class="capital")


def _piece_letter(m: re.Match[str]) -> Form | None:
    unit = _PIECES[m.group("piece")]
    letter = m.group("letter").lower()
    if unit is Unit.WORDS:
        return Position(unit=unit, op="starts_with", text=letter, k=0)
    return Count(unit=unit, filter=Filter(starts_with=letter, negated=True), relation=Relation.AT_MOST, n=0)


def _palindromes(m: re.Match[str]) -> Form | None:
    n = parse_zh_number(m.group("num"))
    if n is None:
        return None
    low = _MIN_LETTERS.search(m.group(0))
    least = parse_zh_number(low.group("num")) if low else None
    return Count(unit=Unit.WORDS, filter=Filter(palindrome=True, min_length=least), relation=Relation.AT_LEAST, n=n)


_COUNTS = (Kind.COUNT, Kind.WORD_COUNT, Kind.LETTER_FREQUENCY)
_CAPS = (Kind.ALL_CAPITALS, Kind.CAPITAL_WORD_FREQUENCY, Kind.COUNT)
#: Each rule's pattern, its form, and the kinds of the readings it replaces in its span.
_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], Form | None], tuple[Kind, ...]], ...] = (
    (_ALPHABET, _alphabet, _COUNTS),
    (_LENGTH_CLASS, _length_class, _COUNTS),
    (_ONLY_VOWELS, _only_vowels, _COUNTS),
    (_NO_VOWELS, _no_vowels, _COUNTS),
    (_ONLY_LETTERS, _only_letters, _COUNTS),
    (_NO_SPACES, _no_spaces, (*_COUNTS, Kind.FORBIDDEN_WORDS)),
    (_OWN_LINE, _own_line, (*_COUNTS, Kind.PARAGRAPH_COUNT)),
    (_RECUR, _recur, (*_COUNTS, Kind.KEYWORD_FREQUENCY)),
    (_NO_REPEAT, _no_repeat, _COUNTS),
    (_TITLE, _title, _CAPS),
    (_EVERY_CAPITAL, _every_capital, _CAPS),
    (_PIECE_LETTER, _piece_letter, (*_COUNTS, Kind.KEYWORDS_PRESENT, Kind.POSITION)),
    (_PALINDROME, _palindromes, _COUNTS),
)


def refine_word_rules_chinese(text: str, found: Sequence[Found]) -> list[Found]:
    """``found`` with the Chinese every-word rules of ``text`` read in (see the module doc)."""
    out = list(found)
    for pattern, build, drop in _RULES:
        for m in pattern.finditer(text):
            form = build(m)
            if form is not None:
                out = _add(out, form, m.start(), m.end(), drop)
    for m in _NTH_LANGUAGE.finditer(text):
        out = [f for f in out if not (f.kind in (Kind.WORD_COUNT, Kind.RESPONSE_LANGUAGE, Kind.COUNT)
                                      and overlaps(f, m.start(), m.end()))]
    return out
