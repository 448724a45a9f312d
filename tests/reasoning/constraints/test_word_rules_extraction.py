"""Rules said of every word or of consecutive words: read from English and Chinese wordings onto the form,
wrong older readings gone, near misses left alone, and each form judged by its verifier."""

from __future__ import annotations

from typing import Any

import pytest

from reasoning.constraints.extraction import extract
from reasoning.constraints.form import Count, Filter, Position, Unit, check
from reasoning.constraints.model import Kind, Relation


def _read(prompt: str) -> list[tuple[str, dict[str, Any]]]:
    return [(c.kind.value, c.params) for c in extract(prompt).constraints]


def _none(unit: str = "words", **fields: Any) -> tuple[str, dict[str, Any]]:
    return ("count", {"unit": unit, "relation": "at most", "n": 0, "filter": fields})


_ALPHABET = _none(same_as_previous="alphabet")
_PRIME = _none(length_class="prime", negated=True)
_TITLE = _none(case="lower", stop_words=False)
_OWN_LINE = ("count", {"unit": "words", "relation": "exactly", "n": 1, "per": "lines"})


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Write a poem where each word starts with the next letter of the alphabet.", [_ALPHABET]),
        ("The words must start with consecutive letters of the alphabet, wrapping around after z.", [_ALPHABET]),
        (("Your answer should be a sentence in which every word begins with the letter that follows the previous "
         "word's first letter in the alphabet."), [_ALPHABET]),
        ("Make every word begin with the letter that comes after the first letter of the word before it.",
         [_ALPHABET]),
        ("Every word in your answer must have a prime number of letters.", [_PRIME]),
        ("Only use words with an odd number of letters.", [_none(length_class="odd", negated=True)]),
        ("You may only use the vowels i and o.", [_none("characters", chars="aeuAEU")]),
        ("Do not include any spaces in your response.", [_none("characters", chars=" ")]),
        ("No word can be repeated.", [_none(occurrence=2)]),
        ("Words should not be repeated more than three times.", [_none(occurrence=4)]),
        ("Your story should contain at least four palindromic words.",
         [("count", {"unit": "words", "relation": "at least", "n": 4, "filter": {"palindrome": True}})]),
        ("Begin every paragraph with the letter P.", [_none("paragraphs", starts_with="p", negated=True)]),
        ("The first letter of every sentence must be B.", [_none("sentences", starts_with="b", negated=True)]),
        ("Your response should consist only of words that begin with 'm'.",
         [("position", {"unit": "words", "op": "starts_with", "text": "m", "k": 0})]),
        ("Every important word should be capitalized.", [_TITLE]),
        ("Stick to words whose lengths are even numbers.", [_none(length_class="even", negated=True)]),
        ("The vowels you may use are limited to a and u.", [_none("characters", chars="eioEIO")]),
        ("Give each word its own line.", [_OWN_LINE]),
        ("Make sure no word appears more than once.", [_none(occurrence=2)]),
        ("You cannot use any word three or more times.", [_none(occurrence=3)]),
        ("Ensure that consecutive words follow alphabetical order by their first letters.", [_ALPHABET]),
        ("所有的句子都要以字母S开头。", [_none("sentences", starts_with="s", negated=True)]),
        ("单词不能重复。", [_none(occurrence=2)]),
        ("Use only words whose length is a prime number.", [_PRIME]),
        ("Each word you write has to include the letter r.", [_none(contains="r", negated=True)]),
        ("The only vowel you may use is e.", [_none("characters", chars="aiouAIOU")]),
        ("Use only words whose vowels are a and e.", [_none("characters", chars="iouIOU")]),
        ("Write a sentence using only the vowel 'o'.", [_none("characters", chars="aeiuAEIU")]),
        ("Avoid the letters x and z entirely.", [_none("characters", chars="xzXZ")]),
        ("Do not use any spaces or line breaks.", [_none("characters", chars=" \n")]),
        ("Your answer must contain no whitespace at all.", [_none("characters", chars=" \t\n\r\u3000")]),
        ("回答中不要有任何空白。", [_none("characters", chars=" \t\n\r\u3000")]),
        ("Put each word on its own line.", [_OWN_LINE]),
        ("Every word should be on a separate line.", [_OWN_LINE]),
        ("No word may be used more than twice.", [_none(occurrence=3)]),
        ("Don't use any word more than 3 times.", [_none(occurrence=4)]),
        ("Each word can appear at most once in your response.", [_none(occurrence=2)]),
        ("Capitalize every major word in your answer.", [_TITLE]),
        ("Your answer should be in title case.", [_TITLE]),
        ("Every sentence must start with the letter T.", [_none("sentences", starts_with="t", negated=True)]),
        ("Each line should begin with the letter B.", [_none("lines", starts_with="b", negated=True)]),
        ("Include at least 3 palindromes of at least 5 letters.",
         [("count", {"unit": "words", "relation": "at least", "n": 3, "filter": {"min_length": 5, "palindrome": True}})]),
        ("Your answer must contain two palindromic words of 4 or more letters.",
         [("count", {"unit": "words", "relation": "at least", "n": 2, "filter": {"min_length": 4, "palindrome": True}})]),
        ("每个单词的首字母按字母表顺序依次排列。", [_ALPHABET]),
        ("每个单词的长度必须是质数。", [_PRIME]),
        ("只能使用元音字母a和e。", [_none("characters", chars="iouIOU")]),
        ("回答中不要有任何空格。", [_none("characters", chars=" ")]),
        ("每个单词单独占一行。", [_OWN_LINE]),
        ("每个单词最多使用两次。", [_none(occurrence=3)]),
        ("所有主要单词的首字母都要大写。", [_TITLE]),
        ("每个单词的首字母都要大写。",
         [("position", {"unit": "words", "op": "starts_with", "text": "", "k": 0, "word_class": "capital"})]),
        ("每个单词都以字母s开头。", [("position", {"unit": "words", "op": "starts_with", "text": "s", "k": 0})]),
        ("每句话都以字母A开头。", [_none("sentences", starts_with="a", negated=True)]),
        ("至少包含3个长度不少于5个字母的回文词。",
         [("count", {"unit": "words", "relation": "at least", "n": 3, "filter": {"min_length": 5, "palindrome": True}})]),
    ],
)
def test_every_word_rules_are_read_onto_the_form(prompt: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == expected


@pytest.mark.parametrize(
    ("prompt", "kept"),
    [
        ("List the fruits in alphabetical order.", []),
        ("Write about prime numbers in three sentences.", [("sentence_count", {"relation": "exactly", "n": 3})]),
        ("Use the word 'love' no more than twice.",
         [("keyword_frequency", {"keyword": "love", "relation": "at most", "n": 2})]),
        ("Use at most 60 characters, not counting spaces.",
         [("count", {"unit": "characters", "relation": "at most", "n": 60, "filter": {"nonspace": True}})]),
        ("Avoid the letter e entirely.", [("letter_frequency", {"letter": "e", "relation": "less than", "n": 1})]),
        ("The title should be in title case.", []),
        ("Include at least 3 words that begin with the letter m.",
         [("count", {"unit": "words", "relation": "at least", "n": 3, "filter": {"starts_with": "m"}})]),
        ("The first letter of every sentence must be capitalized.",
         [("position", {"unit": "sentences", "op": "starts_with", "text": "", "k": 0, "word_class": "capital"})]),
        ("No word should repeat back to back.",
         [("count", {"unit": "words", "relation": "at most", "n": 0, "filter": {"same_as_previous": "word"}})]),
    ],
)
def test_near_misses_keep_their_own_reading(prompt: str, kept: list[tuple[str, dict[str, Any]]]) -> None:
    assert _read(prompt) == kept


@pytest.mark.parametrize(
    ("prompt", "wrong"),
    [
        ("Do not use any spaces or line breaks.", Kind.FORBIDDEN_WORDS),
        ("Every fifth word must be in French.", Kind.RESPONSE_LANGUAGE),
        ("Capitalize every major word in your answer.", Kind.ALL_CAPITALS),
        ("每个单词的首字母都要大写。", Kind.ALL_CAPITALS),
        ("每隔三个词用一个法语词。", Kind.WORD_COUNT),
    ],
)
def test_wrong_older_readings_are_gone(prompt: str, wrong: Kind) -> None:
    assert all(c.kind is not wrong for c in extract(prompt).constraints)


def test_a_language_of_every_nth_word_is_reported_unrecognised() -> None:
    result = extract("Every fifth word must be in French.")
    assert not result.constraints
    assert [u.text for u in result.unrecognised] == ["Every fifth word must be in French."]


def test_one_word_per_line_keeps_the_answer_count_whole() -> None:
    found = _read("Write one word per line and use at least 20 words.")
    assert found == [_OWN_LINE, ("word_count", {"relation": "at least", "n": 20})]


def _count(**fields: Any) -> Count:
    return Count(unit=Unit.WORDS, filter=Filter(**fields), relation=Relation.AT_MOST, n=0)


@pytest.mark.parametrize(
    ("form", "good", "bad"),
    [
        (_count(same_as_previous="alphabet"), "Apples bake cleanly; do eat.", "Apples bake nicely."),
        (_count(length_class="prime", negated=True), "The cat sat in my box", "The cats sat"),
        (_count(contains="r", negated=True), "Rare red roses", "Rare red lilies"),
        (_count(occurrence=3), "the cat and the dog", "the cat, the dog, the end"),
        (_count(starts_with="s", negated=True), "Sam sings softly", "Sam sings loudly"),
        (_count(case="lower", stop_words=False), "The Cat in the Hat", "The cat in the Hat"),
        (Count(unit=Unit.WORDS, filter=Filter(palindrome=True, min_length=5), relation=Relation.AT_LEAST, n=2),
         "A racecar at noon, said Hannah.", "A racecar at noon."),
        (Count(unit=Unit.CHARACTERS, filter=Filter(chars=" \n"), relation=Relation.AT_MOST, n=0),
         "NoSpacesHere.", "No spaces"),
        (Count(unit=Unit.SENTENCES, filter=Filter(starts_with="t", negated=True), relation=Relation.AT_MOST, n=0),
         "Trees grow. Time flies.", "Trees grow. Rain falls."),
        (Position(unit=Unit.WORDS, op="starts_with", text="s", k=0), "Sam sings softly.", "Sam sings loudly."),
    ],
)
def test_the_verifier_judges_each_rule(form: Count | Position, good: str, bad: str) -> None:
    assert check(form, good).satisfied
    assert not check(form, bad).satisfied


def test_a_partial_word_is_not_judged_before_it_ends() -> None:
    form = _count(length_class="prime", negated=True)
    assert check(form, "The ca", partial=True).satisfied  # "ca" may still grow to "cat"
    assert not check(form, "The cats ", partial=True).satisfied
