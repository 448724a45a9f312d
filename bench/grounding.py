"""Grounded decisions: the rules stage against a truth table written here, and the answer judge.

Run ``python -m bench.grounding [--quick]``.

Cases are generated from the bundled domains' individuals and from fresh
names: AML transfers (party kinds: PEP, sanctioned, plain; amounts below
and above the EUR 1,000,000 threshold and unknown; cross-border or not; a
high-risk jurisdiction or not; dated while AML-R-003 was in force or
after AML-R-024 superseded it; cash deposits around the EUR 10,000
threshold) and chest-imaging findings (pure ground-glass, part-solid,
solid nodules; sizes below and above 6 mm and unknown; examinations before
and after the 2017 Fleischner update), each in English and Chinese with
several wordings.

The gold decision of each case comes from :func:`gold_aml` /
:func:`gold_clinical`: the rule texts of the bundled ontologies written out
as a truth table by hand. They share nothing with the rules engine (no
ontology, no SPARQL), so the engine is measured, not restated.

Measured now: ``engine_accuracy`` (status, required actions and deciding
rules of the engine equal the gold, overall / en / zh),
``rules_p50_ms`` (the rules evaluation, :meth:`DecisionEngine.evaluate`),
``case_p50_ms`` (building the case graph), ``undetermined_rate`` and
``n_cases``.

The answer judge, :func:`judge_answer`, is pure text logic: every required
action stated (and not denied), no action stated that is not required,
the missing fact named when the gold is undetermined, that nothing is
required stated when no rule applies (silence is not a decision), and
every deciding rule cited. ``decision_accuracy`` and ``contradiction_rate`` judge the
answers of the real pipeline (:class:`PipelineAnswers`: the bundled
model, short budgets) on a sample of the cases spread over domains,
languages and gold statuses (``--decode-cases``), steered and with
``steering: false``, many cases at once through one micro-batched model
(:func:`decode_cases`, as the service batches concurrent requests);
``complete_share`` is the share of steered answers
that end on a sentence end or a closed structure.

Every answer is also judged sentence by sentence (``bench.grounding_judge``,
the benchmark's own general judge): ``grounding`` {``all``, ``en``, ``zh``:
``grounds_stated``, ``why_not_stated``, ``unsupported_sentence_share``,
``junk_sentence_share``, ``clean_answers``; ``unsteered``: the two shares of
the ``steering: false`` answers}; flagged sentences are printed to stderr.
``unseen`` holds the same for the unseen-domain arm (``bench/data/exports.ttl``,
export licensing, written only from docs/decisions.md and docs/ontologies.md,
with its own truth table :func:`gold_exports`): ``decision_accuracy``,
``engine_accuracy``, ``grounding``, ``n_cases``, ``n_decoded``.

The last stdout line is one JSON object: ``decision_accuracy`` {``steered``,
``unsteered``, ``en``, ``zh``}, ``contradiction_rate``,
``rule_citation_recall``, ``engine_accuracy``, ``undetermined_rate``,
``rules_p50_ms``, ``rules_p95_ms``, ``case_p50_ms``, ``n_cases``, ``complete_share``,
``n_decoded``, ``n_decoded_by_lang``, ``decode_s``, ``run_s``, ``answers``.
With ``--quick`` no answer is decoded once the run has taken
``--time-limit-s`` (540 s; a case whose answers are not both done is not
judged), so the run fits in 10 minutes on a loaded CPU; ``n_decoded`` says
how many cases were judged (on a CPU it follows the machine's load).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from bench.grounding_judge import SentenceVerdicts, judge_sentences
from bench.model_cache import add_cache_option, model_cache
from inference.decisions import RULES_TIMEOUT_S, decision_engine
from inference.decoder.endings import ends_complete
from inference.decoder.microbatch import MicroBatcher
from inference.decoder.runner import ModelRunner
from inference.decoder.stream import StepEvent
from inference.loader import load_model
from inference.pipeline import Reasoner, ReasonOptions
from inference.prefix_cache import PrefixCache
from reasoning.errors import LimitExceeded, TenetError
from reasoning.evidence.bundled import bundled_domains
from reasoning.evidence.index import OntologyIndex
from reasoning.evidence.ingest import ingest_ontology
from reasoning.premises import extract_premises

__all__ = [
    "Abandoned",
    "Answered",
    "Decoded",
    "GroundingCase",
    "Judgement",
    "PipelineAnswers",
    "decode_cases",
    "generate_cases",
    "gold_aml",
    "gold_clinical",
    "gold_exports",
    "is_complete",
    "judge_answer",
    "main",
    "unseen_cases",
]

TODAY = date(2026, 12, 1)
R003_UNTIL = date(2023, 7, 1)  # AML-R-024 in force from here, superseding AML-R-003
R017_FROM, R021_FROM = date(2021, 3, 1), date(2022, 2, 28)
F2017, F2005 = date(2017, 2, 23), date(2005, 11, 1)
REC = {
    "pure": "Fleischner 2017: solitary pure ground-glass nodule",
    "part": "Fleischner 2017: part-solid nodule",
    "solid": "Fleischner 2005: nodule follow-up",
}

# The phrases an answer states an action with (written for the judge, not read from the ontology).
ACTION_PHRASES: dict[str, tuple[str, ...]] = {
    "act-edd": ("enhanced due diligence", "edd", "强化尽职调查", "尽职调查"),
    "act-escalate": ("escalat", "mlro", "上报"),
    "act-sar": ("suspicious activity report", "sar", "可疑活动报告", "可疑交易报告"),
    "act-block": ("block", "阻止付款", "拦截"),
    "act-freeze": ("freez", "frozen", "冻结"),
    "act-identify": ("customer identification", "identify the customer", "身份识别"),
    "fu-ct-6-12m": ("6 to 12 months", "6-12 months", "6至12个月", "6-12个月"),
    "fu-ct-3-6m": ("3 to 6 months", "3-6 months", "3至6个月", "3-6个月"),
    "fu-ct-by-size": ("nodule size and risk", "size and risk", "按结节大小"),
    # The unseen arm's actions (bench/data/exports.ttl).
    "act-halt": ("halt", "暂停发运"),
    "act-licence": ("licence", "license", "许可证"),
    "act-screen": ("screening", "筛查"),
}
MISSING_PHRASES = {
    "amount": ("amount", "金额"),
    "size": ("size", "大小"),
    "value": ("value", "货值"),
}
# How an answer says that nothing is required (a no_rule_applies case must say it, not stay silent).
NONE_PHRASES = (
    "no rule",
    "no action",
    "not require",
    "no further action",
    "nothing is required",
    "未要求",
    "无需",
    "无须",
    "不需要",
    "没有规则",
)
_NEGATION = re.compile(r"\b(?:not|no|never|without|none)\b|n't|不|无需|无须|没有|未", re.IGNORECASE)
_CLAUSE = re.compile(r"[,;:，；：。.!?！？]|\bbut\b|但")


@dataclass(frozen=True)
class GroundingCase:
    """One generated request with its gold decision."""

    id: str
    domain: str
    lang: str
    text: str
    status: str
    actions: frozenset[str]
    rules: frozenset[str]
    missing: str | None = None
    fresh: bool = False


@dataclass(frozen=True)
class Judgement:
    """How one answer text fares against its case's gold decision."""

    correct: bool
    contradiction: bool
    cited: int
    to_cite: int
    notes: tuple[str, ...] = field(default_factory=tuple)


