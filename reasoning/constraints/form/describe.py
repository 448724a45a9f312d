"""A form in plain words, English or Chinese, for the model's prompt."""

from __future__ import annotations

from collections.abc import Mapping

from reasoning.constraints.form.classes import CLASS_NAMES
from reasoning.constraints.form.copying import changed
from reasoning.constraints.form.model import (
    Count,
    Filter,
    Form,
    Layout,
    Measure,
    Position,
    Spread,
    Structure,
    Unit,
    Wrap,
)

__all__ = ["describe", "name_measure"]

_EN_UNITS: Mapping[Unit, str] = {
    Unit.CHARACTERS: "characters", Unit.LETTERS: "letters", Unit.WORDS: "words",
    Unit.UNIQUE_WORDS: "distinct words", Unit.SENTENCES: "sentences", Unit.PARAGRAPHS: "paragraphs",
    Unit.LINES: "lines", Unit.BULLETS: "bullet points", Unit.NESTED_BULLETS: "nested bullet points",
    Unit.SECTIONS: "sections", Unit.PUNCTUATION: "punctuation marks", Unit.DIGITS: "digits",
    Unit.NUMBERS: "numbers", Unit.EMOJI: "emoji", Unit.HASHTAGS: "hashtags (#word)", Unit.HEADINGS: "Markdown headings",
    Unit.CAPITAL_WORDS: "words in all capitals",
    Unit.KEYWORDS: "occurrences", Unit.HIGHLIGHTS: "highlighted sections", Unit.PLACEHOLDERS: "placeholders",
    Unit.SPANS: "delimited spans", Unit.ANSWER: "answer",
}
_ZH_UNITS: Mapping[Unit, str] = {
    Unit.CHARACTERS: "个字符", Unit.LETTERS: "个字母", Unit.WORDS: "个词", Unit.UNIQUE_WORDS: "个不同的词",
    Unit.SENTENCES: "个句子", Unit.PARAGRAPHS: "个段落", Unit.LINES: "行", Unit.BULLETS: "个要点",
    Unit.NESTED_BULLETS: "个嵌套要点", Unit.SECTIONS: "个部分", Unit.PUNCTUATION: "个标点符号",
    Unit.DIGITS: "个数字字符", Unit.NUMBERS: "个数字", Unit.EMOJI: "个表情符号", Unit.HASHTAGS: "个话题标签（#词）", Unit.HEADINGS: "个Markdown标题",
    Unit.CAPITAL_WORDS: "个全大写单词",
    Unit.KEYWORDS: "次", Unit.HIGHLIGHTS: "处突出显示", Unit.PLACEHOLDERS: "个占位符", Unit.SPANS: "处括起的内容",
    Unit.ANSWER: "回答",
}
_ZH_RELATIONS: Mapping[str, str] = {
    "less than": "少于", "at least": "至少", "at most": "最多", "more than": "多于", "exactly": "恰好",
}
_EN_LAYOUTS: Mapping[Layout, str] = {
    Layout.LIST: "Format the answer as a bulleted list.",
    Layout.NESTED_LIST: "Format the answer as a nested bulleted list, with indented sub-points.",
    Layout.NUMBERED_LIST: "Format the answer as a numbered list.",
    Layout.TABLE: "Present the answer as a markdown table.",
    Layout.NO_LIST: "Do not use bullet points or numbered lists.",
    Layout.RESPONSES: "Give {n} different responses separated by {marker}.",
}
_ZH_LAYOUTS: Mapping[Layout, str] = {
    Layout.LIST: "用项目符号列表作答。",
    Layout.NESTED_LIST: "用带缩进子要点的嵌套列表作答。",
    Layout.NUMBERED_LIST: "用编号列表作答。",
    Layout.TABLE: "用 Markdown 表格呈现回答。",
    Layout.NO_LIST: "不要使用项目符号或编号列表。",
    Layout.RESPONSES: "给出{n}个不同的回答，用 {marker} 分隔。",
}


def _spaces(unit: Unit, f: Filter, zh: bool) -> str:
    """Which length a character count means: every character, or those that are not white space."""
    if unit is not Unit.CHARACTERS or f.chars:
        return ""
    if f.nonspace:
        return "（不计空格）" if zh else " (not counting spaces)"
    return "（含空格）" if zh else " (counting spaces and line breaks)"


