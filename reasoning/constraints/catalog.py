"""The catalog: what each constraint kind means, covers and how it is controlled.

``CATALOG[kind]`` is a :class:`KindSpec` with

- ``scope``: what the kind constrains (the response, the evidence, citations);
- ``ifeval_ids``: the IFEval instruction ids the kind covers (the benchmark's
  mapping is built from these);
- ``controllable`` and ``controller``: whether the steered decoder has a token
  controller for the kind and of which sort. This is the one source of
  truth: ``inference.decoder.compile.CONTROLLED_KINDS`` is read from it and a
  test compiles one constraint of every controllable kind and checks it is
  reported controlled. ``"mask"`` forbids tokens
  (a forbidden word, a comma, a wrong letter case or script, a letter or word
  over its limit); ``"force"`` forces a known text at a known place (a
  prefix, suffix or wrapper, bullet markers, section and paragraph
  separators, a placeholder's brackets, a citation of a shown evidence fact);
  ``"grammar"`` runs an llguidance grammar (JSON,
  regex, a fixed set of answers); ``"length"`` masks or forces EOS against a
  counter. Some kinds are controlled only for some parameters (a response
  language whose script identifies it; a letter's maximum, not its minimum;
  highlights that fit the body's slots; citations when evidence is shown);
  ``ConstraintSteering.controlled`` says what one request got. A kind without
  a controller is only restated in the prompt and checked at step
  boundaries: its satisfaction needs content the decoder cannot force
  without degrading the answer (keywords to mention, how often a keyword or
  capital word occurs), or it is about the evidence rather than the text;
- ``restate(constraint, language)``: the constraint in plain words for the
  model's prompt, in English or Chinese.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from reasoning.constraints.form.describe import describe
from reasoning.constraints.form.kinds import GENERIC_KINDS
from reasoning.constraints.form.units import section_label
from reasoning.constraints.model import Constraint, Kind, Relation, Scope
from reasoning.language import language_name

__all__ = ["CATALOG", "IFEVAL_TO_KIND", "KindSpec", "restate"]

_ZH_RELATIONS: Mapping[str, str] = {
    Relation.LESS_THAN: "少于",
    Relation.AT_LEAST: "至少",
    Relation.AT_MOST: "最多",
    Relation.MORE_THAN: "多于",
    Relation.EXACTLY: "恰好",
}


def _rel(params: Mapping[str, Any], language: str) -> str:
    relation = str(params.get("relation", Relation.AT_LEAST))
    return _ZH_RELATIONS.get(relation, relation) if language == "zh" else relation


def _words(values: object) -> str:
    items = [str(v) for v in values] if isinstance(values, (list, tuple)) else [str(values)]
    return ", ".join(f'"{v}"' for v in items)


_Restater = Callable[[Mapping[str, Any], str], str]


def _bi(en: str, zh: str) -> _Restater:
    """A restater from two format strings over the constraint's params."""

    def restate_params(params: Mapping[str, Any], language: str) -> str:
        values = dict(params)
        values["rel"] = _rel(params, language)
        for key in ("keywords", "words", "options"):
            if key in values:
                values[key] = _words(values[key])
        if "splitter" in values:
            values["label"] = section_label(str(values["splitter"]), "X")
        if "language" in values:
            values["language_name"] = language_name(str(values["language"]), language)
        return (zh if language == "zh" else en).format_map(_Default(values))

    return restate_params