# --- the truth tables -------------------------------------------------------------------


def gold_aml(
    *,
    pep: bool,
    sanctioned: bool,
    cross_border: bool,
    high_risk: bool,
    amount: int | None,
    when: date,
    cash: bool = False,
) -> tuple[str, set[str], set[str]]:
    """(status, actions, rules) the AML rule texts require for one transfer."""
    actions: set[str] = set()
    rules: set[str] = set()
    if pep and when >= R017_FROM:
        actions |= {"act-edd", "act-escalate"}
        rules.add("AML-R-017")
    if sanctioned and when >= R021_FROM:
        actions |= {"act-block", "act-freeze"}
        rules.add("AML-R-021")
    if cash and amount is not None and amount >= 10_000:
        actions.add("act-identify")
        rules.add("AML-R-009")
    undetermined = False
    if cross_border and not cash:
        if when < R003_UNTIL:
            outcome, rule = "act-sar", "AML-R-003"
        elif pep or high_risk:
            outcome, rule = "act-escalate", "AML-R-024"
        else:
            outcome, rule = "", ""
        if outcome and amount is None:
            undetermined = outcome not in actions
        elif outcome and amount is not None and amount > 1_000_000:
            actions.add(outcome)
            rules.add(rule)
    status = "undetermined" if undetermined else "decided" if actions else "no_rule_applies"
    return status, actions, rules


def gold_clinical(
    *, finding: str, size_mm: int | None, when: date
) -> tuple[str, set[str], set[str]]:
    """(status, actions, rules) of the Fleischner recommendations for one finding."""
    if finding in ("pure", "part") and when >= F2017:
        if size_mm is None:
            return "undetermined", set(), set()
        if size_mm >= 6:
            return "decided", {"fu-ct-6-12m" if finding == "pure" else "fu-ct-3-6m"}, {REC[finding]}
    if finding == "solid" and F2005 <= when < F2017:
        return "decided", {"fu-ct-by-size"}, {REC["solid"]}
    return "no_rule_applies", set(), set()


# --- case generation --------------------------------------------------------------------

_JUR = {
    "CY": ("Cyprus", "塞浦路斯"),
    "MT": ("Malta", "马耳他"),
    "PA": ("Panama", "巴拿马"),
    "DE": ("Germany", "德国"),
    "GB": ("United Kingdom", "英国"),
}
# name en, name zh, jurisdiction, PEP, sanctioned, fresh
_ORIGINATORS = [
    ("Acme Ltd", "阿克米有限公司", "CY", False, False, False),
    ("Harbour Trading Ltd", "港湾贸易有限公司", "PA", False, False, False),
    ("Orion Freight Ltd", "猎户货运有限公司", "GB", False, False, True),
]
_BENEFICIARIES = [
    ("Jon Doe", "乔恩·多伊", "MT", True, False, False),
    ("Maria Ioannou", "玛丽亚·约安努", "CY", False, False, False),
    ("Northwind GmbH", "北风有限责任公司", "DE", False, True, False),
    ("Lena Park", "林娜", "DE", True, False, True),
    ("Tomas Berg", "托马斯", "CY", False, False, True),
]
_AMOUNTS = [
    (500_000, "EUR 500,000", "50万欧元"),
    (2_000_000, "EUR 2,000,000", "200万欧元"),
    (None, "funds", "一笔资金"),
]
_DATES = [(None, TODAY), ("2022-05-03", date(2022, 5, 3))]