def _filter_en(f: Filter) -> str:
    parts = []
    if f.text:
        parts.append(f'of "{f.text}"')
    if f.chars:
        parts.append("among " + " ".join(f'"{c}"' for c in f.chars))
    if f.case:
        parts.append({"upper": "in capitals", "lower": "in lowercase", "title": "capitalised"}[f.case])
    if f.starts_with:
        parts.append(f'starting with "{f.starts_with}"')
    if f.ends_with:
        parts.append(f'ending with "{f.ends_with}"')
    if f.contains:
        parts.append(f'containing "{f.contains}"')
    if f.script:
        parts.append(f"in {f.script} script")
    if f.stop_words is not None:
        parts.append("that are stop words" if f.stop_words else "that are not stop words")
    if f.min_length is not None:
        parts.append(f"of {f.min_length} or more letters")
    if f.max_length is not None:
        parts.append(f"of {f.max_length} or fewer letters")
    if f.same_as_previous is not None:
        parts.append({"initial": "starting with the same letter as the word before",
                      "word": "repeating the word before",
                      "alphabet": "not starting with the letter after the previous word's first letter"}[
                          f.same_as_previous])
    if f.length_class is not None:
        parts.append(f"of {'a prime' if f.length_class == 'prime' else 'an ' + f.length_class} number of letters")
    if f.palindrome:
        parts.append("that are palindromes")
    if f.occurrence is not None:
        parts.append(f"used for the {f.occurrence}th time or later")
    if f.one_of:
        parts.append("among " + ", ".join(f'"{w}"' for w in f.one_of))
    if f.negated and parts:
        return " not (" + " ".join(parts) + ")"
    return (" " + " ".join(parts)) if parts else ""


def _filter_zh(f: Filter) -> str:
    parts = []
    if f.text:
        parts.append(f"“{f.text}”")
    if f.chars:
        parts.append("、".join(f"“{c}”" for c in f.chars))
    if f.case:
        parts.append({"upper": "大写", "lower": "小写", "title": "首字母大写"}[f.case])
    if f.starts_with:
        parts.append(f"以“{f.starts_with}”开头")
    if f.ends_with:
        parts.append(f"以“{f.ends_with}”结尾")
    if f.contains:
        parts.append(f"包含“{f.contains}”")
    if f.min_length is not None:
        parts.append(f"长度不少于{f.min_length}个字母的")
    if f.max_length is not None:
        parts.append(f"长度不超过{f.max_length}个字母的")
    if f.same_as_previous is not None:
        parts.append({"initial": "与前一个词首字母相同的", "word": "与前一个词相同的",
                      "alphabet": "首字母不是前一个词首字母在字母表中下一个字母的"}[f.same_as_previous])
    if f.length_class is not None:
        parts.append({"prime": "长度为质数的", "even": "长度为偶数的", "odd": "长度为奇数的"}[f.length_class])
    if f.palindrome:
        parts.append("回文")
    if f.occurrence is not None:
        parts.append(f"第{f.occurrence}次及以后出现的")
    if f.one_of:
        parts.append("属于" + "、".join(f"“{w}”" for w in f.one_of) + "的")
    if f.negated and parts:
        return "不" + "".join(parts)
    return "".join(parts)


def name_measure(measure: Measure) -> str:
    """What ``measure`` counts, in English words ("punctuation marks among "!" "！"")."""
    return _EN_UNITS[measure.unit] + _filter_en(measure.filter) + _spaces(measure.unit, measure.filter, False)


def _count(form: Count, zh: bool) -> str:
    rel = str(form.relation)
    if zh:
        per = {Unit.SENTENCES: "每句", Unit.PARAGRAPHS: "每段", Unit.LINES: "每行"}.get(form.per or Unit.ANSWER, "")
        if form.of is not None:
            return f"{per}{_filter_zh(form.filter)}{_ZH_UNITS[form.unit]}占比{_ZH_RELATIONS.get(rel, rel)}{form.fraction:g}。"
        spaces = _spaces(form.unit, form.filter, True)
        return f"{per}{_filter_zh(form.filter)}{_ZH_RELATIONS.get(rel, rel)}{form.n}{_ZH_UNITS[form.unit]}{spaces}。"
    per = f" in each {form.per.value[:-1]}" if form.per is not None else ""
    what = name_measure(form.measure)
    if form.of is not None:
        return f"The share of {what} among {_EN_UNITS[form.of.unit]}{per} should be {rel} {form.fraction:g}."
    return f"Use {rel} {form.n} {what}{per}."