class _Default(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "?"


def _window(params: Mapping[str, Any], language: str) -> str:
    before, after = params.get("not_before"), params.get("not_after")
    if language == "zh":
        parts = ([f"不早于{before}"] if before else []) + ([f"不晚于{after}"] if after else [])
        return "只引用日期" + "且".join(parts) + "的文献和证据。"
    parts = ([f"dated {before} or later"] if before else []) + ([f"dated {after} or earlier"] if after else [])
    return "Only cite sources and evidence " + " and ".join(parts) + "."


class KindSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What the catalog knows about one kind (see the module docstring)."""

    kind: Kind
    scope: Scope
    description: str
    ifeval_ids: tuple[str, ...] = ()
    controllable: bool = False
    controller: str = ""
    restater: _Restater | None = None

    def restate(self, constraint: Constraint, language: str = "en") -> str:
        """The constraint stated plainly for the prompt, in ``language`` ("en" or "zh")."""
        if self.restater is None:
            return self.description
        return self.restater(constraint.params, "zh" if language == "zh" else "en")


def _spec(
    kind: Kind,
    description: str,
    restater: _Restater,
    *,
    ifeval: tuple[str, ...] = (),
    controller: str = "",
    scope: Scope = Scope.RESPONSE,
) -> KindSpec:
    return KindSpec(
        kind=kind,
        scope=scope,
        description=description,
        ifeval_ids=ifeval,
        controllable=bool(controller),
        controller=controller,
        restater=restater,
    )


_SPECS: tuple[KindSpec, ...] = (
    _spec(Kind.RESPONSE_LANGUAGE, "The whole response is in one language.",
          _bi("Write your entire response in {language_name}, and no other language.",
              "全部回答必须使用{language_name}，不得使用其他语言。"),
          ifeval=("language:response_language",), controller="mask"),
    _spec(Kind.KEYWORDS_PRESENT, "Each keyword appears in the response.",
          _bi("Include the keywords {keywords} in your response.",
              "回答中必须包含关键词{keywords}。"),
          ifeval=("keywords:existence",), controller="force"),
    _spec(Kind.FORBIDDEN_WORDS, "None of the words appears in the response.",
          _bi("Do not use the words {words}.", "回答中不得出现以下词语：{words}。"),
          ifeval=("keywords:forbidden_words",), controller="mask"),
    _spec(Kind.KEYWORD_FREQUENCY, "A keyword appears a number of times.",
          _bi('Use the word "{keyword}" {rel} {n} times.', "“{keyword}”一词出现{rel}{n}次。"),
          ifeval=("keywords:frequency",), controller="force"),
    _spec(Kind.LETTER_FREQUENCY, "A letter appears a number of times.",
          _bi('The letter "{letter}" should appear {rel} {n} times.', "字母“{letter}”出现{rel}{n}次。"),
          ifeval=("keywords:letter_frequency",), controller="mask"),
    _spec(Kind.WORD_COUNT, "The response has a number of words.",
          _bi("Answer with {rel} {n} words.", "回答字数{rel}{n}个。"),
          ifeval=("length_constraints:number_words",), controller="length"),
    _spec(Kind.SENTENCE_COUNT, "The response has a number of sentences.",
          _bi("Answer with {rel} {n} sentences.", "回答包含{rel}{n}个句子。"),
          ifeval=("length_constraints:number_sentences",), controller="length"),
    _spec(Kind.PARAGRAPH_COUNT, "Paragraphs separated by the markdown divider ***.",
          _bi("Write exactly {n} paragraphs, separated by the markdown divider ***.",
              "恰好写{n}段，段与段之间用 *** 分隔。"),
          ifeval=("length_constraints:number_paragraphs",), controller="force"),
    _spec(Kind.NTH_PARAGRAPH_FIRST_WORD, "A paragraph starts with a given word.",
          _bi('Write exactly {n} paragraphs separated by blank lines; paragraph {nth} starts with the word "{first_word}".',
              "恰好写{n}段，段落之间空一行；第{nth}段以“{first_word}”开头。"),
          ifeval=("length_constraints:nth_paragraph_first_word",), controller="force"),
    _spec(Kind.BULLET_COUNT, "An exact number of markdown bullets.",
          _bi("Use exactly {n} markdown bullet points, each line starting with '* '.",
              "恰好使用{n}个以“* ”开头的 Markdown 要点。"),
          ifeval=("detectable_format:number_bullet_lists",), controller="force"),
    _spec(Kind.HIGHLIGHTED_SECTIONS, "At least n *highlighted* spans.",
          _bi("Highlight at least {n} sections with markdown, e.g. *highlighted section*.",
              "至少用 Markdown 突出显示{n}处，例如 *重点内容*。"),
          ifeval=("detectable_format:number_highlighted_sections",), controller="force"),
    _spec(Kind.SECTIONS, "Sections marked with a splitter word and a number.",
          _bi("Write {n} sections, each starting with '{label}' (X its number).",
              "分{n}个部分，每部分以“{label}”开头（X 为序号）。"),
          ifeval=("detectable_format:multiple_sections",), controller="force"),
    _spec(Kind.PLACEHOLDERS, "At least n [placeholders] in square brackets.",
          _bi("Include at least {n} placeholders in square brackets, such as [name].",
              "至少包含{n}个方括号占位符，例如 [姓名]。"),
          ifeval=("detectable_content:number_placeholders",), controller="force"),
    _spec(Kind.POSTSCRIPT, "A postscript at the end starting with a marker.",
          _bi("End with a postscript starting with {marker}", "在结尾加上以 {marker} 开头的附言。"),
          ifeval=("detectable_content:postscript",), controller="force"),
    _spec(Kind.TITLE, "A title wrapped in double angular brackets.",
          _bi("Give your answer a title wrapped in double angular brackets, such as <<title>>.",
              "回答需有标题，并用双尖括号括起，例如 <<标题>>。"),
          ifeval=("detectable_format:title",), controller="force"),
    _spec(Kind.JSON_FORMAT, "The whole response is JSON.",
          _bi("Your entire output must be valid JSON.", "整个输出必须是合法的 JSON。"),
          ifeval=("detectable_format:json_format",), controller="grammar"),
    _spec(Kind.REGEX_FORMAT, "The whole response matches a pattern.",
          _bi("Your entire output must match the pattern {pattern}.", "整个输出必须符合格式 {pattern}。"),
          controller="grammar"),
    _spec(Kind.CONSTRAINED_RESPONSE, "The response is one of fixed answers.",
          _bi("Answer with one of the following options: {options}.", "只能从以下选项中选择一个作答：{options}。"),
          ifeval=("detectable_format:constrained_response",), controller="grammar"),
    _spec(Kind.ALL_LOWERCASE, "No capital letters.",
          _bi("Write your entire response in lowercase letters; no capital letters.",
              "全部使用小写字母，不得出现大写字母。"),
          ifeval=("change_case:english_lowercase",), controller="mask"),
    _spec(Kind.ALL_CAPITALS, "No lowercase letters.",
          _bi("Write your entire response in capital letters.", "全部使用大写字母。"),
          ifeval=("change_case:english_capital",), controller="mask"),
    _spec(Kind.CAPITAL_WORD_FREQUENCY, "A number of words in all capitals.",
          _bi("Use words in all capital letters {rel} {n} times.", "全大写单词出现{rel}{n}次。"),
          ifeval=("change_case:capital_word_frequency",), controller="mask"),
    _spec(Kind.NO_COMMA, "No commas.",
          _bi("Do not use any commas.", "不得使用任何逗号。"),
          ifeval=("punctuation:no_comma",), controller="mask"),
    _spec(Kind.QUOTATION, "The response is wrapped in double quotes.",
          _bi("Wrap your entire response in double quotation marks.", "用英文双引号把整个回答括起来。"),
          ifeval=("startend:quotation",), controller="force"),
    _spec(Kind.TWO_RESPONSES, "Two different responses separated by ******.",
          _bi("Give two different responses separated by six asterisks: ******.",
              "给出两个不同的回答，用六个星号 ****** 分隔。"),
          ifeval=("combination:two_responses",), controller="force"),
    _spec(Kind.REPEAT_PROMPT, "The response starts by repeating the request verbatim.",
          _bi("First repeat the request word for word without change, then give your answer: {prompt_to_repeat}",
              "先逐字重复以下请求，不作任何改动，然后再作答：{prompt_to_repeat}"),
          ifeval=("combination:repeat_prompt",), controller="force"),
    _spec(Kind.START_PHRASE, "The response starts with a phrase.",
          _bi('Start your response with "{phrase}".', "回答必须以“{phrase}”开头。"),
          controller="force"),
    _spec(Kind.END_PHRASE, "The response ends with a phrase.",
          _bi('End your response with the exact phrase "{phrase}", with nothing after it.',
              "回答必须以“{phrase}”结尾，其后不得有其他内容。"),
          ifeval=("startend:end_checker",), controller="force"),
    _spec(Kind.CITATION_TIME_WINDOW, "Cited evidence lies inside a date window.", _window,
          scope=Scope.CITATION),
    _spec(Kind.CITE_SOURCES, "The response cites evidence ids such as [E1].",
          _bi("Cite at least {min} of the evidence facts by their ids in square brackets, e.g. [E1].",
              "至少引用{min}条证据，用方括号标注其编号，例如 [E1]。"),
          scope=Scope.CITATION, controller="force"),
    _spec(Kind.JURISDICTION, "Only the law of one jurisdiction applies.",
          _bi("Rely only on rules of the jurisdiction {code}.", "只依据{code}辖区的规则。"),
          scope=Scope.EVIDENCE),
    _spec(Kind.NUMERIC_PRECISION, "Decimal numbers carry a fixed number of decimals.",
          _bi("Give decimal numbers with exactly {decimals} decimal places.", "小数一律保留{decimals}位小数。")),
)

def _generic(kind: Kind) -> _Restater:
    shape = GENERIC_KINDS[kind]

    def restate_form(params: Mapping[str, Any], language: str) -> str:
        try:
            form = msgspec.convert(dict(params), shape)
        except msgspec.ValidationError:
            return CATALOG[kind].description
        return describe(form, language)

    return restate_form


_GENERIC_SPECS: tuple[KindSpec, ...] = (
    _spec(Kind.COUNT, "A count of a unit under a filter stands in a relation to a number.", _generic(Kind.COUNT),
          controller="mask"),
    _spec(Kind.POSITION, "The k-th word, sentence, paragraph or line starts with, ends with or is a text.",
          _generic(Kind.POSITION), controller="force"),
    _spec(Kind.WRAP, "The answer, or each of its parts, is wrapped in delimiters.", _generic(Kind.WRAP),
          controller="force"),
    _spec(Kind.STRUCTURE, "The answer has (or has not) a layout: list, nested list, table, responses.",
          _generic(Kind.STRUCTURE), controller="force"),
    _spec(Kind.COPY, "The answer starts by repeating a text, verbatim or changed.", _generic(Kind.COPY),
          controller="force"),
    _spec(Kind.SPREAD, "The sentences, paragraphs, lines or list items are balanced in length.",
          _generic(Kind.SPREAD)),
)

CATALOG: Mapping[Kind, KindSpec] = {spec.kind: spec for spec in _SPECS + _GENERIC_SPECS}
"""Every kind of :class:`Kind`, exactly once."""

IFEVAL_TO_KIND: Mapping[str, Kind] = {
    ifeval_id: spec.kind for spec in _SPECS for ifeval_id in spec.ifeval_ids
}
"""IFEval instruction id -> the kind that covers it (all 25 ids)."""


def restate(constraint: Constraint, language: str = "en") -> str:
    """``CATALOG[constraint.kind].restate(constraint, language)``."""
    return CATALOG[constraint.kind].restate(constraint, language)