def _aml_text(
    lang: str,
    wording: int,
    orig: tuple[str, str, str, bool, bool, bool],
    benef: tuple[str, str, str, bool, bool, bool],
    amount: tuple[int | None, str, str],
    on: str | None,
) -> str:
    o_name = orig[1] if lang == "zh" else orig[0]
    b_name = benef[1] if lang == "zh" else benef[0]
    o_jur, b_jur = _JUR[orig[2]][lang == "zh"], _JUR[benef[2]][lang == "zh"]
    money = amount[2] if lang == "zh" else amount[1]
    fresh_b = benef[5]
    if lang == "zh":
        date_part = f"{on[:4]}年{int(on[5:7])}月{int(on[8:])}日，" if on else ""
        about = (
            (f"{b_name}是政治公众人物，居住于{b_jur}。" if benef[3] else f"{b_name}居住于{b_jur}。")
            if fresh_b
            else ("乔恩·多伊在我们的PEP名单上。" if benef[3] else "")
        )
        if wording == 0:
            return f"{date_part}{o_name}（{o_jur}）向{b_name}转账{money}。{about}是否需要上报？"
        if wording == 1:
            return f"{date_part}{o_name}注册于{o_jur}，向{b_name}汇款{money}。{about}应如何处理？"
        received = f"的汇款{money}" if amount[0] is not None else "的一笔汇款"
        return f"{date_part}{b_name}收到{o_name}（{o_jur}）{received}。{about}需要采取哪些措施？"
    date_part = f"On {on}, " if on else ""
    about = (
        (f", a politically exposed person resident in {b_jur}" if benef[3] else f" ({b_jur})")
        if fresh_b
        else (", who is on our PEP list" if benef[3] else "")
    )
    if wording == 0:
        return f"{date_part}{o_name} ({o_jur}) sent {money} to {b_name}{about}. Should this be escalated?"
    if wording == 1:
        return (
            f"{date_part}{o_name}, a company registered in {o_jur}, transferred {money} to "
            f"{b_name}{about}. What must we do?"
        )
    if wording == 2:
        return f"{date_part}{o_name} ({o_jur}) paid {money} to {b_name}{about}. Which actions are required?"
    return (
        f"{date_part}{b_name}{about} received {money} from {o_name} in {o_jur}. "
        "What are we required to do?"
    )


def _aml_cases(quick: bool) -> Iterator[GroundingCase]:
    n = 0
    for lang in ("en", "zh"):
        wordings = (0, 1, 2) if lang == "zh" else ((0, 2, 3) if quick else (0, 1, 2, 3))
        for orig in _ORIGINATORS:
            for benef in _BENEFICIARIES:
                for amount in _AMOUNTS:
                    for on, when in _DATES:
                        for wording in wordings:
                            n += 1
                            cross = orig[2] != benef[2]
                            status, actions, rules = gold_aml(
                                pep=benef[3],
                                sanctioned=benef[4],
                                cross_border=cross,
                                high_risk="PA" in (orig[2], benef[2]),
                                amount=amount[0],
                                when=when,
                            )
                            yield GroundingCase(
                                id=f"aml-{n}",
                                domain="aml",
                                lang=lang,
                                text=_aml_text(lang, wording, orig, benef, amount, on),
                                status=status,
                                actions=frozenset(actions),
                                rules=frozenset(rules),
                                missing="amount" if status == "undetermined" else None,
                                fresh=orig[5] or benef[5],
                            )
    for lang, phrase in (
        ("en", "A customer made a cash deposit of {}."),
        ("zh", "客户存入现金{}。"),
    ):
        for value, en, zh in (
            (12_000, "EUR 12,000", "1.2万欧元"),
            (9_000, "EUR 9,000", "9000欧元"),
        ):
            n += 1
            status, actions, rules = gold_aml(
                pep=False,
                sanctioned=False,
                cross_border=False,
                high_risk=False,
                amount=value,
                when=TODAY,
                cash=True,
            )
            yield GroundingCase(
                id=f"aml-{n}",
                domain="aml",
                lang=lang,
                text=phrase.format(zh if lang == "zh" else en),
                status=status,
                actions=frozenset(actions),
                rules=frozenset(rules),
            )


_FINDINGS = {
    "pure": ("pure ground-glass nodule", "纯磨玻璃结节"),
    "part": ("part-solid nodule", "部分实性结节"),
    "solid": ("solid nodule", "实性结节"),
}
_LOBES = (("right lower lobe", "右肺下叶"), ("left upper lobe", "左肺上叶"))


