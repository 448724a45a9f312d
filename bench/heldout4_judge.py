"""Judges of the fourth held-out set (``bench/data/heldout4.jsonl``), written apart from the product.

Nothing here imports ``reasoning`` or ``inference``, and none of it was
written from the product's extraction, verifiers or controllers: each judge
reads an answer as a strict human reader of the instruction would, and says
how in one line (``JUDGES``). Where an instruction means the same as one of
the earlier sets', its judge is theirs (``bench.heldout_judge``,
``bench.heldout2_judge``, ``bench.heldout3_judge``), and so are their
readings of a *word*, a *sentence*, a *paragraph*, a *line*, a *list item*,
a *keyword*, a phrase a text *begins with* and a count's bound. Readings
added here:

- *stop words*, *conjunctions* and *personal pronouns* are the closed English
  word lists below (``STOP_WORDS``, ``CONJUNCTIONS``, ``PRONOUNS``), matched
  as whole words, case folded; a conjunction list holds only words that are
  conjunctions in nearly every use (``for``, ``since``, ``after`` are not in it);
- a *palindrome* is a word of three or more letters that reads the same
  backwards, case folded;
- a *punctuation mark* is a character of a Unicode punctuation category;
- an emoji standing right after a sentence's end mark belongs to that
  sentence (``Done! 🎉 Next.`` is two sentences, the first with one emoji);
- a *question* is a sentence ending (closing quotes aside) with ``?`` or ``？``;
- a line follows a *template* when, emphasis marks aside, it is the template
  line with each ``{}`` filled by some text (a full-width colon ``：`` and an
  ASCII one are the same mark there);
- a line is in *title case* when its first and last words and every word not
  in ``MINOR_WORDS`` begin with a capital letter (words opening with a digit
  aside);
- *CSV* is the whole answer (one code fence allowed) read by Python's ``csv``
  reader: a header row and data rows, every row with the header's number of
  cells;
- brackets ``()`` ``[]`` ``{}`` are *nested* n deep when they all pair up in
  order and some pair lies inside n - 1 others; a list marker such as ``1)``
  or ``a)`` opening a line is no bracket.

An answer with nothing but white space (a refused run, a ``needs_confirmation``
answer) fails every judge, the bounds "at most" and "less than" included: it
did not do the task. ``judge(judge_id, args, text)`` is the one entry point; an
unknown id is a ``KeyError`` (a typo in the set must not read as a failed answer).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from bench.heldout2_judge import JUDGES as SECOND_SET_JUDGES
from bench.heldout2_judge import answered, keyword_count, normal, strip_closers, unlead
from bench.heldout3_judge import JUDGES as THIRD_SET_JUDGES
from bench.heldout3_judge import lines
from bench.heldout_judge import JUDGES as FIRST_SET_JUDGES
from bench.heldout_judge import Judge, bounded, emoji_count, sentences, words

__all__ = [
    "CONJUNCTIONS",
    "JUDGES",
    "MINOR_WORDS",
    "PRONOUNS",
    "STOP_WORDS",
    "emoji_sentences",
    "judge",
]

def _vocabulary(spaced: str) -> frozenset[str]:
    return frozenset(spaced.split())


#: English function words a "stop word" share counts (whole words, case folded).
STOP_WORDS = _vocabulary(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves"""
)
#: Words that are conjunctions in nearly every use.
CONJUNCTIONS = _vocabulary(
    "and but or nor yet so because although though unless whereas while if whether until"
)
#: English personal, possessive and reflexive pronouns.
PRONOUNS = _vocabulary(
    """i me my mine myself you your yours yourself yourselves he him his himself she her
    hers herself it its itself we us our ours ourselves they them their theirs
    themselves"""
)
#: Words a title-case line may leave in lower case (not as its first or last word).
MINOR_WORDS = _vocabulary(
    "a an the and but or nor for so yet of to in on at by up as per via with from into over"
)

