"""Verifiers of sentences: counts, lengths, starts and ends, kinds, chains, scripts.

A sentence *begins with* a word when its first word is that word, or that
word followed by an apostrophe and a clitic (``I'm`` begins with ``I``). A
*question* (the fourth set's count) is a sentence ending, closing quotes
aside, with ``?`` or ``？``. An emoji *ends* a sentence when nothing but end
marks, closing quotes and white space follows it (``Go team 💪!`` and
``Go team! 💪`` both do). A sentence's *script* is Han when it holds Han
characters (U+3400..U+9FFF) and no ASCII letter, Latin the other way round,
mixed when it holds both.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from bench.heldout_judge.readings import (
    END_MARKS,
    HAN_SCRIPT,
    PUNCT,
    SENTENCE_CLOSERS,
    STOP_WORDS,
    Judge,
    begins,
    bounded,
    emoji_count,
    emoji_sentences,
    first_word,
    keyword_count,
    mention_count,
    pick,
    sentence_kind,
    sentences,
    split_sentences,
    spread,
    strip_closers,
    strip_quotes_and_brackets,
    words,
)

_CLITIC = re.compile(r"['’].*$")
_QUESTION_MARKS = "?？"
_KINDS = ("questions", "exclamations", "statements")
_ASCII_LETTER = re.compile(r"[A-Za-z]")


def _sentence_max_words(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(len(words(s)) <= int(args["n"]) for s in found)


def _sentence_max_chars(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(len(PUNCT.sub("", s)) <= int(args["n"]) for s in found)


def _sentence_end(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(strip_quotes_and_brackets(s)[-1:] in str(args["chars"]) for s in found)


def _sentence_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(sentences(text)), args)


def _sentence_start(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    return bool(chosen) and all(begins(s, str(args["text"])) for s in chosen)


def _sentence_end_word(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    want = str(args["word"]).casefold()
    return bool(chosen) and all(words(s)[-1:] and words(s)[-1].casefold() == want for s in chosen)


def _sentence_balance(args: Mapping[str, Any], text: str) -> bool:
    counts = [len(words(s)) for s in sentences(text)]
    return len(counts) >= 2 and spread(counts) <= int(args["max_diff"])


def _sentences_with_digit(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(any(c.isdigit() for c in s) for s in found)


def _sentence_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    ending = sum(strip_closers(s)[-1:] in str(args["chars"]) for s in found)
    return bool(found) and ending / len(found) >= float(args["min_ratio"])


def _same_first_last_sentence(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    if len(found) < 2:
        return False
    first, last = ([w.casefold() for w in words(s)] for s in (found[0], found[-1]))
    return bool(first) and first == last


def _keyword_only_in_sentence(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    keyword = str(args["keyword"])
    k = int(args["k"])
    index = k - 1 if k > 0 else len(found) + k
    return (
        0 <= index < len(found)
        and mention_count(keyword, found[index]) >= 1
        and all(mention_count(keyword, s) == 0 for i, s in enumerate(found) if i != index)
    )


def _avg_sentence_words(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and sum(len(words(s)) for s in found) / len(found) <= float(args["n"])


def _sentence_words(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    return bool(chosen) and all(bounded(len(words(s)), args) for s in chosen)


def _sentence_start_not(args: Mapping[str, Any], text: str) -> bool:
    banned = {str(w).casefold() for w in args["words"]}
    found = sentences(text)
    return bool(found) and all(_CLITIC.sub("", first_word(s)) not in banned for s in found)


def _sentences_containing(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    return bool(found) and all(mention_count(str(args["keyword"]), s) >= 1 for s in found)


def _sentence_k_end(args: Mapping[str, Any], text: str) -> bool:
    chosen = pick(sentences(text), args["k"])
    return bool(chosen) and all(strip_closers(s)[-1:] in str(args["chars"]) for s in chosen)


def _last_first_chain(args: Mapping[str, Any], text: str) -> bool:
    found = [[w.casefold() for w in words(s)] for s in sentences(text)]
    return len(found) >= 2 and all(
        a and b and a[-1] == b[0] for a, b in itertools.pairwise(found)
    )


def _word_in_sentence_at(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    k, m = int(args["k"]), int(args["m"])
    if not 0 < k <= len(found):
        return False
    sentence_words = words(found[k - 1])
    return 0 < m <= len(sentence_words) and (
        sentence_words[m - 1].casefold() == str(args["word"]).casefold()
    )


def _repeat_with_change(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    if not found:
        return False
    original = [w.casefold() for w in words(str(args["text"]))]
    first = [w.casefold() for w in words(found[0])]
    return len(first) == len(original) and sum(a != b for a, b in zip(first, original, strict=True)) == 1


def _sentences_growing(args: Mapping[str, Any], text: str) -> bool:
    counts = [len(words(s)) for s in sentences(text)]
    return len(counts) >= int(args.get("min_sentences", 2)) and all(
        a < b for a, b in itertools.pairwise(counts)
    )


def _keyword_in_sentence(args: Mapping[str, Any], text: str) -> bool:
    found = sentences(text)
    k = int(args["k"])
    index = k - 1 if k > 0 else len(found) + k
    return 0 <= index < len(found) and keyword_count(str(args["keyword"]), found[index]) >= 1


def _emoji_per_sentence(args: Mapping[str, Any], text: str) -> bool:
    found = emoji_sentences(text)
    return bool(found) and all(bounded(emoji_count(s), args) for s in found)


def _question_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(strip_closers(s)[-1:] in _QUESTION_MARKS for s in sentences(text)), args)


def _sentence_types(args: Mapping[str, Any], text: str) -> bool:
    kinds = [sentence_kind(s) for s in split_sentences(text)]
    return bool(kinds) and all(
        kinds.count(kind) == int(args[kind]) for kind in _KINDS if kind in args
    )


def _sentence_type_balance(args: Mapping[str, Any], text: str) -> bool:
    kinds = [sentence_kind(s) for s in split_sentences(text)]
    counts = {kinds.count(str(kind)) for kind in args["kinds"]}
    return len(counts) == 1 and min(counts) >= int(args.get("min", 1))


def _sentence_type_pattern(args: Mapping[str, Any], text: str) -> bool:
    kinds = [sentence_kind(s) for s in split_sentences(text)]
    pattern = [str(kind) for kind in args["pattern"]]
    return len(kinds) >= len(pattern) and all(
        kind == want for kind, want in zip(kinds, itertools.cycle(pattern), strict=False)
    )


def _emoji_sentence_end(args: Mapping[str, Any], text: str) -> bool:
    found = emoji_sentences(text)

    def ends_with_emoji(sentence: str) -> bool:
        tail = sentence.rstrip(END_MARKS + SENTENCE_CLOSERS + " \t\ufe0f\u200d")
        tail = re.sub(r"[\U0001F3FB-\U0001F3FF]+$", "", tail)
        return bool(tail) and emoji_count(tail[-1]) == 1

    return bool(found) and all(ends_with_emoji(s) for s in found)


def _script(sentence: str) -> str:
    han, latin = bool(HAN_SCRIPT.search(sentence)), bool(_ASCII_LETTER.search(sentence))
    return "han" if han and not latin else "latin" if latin and not han else "mixed"


def _alternating_script(args: Mapping[str, Any], text: str) -> bool:
    found = split_sentences(text)
    first = str(args["first"])
    pair = (first, "latin" if first == "han" else "han")
    return len(found) >= 2 and all(_script(s) == pair[i % 2] for i, s in enumerate(found))


def _sentence_mixed_script(args: Mapping[str, Any], text: str) -> bool:
    found = split_sentences(text)
    return bool(found) and all(_script(s) == "mixed" for s in found)


def _shared_words(args: Mapping[str, Any], text: str) -> bool:
    found = split_sentences(text)
    if len(found) < 2:
        return False

    def content(sentence: str) -> set[str]:
        return {w.casefold() for w in words(sentence)} - STOP_WORDS

    return len(content(found[0]) & content(found[-1])) >= int(args["min"])


#: verifier id -> (function, how a strict reader decides it).
VERIFIERS: dict[str, tuple[Judge, str]] = {
    "sentence_max_words": (_sentence_max_words, "every sentence has at most `n` words"),
    "sentence_max_chars": (
        _sentence_max_chars,
        "every sentence has at most `n` characters besides spaces and punctuation",
    ),
    "sentence_end": (
        _sentence_end,
        "every sentence ends (closing quotes aside) with one of `chars`",
    ),
    "sentence_count": (_sentence_count, "the number of sentences is within the bound"),
    "sentence_start": (_sentence_start, "the k-th (or every) sentence begins with `text`"),
    "sentence_end_word": (
        _sentence_end_word,
        "the k-th (or every) sentence's last word is `word`, case folded",
    ),
    "sentence_balance": (
        _sentence_balance,
        "two or more sentences, word counts of the longest and shortest within `max_diff`",
    ),
    "sentences_with_digit": (_sentences_with_digit, "there are sentences and each holds a digit"),
    "sentence_ratio": (
        _sentence_ratio,
        "the share of sentences ending with one of `chars` is at least `min_ratio`",
    ),
    "same_first_last_sentence": (
        _same_first_last_sentence,
        "two or more sentences, the first and last made of the same words (case folded)",
    ),
    "keyword_only_in_sentence": (
        _keyword_only_in_sentence,
        "`keyword` occurs in the k-th (-1 the last) sentence and in no other sentence",
    ),
    "avg_sentence_words": (
        _avg_sentence_words,
        "the mean number of words per sentence is at most `n`",
    ),
    "sentence_words": (
        _sentence_words,
        "the k-th (or every) sentence's number of words is within the bound",
    ),
    "sentence_start_not": (
        _sentence_start_not,
        "no sentence's first word is one of `words`, a clitic aside (I'm begins with I)",
    ),
    "sentences_containing": (_sentences_containing, "there are sentences and each holds `keyword`"),
    "sentence_k_end": (
        _sentence_k_end,
        "the k-th (or every) sentence ends (closing quotes aside) with one of `chars`",
    ),
    "last_first_chain": (
        _last_first_chain,
        "two or more sentences, each after the first opening with the previous one's last word",
    ),
    "word_in_sentence_at": (
        _word_in_sentence_at,
        "the m-th word of the k-th sentence is `word`, case folded",
    ),
    "repeat_with_change": (
        _repeat_with_change,
        "the first sentence has the words of `text` with exactly one word changed",
    ),
    "sentences_growing": (
        _sentences_growing,
        "`min_sentences` or more sentences, each with more words than the one before",
    ),
    "keyword_in_sentence": (
        _keyword_in_sentence,
        "the k-th (-1 the last) sentence holds `keyword`",
    ),
    "emoji_per_sentence": (
        _emoji_per_sentence,
        "there are sentences and each holds a number of emoji within the bound",
    ),
    "question_count": (_question_count, "questions are within the bound"),
    "sentence_types": (
        _sentence_types,
        "each of `questions`, `exclamations`, `statements` given is exactly that kind's number of sentences",
    ),
    "sentence_type_balance": (
        _sentence_type_balance,
        "the sentence kinds of `kinds` occur equally often, each at least `min` (default 1) times",
    ),
    "sentence_type_pattern": (
        _sentence_type_pattern,
        "the sentences' kinds follow `pattern`, repeated from the first sentence, at least once through",
    ),
    "emoji_sentence_end": (
        _emoji_sentence_end,
        "there are sentences and each ends with an emoji (end marks and closing quotes after it aside)",
    ),
    "alternating_script": (
        _alternating_script,
        "two or more sentences, alternately in Han and Latin script alone, the first in `first`",
    ),
    "sentence_mixed_script": (
        _sentence_mixed_script,
        "there are sentences and each holds both Han characters and Latin letters",
    ),
    "shared_words": (
        _shared_words,
        "two or more sentences, the first and the last sharing at least `min` content words (case folded)",
    ),
}