def _clinical_cases(quick: bool) -> Iterator[GroundingCase]:
    n = 0
    for lang in ("en", "zh"):
        for finding, (f_en, f_zh) in _FINDINGS.items():
            for size in (4, 7, None):
                for on, when in ((None, TODAY), ("2010-06-01", date(2010, 6, 1))):
                    for lobe_en, lobe_zh in _LOBES[:1] if quick else _LOBES:
                        n += 1
                        if lang == "zh":
                            size_text = f"{size}毫米" if size else ""
                            when_text = f"{on[:4]}年{int(on[5:7])}月{int(on[8:])}日" if on else ""
                            text = f"{when_text}CT示{lobe_zh}见{size_text}{f_zh}，需要如何随访？"
                        else:
                            size_text = f"{size} mm " if size else ""
                            when_text = f"CT on {on} shows" if on else "CT shows"
                            text = f"{when_text} a {size_text}{f_en} in the {lobe_en}. What follow-up is required?"
                        status, actions, rules = gold_clinical(
                            finding=finding, size_mm=size, when=when
                        )
                        yield GroundingCase(
                            id=f"clin-{n}",
                            domain="clinical",
                            lang=lang,
                            text=text,
                            status=status,
                            actions=frozenset(actions),
                            rules=frozenset(rules),
                            missing="size" if status == "undetermined" else None,
                        )


def generate_cases(quick: bool = False) -> list[GroundingCase]:
    """Every case of the bundled domains (fewer wordings and values with ``quick``)."""
    return list(_aml_cases(quick)) + list(_clinical_cases(quick))


# --- the unseen-domain arm ------------------------------------------------------------
#
# bench/data/exports.ttl, an export-licensing domain written only from
# docs/decisions.md and docs/ontologies.md: no code of the product names it.

UNSEEN_DOMAIN = "exports"
UNSEEN_ONTOLOGY = Path(__file__).parent / "data" / "exports.ttl"
EXPORT_THRESHOLD = 50_000  # EXP-R-102's licence threshold, from its rule text


def gold_exports(
    *, embargoed: bool, denied: bool, value: int | None
) -> tuple[str, set[str], set[str]]:
    """(status, actions, rules) the export rule texts require for one shipment."""
    actions: set[str] = set()
    rules: set[str] = set()
    if embargoed:
        actions.add("act-halt")
        rules.add("EXP-R-101")
    if denied:
        actions.add("act-screen")
        rules.add("EXP-R-103")
    if value is not None and value > EXPORT_THRESHOLD:
        actions.add("act-licence")
        rules.add("EXP-R-102")
    status = "undetermined" if value is None else "decided" if actions else "no_rule_applies"
    return status, actions, rules


_EXPORTERS = (("Nordtech GmbH", "诺德科技公司"), ("Alder Systems Ltd", "桤木系统公司"))
# name en, name zh, location (en, zh) when the request states it, embargoed, denied, fresh
_CONSIGNEES = (
    ("Borealis Ltd", "北极光有限公司", ("Freedonia", "自由尼亚"), True, False, True),
    ("Lumen Instruments", "流明仪器公司", None, False, False, False),
    ("Kestrel Trading", "红隼贸易公司", None, False, True, False),
    ("Corvid Supply Ltd", "渡鸦供应公司", ("Sylvania", "西尔瓦尼亚"), False, False, True),
)
_VALUES = ((80_000, "EUR 80,000", "8万欧元"), (20_000, "EUR 20,000", "2万欧元"), (None, "", ""))


def unseen_cases(quick: bool = False) -> list[GroundingCase]:
    """The unseen arm's cases: every exporter, consignee and value, two wordings a language."""
    out: list[GroundingCase] = []
    n = 0
    for lang in ("en", "zh"):
        for e, (e_en, e_zh) in enumerate(_EXPORTERS[:1] if quick else _EXPORTERS):
            for c_en, c_zh, where, embargoed, denied, fresh in _CONSIGNEES:
                for value, v_en, v_zh in _VALUES:
                    n += 1
                    wording = (n + e) % 2
                    if lang == "zh":
                        place = f"（{where[1]}）" if where else ""
                        goods = f"价值{v_zh}的传感器" if value else "一批传感器"
                        verb = "出口" if wording == 0 else "发运"
                        ask = "需要采取哪些管制措施？" if wording == 0 else "应如何处理？"
                        text = f"{e_zh}向{c_zh}{place}{verb}{goods}。{ask}"
                    else:
                        place = f" ({where[0]})" if where else ""
                        goods = f"sensors worth {v_en}" if value else "a batch of sensors"
                        verb = "exports" if wording == 0 else "ships"
                        ask = "Which controls apply?" if wording == 0 else "What must we do?"
                        text = f"{e_en} {verb} {goods} to {c_en}{place}. {ask}"
                    status, actions, rules = gold_exports(
                        embargoed=embargoed, denied=denied, value=value
                    )
                    out.append(
                        GroundingCase(
                            id=f"exp-{n}",
                            domain=UNSEEN_DOMAIN,
                            lang=lang,
                            text=text,
                            status=status,
                            actions=frozenset(actions),
                            rules=frozenset(rules),
                            missing="value" if status == "undetermined" else None,
                            fresh=fresh,
                        )
                    )
    return out


# --- the answer judge -------------------------------------------------------------------


def _stated(answer: str) -> tuple[set[str], set[str]]:
    """(actions stated, actions denied) in an answer, clause by clause."""
    stated: set[str] = set()
    denied: set[str] = set()
    for clause in _CLAUSE.split(answer):
        lowered = clause.lower()
        negated = bool(_NEGATION.search(clause))
        for action, phrases in ACTION_PHRASES.items():
            if any(
                (re.search(rf"\b{re.escape(p)}", lowered) if p.isascii() else p in clause)
                for p in phrases
            ):
                (denied if negated else stated).add(action)
    return stated, denied