_SENTENCE_CUT = re.compile(r"(?<=[.!?。！？])\s*")
_HAS_CONTENT = re.compile(r"[^\W_]")
_FENCE = re.compile(r"^```[\w-]*\s*\n(?P<body>.*?)\n?```$", re.DOTALL)
_BRACKETS = {")": "(", "]": "[", "}": "{"}
_LIST_PAREN = re.compile(r"^[ \t]*(?:\d+|[A-Za-z])\)", re.MULTILINE)
_QUESTION_MARKS = "?？"


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


def _unique_ratio(args: Mapping[str, Any], text: str) -> bool:
    found = [w.casefold() for w in words(text)]
    return bool(found) and len(set(found)) / len(found) >= float(args["min_ratio"])


def _marks_all(args: Mapping[str, Any], text: str) -> bool:
    return all(mark in text for mark in str(args["chars"]))


def _keyword_counts(args: Mapping[str, Any], text: str) -> bool:
    counts: Mapping[str, Any] = args["counts"]
    return all(keyword_count(str(word), text) == int(n) for word, n in counts.items())


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


def _separated_line(args: Mapping[str, Any], text: str) -> bool:
    separator = str(args["separator"])
    for line in lines(text):
        parts = [part.strip() for part in line.split(separator)]
        if len(parts) == int(args["n"]) and all(_HAS_CONTENT.search(p) for p in parts):
            return True
    return False


def emoji_sentences(text: str) -> list[str]:
    """The answer's sentences, each with the emoji standing right after its end mark."""
    found: list[str] = []
    for line in text.splitlines():
        for piece in _SENTENCE_CUT.split(line):
            piece = piece.strip()
            if not piece:
                continue
            head = ""
            while piece and (emoji_count(piece[0]) or piece[0] in "\ufe0f\u200d" or piece[0].isspace()):
                head, piece = head + piece[0], piece[1:]
            if head and found:
                found[-1] = f"{found[-1]} {head.strip()}"
            elif head:
                piece = head + piece
            if _HAS_CONTENT.search(piece):
                found.append(piece)
            elif piece and found:
                found[-1] += piece
    return found


def _emoji_per_sentence(args: Mapping[str, Any], text: str) -> bool:
    found = emoji_sentences(text)
    return bool(found) and all(bounded(emoji_count(s), args) for s in found)


def _unemphasised(line: str) -> str:
    return line.replace("**", "").replace("__", "").replace("：", ":").strip()


def _template(args: Mapping[str, Any], text: str) -> bool:
    wanted = [str(t) for t in args["lines"]]
    found = lines(text)
    if len(found) != len(wanted):
        return False
    for line, template in zip(found, wanted, strict=True):
        pattern = r"\s*".join(
            r"\S.*?" if part == "{}" else re.escape(part)
            for part in re.split(r"(\{\})", _unemphasised(template))
            if part
        )
        if not re.fullmatch(pattern, _unemphasised(line)):
            return False
    return True