_CLASSES_ZH: Mapping[str, str] = {"emoji": "一个表情符号", "capital": "大写字母", "lowercase": "小写字母",
                                  "number": "数字", "verb": "动词"}


def _position_class(form: Position, zh: bool) -> str:
    """An opening or closing of a class ("every list item starts with an emoji")."""
    assert form.word_class is not None
    if zh:
        piece = _ZH_UNITS[form.unit].lstrip("个")
        where = "回答" if form.unit is Unit.ANSWER else (
            f"第{form.k}{piece}" if form.k > 0 else f"每{piece}都" if form.k == 0 else f"最后一{piece}")
        return f"{where}以{_CLASSES_ZH[form.word_class]}{'开头' if form.op == 'starts_with' else '结尾'}。"
    piece = "list item" if form.unit is Unit.BULLETS else form.unit.value[:-1]
    where = "Your answer" if form.unit is Unit.ANSWER else (
        f"Every {piece}" if form.k == 0 else f"The last {piece}" if form.k < 0 else f"The {piece} number {form.k}")
    verb = "starts" if form.op == "starts_with" else "ends"
    return f"{where} {verb} with {CLASS_NAMES[form.word_class]}."


def _spread(form: Spread, zh: bool) -> str:
    if form.step is not None:
        more = abs(form.step)
        if zh:
            return f"每{_ZH_UNITS[form.per].lstrip('个')}比前一{_ZH_UNITS[form.per].lstrip('个')}" \
                f"{'多' if form.step >= 0 else '少'}{more}{_ZH_UNITS[form.unit]}。"
        return f"Make each of the {_EN_UNITS[form.per]} exactly {more} {_EN_UNITS[form.unit]} " \
            f"{'longer' if form.step >= 0 else 'shorter'} than the one before it."
    if zh:
        piece = _ZH_UNITS[form.per].lstrip("个")
        unit = _ZH_UNITS[form.unit]
        limits = []
        if form.max_diff is not None:
            limits.append(f"最长与最短的相差不超过{form.max_diff}{unit}")
        if form.max_ratio is not None:
            limits.append(f"最长的不超过最短的{form.max_ratio:g}倍")
        return f"各{piece}长度大致相同（{'，'.join(limits)}）。"
    limits = []
    if form.max_diff is not None:
        limits.append(f"the longest at most {form.max_diff} {_EN_UNITS[form.unit]} longer than the shortest")
    if form.max_ratio is not None:
        limits.append(f"the longest at most {form.max_ratio:g} times the shortest")
    return f"Keep the {_EN_UNITS[form.per]} balanced in length ({'; '.join(limits)})."


def _ordinal_en(k: int) -> str:
    if k == -1:
        return "last"
    if k < 0:
        return f"number {-k} from the end"
    return f"number {k}"


def _position_inside(form: Position, zh: bool) -> str:
    """A containment, a word inside a piece, or an echo of the answer's own words."""
    piece_zh = _ZH_UNITS[form.unit].lstrip("个")
    where_zh = "回答" if form.unit is Unit.ANSWER else (
        f"第{form.k}{piece_zh}" if form.k > 0 else f"每{piece_zh}都" if form.k == 0 else f"倒数第{-form.k}{piece_zh}")
    piece = "list item" if form.unit is Unit.BULLETS else form.unit.value[:-1]
    where = "Your answer" if form.unit is Unit.ANSWER else (
        f"Every {piece}" if form.k == 0 else f"The {piece} {_ordinal_en(form.k)}")
    if form.same_as == "first_word":
        return f"{where_zh}以开头的词结尾。" if zh else f"{where} ends with the same word it begins with."
    if form.same_as == "previous_last_word":
        return f"{where_zh}以上一{piece_zh}的最后一个词开头。" if zh else \
            f"{where} begins with the last word of the {piece} before it."
    if form.word is not None:
        if zh:
            return f"{where_zh}的第{form.word}个词必须是“{form.text}”。"
        return f'In {where[0].lower()}{where[1:]}, word {_ordinal_en(form.word)} is "{form.text}".'
    return f"{where_zh}必须包含“{form.text}”。" if zh else f'{where} contains "{form.text}".'