def judge_answer(answer: str, case: GroundingCase) -> Judgement:
    """Judge one answer text against the case's gold decision (see the module doc)."""
    stated, denied = _stated(answer)
    notes: list[str] = []
    missing_required = set(case.actions) - stated
    unrequired = stated - set(case.actions)
    contradiction = bool(set(case.actions) & denied) or bool(unrequired)
    if missing_required:
        notes.append("not stated: " + ", ".join(sorted(missing_required)))
    if unrequired:
        notes.append("not required: " + ", ".join(sorted(unrequired)))
    named = True
    if case.status == "undetermined" and case.missing:
        named = any(p in answer.lower() for p in MISSING_PHRASES[case.missing])
        if not named:
            notes.append(f"missing fact not named: {case.missing}")
    if case.status == "no_rule_applies" and not any(p in answer.lower() for p in NONE_PHRASES):
        named = False
        notes.append("no-action decision not stated")
    cited = sum(1 for rule in case.rules if rule in answer)
    if cited < len(case.rules):
        notes.append(
            "rules not cited: " + ", ".join(sorted(r for r in case.rules if r not in answer))
        )
    correct = not missing_required and not contradiction and named and cited == len(case.rules)
    return Judgement(
        correct=correct,
        contradiction=contradiction,
        cited=cited,
        to_cite=len(case.rules),
        notes=tuple(notes),
    )


def is_complete(answer: str) -> bool:
    """Whether an answer ends on a sentence end or a closed structure (not cut mid-claim):
    ``endings.ends_complete``, the definition the decoder lands on and bench.steering reports."""
    return ends_complete(answer)


@dataclass
class PipelineAnswers:
    """The real pipeline (bundled model, ``inference.pipeline.Reasoner``) answering bench cases.

    Set up as the service sets up its reasoner: one loaded model behind a
    :class:`~inference.decoder.microbatch.MicroBatcher` (concurrent decodes
    share one forward pass per step) and a prefix KV cache, so
    :func:`decode_cases` can answer many cases at once. Short budgets keep
    ``--quick`` within minutes on a CPU: ``max_new_tokens`` new tokens per
    language (by default 64 for English and 96 for Chinese, whose
    byte-level tokens are about 1.5 times as dense: the longest decision
    sentence of the bench cases takes about 45 and 84 tokens), the same
    for both arms, ``num_beams`` beams, a small evidence budget, no
    likelihood contrast.
    """

    indexes: dict[str, OntologyIndex]
    max_new_tokens: dict[str, int] = field(default_factory=lambda: {"en": 64, "zh": 96})
    num_beams: int = 1
    evidence_token_budget: int = 96
    cache: Path | None = None
    max_rows: int = 128
    reasoner: Reasoner | None = None
    batcher: MicroBatcher | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _reasoner(self) -> Reasoner:
        with self._lock:
            if self.reasoner is None:
                model = load_model("bundled", cache_root=model_cache(self.cache))
                self.batcher = MicroBatcher(
                    model.model,
                    ModelRunner(model.model).call,
                    max_rows=self.max_rows,
                    max_wait_s=0.05,
                )
                self.reasoner = Reasoner(
                    model, prefix_cache=PrefixCache(), batcher=self.batcher, today=lambda: TODAY
                )
            return self.reasoner

    def answer(self, case: GroundingCase, steered: bool, *, deadline: float | None = None) -> str:
        """The answer text of ``case`` with steering on, or ``steering: false`` (thread-safe).

        Raises :class:`Abandoned` at the first step of the decode that ends
        after ``deadline`` (a ``time.perf_counter()`` value).
        """
        return self.decoded(case, steered, deadline=deadline).text

    def decoded(
        self, case: GroundingCase, steered: bool, *, deadline: float | None = None
    ) -> Decoded:
        """The answer of ``case`` with what the sentence judge reads (see :meth:`answer`)."""
        reasoner = self._reasoner()
        options = ReasonOptions(
            max_new_tokens=self.max_new_tokens.get(case.lang, max(self.max_new_tokens.values())),
            num_beams=self.num_beams,
            steering=steered,
            counterfactual=False,
            evidence_token_budget=self.evidence_token_budget,
        )
        plan = reasoner.plan(case.text, options=options, domain_index=self.indexes[case.domain])

        def on_step(_: StepEvent) -> None:
            if deadline is not None and time.perf_counter() > deadline:
                raise Abandoned(case.id)

        result = reasoner.run(plan, on_step=on_step if deadline is not None else None)
        b = result.answer_branch
        facts = result.branch_specs[b].facts if b is not None and b < len(result.branch_specs) else ()
        statement = plan.statement
        stated = (
            (statement.text, *statement.ground_texts) if statement is not None else ()
        )
        return Decoded(
            text=result.answer,
            evidence=tuple(f.text for f in facts),
            stated=tuple(stated),
            decision=result.decision,
        )

    def close(self) -> None:
        """Stop the forward thread (the pipeline cannot answer afterwards)."""
        if self.batcher is not None:
            self.batcher.close()


