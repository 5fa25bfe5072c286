"""The one rule for whole numbers read from outside (``domain.integers``)."""

from __future__ import annotations

import pytest

from citadel.domain.errors import InvalidValue
from citadel.domain.integers import (
    MAX_INT_DIGITS,
    check_int,
    check_int_literal,
    declared_over,
    parse_int,
)


@pytest.mark.parametrize(("text", "number"), [("1999", 1999), (" -44 ", -44), ("+7", 7)])
def test_decimal_text_in_range_is_its_number(text: str, number: int) -> None:
    assert parse_int(text, low=-9999, high=9999, what="a year") == number


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("10000", "a year must be from -9999 to 9999; 10000 is not"),
        ("19.5", "must be a whole number"),
        ("1e3", "must be a whole number"),
        ("", "must be a whole number"),
        ("0x10", "must be a whole number"),
        ("1" + "0" * 5000, "must be a whole number"),  # past Python's 4,300-digit limit
    ],
)
def test_other_text_is_refused_naming_the_field_and_range(text: str, needle: str) -> None:
    with pytest.raises(InvalidValue) as caught:
        parse_int(text, low=-9999, high=9999, what="a year")
    assert needle in str(caught.value)
    assert len(str(caught.value)) < 200  # a long input is not echoed whole


@pytest.mark.parametrize("value", [True, False, 5.0, "5", None, [5]])
def test_a_parsed_value_must_be_an_int_itself(value: object) -> None:
    with pytest.raises(InvalidValue, match="limit must be a whole number from 1 to 100"):
        check_int(value, low=1, high=100, what="limit")


def test_a_huge_parsed_int_is_refused_by_its_size_not_printed() -> None:
    with pytest.raises(InvalidValue) as caught:
        check_int(10**5000, low=1, high=100, what="limit")
    assert "a number of about 5001 digits" in str(caught.value)


def test_json_integer_literals_have_bounded_length() -> None:
    assert check_int_literal("-" + "9" * MAX_INT_DIGITS) == -int("9" * MAX_INT_DIGITS)
    with pytest.raises(InvalidValue, match="5001 digits is over the 64-digit limit"):
        check_int_literal("1" + "0" * 5000)


@pytest.mark.parametrize(
    ("declared", "over"),
    [
        ("100", False),
        ("101", True),
        (" 0000101 ", True),
        ("1" + "0" * 5000, True),  # too long to convert: over any limit
        ("²", False),  # a digit to str.isdigit, not to int()
        ("٣", False),
        ("-5", False),
        ("", False),
        (None, False),
    ],
)
def test_a_declared_size_is_over_the_limit_only_when_its_digits_say_so(
    declared: str | None, over: bool
) -> None:
    assert declared_over(declared, 100) is over
