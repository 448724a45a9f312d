"""Verifiers of words, letters and keywords: counts, positions, vocabularies, letter rules.

A word's *letters* are its letters (digits, apostrophes and hyphens aside);
*different* words are told apart case folded. A *palindrome* is a word of
three or more letters that reads the same backwards, case folded. A word is
*in capitals* when it has letters and none is lower case. *Vowels* are
``a e i o u`` (``y`` is not one, ``VOWELS``); a *consonant* is any other Latin
letter; a *consonant cluster* opens a word with two or more consonant sounds,
an opening pair of ``ONE_SOUND_PAIRS`` counting as one (``str``, ``bl`` and
``thr`` are clusters, ``th`` and ``kn`` are not), a ``y`` after the first
letter a vowel there (``try``). *Content words* are words outside
``STOP_WORDS``. Keywords are read as :mod:`bench.heldout_judge.readings`
says; the ``_isolated`` verifiers are the second set's reading of them.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from bench.heldout_judge.readings import (
    CONJUNCTIONS,
    HAS_CONTENT,
    LETTER,
    PRONOUNS,
    STOP_WORDS,
    Judge,
    bounded,
    keyword_count,
    mention_count,
    mentions,
    split_sentences,
    words,
)

_DOUBLE_LETTER = re.compile(r"([^\W\d_])\1")
#: The letters a vowel rule counts (``y`` is not one of them).
VOWELS = frozenset("aeiou")
#: Opening letter pairs that sound as one consonant (a digraph or a silent letter), not a cluster.
ONE_SOUND_PAIRS = frozenset({"ch", "sh", "th", "wh", "ph", "gh", "kn", "wr", "gn"})


def _word_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(words(text)), args)


def _unique_words(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len({w.casefold() for w in words(text)}), args)


def _initial_count(args: Mapping[str, Any], text: str) -> bool:
    letter = str(args["letter"]).casefold()
    return bounded(sum(w.casefold().startswith(letter) for w in words(text)), args)


def _no_adjacent_same_initial(args: Mapping[str, Any], text: str) -> bool:
    found = [w.casefold() for w in words(text)]
    return bool(found) and all(a[0] != b[0] for a, b in itertools.pairwise(found))


def _letter_absent(args: Mapping[str, Any], text: str) -> bool:
    return str(args["letter"]).casefold() not in text.casefold() and bool(words(text))


def _max_word_length(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    return bool(found) and all(len(LETTER.findall(w)) <= int(args["n"]) for w in found)


def _word_at(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    k = int(args["k"])
    index = k - 1 if k > 0 else len(found) + k
    return 0 <= index < len(found) and found[index].casefold() == str(args["word"]).casefold()


def _keyword_count_isolated(args: Mapping[str, Any], text: str) -> bool:
    return bounded(keyword_count(str(args["keyword"]), text), args)


def _keywords_all_isolated(args: Mapping[str, Any], text: str) -> bool:
    return all(keyword_count(str(word), text) >= 1 for word in args["words"])


def _forbidden_words_isolated(args: Mapping[str, Any], text: str) -> bool:
    has_content = bool(HAS_CONTENT.search(text))
    return has_content and all(keyword_count(str(word), text) == 0 for word in args["words"])


def _caps_words(args: Mapping[str, Any], text: str) -> bool:
    shouted = [
        w for w in words(text) if sum(c.isalpha() for c in w) >= 2 and w.isupper()
    ]
    return bounded(len(shouted), args)


def _suffix_count(args: Mapping[str, Any], text: str) -> bool:
    suffix = str(args["suffix"]).casefold()
    found = [w for w in words(text) if len(w) > len(suffix) and w.casefold().endswith(suffix)]
    return bounded(len(found), args)


def _max_word_repeat(args: Mapping[str, Any], text: str) -> bool:
    counts = Counter(w.casefold() for w in words(text))
    return bool(counts) and max(counts.values()) <= int(args["n"])


def _first_word_in(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    return bool(found) and found[0].casefold() in {str(o).casefold() for o in args["options"]}


def _keyword_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(mention_count(str(args["keyword"]), text), args)


def _keywords_all(args: Mapping[str, Any], text: str) -> bool:
    return all(mention_count(str(word), text) >= 1 for word in args["words"])


def _forbidden_words(args: Mapping[str, Any], text: str) -> bool:
    return bool(HAS_CONTENT.search(text)) and all(
        mention_count(str(word), text) == 0 for word in args["words"]
    )


def _distinct_words(text: str) -> set[str]:
    return {w.casefold() for w in words(text)}


def _double_letter_words(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(bool(_DOUBLE_LETTER.search(w)) for w in _distinct_words(text)), args)


def _long_words(args: Mapping[str, Any], text: str) -> bool:
    least = int(args["min_letters"])
    found = [w for w in _distinct_words(text) if len(LETTER.findall(w)) >= least]
    return bounded(len(found), args)


def _keyword_more_than(args: Mapping[str, Any], text: str) -> bool:
    more = mention_count(str(args["more"]), text)
    less = mention_count(str(args["less"]), text)
    return less >= 1 and more > less


def _exact_casing(args: Mapping[str, Any], text: str) -> bool:
    word = str(args["word"])
    found = mentions(word, text)
    return bool(found) and all(m.group() == word for m in found)


def _keywords_in_order(args: Mapping[str, Any], text: str) -> bool:
    where = [mentions(str(w), text) for w in args["words"]]
    return all(where) and all(a[0].start() < b[0].start() for a, b in itertools.pairwise(where))


def _in_list(text: str, vocabulary: frozenset[str]) -> list[str]:
    return [w.casefold() for w in words(text) if w.casefold() in vocabulary]


def _stop_word_share(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    return bool(found) and len(_in_list(text, STOP_WORDS)) / len(found) <= float(args["max_ratio"])


def _conjunction_kinds(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len(set(_in_list(text, CONJUNCTIONS))), args)


def _pronoun_count(args: Mapping[str, Any], text: str) -> bool:
    return bool(words(text)) and bounded(len(_in_list(text, PRONOUNS)), args)


def _palindromes(args: Mapping[str, Any], text: str) -> bool:
    found = {
        w.casefold()
        for w in words(text)
        if len(w) >= 3 and w.isalpha() and w.casefold() == w.casefold()[::-1]
    }
    return bounded(len(found), args)


def _alphabet_chain(args: Mapping[str, Any], text: str) -> bool:
    initials = [w[0].casefold() for w in words(text)]
    if len(initials) < 2 or not all("a" <= c <= "z" for c in initials):
        return False
    return all((ord(b) - ord(a)) % 26 == 1 for a, b in itertools.pairwise(initials))


def _unique_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = [w.casefold() for w in words(text)]
    return bool(found) and len(set(found)) / len(found) >= float(args["min_ratio"])


def _keyword_counts(args: Mapping[str, Any], text: str) -> bool:
    counts: Mapping[str, Any] = args["counts"]
    return all(keyword_count(str(word), text) == int(n) for word, n in counts.items())


def _keyword_ratio(args: Mapping[str, Any], text: str) -> bool:
    more, less = keyword_count(str(args["more"]), text), keyword_count(str(args["less"]), text)
    return less > 0 and more == int(args["ratio"]) * less


def _nth_word_upper(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    n = int(args["n"])
    if len(found) < n:
        return False
    for position, word in enumerate(found, start=1):
        letters = [c for c in word if c.isalpha()]
        capitals = bool(letters) and not any(c.islower() for c in letters)
        if position % n == 0 and not capitals:
            return False
        if position % n and capitals and len(letters) >= 2:
            return False
    return True


def _word_vowel_kinds(args: Mapping[str, Any], text: str) -> bool:
    found = words(text)
    return bool(found) and all(len(VOWELS & set(w.casefold())) <= int(args["max"]) for w in found)


def _is_consonant(char: str) -> bool:
    return "a" <= char <= "z" and char not in VOWELS


def _initials_class(args: Mapping[str, Any], text: str) -> bool:
    units = split_sentences(text) if args["scope"] == "sentences" else words(text)
    firsts = [words(u)[0][0].casefold() if words(u) else "" for u in units]
    vowel = args["class"] == "vowel"
    return bool(firsts) and all((c in VOWELS) if vowel else _is_consonant(c) for c in firsts)


def _opens_with_cluster(word: str) -> bool:
    folded = word.casefold()
    run = 0
    while run < len(folded) and _is_consonant(folded[run]) and not (run and folded[run] == "y"):
        run += 1
    sounds = run - (1 if run >= 2 and folded[:2] in ONE_SOUND_PAIRS else 0)
    return sounds >= 2


def _consonant_clusters(args: Mapping[str, Any], text: str) -> bool:
    return bounded(len({w.casefold() for w in words(text) if _opens_with_cluster(w)}), args)


#: verifier id -> (function, how a strict reader decides it).
VERIFIERS: dict[str, tuple[Judge, str]] = {
    "word_count": (_word_count, "the number of words is within the bound"),
    "unique_words": (_unique_words, "distinct words (case folded) are within the bound"),
    "initial_count": (
        _initial_count,
        "words starting with `letter` (case folded) are within the bound",
    ),
    "no_adjacent_same_initial": (
        _no_adjacent_same_initial,
        "no two words in a row start with the same letter",
    ),
    "letter_absent": (
        _letter_absent,
        "the letter appears nowhere, in either case (an empty answer fails)",
    ),
    "max_word_length": (_max_word_length, "no word has more than `n` letters"),
    "word_at": (_word_at, "the k-th word (1-based, -1 the last) is `word`, case folded"),
    "keyword_count_isolated": (
        _keyword_count_isolated,
        "occurrences of `keyword` are within the bound",
    ),
    "keywords_all_isolated": (_keywords_all_isolated, "every one of `words` occurs at least once"),
    "forbidden_words_isolated": (
        _forbidden_words_isolated,
        "none of `words` occurs (an empty answer fails)",
    ),
    "caps_words": (
        _caps_words,
        "words of two or more letters written wholly in capitals are within the bound",
    ),
    "suffix_count": (
        _suffix_count,
        "words ending with `suffix` (longer than it, case folded) are within the bound",
    ),
    "max_word_repeat": (
        _max_word_repeat,
        "no word (case folded) occurs more than `n` times (an empty answer fails)",
    ),
    "first_word_in": (_first_word_in, "the first word is one of `options`, case folded"),
    "keyword_count": (_keyword_count, "occurrences of `keyword` are within the bound"),
    "keywords_all": (_keywords_all, "every one of `words` occurs at least once"),
    "forbidden_words": (_forbidden_words, "none of `words` occurs (an empty answer fails)"),
    "double_letter_words": (
        _double_letter_words,
        "different words holding a doubled letter ('ee', 'll') are within the bound",
    ),
    "long_words": (
        _long_words,
        "different words of at least `min_letters` letters are within the bound",
    ),
    "keyword_more_than": (
        _keyword_more_than,
        "`less` occurs at least once and `more` occurs more often than it",
    ),
    "exact_casing": (
        _exact_casing,
        "`word` occurs, and every occurrence, read case folded, is spelled exactly `word`",
    ),
    "keywords_in_order": (
        _keywords_in_order,
        "every one of `words` occurs, their first occurrences in the given order",
    ),
    "stop_word_share": (
        _stop_word_share,
        "words of STOP_WORDS make at most `max_ratio` of all words",
    ),
    "conjunction_kinds": (
        _conjunction_kinds,
        "different words of CONJUNCTIONS used are within the bound",
    ),
    "pronoun_count": (
        _pronoun_count,
        "occurrences of words of PRONOUNS are within the bound (an empty answer fails)",
    ),
    "palindromes": (
        _palindromes,
        "different palindrome words of three or more letters are within the bound",
    ),
    "alphabet_chain": (
        _alphabet_chain,
        "two or more words, each beginning with the letter after the previous word's first (z to a)",
    ),
    "unique_ratio": (
        _unique_ratio,
        "different words (case folded) make at least `min_ratio` of all words",
    ),
    "keyword_counts": (
        _keyword_counts,
        "each keyword of `counts` occurs exactly its number of times",
    ),
    "keyword_ratio": (
        _keyword_ratio,
        "`less` occurs, and `more` occurs exactly `ratio` times as often as it",
    ),
    "nth_word_upper": (
        _nth_word_upper,
        "every n-th word is in capitals and no other word of two or more letters is",
    ),
    "word_vowel_kinds": (
        _word_vowel_kinds,
        "there are words and none uses more than `max` different vowels",
    ),
    "initials_class": (
        _initials_class,
        "every one of the `scope` (sentences or words) begins with a letter of `class` (vowel or consonant)",
    ),
    "consonant_clusters": (
        _consonant_clusters,
        "different words opening with a consonant cluster (see the module doc) are within the bound",
    ),
}