@dataclass(frozen=True)
class Decoded:
    """One answer and what the sentence judge reads: the evidence its branch showed, the
    decision sentence and grounds the plan stated (none without steering), the decision."""

    text: str
    evidence: tuple[str, ...] = ()
    stated: tuple[str, ...] = ()
    decision: Any = None


@dataclass(frozen=True)
class Answered:
    """One decoded case: its steered and its ``steering: false`` answer, and the seconds both took."""

    case: GroundingCase
    steered: str
    unsteered: str
    seconds: float
    details: dict[bool, Decoded] = field(default_factory=dict)  # by steered


class Abandoned(Exception):
    """A decode stopped because the run's time limit passed (its case is not judged)."""


def decode_cases(
    pipeline: PipelineAnswers,
    sample: list[GroundingCase],
    *,
    concurrency: int,
    deadline: float | None = None,
) -> list[Answered]:
    """Answer ``sample`` steered and not, ``concurrency`` answers at a time, in sample order.

    The two answers of a case are decoded side by side (their forward
    passes merged with the others'). No answer is started after
    ``deadline`` (a ``time.perf_counter()`` value) and an answer still
    decoding then is abandoned at its next step, so the run ends near it;
    only cases with both answers are returned, in sample order. A request
    the pipeline refuses (a ``TenetError``, e.g. a rule past its time limit)
    is answered with an empty text, which the judge counts wrong.
    """
    lock = threading.Lock()
    done: dict[tuple[str, bool], Decoded] = {}
    started_at: dict[str, float] = {}
    finished: list[Answered] = []
    by_id = {case.id: case for case in sample}

    def one(job: tuple[GroundingCase, bool]) -> None:
        case, steered = job
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            return
        with lock:
            started_at.setdefault(case.id, now)
        try:
            answer = pipeline.decoded(case, steered, deadline=deadline)
        except Abandoned:
            return
        except TenetError as exc:  # the service answers such a request with an error
            print(f"error {case.id} steered={steered}: {exc.detail}", file=sys.stderr)
            answer = Decoded(text="")
        with lock:
            done[(case.id, steered)] = answer
            if (case.id, not steered) in done:
                seconds = time.perf_counter() - started_at[case.id]
                on, off = done[(case.id, True)], done[(case.id, False)]
                finished.append(Answered(case, on.text, off.text, seconds, {True: on, False: off}))
                print(
                    f"decoded {case.id} [{case.lang}] in {seconds:.0f} s ({len(finished)} done)",
                    file=sys.stderr,
                    flush=True,
                )

    jobs = [(case, steered) for case in sample for steered in (True, False)]
    with ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="grounding") as pool:
        list(pool.map(one, jobs))
    order = {case_id: i for i, case_id in enumerate(by_id)}
    return sorted(finished, key=lambda a: order[a.case.id])


def _spread(items: list[GroundingCase]) -> list[GroundingCase]:
    """``items`` reordered so that every prefix spreads over the whole list (golden-ratio order)."""
    return [items[i] for i in sorted(range(len(items)), key=lambda i: (i * 0.6180339887) % 1.0)]


def _decode_sample(cases: list[GroundingCase], n: int) -> list[GroundingCase]:
    """``n`` cases, languages alternating, spread over domains, gold statuses, fresh and
    bundled names, and (within each such group) over the generated values (deterministic)."""
    groups: dict[tuple[str, str, str, bool], list[GroundingCase]] = {}
    for case in cases:
        groups.setdefault((case.lang, case.status, case.domain, case.fresh), []).append(case)
    by_lang: dict[str, list[GroundingCase]] = {}
    spread = {key: _spread(group) for key, group in groups.items()}
    depth = 0
    while any(len(v) > depth for v in spread.values()):
        for key in sorted(spread):
            if depth < len(spread[key]):
                by_lang.setdefault(key[0], []).append(spread[key][depth])
        depth += 1
    picked: list[GroundingCase] = []
    queues = [list(v) for _, v in sorted(by_lang.items())]
    while len(picked) < n and any(queues):
        for queue in queues:
            if queue and len(picked) < n:
                picked.append(queue.pop(0))
    return picked


# --- the run ----------------------------------------------------------------------------


