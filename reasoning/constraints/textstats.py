"""Counting rules for responses: words, sentences, paragraphs, capital words.

The rules follow IFEval's verification code (google-research
``instruction_following_eval``, as packaged by ``if-verifiable``) so that a
verdict of ours and IFEval's judge agree on complete texts:

- words: maximal runs of ``\\w`` characters (nltk's ``RegexpTokenizer(r"\\w+")``),
  except that each Han character counts as one word, since Chinese writes no
  spaces (identical to IFEval on any text without Han characters);
- sentences: IFEval uses nltk's trained Punkt model, whose data no package
  ships. We split after ``.``, ``!``, ``?`` (and ``。！？``) runs followed by
  whitespace or the end, keeping known abbreviations, initials and decimals
  together; ``bench.verifier_agreement`` measures the agreement;
- capital words: nltk's Treebank tokens that are ``isupper()``; we tokenise
  words with inner hyphens and periods as one token and split contractions
  (``DON'T`` -> ``DON`` ``'T``) as Treebank does.

Every function is linear in the text and free of model calls, because the
decoder runs them at step boundaries.
"""

from __future__ import annotations

import re

__all__ = [
    "ABBREVIATIONS",
    "blank_line_paragraphs",
    "count_bullets",
    "count_capital_words",
    "count_highlights",
    "count_placeholders",
    "count_sentences",
    "count_words",
    "markdown_paragraphs",
    "split_sentences",
]

_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]|[^\W\u3400-\u4dbf\u4e00-\u9fff]+")


def count_words(text: str) -> int:
    """Number of words (``\\w`` runs; one per Han character)."""
    return sum(1 for _ in _WORD.finditer(text))


#: Words a period after which does not end a sentence (shared with the sentence controllers).
ABBREVIATIONS = frozenset(
    ["mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "inc", "ltd", "co", "corp", "no", "fig", "approx", "dept", "est", "mt", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"]
)
_SENTENCE_END = re.compile(r"[.!?。！？]+[\"'”’)\]]*(?=\s|$)|[。！？]+[\"'”’)\]]*")
_LAST_WORD = re.compile(r"([\w.]+)\.*$")


def _is_abbreviation(before: str) -> bool:
    match = _LAST_WORD.search(before)
    if match is None:
        return False
    word = match.group(1).lower().rstrip(".")
    if word in ABBREVIATIONS:
        return True
    return len(word) == 1 and word.isalpha()


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped, without empty ones."""
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if match.group(0) == "." and _is_abbreviation(text[start : match.start()]):
            continue
        piece = text[start:end].strip()
        if piece:
            sentences.append(piece)
        start = end
    rest = text[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences


_HALF_WIDTH = str.maketrans("。？！，；：", ".?!,;:")


def half_width(text: str) -> str:
    """``text`` with the full-width sentence marks as their ASCII forms, so a mark said in one width matches both."""
    return text.translate(_HALF_WIDTH)


def count_sentences(text: str) -> int:
    """Number of sentences (see :func:`split_sentences`)."""
    return len(split_sentences(text))


_CAPITAL_TOKEN = re.compile(r"'?[^\W_]+(?:[-.][^\W_]+)*")


def count_capital_words(text: str) -> int:
    """Tokens written in capitals (``"NASA"``, ``"I"``, ``"DON'T"`` counts 2)."""
    return sum(1 for match in _CAPITAL_TOKEN.finditer(text) if match.group(0).isupper())


_MARKDOWN_DIVIDER = re.compile(r"\s?\*\*\*\s?")


def markdown_paragraphs(text: str) -> int | None:
    """Paragraphs separated by ``***``; None when an inner paragraph is empty.

    IFEval ignores an empty first or last piece and fails a text with an empty
    piece in between; None reports that failure.
    """
    pieces = _MARKDOWN_DIVIDER.split(text)
    count = len(pieces)
    for index, piece in enumerate(pieces):
        if not piece.strip():
            if index in (0, len(pieces) - 1):
                count -= 1
            else:
                return None
    return count


def blank_line_paragraphs(text: str) -> list[str]:
    """Pieces between ``\\n\\n`` separators, as IFEval splits them (empty ones kept)."""
    return text.split("\n\n")


_BULLET_STAR = re.compile(r"^\s*\*[^\*].*$", re.MULTILINE)
_BULLET_DASH = re.compile(r"^\s*-.*$", re.MULTILINE)


def count_bullets(text: str) -> int:
    """Markdown bullet lines: ``* item`` or ``- item``."""
    return len(_BULLET_STAR.findall(text)) + len(_BULLET_DASH.findall(text))


_HIGHLIGHT = re.compile(r"\*[^\n\*]*\*")
_DOUBLE_HIGHLIGHT = re.compile(r"\*\*[^\n\*]*\*\*")


def count_highlights(text: str) -> int:
    """Non-empty ``*highlighted*`` spans plus non-empty ``**bold**`` spans."""
    single = sum(1 for h in _HIGHLIGHT.findall(text) if h.strip("*").strip())
    double = sum(
        1 for h in _DOUBLE_HIGHLIGHT.findall(text) if h.removeprefix("**").removesuffix("**").strip()
    )
    return single + double


_PLACEHOLDER = re.compile(r"\[.*?\]")


def count_placeholders(text: str) -> int:
    """Square-bracket placeholders such as ``[address]``."""
    return len(_PLACEHOLDER.findall(text))
