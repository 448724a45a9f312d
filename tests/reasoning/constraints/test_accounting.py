"""A reading accounts for the whole clause it came from, or the clause is left unrecognised (issue 36).

Misreadings of the class: a reader recognises part of a clause (a count, a
keyword) and leaves out what the rest of it says (the unit the number counts,
the sentence the keyword goes in, the separator, the filter). Each such
clause must come back ``unrecognised`` with no constraint read from it,
whatever reader made the smaller reading; clauses whose readings carry all
they say keep them, and say which words each reading used.
"""

from __future__ import annotations

import pytest

from reasoning.constraints.extraction import extract


def _inside(span_start: int, span_end: int, start: int, end: int) -> bool:
    return span_start < end and start < span_end


@pytest.mark.parametrize(
    ("prompt", "clause"),
    [
        # the misreadings
        ("Write a poem about the sea. Use only words that contain only three types of vowels.",
         "Use only words that contain only three types of vowels."),
        # (with * and - it is the nested list, at least one sub-bullet each: see below; a mark no reading writes is not)
        (("Write about cats. Your response must include bullet points denoted by * and at least one sub-bullet "
         "point denoted by ~ for each bullet point."), "Your response must include bullet points"),
        ("Write a story about lunch. Include keyword eat in the 6-th sentence.",
         "Include keyword eat in the 6-th sentence."),
        ("Write a story about lunch. Include the keyword eat in the 28-th sentence.",
         "Include the keyword eat in the 28-th sentence."),
        ("Write three sentences where the ratio of overlapping words between the first and second sentence is 0.5.",
         "ratio of overlapping words"),
        # new wordings of the same kinds
        ("Describe tea in words that contain only three types of vowels.", "three types of vowels"),
        ("Describe a forest using words built from exactly two kinds of consonants.", "two kinds of consonants"),
        ("Describe owls. Every 29th word must be in Japanese.", "Every 29th word must be in Japanese."),
        ("Plan a trip and give each step at least two sub-points marked with ~ under every main point.",
         "two sub-points"),
        ("Write a memo about the audit. Begin with a one-word verdict, Approve, Reject or Escalate.",
         "Begin with a one-word verdict"),
        ("Write three paragraphs about dams; make sure the word 'silt' shows up in every one of them.",
         "every one of them"),
        ("Describe a harbour. The reply must not contain any colons or semicolons.",
         "must not contain any colons or semicolons"),
        # Chinese: a number referring back is no count; a count of items or a first line must be carried
        ("介绍一下网络安全，回答里必须用到 firewall 和 VPN 这两个词。", "回答里必须用到 firewall 和 VPN 这两个词。"),
        ("给出居家节能的建议，列出五条，每条不超过二十个字。", "列出五条，每条不超过二十个字。"),
        # a verb coordinated with another edge verb places the shared text too (its opening is unread)
        ("Describe your favourite city. Start and end the answer with the exact same sentence.",
         "Start and end the answer with the exact same sentence."),
        # "every one of them" needs a per-piece reading of its own clause, not one read in the next clause
        (("Summarise recycling in three sentences and include the word 'bin' in every one of them; "
         "no sentence may exceed 15 words."), "include the word 'bin' in every one of them"),
        # an example ends at its verb: the share after it is said, not exemplified
        (("Explain how to brew tea. Short words such as 'to', 'in' or 'it' should be no more than a quarter "
         "of your words."), "no more than a quarter of your words"),
        # a piece placed relative to another ("on the next line") is a unit no sentence count carries
        ("Suggest a title for my blog about knitting, followed on the next line by a one-sentence description.",
         "followed on the next line by a one-sentence description"),
        ("Name a band for my cousin, with a one-sentence motto on the line below.",
         "with a one-sentence motto on the line below"),
        # a bounded number is a count the answer must meet, whatever it counts
        # (two remarks in round brackets is a count of bracketed spans: test_ratio_extraction)
        ("Write a review of a cafe and include exactly two remarks in italics.",
         "include exactly two remarks in italics"),
        # the whole answer wrapped needs a word naming the whole answer
        (("Write a story where the captain is quoted, and inside his quote he repeats what the cook said, "
         "in quotation marks of its own."), "in quotation marks of its own"),
        # a refusal of lists whose negation is in another clause than the list it names
        ("Give me five tips for saving money as bullet points, and don't begin two bullets with the same word.",
         "as bullet points"),
        # letters named in a filter, a mark named in parentheses, a ratio between counts
        ("Write a poem about snow: five lines starting with S, N, O, W and Y.", "five lines starting with S"),
        ("Name four rivers, each on its own line marked by a caret (^) rather than a dash.", "caret (^)"),
        (("Review a phone in two bulleted lists, with twice as many strengths as weaknesses and exactly 3 "
         "weaknesses."), "twice as many strengths as weaknesses"),
        # a sentence laying out pieces states each piece's properties, not the whole answer's
        (("Suggest a name for a new bakery, written in Title Case, followed on the next line by a one-sentence "
         "slogan."), "written in Title Case"),
        # a unit named as an adjective in a filter ("a consonant cluster", "a vowel") must be carried
        (("Write a short poem for my niece that uses at least five different words starting with a consonant "
         "cluster, like 'tree', 'plum' or 'snow'."), "starting with a consonant cluster"),
        ("Use at least ten words that start with a vowel.", "Use at least ten words that start with a vowel."),
        # a bound on the sub-items under every item is no total (a minimum is the nested list's: see below)
        ("Use at most three sub-bullets under every bullet point.",
         "Use at most three sub-bullets under every bullet point."),
        # CSV asked without its columns is no Markdown table
        ("Write a table as CSV where every cell containing a comma is wrapped in double quotes.",
         "Write a table as CSV"),
        # a common noun after "a" describes the text placed; it is not the text
        ("Write about apples. Finish with a short joke.", "Finish with a short joke."),
        ("Start each bullet with a label in capitals.", "Start each bullet with a label in capitals."),
        ("Write a tongue twister using at least four words that begin with a consonant cluster, like 'street'.",
         "at least four words that begin with a consonant cluster"),
    ],
)
def test_a_clause_saying_more_than_its_reading_is_unrecognised(prompt: str, clause: str) -> None:
    result = extract(prompt)
    start = prompt.index(clause)
    end = start + len(clause)
    read = [c for c in result.constraints if c.source and _inside(c.source.start, c.source.end, start, end)]
    assert read == [], [(c.kind.value, c.params) for c in read]
    assert any(_inside(s.start, s.end, start, end) for s in result.unrecognised), result.unrecognised
    dropped = [r for r in result.readings if r.constraint is None and _inside(r.clause.start, r.clause.end, start, end)]
    for reading in dropped:
        assert reading.unaccounted, reading