def _grounding(
    answered: list[Answered],
    indexes: dict[str, OntologyIndex],
    shown: list[int],
    show: int,
) -> dict[str, Any]:
    """The sentence judge's figures of ``answered`` (steered answers; the unsteered ones'
    shares beside them), overall and per language; junk and unsupported sentences are
    printed to stderr, ``show`` in all (``shown[0]`` counts them across calls)."""
    per: dict[str, dict[str, list[int]]] = {}
    unsteered = [0, 0, 0]  # unsupported, junk, judged
    for item in answered:
        for steered in (True, False):
            decoded = item.details.get(steered)
            if decoded is None:
                continue
            verdicts: SentenceVerdicts = judge_sentences(
                decoded.text,
                lang=item.case.lang,
                request=item.case.text,
                evidence=decoded.evidence,
                stated=decoded.stated,
                decision=decoded.decision,
                index=indexes[item.case.domain],
            )
            if not steered:
                unsteered[0] += len(verdicts.unsupported)
                unsteered[1] += len(verdicts.junk)
                unsteered[2] += verdicts.judged
                continue
            for sentence, why in (*verdicts.unsupported, *verdicts.junk):
                if shown[0] < show:
                    shown[0] += 1
                    print(f"flagged {item.case.id} [{item.case.lang}] {why}: {sentence!r}", file=sys.stderr)
            for key in ("all", item.case.lang):
                f = per.setdefault(key, {k: [0, 0] for k in (
                    "grounds", "why_not", "unsupported", "junk", "clean")})
                if verdicts.grounds_stated is not None:
                    f["grounds"][0] += verdicts.grounds_stated
                    f["grounds"][1] += 1
                if item.case.status == "no_rule_applies":
                    f["why_not"][0] += bool(verdicts.why_not_stated)
                    f["why_not"][1] += 1
                f["unsupported"][0] += len(verdicts.unsupported)
                f["junk"][0] += len(verdicts.junk)
                f["unsupported"][1] += verdicts.judged + len(verdicts.rules)
                f["junk"][1] += verdicts.judged + len(verdicts.rules)
                f["clean"][0] += verdicts.clean
                f["clean"][1] += 1
    out: dict[str, Any] = {
        key: {
            "grounds_stated": _ratio(*f["grounds"]),
            "why_not_stated": _ratio(*f["why_not"]),
            "unsupported_sentence_share": _ratio(*f["unsupported"]),
            "junk_sentence_share": _ratio(*f["junk"]),
            "clean_answers": _ratio(*f["clean"]),
        }
        for key, f in sorted(per.items())
    }
    out["unsteered"] = {
        "unsupported_sentence_share": _ratio(unsteered[0], unsteered[2]),
        "junk_sentence_share": _ratio(unsteered[1], unsteered[2]),
    }
    return out