def _title_case(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    if not found:
        return False
    first = [w for w in words(unlead(found[0])) if not w[0].isdigit()]
    if not first:
        return False
    return all(
        w[0].isupper() for i, w in enumerate(first)
        if i in (0, len(first) - 1) or w.casefold() not in MINOR_WORDS
    )


def _csv(args: Mapping[str, Any], text: str) -> bool:
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group("body").strip()
    rows = [row for row in csv.reader(io.StringIO(body)) if any(cell.strip() for cell in row)]
    if len(rows) < 2:
        return False
    header = [normal(cell) for cell in rows[0]]
    if header != [normal(str(c)) for c in args["header"]]:
        return False
    return all(len(row) == len(header) for row in rows) and bounded(len(rows) - 1, args)


def _bracket_depth(args: Mapping[str, Any], text: str) -> bool:
    stack: list[str] = []
    deepest = 0
    for char in _LIST_PAREN.sub("", text):
        if char in "([{":
            stack.append(char)
            deepest = max(deepest, len(stack))
        elif char in _BRACKETS and (not stack or stack.pop() != _BRACKETS[char]):
            return False
    return not stack and deepest >= int(args["n"])


def _one_word_lines(args: Mapping[str, Any], text: str) -> bool:
    found = lines(text)
    return bool(found) and all(len(words(line)) == 1 for line in found)


def _punctuation_only(args: Mapping[str, Any], text: str) -> bool:
    allowed = str(args["chars"])
    return bool(words(text)) and all(
        c in allowed for c in text if unicodedata.category(c).startswith("P")
    )


def _question_count(args: Mapping[str, Any], text: str) -> bool:
    return bounded(sum(strip_closers(s)[-1:] in _QUESTION_MARKS for s in sentences(text)), args)


#: judge id -> (function, how a strict reader decides it), before the empty-answer rule.
_READINGS: dict[str, tuple[Judge, str]] = {
    **{
        judge_id: FIRST_SET_JUDGES[judge_id]
        for judge_id in (
            "word_count",
            "numbers",
            "emoji",
            "word_at",
            "max_word_length",
            "lines",
            "nested_list",
            "numbered_items",
            "ends_with_char",
        )
    },
    **{
        judge_id: SECOND_SET_JUDGES[judge_id]
        for judge_id in (
            "sentence_count",
            "paragraph_count",
            "lowercase",
            "uppercase",
            "json",
            "ends_with_text",
            "opens_with",
            "title_line",
            "marker_lines",
            "bullet_items",
            "postscript",
            "no_latin",
            "item_max_chars",
            "paragraph_start",
            "sentence_balance",
            "max_word_repeat",
        )
    },
    **{
        judge_id: THIRD_SET_JUDGES[judge_id]
        for judge_id in (
            "keyword_count",
            "keywords_all",
            "forbidden_words",
            "wrapped",
            "response_language",
            "answer_is_one_of",
            "lines_start_seq",
        )
    },
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
    "last_first_chain": (
        _last_first_chain,
        "two or more sentences, each after the first opening with the previous one's last word",
    ),
    "word_in_sentence_at": (
        _word_in_sentence_at,
        "the m-th word of the k-th sentence is `word`, case folded",
    ),
    "unique_ratio": (
        _unique_ratio,
        "different words (case folded) make at least `min_ratio` of all words",
    ),
    "marks_all": (_marks_all, "every character of `chars` occurs at least once"),
    "keyword_counts": (
        _keyword_counts,
        "each keyword of `counts` occurs exactly its number of times",
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
    "separated_line": (
        _separated_line,
        "a line holds exactly `n` non-empty items separated by `separator`",
    ),
    "emoji_per_sentence": (
        _emoji_per_sentence,
        "there are sentences and each holds a number of emoji within the bound",
    ),
    "template": (
        _template,
        "exactly one line per template line, each the template with every {} filled",
    ),
    "title_case": (
        _title_case,
        "the first line is in title case (see the module doc)",
    ),
    "csv": (
        _csv,
        "the whole answer is CSV with header `header` and a number of data rows within the bound",
    ),
    "bracket_depth": (
        _bracket_depth,
        "brackets all pair up and are nested at least `n` deep",
    ),
    "one_word_lines": (_one_word_lines, "there are lines and each holds exactly one word"),
    "punctuation_only": (
        _punctuation_only,
        "there are words and every punctuation mark is one of `chars`",
    ),
    "question_count": (_question_count, "questions are within the bound"),
}


#: judge id -> (function, how a strict reader decides it); an empty answer fails each.
JUDGES: dict[str, tuple[Judge, str]] = {
    judge_id: (answered(function), reading) for judge_id, (function, reading) in _READINGS.items()
}


def judge(judge_id: str, args: Mapping[str, Any], text: str) -> bool:
    """Whether ``text`` meets the instruction ``judge_id`` with ``args``."""
    function, _ = JUDGES[judge_id]
    return function(args, text)
