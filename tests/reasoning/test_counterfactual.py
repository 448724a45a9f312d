"""Counterfactual variants are minimal edits that say what they changed."""

from __future__ import annotations

import pytest

from reasoning.counterfactual import negate, shift_date, shift_number, swap_entity, variants

LEXICON = {
    "Cyprus": "Country",
    "Malta": "Country",
    "Acme Ltd": "Company",
    "Globex": "Company",
    "PEP": "Role",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The transfer is suspicious.", "The transfer is not suspicious."),
        ("The transfer is not suspicious.", "The transfer is suspicious."),
        ("Jon Doe cannot be cleared.", "Jon Doe can be cleared."),
        ("The bank must report it.", "The bank must not report it."),
        ("Rates weren't raised.", "Rates were raised."),
        ("该客户是政治公众人物。", "该客户不是政治公众人物。"),
        ("该交易不需要上报。", "该交易需要上报。"),
    ],
)
def test_negation_flips_the_first_site(text: str, expected: str) -> None:
    variant = negate(text)
    assert variant is not None and variant.kind == "negation"
    assert variant.text == expected
    assert variant.text.replace(variant.replacement, variant.original, 1) == text


def test_negation_absent_gives_none() -> None:
    assert negate("Escalate immediately.") is None


def test_entity_swapped_for_a_sibling_of_the_same_class() -> None:
    variant = swap_entity("Acme Ltd sent the money to Cyprus.", LEXICON)
    assert variant is not None
    assert variant.original == "Acme Ltd" and variant.replacement == "Globex"
    assert variant.text == "Globex sent the money to Cyprus."
    assert LEXICON[variant.original] == LEXICON[variant.replacement]


def test_entity_without_sibling_is_not_swapped() -> None:
    assert swap_entity("He is a PEP.", LEXICON) is None


@pytest.mark.parametrize(
    ("text", "original", "replacement"),
    [
        ("The tax rate is 20%.", "20", "30"),
        ("Acme sent EUR 2,000,000.", "2,000,000", "3,000,000"),
        ("It took 9 days.", "9", "10"),
        ("1. The fee is 3.5 percent.", "3.5", "4.5"),
    ],
)
def test_number_shift_raises_the_leading_digit(text: str, original: str, replacement: str) -> None:
    variant = shift_number(text)
    assert variant is not None and variant.kind == "number"
    assert (variant.original, variant.replacement) == (original, replacement)
    assert variant.text == text.replace(original, replacement, 1)


def test_number_shift_leaves_years_and_list_markers() -> None:
    assert shift_number("2. Rules from 2019 apply.") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Updated on 2024-05-11.", "Updated on 2025-05-11."),
        ("In force since 2019.", "In force since 2020."),
    ],
)
def test_date_shift_moves_one_year(text: str, expected: str) -> None:
    variant = shift_date(text)
    assert variant is not None and variant.text == expected


def test_variants_are_distinct_ordered_and_deterministic() -> None:
    text = "Acme Ltd is not allowed to send EUR 2,000,000 to Cyprus before 2020."
    first = variants(text, LEXICON, limit=4)
    assert [v.kind for v in first] == ["negation", "entity", "number", "date"]
    assert len({v.text for v in first}) == 4 and all(v.text != text for v in first)
    assert variants(text, LEXICON, limit=4) == first
    assert len(variants(text, LEXICON, limit=2)) == 2
