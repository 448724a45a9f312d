"""The memoised attribute ruler annotates exactly as spaCy's own, in the real English pipeline."""

from __future__ import annotations

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from bench.datasets import IFEVAL_PROMPTS
from bench.extraction import PARAPHRASES, load
from reasoning.memo_ruler import MemoisedAttributeRuler, memoise
from reasoning.nlp import ENGLISH_MODEL, english

# The ruler's exceptions: multi-token rules (ain't, gonna, y'all, let's), a REGEX rule
# (nothin'), space tokens, and ordinary text with numbers and quotes.
TEXTS = (
    "Y'all ain't gonna believe it, nothin' works. Let's go!",
    "He's sayin' y' all  \n\n  ain't wanna gotta gimme that.",
    "Use fewer than 547 words. Do not use the word 'urgent'. End with \"Regards\".",
    "Answer in exactly three bullet points; mention Zürich twice (P.S. at the end).",
)


def _annotations(doc: Doc) -> list[tuple[object, ...]]:
    return [(t.text, t.tag_, t.pos_, str(t.morph), t.lemma_, t.dep_, t.head.i) for t in doc]


def _plain() -> Language:
    nlp = spacy.load(ENGLISH_MODEL, exclude=["ner"])
    nlp.add_pipe("tenet_line_breaks", before="parser")
    return nlp


def test_the_english_pipeline_runs_the_memoised_ruler_with_the_plain_one_disabled() -> None:
    nlp = english()
    assert isinstance(nlp.get_pipe("tenet_memoised_attribute_ruler"), MemoisedAttributeRuler)
    assert "attribute_ruler" in nlp.disabled
    assert nlp.pipe_names.index("tenet_memoised_attribute_ruler") < nlp.pipe_names.index("lemmatizer")


def test_annotations_equal_the_plain_rulers_on_prompts_and_exceptions() -> None:
    plain = _plain()
    texts = [*TEXTS, *(row["prompt"] for row in load(PARAPHRASES)[:120]),
             *(row["prompt"] for row in load(IFEVAL_PROMPTS)[:120])]
    # Twice: the first pass fills the memo, the second is answered from it.
    for _ in range(2):
        ours = english().pipe(texts, disable=["ner"])
        for text, a, b in zip(texts, ours, plain.pipe(texts)):
            assert _annotations(a) == _annotations(b), text
    lemmas = {t.lower_: t.lemma_ for t in english()(TEXTS[0])}
    # Rules of two tokens (ai n't, gon na, let 's) and the REGEX rule (nothin') still apply.
    assert (lemmas["ai"], lemmas["gon"], lemmas["na"], lemmas["'s"]) == ("be", "go", "to", "us")
    assert lemmas["nothin'"] == "nothing"


def test_a_doc_of_known_signatures_adds_nothing_and_unseen_ones_are_remembered() -> None:
    ruler = memoise(_plain().get_pipe("attribute_ruler"))
    assert ruler is not None
    nlp = _plain()
    doc = nlp(TEXTS[2])  # the plain pipeline's own doc: re-annotating it must change nothing
    before = _annotations(doc)
    ruler(doc)
    size = len(ruler._memo)
    assert size > 0 and _annotations(doc) == before
    ruler(nlp(TEXTS[2]))
    assert len(ruler._memo) == size
    ruler(nlp("I'm sure they're here, aren't they?"))
    assert len(ruler._memo) > size


def test_what_is_no_attribute_ruler_is_not_memoised() -> None:
    assert memoise(english().get_pipe("lemmatizer")) is None
