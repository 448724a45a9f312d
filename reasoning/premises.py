"""Premises (stated assumptions) and the turns that retract or amend them.

A premise is read from "assume ...", "assuming ...", "given that ...",
"suppose ...", "let's say ...", "假设...", "假定...", "已知...", "设...为...".
One trigger may state several: "Assume the tax rate is 20% and the customer
is a PEP" is two premises (so either can be retracted alone), as is
"假设税率为20%，且客户是政治公众人物".
Its ``topic`` holds the content words of the subject ("tax rate") and its
``value`` the asserted value where there is one ("20%"); ``negated`` is set
for "given that the customer is not a PEP".

:func:`match_retraction` reads a later turn ("ignore the earlier assumption
about the tax rate", "actually the customer is not a PEP", "忽略上一条关于税率
的假设") and matches it to premises by topic overlap: English lemmas of
content words, Chinese jieba tokens. When two premises match about equally
the result says ``ambiguous=True`` and lists both, so the caller asks
instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import msgspec
from spacy.tokens import Doc

from reasoning.constraints.model import Premise, Span
from reasoning.language import detect_prompt_language
from reasoning.nlp import chinese, english

__all__ = ["RetractionMatch", "extract_premises", "match_retraction", "topic_tokens"]

_EN_TRIGGER = re.compile(
    r"\b(?:assume|assuming|suppose|supposing|presume|presuming|given\s+that|let(?:'s|\s+us)\s+(?:say|assume|suppose)"
    r"|imagine\s+that|on\s+the\s+assumption\s+that|under\s+the\s+assumption\s+that)\s+(?:that\s+)?",
    re.IGNORECASE,
)
_ZH_TRIGGER = re.compile(r"(?:假设|假定|已知|设定|前提是|假如|姑且认为)(?:：|:)?")
_EN_BODY_END = re.compile(r"[.;!?\n]|,\s|\s(?:and\s+)?(?:then|so)\s")
_ZH_BODY_END = re.compile(r"[。；;！!？?\n，,]")
_EN_CLAUSE = (r"(?:(?:the|a|an|this|that|our|their|its|his|her)\s+)?[\w%-]+(?:\s+[\w%-]+){0,3}"
              r"\s+(?:is|are|was|were|has|have|equals|stands)\b")
_EN_AND = re.compile(r"\s+and\s+(?=" + _EN_CLAUSE + ")", re.IGNORECASE)
_EN_MORE = re.compile(r",\s+and\s+(?=" + _EN_CLAUSE + ")", re.IGNORECASE)
_COMPLETE = re.compile(r"\b(?:is|are|was|were|equals|of|at)\b|是|为|等于", re.IGNORECASE)
_ZH_AND = re.compile(r"(?:并且|而且|且|同时)(?=[^，。；]{0,12}(?:是|为))")
_ZH_MORE = re.compile(r"[，,]\s*(?:并且|而且|且|同时)(?=[^，。；]{0,12}(?:是|为))")
_VALUE = re.compile(
    r"(?:[A-Z]{3}\s?|[$€£¥])?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|percent|per\s?cent)|\s(?!(?:to|of|and|or|in|on|at|for|from|by|with|is|are|was)\b)[A-Za-z]{1,12}\b)?"
    r"|百分之[零一二三四五六七八九十百]+"
)
_EN_COPULA = re.compile(r"\s(?:is|are|was|were|equals|=|stands\s+at|will\s+be|of)\s(?P<neg>not\s+|n't\s+)?", re.IGNORECASE)
_ZH_COPULA = re.compile(r"(?P<neg>不是|并非|不为|没有)?(?:为|是|等于|=|：|:)")


class RetractionMatch(msgspec.Struct, frozen=True, kw_only=True):
    """How a turn relates to earlier premises.

    ``kind`` is ``"retract"`` (drop the premise), ``"amend"`` (replace its
    value: ``new_value`` / ``negated``) or ``"none"`` (the turn does not
    retract or amend anything). ``premise_ids`` are best first;
    ``ambiguous`` is True when more than one premise matches about equally
    (``premise_ids`` then lists all of them).
    """

    kind: str
    premise_ids: tuple[str, ...] = ()
    new_value: str | None = None
    negated: bool | None = None
    ambiguous: bool = False
    score: float = 0.0


_EN_STOP = frozenset(
    ["the", "a", "an", "this", "that", "these", "those", "earlier", "previous", "last", "prior", "assumption", "assumptions", "premise", "about", "regarding", "concerning", "on", "of", "what", "i", "you", "we", "said", "say", "mentioned", "one", "thing", "part", "bit"]
)
_ZH_STOP = frozenset(["的", "了", "关于", "上", "一", "条", "个", "之前", "先前", "前面", "刚才", "那", "这", "假设", "假定", "前提", "说", "我", "你", "所", "有关", "对", "中"])


@lru_cache(maxsize=1024)
def topic_tokens(text: str, language: str) -> frozenset[str]:
    """Content tokens of ``text`` for topic matching (lemmas or jieba words)."""
    if language == "zh" or re.search(r"[\u4e00-\u9fff]", text):
        words = {t.text for t in chinese()(text) if not t.is_punct and not t.is_space}
        zh = {w for w in words if w not in _ZH_STOP and re.search(r"[\u4e00-\u9fff]", w)}
        latin = {w.lower() for w in words if re.fullmatch(r"[A-Za-z]{2,}", w)}
        return frozenset(zh | latin)
    doc = english()(text)
    return frozenset(
        t.lemma_.lower()
        for t in doc
        if t.pos_ in ("NOUN", "PROPN", "ADJ", "VERB") and t.lemma_.lower() not in _EN_STOP and t.is_alpha
        and not t.is_stop
    )


def _parse_body_en(body: str) -> tuple[str, str | None, bool]:
    """(topic, value, negated) of "the tax rate is 20%" / "a tax rate of 20%"."""
    copula = _EN_COPULA.search(" " + body + " ")
    negated = False
    if copula is not None:
        subject = body[: max(0, copula.start() - 1)]
        rest = body[max(0, copula.end() - 1) :].strip()
        negated = bool(copula.group("neg"))
    else:
        value_match = _VALUE.search(body)
        subject = body[: value_match.start()] if value_match else body
        rest = value_match.group(0) if value_match else ""
    value_match = _VALUE.search(rest)
    value = value_match.group(0).strip() if value_match else (rest.strip() or None)
    if value is not None:
        value = re.sub(r"^(?:a|an|the)\s+", "", value, flags=re.IGNORECASE)
    topic_doc = english()(subject.strip() or body)
    words = [t.text.lower() for t in topic_doc if not t.is_stop and (t.is_alpha or t.like_num) and t.pos_ != "DET"]
    topic = " ".join(words) or subject.strip().lower()
    return topic, value, negated


def _parse_body_zh(body: str) -> tuple[str, str | None, bool]:
    copula = _ZH_COPULA.search(body)
    if copula is not None and copula.start() > 0:
        subject, rest = body[: copula.start()], body[copula.end() :]
        negated = bool(copula.group("neg"))
    else:
        value_match = _VALUE.search(body)
        subject = body[: value_match.start()] if value_match else body
        rest, negated = (value_match.group(0) if value_match else ""), False
    subject = subject.rstrip("的").strip()
    value = rest.strip() or None
    return subject or body, value, negated


def _clauses(text: str, trigger_start: int, body_start: int, body_end: re.Pattern[str],
             joiner: re.Pattern[str], more: re.Pattern[str]) -> list[tuple[int, int, int]]:
    """``(premise start, body start, end)`` of each assumption one trigger states.

    "Assume the tax rate is 20% and the customer is a PEP" states two: the
    body is cut where "and" (且, 并且, ...) starts a clause of its own, and a
    clause joined by ", and" after the body's end continues the list.
    """
    out: list[tuple[int, int, int]] = []
    start, position = trigger_start, body_start
    while True:
        end_match = body_end.search(text, position)
        end = end_match.start() if end_match else len(text)
        cut = position
        for join in joiner.finditer(text, position, end):
            if not _COMPLETE.search(text, cut, join.start()):
                continue  # "the fees and charges are 3%": one subject, not two clauses
            out.append((start, cut, join.start()))
            start = cut = join.end()
        out.append((start, cut, end))
        follow = more.match(text, end)
        if follow is None:
            return out
        start = position = follow.end()


def extract_premises(text: str, *, doc: Doc | None = None, id_prefix: str = "p") -> tuple[Premise, ...]:
    """Premises of ``text`` in order of position, ids ``p1``, ``p2``, ...

    ``doc`` is accepted so callers that already parsed the text share the
    work; the rules themselves read the text.
    """
    del doc
    found: list[tuple[int, int, str, str, str | None, bool]] = []
    for match in _EN_TRIGGER.finditer(text):
        for start, body_start, end in _clauses(text, match.start(), match.end(), _EN_BODY_END,
                                               _EN_AND, _EN_MORE):
            body = text[body_start:end].strip()
            if len(body) < 3:
                continue
            topic, value, negated = _parse_body_en(body)
            found.append((start, end, "en", topic, value, negated))
    for match in _ZH_TRIGGER.finditer(text):
        for start, body_start, end in _clauses(text, match.start(), match.end(), _ZH_BODY_END,
                                               _ZH_AND, _ZH_MORE):
            body = text[body_start:end].strip()
            if not body:
                continue
            topic, value, negated = _parse_body_zh(body)
            found.append((start, end, "zh", topic, value, negated))
    found.sort(key=lambda item: item[0])
    return tuple(
        Premise(
            id=f"{id_prefix}{index}",
            text=text[start:end],
            topic=topic,
            value=value,
            negated=negated,
            source=Span(start=start, end=end, text=text[start:end]),
            language=language,
        )
        for index, (start, end, language, topic, value, negated) in enumerate(found, start=1)
    )


_RETRACT_EN = re.compile(
    r"\b(?:ignore|forget|disregard|drop|discard|retract|withdraw|scrap|remove|delete|never\s+mind|cancel"
    r"|no\s+longer\s+assume|don't\s+assume|do\s+not\s+assume|stop\s+assuming)\b",
    re.IGNORECASE,
)
_AMEND_EN = re.compile(
    r"\b(?:actually|in\s+fact|correction|instead|rather|change|update|make\s+(?:it|that)|should\s+be|is\s+now|are\s+now|turns\s+out)\b",
    re.IGNORECASE,
)
_RETRACT_ZH = re.compile(r"忽略|忘记|忘掉|不要考虑|不用考虑|撤回|取消|删除|去掉|不再假设|作废")
_AMEND_ZH = re.compile(r"实际上|其实|更正|改为|改成|应为|应该是|修改为|调整为|变为|现在是")
_GENERIC_EN = re.compile(r"\b(?:assumption|premise|what\s+i\s+said|earlier|previous)\b", re.IGNORECASE)
_GENERIC_ZH = re.compile(r"假设|前提|刚才说的|之前说的")


def _new_value(text: str, language: str) -> tuple[str | None, bool | None]:
    if language == "zh":
        match = re.search(r"(?:改为|改成|应为|应该是|修改为|调整为|变为|现在是|其实是|实际上是)(?P<v>[^。；，,\n]+)", text)
        if match:
            return match.group("v").strip(), False
        negated = re.search(r"不是|并非", text)
        return None, (True if negated else None)
    value = _VALUE.search(text)
    negated = re.search(r"\b(?:is|are|was|were)\s+not\b|\bisn't\b|\baren't\b|\bno\s+longer\b", text, re.IGNORECASE)
    if value is not None:
        return value.group(0).strip(), bool(negated)
    if negated:
        return None, True
    positive = re.search(r"\b(?:is|are)\s+(?:actually\s+)?(?P<v>(?:a|an|the)?\s*[\w -]{1,40})", text, re.IGNORECASE)
    if positive is not None and _AMEND_EN.search(text):
        return re.sub(r"^(?:a|an|the)\s+", "", positive.group("v").strip()), False
    return None, None


def match_retraction(text: str, premises: Sequence[Premise]) -> RetractionMatch:
    """Whether ``text`` retracts or amends one of ``premises``, and which.

    >>> from reasoning.constraints.model import Premise
    >>> p = [Premise(id="p1", text="the tax rate is 20%", topic="tax rate", value="20%")]
    >>> match_retraction("ignore the assumption about the tax rate", p).premise_ids
    ('p1',)
    """
    language = detect_prompt_language(text)
    retract = (_RETRACT_ZH if language == "zh" else _RETRACT_EN).search(text)
    amend = (_AMEND_ZH if language == "zh" else _AMEND_EN).search(text)
    new_value, negated = _new_value(text, language)
    if retract is None and amend is None and new_value is None:
        return RetractionMatch(kind="none")
    kind = "retract" if retract is not None else "amend"
    if kind == "amend" and new_value is None and negated is None:
        return RetractionMatch(kind="none")
    said = topic_tokens(text, language)
    scored: list[tuple[float, str]] = []
    for premise in premises:
        topic = topic_tokens(premise.topic, premise.language) or topic_tokens(premise.text, premise.language)
        if not topic:
            continue
        overlap = len(topic & said) / len(topic)
        if overlap > 0:
            scored.append((overlap, premise.id))
    scored.sort(key=lambda item: -item[0])
    generic = (_GENERIC_ZH if language == "zh" else _GENERIC_EN).search(text) is not None
    if not scored:
        if generic and len(premises) == 1:
            return RetractionMatch(kind=kind, premise_ids=(premises[0].id,), new_value=new_value,
                                   negated=negated, score=0.5)
        if generic and len(premises) > 1 and kind == "retract":
            return RetractionMatch(kind=kind, premise_ids=tuple(p.id for p in premises), ambiguous=True,
                                   score=0.0)
        return RetractionMatch(kind="none")
    best = scored[0][0]
    close = [pid for score, pid in scored if score >= best * 0.8]
    return RetractionMatch(
        kind=kind,
        premise_ids=tuple(close),
        new_value=new_value if kind == "amend" else None,
        negated=negated if kind == "amend" else None,
        ambiguous=len(close) > 1,
        score=round(best, 3),
    )
