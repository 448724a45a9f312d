"""The words requirements are written with, mapped onto the constraint form.

Extraction reads a requirement as a unit (what is counted or placed), a
relation (how many), a predicate or delimiter, and a polarity; this module
is the vocabulary of each, in English and Chinese, with synonyms and
inflections, so a new phrasing of a known requirement needs an entry here
rather than a new pattern. English entries are lowercase lemmas (spaCy's
lemmatiser folds plurals and verb forms onto them); Chinese entries are
surface strings, longest first where they overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reasoning.constraints.form.model import Layout, Unit

__all__ = [
    "EN_ANSWER_NOUNS",
    "EN_CHANGE",
    "EN_DELIMITERS",
    "EN_EVERY",
    "EN_FORM_WORDS",
    "EN_LAYOUTS",
    "EN_LOWER",
    "EN_LOWER_SAID",
    "EN_PER",
    "EN_PIECES",
    "EN_UNITS",
    "EN_UNIVERSAL",
    "EN_UPPER",
    "EN_UPPER_SAID",
    "STANDARD_MARKS",
    "ZH_DELIMITERS",
    "ZH_FORM_WORDS",
    "ZH_LAYOUTS",
    "ZH_NO_LIST",
    "ZH_PER",
    "ZH_POSITION_UNITS",
    "ZH_UNITS",
]

UnitEntry = tuple[Unit, Mapping[str, Any]]

#: Unit terms (lemma sequences) -> the unit and filter fields they name.
EN_UNITS: Mapping[tuple[str, ...], UnitEntry] = {
    ("punctuation", "mark"): (Unit.PUNCTUATION, {}),
    ("punctuation", "symbol"): (Unit.PUNCTUATION, {}),
    ("punctuation",): (Unit.PUNCTUATION, {}),
    ("exclamation", "mark"): (Unit.PUNCTUATION, {"chars": "!！"}),
    ("exclamation", "point"): (Unit.PUNCTUATION, {"chars": "!！"}),
    ("exclamation",): (Unit.PUNCTUATION, {"chars": "!！"}),
    ("question", "mark"): (Unit.PUNCTUATION, {"chars": "?？"}),
    ("semicolon",): (Unit.PUNCTUATION, {"chars": ";；"}),
    ("comma",): (Unit.PUNCTUATION, {"chars": ",，"}),
    ("semi", "-", "colon"): (Unit.PUNCTUATION, {"chars": ";；"}),
    ("colon",): (Unit.PUNCTUATION, {"chars": ":："}),
    ("full", "stop"): (Unit.PUNCTUATION, {"chars": ".。"}),
    ("period",): (Unit.PUNCTUATION, {"chars": ".。"}),
    ("dash",): (Unit.PUNCTUATION, {"chars": "-–—"}),
    ("em", "dash"): (Unit.PUNCTUATION, {"chars": "—"}),
    ("hyphen",): (Unit.PUNCTUATION, {"chars": "-"}),
    ("ellipsis",): (Unit.PUNCTUATION, {"chars": "…"}),
    ("apostrophe",): (Unit.PUNCTUATION, {"chars": "'’"}),
    ("ampersand",): (Unit.PUNCTUATION, {"chars": "&"}),
    ("at", "sign"): (Unit.PUNCTUATION, {"chars": "@"}),
    ("percent", "sign"): (Unit.PUNCTUATION, {"chars": "%％"}),
    ("dollar", "sign"): (Unit.CHARACTERS, {"chars": "$"}),  # a currency symbol, no punctuation mark
    ("emoji",): (Unit.EMOJI, {}),
    ("emojis",): (Unit.EMOJI, {}),
    ("emoticon",): (Unit.EMOJI, {}),
    ("smiley",): (Unit.EMOJI, {}),
    ("digit",): (Unit.DIGITS, {}),
    ("numeral",): (Unit.NUMBERS, {}),
    ("number",): (Unit.NUMBERS, {}),
    ("figure",): (Unit.NUMBERS, {}),
    ("unique", "word"): (Unit.UNIQUE_WORDS, {}),
    ("distinct", "word"): (Unit.UNIQUE_WORDS, {}),
    ("different", "word"): (Unit.UNIQUE_WORDS, {}),
    ("line",): (Unit.LINES, {}),
    ("chinese", "character"): (Unit.CHARACTERS, {"script": "Han"}),
    ("han", "character"): (Unit.CHARACTERS, {"script": "Han"}),
    ("character",): (Unit.CHARACTERS, {}),
    ("capital", "letter"): (Unit.LETTERS, {"case": "upper"}),
    ("uppercase", "letter"): (Unit.LETTERS, {"case": "upper"}),
    ("lowercase", "letter"): (Unit.LETTERS, {"case": "lower"}),
    ("letter",): (Unit.LETTERS, {}),
    ("sub", "-", "bullet"): (Unit.NESTED_BULLETS, {}),
    ("sub", "-", "point"): (Unit.NESTED_BULLETS, {}),
    ("sub", "-", "item"): (Unit.NESTED_BULLETS, {}),
    ("sub", "bullet"): (Unit.NESTED_BULLETS, {}),
    ("sub", "point"): (Unit.NESTED_BULLETS, {}),
    ("sub-bullet",): (Unit.NESTED_BULLETS, {}),
    ("sub-bullets",): (Unit.NESTED_BULLETS, {}),
    ("sub-points",): (Unit.NESTED_BULLETS, {}),
    ("subpoints",): (Unit.NESTED_BULLETS, {}),
    ("sub-point",): (Unit.NESTED_BULLETS, {}),
    ("subpoint",): (Unit.NESTED_BULLETS, {}),
    ("nested", "bullet"): (Unit.NESTED_BULLETS, {}),
    ("capitalized", "word"): (Unit.WORDS, {"case": "title"}),
    ("capitalised", "word"): (Unit.WORDS, {"case": "title"}),
    ("hashtag",): (Unit.HASHTAGS, {}),
    ("hash", "tag"): (Unit.HASHTAGS, {}),
    ("markdown", "heading"): (Unit.HEADINGS, {}),
    ("section", "heading"): (Unit.HEADINGS, {}),
    ("heading",): (Unit.HEADINGS, {}),
    ("subheading",): (Unit.HEADINGS, {}),
    ("word",): (Unit.WORDS, {}),
    ("sentence",): (Unit.SENTENCES, {}),
    ("paragraph",): (Unit.PARAGRAPHS, {}),
}

#: Units whose plain counts the named kinds already read (words, sentences,
#: paragraphs); the form extractor only adds filters or per-item bounds to them.
EN_PER: Mapping[str, Unit] = {"sentence": Unit.SENTENCES, "paragraph": Unit.PARAGRAPHS, "line": Unit.LINES,
                              "bullet": Unit.LINES, "point": Unit.LINES, "item": Unit.LINES}

#: Quantifiers that say a rule of each piece or item ("each paragraph", "every bullet", "all lines").
EN_EVERY = frozenset({"each", "every", "all"})
#: Quantifiers that say a rule of every word ("every word", "any word", "only words", "every single
#: word"; lowercase forms).
EN_UNIVERSAL = EN_EVERY | {"only", "any", "single"}

#: Lemmas that name a piece of the answer, each piece of its unit ("each sentence", "the third
#: paragraph", "every bullet point"; an item or point of a list is a bullet).
EN_PIECES: Mapping[str, Unit] = {
    "sentence": Unit.SENTENCES, "paragraph": Unit.PARAGRAPHS, "line": Unit.LINES,
    "bullet": Unit.BULLETS, "item": Unit.BULLETS, "point": Unit.BULLETS,
}

#: The standard punctuation marks, each as the characters a count of it counts (both widths).
STANDARD_MARKS = (".。", ",，", "?？", "!！", ";；", ":：")

#: Words naming capital letters / lowercase letters (lemmas or lowercase forms).
EN_UPPER = frozenset({"capital", "capitals", "uppercase", "upper-case", "caps", "all-caps", "allcaps", "majuscule",
                      "block"})
EN_LOWER = frozenset({"lowercase", "lower-case", "minuscule"})

#: Words saying which case a named letter has ("the first letter of each line must be capitalized / upper
#: case / lowercased"; lowercase forms): the case words, their verbs, and "upper" / "lower", which say a
#: case only where a letter is already named; not "block", a case only before "capitals" ("the code block").
EN_UPPER_SAID = (EN_UPPER - {"block"}) | {"upper", "capitalize", "capitalise", "capitalized", "capitalised"}
EN_LOWER_SAID = EN_LOWER | {"lower", "lowercased"}

#: Delimiter names -> (left, right).
EN_DELIMITERS: Mapping[tuple[str, ...], tuple[str, str]] = {
    ("square", "bracket"): ("[", "]"),
    ("curly", "bracket"): ("{", "}"),
    ("curly", "brace"): ("{", "}"),
    ("brace",): ("{", "}"),
    ("round", "bracket"): ("(", ")"),
    ("parenthesis",): ("(", ")"),
    ("parentheses",): ("(", ")"),
    ("parenthese",): ("(", ")"),
    ("bracket",): ("(", ")"),
    ("single", "quote"): ("'", "'"),
    ("single", "quotation", "mark"): ("'", "'"),
    ("double", "quote"): ('"', '"'),
    ("double", "quotation", "mark"): ('"', '"'),
    ("quotation", "mark"): ('"', '"'),
    ("quote", "mark"): ('"', '"'),
    ("quote",): ('"', '"'),
    ("backtick",): ("`", "`"),
    ("code", "block"): ("```", "```"),
    ("code", "fence"): ("```", "```"),
}

#: Nouns that name the answer as a whole.
EN_ANSWER_NOUNS = frozenset({"response", "answer", "reply", "output", "text", "message", "everything", "it",
                             "submission", "essay", "story", "poem", "letter", "email", "post", "summary",
                             "description", "explanation", "note", "review", "article", "tweet"})

#: Layout terms (lemma sequences) -> layout.
EN_LAYOUTS: Mapping[tuple[str, ...], Layout] = {
    ("nested", "list"): Layout.NESTED_LIST,
    ("nested", "bulleted", "list"): Layout.NESTED_LIST,
    ("nested", "bullet", "list"): Layout.NESTED_LIST,
    ("nested", "bullet"): Layout.NESTED_LIST,
    ("hierarchical", "list"): Layout.NESTED_LIST,
    ("multi", "-", "level", "list"): Layout.NESTED_LIST,
    ("multi", "-", "level", "outline"): Layout.NESTED_LIST,
    ("two", "-", "level", "outline"): Layout.NESTED_LIST,
    ("two", "-", "level", "list"): Layout.NESTED_LIST,
    ("two", "-", "tier", "outline"): Layout.NESTED_LIST,
    ("nested", "outline"): Layout.NESTED_LIST,
    ("hierarchical", "outline"): Layout.NESTED_LIST,
    ("numbered", "list"): Layout.NUMBERED_LIST,
    ("number", "list"): Layout.NUMBERED_LIST,
    ("numbered", "point"): Layout.NUMBERED_LIST,
    ("numbered", "step"): Layout.NUMBERED_LIST,
    ("ordered", "list"): Layout.NUMBERED_LIST,
    ("enumerated", "list"): Layout.NUMBERED_LIST,
    ("table",): Layout.TABLE,
    ("bulleted", "list"): Layout.LIST,
    ("bullet", "list"): Layout.LIST,
    ("bullet", "point"): Layout.LIST,
    ("bullet",): Layout.LIST,
    ("list",): Layout.LIST,
}

#: Words that turn a repetition into a repetition with a change.
EN_CHANGE = frozenset({"change", "replace", "modify", "alter", "swap", "substitute", "rephrase", "paraphrase",
                       "reword", "own", "different", "tweak", "edit", "instead"})

#: Words that make a sentence look like a requirement on the answer's form.
EN_FORM_WORDS = frozenset(
    {"format", "formatting", "case", "capitalize", "capitalise", "rhyme", "alphabetical", "alphabetically",
     "order", "indent", "indentation", "tense", "syllable", "vowel", "consonant", "acrostic", "palindrome",
     "markdown", "bold", "italic", "italics", "heading", "header", "column", "row", "symbol", "font",
     "spacing", "length", "alliteration", "alliterate", "backwards", "reverse", "abbreviation", "acronym",
     "hashtag", "delimiter", "separator", "prefix", "suffix", "person", "voice", "passive", "meter",
     "stanza", "verse", "couplet", "haiku", "limerick", "sonnet", "emoji", "punctuation",
     "word", "sentence", "paragraph", "line", "letter", "character", "bullet", "list", "table", "section",
     "bracket", "parenthesis", "parentheses", "nest", "nested", "pronoun", "conjunction", "csv", "indented",
     "template", "quoted", "unquoted"}
)

#: Chinese unit words -> the unit and filter fields they name (longest first when matched).
ZH_UNITS: Mapping[str, UnitEntry] = {
    "标点符号": (Unit.PUNCTUATION, {}),
    "标点": (Unit.PUNCTUATION, {}),
    "感叹号": (Unit.PUNCTUATION, {"chars": "!！"}),
    "惊叹号": (Unit.PUNCTUATION, {"chars": "!！"}),
    "问号": (Unit.PUNCTUATION, {"chars": "?？"}),
    "分号": (Unit.PUNCTUATION, {"chars": ";；"}),
    "逗号": (Unit.PUNCTUATION, {"chars": ",，"}),
    "冒号": (Unit.PUNCTUATION, {"chars": ":："}),
    "句号": (Unit.PUNCTUATION, {"chars": ".。"}),
    "破折号": (Unit.PUNCTUATION, {"chars": "-–—"}),
    "省略号": (Unit.PUNCTUATION, {"chars": "…"}),
    "表情符号": (Unit.EMOJI, {}),
    "表情": (Unit.EMOJI, {}),
    "emoji": (Unit.EMOJI, {}),
    "阿拉伯数字": (Unit.DIGITS, {}),
    "数字": (Unit.NUMBERS, {}),
    "字符": (Unit.CHARACTERS, {}),
    "汉字": (Unit.CHARACTERS, {"script": "Han"}),
    "中文字符": (Unit.CHARACTERS, {"script": "Han"}),
    "中文字": (Unit.CHARACTERS, {"script": "Han"}),
    "话题标签": (Unit.HASHTAGS, {}),
    "井号标签": (Unit.HASHTAGS, {}),
    "hashtag": (Unit.HASHTAGS, {}),
    "小标题": (Unit.HEADINGS, {}),
    "Markdown标题": (Unit.HEADINGS, {}),
    "一级标题": (Unit.HEADINGS, {"marker": "#"}),
    "二级标题": (Unit.HEADINGS, {"marker": "##"}),
    "三级标题": (Unit.HEADINGS, {"marker": "###"}),
    **{"#" * level + "标题": (Unit.HEADINGS, {"marker": "#" * level}) for level in range(1, 7)},
    "不同的词": (Unit.UNIQUE_WORDS, {}),
    "不同的单词": (Unit.UNIQUE_WORDS, {}),
    "行": (Unit.LINES, {}),
    "子要点": (Unit.NESTED_BULLETS, {}),
    "嵌套要点": (Unit.NESTED_BULLETS, {}),
}

#: Chinese per-item words -> the unit each bound holds for.
ZH_PER: Mapping[str, Unit] = {"每句话": Unit.SENTENCES, "每个句子": Unit.SENTENCES, "每一句": Unit.SENTENCES,
                              "每句": Unit.SENTENCES, "每段": Unit.PARAGRAPHS, "每一段": Unit.PARAGRAPHS,
                              "每个段落": Unit.PARAGRAPHS, "每行": Unit.LINES, "每一行": Unit.LINES,
                              "任何一句话": Unit.SENTENCES, "任何一句": Unit.SENTENCES, "任何句子": Unit.SENTENCES,
                              "任何一段": Unit.PARAGRAPHS, "任何段落": Unit.PARAGRAPHS, "任何一行": Unit.LINES}

#: Chinese position units -> unit.
ZH_POSITION_UNITS: Mapping[str, Unit] = {"个词": Unit.WORDS, "个单词": Unit.WORDS, "词": Unit.WORDS,
                                         "句话": Unit.SENTENCES, "个句子": Unit.SENTENCES, "句": Unit.SENTENCES,
                                         "段": Unit.PARAGRAPHS, "个段落": Unit.PARAGRAPHS, "行": Unit.LINES}

#: Chinese delimiter names -> (left, right).
ZH_DELIMITERS: Mapping[str, tuple[str, str]] = {
    "圆括号": ("(", ")"), "小括号": ("(", ")"), "括号": ("(", ")"), "方括号": ("[", "]"), "中括号": ("[", "]"),
    "花括号": ("{", "}"), "大括号": ("{", "}"), "单引号": ("'", "'"), "双引号": ('"', '"'), "引号": ('"', '"'),
    "书名号": ("《", "》"), "反引号": ("`", "`"), "代码块": ("```", "```"),
}

#: Chinese layout words -> layout.
ZH_LAYOUTS: Mapping[str, Layout] = {
    "表格": Layout.TABLE, "嵌套列表": Layout.NESTED_LIST, "多级列表": Layout.NESTED_LIST,
    "编号列表": Layout.NUMBERED_LIST, "有序列表": Layout.NUMBERED_LIST, "数字编号": Layout.NUMBERED_LIST,
    "两级大纲": Layout.NESTED_LIST, "二级大纲": Layout.NESTED_LIST, "多级大纲": Layout.NESTED_LIST,
    "两层大纲": Layout.NESTED_LIST, "两级列表": Layout.NESTED_LIST, "分级大纲": Layout.NESTED_LIST,
    "项目符号列表": Layout.LIST, "无序列表": Layout.LIST, "列表": Layout.LIST, "项目符号": Layout.LIST,
}

#: Chinese list words whose negation means "no list".
ZH_NO_LIST = ("项目符号", "列表", "要点列表", "条目", "分点")

#: Chinese words that make a sentence look like a requirement on the answer's form.
ZH_FORM_WORDS = ("字", "句", "段", "行", "标点", "格式", "大写", "小写", "押韵", "表格", "列表", "符号", "括号",
                 "引号", "开头", "结尾", "字母", "排序", "顺序", "缩进", "标题", "对仗", "字数", "韵",
                 "连词", "代词", "人名", "嵌套")