def _position(form: Position, zh: bool) -> str:
    if not form.plain:
        return _position_inside(form, zh)
    if form.word_class is not None:
        return _position_class(form, zh)
    op = form.op.replace("_", " ")
    if zh:
        piece = _ZH_UNITS[form.unit].lstrip("个")
        where = "回答" if form.unit is Unit.ANSWER else (
            f"第{form.k}{piece}" if form.k > 0 else f"每{piece}都" if form.k == 0
            else f"最后一{piece}" if form.k == -1 else f"倒数第{-form.k}{piece}"
        )
        verb = {"starts_with": "以", "ends_with": "以", "is": "必须是", "contains": "包含"}[form.op]
        tail = {"starts_with": "开头", "ends_with": "结尾", "is": "", "contains": ""}[form.op]
        return f"{where}{verb}“{form.text}”{tail}。"
    if form.unit is Unit.ANSWER:
        return f'Your answer {op.replace("with", "with the text")} "{form.text}".'
    if form.k == 0:
        piece = "list item" if form.unit is Unit.BULLETS else form.unit.value[:-1]
        return f'Every {piece} {op}s "{form.text}".'.replace("iss ", "is ").replace("withs", "with")
    ordinal = _ordinal_en(form.k)
    return f'The {form.unit.value[:-1]} {ordinal} {op}s "{form.text}".'.replace("iss ", "is ").replace("withs", "with")


def describe(form: Form, language: str = "en") -> str:
    """``form`` as an instruction in ``language`` ("en" or "zh")."""
    zh = language == "zh"
    if isinstance(form, Count):
        return _count(form, zh)
    if isinstance(form, Position):
        return _position(form, zh)
    if isinstance(form, Wrap):
        if zh:
            where = "整个回答" if form.unit is Unit.ANSWER else f"每{_ZH_UNITS[form.unit].lstrip('个')}"
            return f"{where}用 {form.left} 和 {form.right} 括起来。"
        where = "your entire answer" if form.unit is Unit.ANSWER else f"each {form.unit.value[:-1]}"
        return f"Wrap {where} in {form.left} and {form.right}."
    if isinstance(form, Spread):
        return _spread(form, zh)
    if isinstance(form, Structure):
        template = (_ZH_LAYOUTS if zh else _EN_LAYOUTS)[form.layout]
        text = template.format(n=form.n or 2, marker=form.marker or "******")
        return text + _shape(form, zh)
    wanted = changed(form)
    if form.change and wanted is not None:
        if zh:
            return f"先原样写出以下文字，然后作答：{wanted}"
        return f"First write exactly this, then give your answer: {wanted}"
    if zh:
        return f"先{'改写后' if form.change else '逐字'}重复以下请求，然后作答：{form.text}"
    how = "with the requested change" if form.change else "word for word"
    return f"First repeat the request {how}, then give your answer: {form.text}"


def _shape(form: Structure, zh: bool) -> str:
    """The item, row, column and header counts and the prose around a list or table, as a sentence."""
    if form.layout in (Layout.NO_LIST, Layout.RESPONSES):
        return ""
    parts: list[str] = []
    if form.layout is Layout.TABLE:
        if form.n is not None:
            parts.append(f"{form.n}行" if zh else f"{form.n} rows")
        if form.columns is not None:
            parts.append(f"{form.columns}列" if zh else f"{form.columns} columns")
        if form.headers:
            parts.append(("表头：" if zh else "the headers ") + ", ".join(form.headers))
    elif form.n is not None:
        parts.append(f"{form.n}项" if zh else f"{form.n} items")
    if form.sub_items is not None:
        least = ("至少" if zh else "at least ") if form.sub_at_least else ""
        parts.append(f"每项下{least}{form.sub_items}个子项" if zh else f"{least}{form.sub_items} sub-items under each item")
    beside = {"paragraph": ("一段文字", "a paragraph"), "sentence": ("一句话", "one sentence")}
    if form.before is not None:
        parts.append(f"之前写{beside[form.before][0]}" if zh else f"{beside[form.before][1]} before it")
    if form.after is not None:
        parts.append(f"之后写{beside[form.after][0]}" if zh else f"{beside[form.after][1]} after it")
    if not parts:
        return ""
    return ("（" + "，".join(parts) + "）") if zh else " (" + "; ".join(parts) + ".)"