def test_a_named_separator_no_reader_reads_is_reported() -> None:
    prompt = "List three fruits. Instead of bullet points use !?!? to separate the items."
    result = extract(prompt)
    assert result.constraints == ()
    assert any("!?!?" in s.text for s in result.unrecognised)


@pytest.mark.parametrize(
    ("prompt", "kind", "words"),
    [
        ("Answer in fewer than 40 words.", "word_count", {"40", "words"}),
        ("Write about dogs, and make the third sentence start with the word Loyal.", "position",
         {"third", "sentence", "Loyal"}),
        ("Write about tea using exactly 4 sentences with 2 commas each.", "count", {"2", "commas", "sentences"}),
        ("Write about dogs in 5 bullet points with 2 sub-bullets under each.", "structure", {"5", "2", "sub"}),
        ("Answer with at most one hundred and fifty words.", "word_count", {"hundred", "fifty", "words"}),
        ("Write a note. Mention the keyword sale in the second-to-last sentence.", "position",
         {"second", "sentence", "sale"}),
        ("Tell a story about a fox where the next-to-last sentence ends with the word 'snow'.", "position",
         {"next", "sentence", "snow"}),
        ("Write a limerick and wrap it in double quotes.", "quotation", {"wrap", "quotes"}),
        ("Put your whole poem in square brackets.", "wrap", {"whole", "brackets"}),
        ("Write a haiku about rain in double quotation marks.", "quotation", {"quotation", "marks"}),
        ("Write a haiku about rain and put the haiku in double quotes.", "quotation", {"haiku", "quotes"}),
        ("Open and close each sentence with the same word.", "position", {"Open", "close", "sentence"}),
        ("Don't use any word more than 3 times.", "count", {"3", "word"}),
    ],
)
def test_a_reading_that_carries_its_clause_is_kept_with_the_words_it_used(
    prompt: str, kind: str, words: set[str]
) -> None:
    result = extract(prompt)
    assert result.unrecognised == ()
    [reading] = [r for r in result.readings if r.kind == kind]
    assert reading.constraint is not None and reading.unaccounted == ()
    used = {w.text for w in reading.used}
    assert words <= used, used
    for word in reading.used:
        assert prompt[word.start : word.end] == word.text
        assert reading.clause.start <= word.start and word.end <= reading.clause.end


def test_a_clause_restating_a_count_read_elsewhere_keeps_its_reading() -> None:
    prompt = "Answer with exactly one sentence. Put double quotation marks around your entire one-sentence response."
    kinds = {c.kind.value for c in extract(prompt).constraints}
    assert {"sentence_count", "quotation"} <= kinds


def test_a_number_in_an_example_or_a_quote_is_content() -> None:
    prompt = ("Your answer must contain exactly 3 bullet points, such as: * This is point 1. "
              "Include the phrase 'step 2 of 5 lines'.")
    result = extract(prompt)
    assert any(c.kind.value == "bullet_count" and c.params == {"n": 3} for c in result.constraints)


@pytest.mark.parametrize(
    ("prompt", "k"),
    [
        ("Tell a story about a fox where the next-to-last sentence ends with the word 'snow'.", -2),
        ("Write a fable in which the second to last sentence begins with the word 'Then'.", -2),
        ("Write a poem whose last line ends with the word 'home'.", -1),
    ],
)
def test_a_position_counted_from_the_end_is_read_with_its_distance(prompt: str, k: int) -> None:
    [position] = [c for c in extract(prompt).constraints if c.kind.value == "position"]
    assert position.params["k"] == k