def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _ratio(right: int, total: int) -> float | None:
    return round(right / total, 4) if total else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer wordings and values")
    parser.add_argument(
        "--show-misses", type=int, default=5, help="engine misses printed to stderr"
    )
    parser.add_argument(
        "--decode-cases",
        type=int,
        default=None,
        help="cases answered by the real pipeline, steered and not (default 96, 48 with --quick)",
    )
    parser.add_argument(
        "--unseen-cases",
        type=int,
        default=None,
        help="cases of the unseen-domain arm answered by the pipeline (default 24, 12 with --quick)",
    )
    parser.add_argument(
        "--show-flagged", type=int, default=12, help="junk / unsupported sentences printed to stderr"
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=12,
        help="answers decoded at once (their forward passes are merged)",
    )
    parser.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help="new tokens per answer (default 64 in English, 96 in Chinese)",
    )
    parser.add_argument(
        "--time-limit-s",
        type=float,
        default=None,
        help="no answer is decoded after the run has taken this many seconds "
        "(default 540 with --quick)",
    )
    add_cache_option(parser)
    args = parser.parse_args(argv)
    run_started = time.perf_counter()
    indexes = {
        domain: ingest_ontology(path.read_bytes(), "text/turtle").index.with_version(
            f"{domain}-bench"
        )
        for domain, path in bundled_domains()
    }
    indexes[UNSEEN_DOMAIN] = ingest_ontology(
        UNSEEN_ONTOLOGY.read_bytes(), "text/turtle"
    ).index.with_version(f"{UNSEEN_DOMAIN}-bench")
    engines = {domain: decision_engine(index) for domain, index in indexes.items()}
    cases = generate_cases(args.quick)
    unseen = unseen_cases(args.quick)
    for engine in engines.values():  # load spaCy, jieba and the query machinery untimed
        engine.decide("Acme Ltd sent EUR 5 to Jon Doe. 阿克米有限公司。", evaluation_date=TODAY)
    rules_ms: list[float] = []
    case_ms: list[float] = []
    right = {"all": 0, "en": 0, "zh": 0}
    totals = {"all": 0, "en": 0, "zh": 0}
    undetermined = errors = 0
    shown = 0
    unseen_right = {"all": 0, "en": 0, "zh": 0}
    unseen_totals = {"all": 0, "en": 0, "zh": 0}
    for case in cases + unseen:
        engine = engines[case.domain]
        started = time.perf_counter()
        built = engine.build_case(
            case.text, premises=extract_premises(case.text), evaluation_date=TODAY
        )
        middle = time.perf_counter()
        try:
            decision = engine.evaluate(built, timeout_s=RULES_TIMEOUT_S)
        except LimitExceeded as exc:
            errors += 1
            print(f"error {case.id}: {case.text!r}: {exc.detail}", file=sys.stderr)
            continue
        ended = time.perf_counter()
        case_ms.append((middle - started) * 1000)
        rules_ms.append((ended - middle) * 1000)
        actions = {a.rsplit("#", 1)[1] for a in decision.actions()}
        ok = (
            decision.status == case.status
            and actions == set(case.actions)
            and set(decision.rule_ids()) == set(case.rules)
        )
        if case.domain == UNSEEN_DOMAIN:
            for key in ("all", case.lang):
                unseen_totals[key] += 1
                unseen_right[key] += ok
            if not ok:
                print(
                    f"unseen miss {case.id}: {case.text!r} gold {case.status} {sorted(case.rules)} "
                    f"engine {decision.status} {list(decision.rule_ids())}",
                    file=sys.stderr,
                )
            continue
        undetermined += decision.status == "undetermined"
        for key in ("all", case.lang):
            totals[key] += 1
            right[key] += ok
        if not ok and shown < args.show_misses:
            shown += 1
            print(
                f"miss {case.id}: {case.text!r} gold {case.status} {sorted(case.actions)} "
                f"engine {decision.status} {sorted(actions)}",
                file=sys.stderr,
            )
    budgets = (
        {"en": 64, "zh": 96}
        if args.max_new_tokens is None
        else {"en": args.max_new_tokens, "zh": args.max_new_tokens}
    )
    pipeline = PipelineAnswers(indexes, max_new_tokens=budgets, cache=args.cache)
    wanted = args.decode_cases if args.decode_cases is not None else (48 if args.quick else 96)
    sample = _decode_sample(cases, wanted)
    wanted_unseen = args.unseen_cases if args.unseen_cases is not None else (12 if args.quick else 24)
    unseen_sample = _decode_sample(unseen, wanted_unseen)
    # One queue, the unseen arm interleaved, so a time limit cuts both arms alike.
    step = max(1, len(sample) // max(1, len(unseen_sample)))
    queue: list[GroundingCase] = []
    for i, case in enumerate(sample):
        queue.append(case)
        if (i + 1) % step == 0 and unseen_sample:
            queue.append(unseen_sample.pop(0))
    queue += unseen_sample
    limit_s = args.time_limit_s or (540.0 if args.quick else None)
    decode_started = time.perf_counter()
    try:
        every = decode_cases(
            pipeline,
            queue,
            concurrency=args.concurrency,
            deadline=run_started + limit_s if limit_s else None,
        )
    finally:
        pipeline.close()
    if len(every) < len(queue):
        print(f"time limit: {len(every)} of {len(queue)} cases decoded", file=sys.stderr)
    answered = [a for a in every if a.case.domain != UNSEEN_DOMAIN]
    answered_unseen = [a for a in every if a.case.domain == UNSEEN_DOMAIN]
    judged: dict[str, list[int]] = {k: [0, 0] for k in ("steered", "unsteered", "en", "zh")}
    contradictions = cited = to_cite = complete = 0
    for item in answered:
        case = item.case
        for mode, answer in (("steered", item.steered), ("unsteered", item.unsteered)):
            judgement = judge_answer(answer, case)
            judged[mode][0] += judgement.correct
            judged[mode][1] += 1
            print(
                f"{mode} {case.id} [{case.lang} {case.status}] {judgement.correct} {answer!r} "
                f"{'; '.join(judgement.notes)}",
                file=sys.stderr,
            )
            if mode == "steered":
                judged[case.lang][0] += judgement.correct
                judged[case.lang][1] += 1
                contradictions += judgement.contradiction
                cited += judgement.cited
                to_cite += judgement.to_cite
                complete += is_complete(answer)
    n = len(answered)
    flagged_shown = [0]
    grounding = _grounding(answered, indexes, flagged_shown, args.show_flagged)
    unseen_grounding = _grounding(answered_unseen, indexes, flagged_shown, args.show_flagged)
    unseen_judged: dict[str, list[int]] = {k: [0, 0] for k in ("steered", "unsteered", "en", "zh")}
    for item in answered_unseen:
        for mode, answer in (("steered", item.steered), ("unsteered", item.unsteered)):
            judgement = judge_answer(answer, item.case)
            print(
                f"unseen {mode} {item.case.id} [{item.case.lang} {item.case.status}] "
                f"{judgement.correct} {answer!r} {'; '.join(judgement.notes)}",
                file=sys.stderr,
            )
            keys = [mode, item.case.lang] if mode == "steered" else [mode]
            for key in keys:
                unseen_judged[key][0] += judgement.correct
                unseen_judged[key][1] += 1
    result = {
        "decision_accuracy": {k: _ratio(*v) for k, v in judged.items()},
        "contradiction_rate": _ratio(contradictions, n),
        "complete_share": _ratio(complete, n),
        "rule_citation_recall": _ratio(cited, to_cite),
        "engine_accuracy": {k: _ratio(right[k], totals[k]) for k in totals},
        "undetermined_rate": round(undetermined / len(cases), 4),
        "rules_p50_ms": round(statistics.median(rules_ms), 2),
        "rules_p95_ms": round(_percentile(rules_ms, 0.95), 2),
        "case_p50_ms": round(statistics.median(case_ms), 2),
        "n_cases": len(cases),
        "n_errors": errors,
        "n_fresh_name_cases": sum(c.fresh for c in cases),
        "n_decoded": n,
        "n_decoded_by_lang": {
            lang: sum(a.case.lang == lang for a in answered) for lang in ("en", "zh")
        },
        "grounding": grounding,
        "unseen": {
            "domain": UNSEEN_DOMAIN,
            "decision_accuracy": {k: _ratio(*v) for k, v in unseen_judged.items()},
            "engine_accuracy": {k: _ratio(unseen_right[k], unseen_totals[k]) for k in unseen_totals},
            "grounding": unseen_grounding,
            "n_cases": len(unseen),
            "n_decoded": len(answered_unseen),
        },
        "decode_s": round(time.perf_counter() - decode_started, 1),
        "run_s": round(time.perf_counter() - run_started, 1),
        "answers": "pipeline (bundled model, steered and steering: false)",
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