def test_the_whole_answer_wrapped_is_kept_where_the_sentence_names_it() -> None:
    prompt = "Do you think tea is better than coffee? Wrap your response with double quotation marks."
    assert [c.kind.value for c in extract(prompt).constraints] == ["quotation"]


@pytest.mark.parametrize(
    ("prompt", "text"),
    [
        ("Name four rivers. Don't number them; start each line with an arrow (=>) instead.", "=>"),
        ("Begin every line with an asterisk (*) instead of a number.", "*"),
        ("Brainstorm four names for a cafe, each on its own line introduced by a caret (^) rather than a bullet.", "^"),
        ("List three fruits, each line preceded by a plus sign (+).", "+"),
        ("Start each paragraph with Note.", "Note"),
    ],
)
def test_a_mark_shown_after_the_noun_naming_it_is_the_text_placed(prompt: str, text: str) -> None:
    [position] = [c for c in extract(prompt).constraints if c.kind.value == "position"]
    assert position.params["text"] == text and position.params["op"] == "starts_with"


def test_a_reading_spanning_a_clause_left_unrecognised_has_its_own_clause_as_source() -> None:
    prompt = "List the risks of a new bridge as bullet points, and open each bullet with a severity label: [Major] or [Minor]."
    result = extract(prompt)
    label = prompt.index("open each bullet")
    [structure] = [c for c in result.constraints if c.kind.value == "structure"]
    assert structure.source is not None and structure.source.end <= label
    assert any(s.start <= label < s.end for s in result.unrecognised)


def test_a_reading_comes_from_the_clause_holding_what_it_carries() -> None:
    prompt = "Write three short paragraphs about tides, and end each paragraph with the phrase 'and so on'."
    result = extract(prompt)
    assert result.unrecognised == ()
    [position] = [c for c in result.constraints if c.kind.value == "position"]
    assert position.params["text"] == "and so on" and position.params["k"] == 0


def test_a_count_per_piece_is_no_total_and_the_pieces_counted_before_are_no_new_count() -> None:
    prompt = ("Compare cats and dogs, one paragraph for each, and keep the two paragraphs within eight words of "
              "each other in length.")
    result = extract(prompt)
    assert not any(c.kind.value == "count" and c.params.get("n") == 1 for c in result.constraints)
    assert [c.kind.value for c in result.constraints] == ["spread"]


@pytest.mark.parametrize(
    ("prompt", "unit", "text", "k"),
    [
        # a word in the k-th piece, counted from the start or the end, is its position (no longer a start or nothing)
        ("Write about tea. Use the word green in the second paragraph.", "paragraphs", "green", 2),
        ("Write about rivers. Put the word delta in the 4th sentence.", "sentences", "delta", 4),
        ("Write three paragraphs; the word hive must appear in the second paragraph.", "paragraphs", "hive", 2),
        ("Write about owls. The last paragraph should mention the word night.", "paragraphs", "night", -1),
        ("Write a poem. The third line from the end must be 'and then the rain'.", "lines", "and then the rain", -3),
        ("Write a story. The second sentence from the end must start with the word 'Finally'.", "sentences", "Finally",
         -2),
        ("写一首诗，倒数第二句必须以“月亮”结尾。", "sentences", "月亮", -2),
        ("写一首诗，倒数第三行必须是“晚安”。", "lines", "晚安", -3),
        ("写三段话，在第二段中使用关键词“森林”。", "paragraphs", "森林", 2),
    ],
)
def test_a_text_at_the_kth_piece_from_the_start_or_the_end(prompt: str, unit: str, text: str, k: int) -> None:
    [position] = [c for c in extract(prompt).constraints if c.kind.value == "position"]
    assert (position.params["unit"], position.params["text"], position.params["k"]) == (unit, text, k)


@pytest.mark.parametrize(
    ("prompt", "sub_items"),
    [
        (("Write about cats. Your response must include bullet points denoted by * and at least one sub-bullet "
          "point denoted by - for each bullet point."), 1),
        ("Use at least three sub-bullets under every bullet point.", 3),
    ],
)
def test_a_minimum_of_sub_items_under_every_item_is_read_whole(prompt: str, sub_items: int) -> None:
    result = extract(prompt)
    assert [(c.kind.value, c.params) for c in result.constraints] == [
        ("structure", {"layout": "nested_list", "sub_items": sub_items, "sub_at_least": True})]
    assert result.unrecognised == ()


def test_an_english_sentence_before_a_chinese_one_is_accounted_on_its_own() -> None:
    result = extract("Write two paragraphs about tea in English. 第二段只写两句话。")
    read = [(c.kind.value, c.params) for c in result.constraints]
    assert ("count", {"unit": "paragraphs", "relation": "exactly", "n": 2}) in read
    assert ("response_language", {"language": "en"}) in read
    assert [s.text for s in result.unrecognised] == ["第二段只写两句话。"]
