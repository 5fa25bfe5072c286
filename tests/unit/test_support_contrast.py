"""The two contrasts the entailment checker's layer reads (``domain/support_contrast.py``)."""

from __future__ import annotations

import pytest

from citadel.domain.support_contrast import (
    CONTRAST_NAMES,
    OPPOSITES,
    antonym_conflict,
    contrast_features,
    identifiers_missing,
)

PASSAGE = (
    "Use git log --oneline to see one line per commit. "
    "The read.table() function reads a file into a data frame; header defaults to FALSE."
)


@pytest.mark.parametrize(
    ("segment", "missing"),
    [
        ("git log --oneline prints one line per commit.", 0),  # the flag is in the passage
        ("git log --graph prints one line per commit.", 1),  # a flag it never writes
        ("Use read.csv() to read the file.", 1),  # a call it never writes
        ("read.table( reads a file.", 0),
        ("Set stringsAsFactors to keep text.", 1),  # camelCase
        ("The max_rows option limits it.", 1),  # snake_case
        ("Run `git gc` first.", 1),  # a back-quoted span
        ("A well-known rule: 1.5 times the size.", 0),  # hyphenated words and decimals are not code
    ],
)
def test_identifiers_the_passage_never_writes_are_counted(segment: str, missing: int) -> None:
    assert identifiers_missing(segment, PASSAGE) == missing


def test_each_identifier_counts_once() -> None:
    assert identifiers_missing("--graph and --graph and --stat", PASSAGE) == 2


@pytest.mark.parametrize(
    ("segment", "passage", "conflict"),
    [
        ("The option is enabled by default.", "The option is disabled by default.", True),
        ("Rows are sorted in descending order.", "Rows are sorted in ascending order.", True),
        # the passage uses both words: saying one of them contradicts nothing
        ("The first line wins.", "The first line and the last line are read.", False),
        ("The option is enabled by default.", "The option is enabled by default.", False),
        ("Nothing opposite here.", "The option is disabled.", False),
    ],
)
def test_a_word_whose_opposite_the_passage_uses_conflicts(
    segment: str, passage: str, conflict: bool
) -> None:
    assert antonym_conflict(segment, passage) is conflict


def test_opposites_are_symmetric() -> None:
    for word, others in OPPOSITES.items():
        assert all(word in OPPOSITES[other] for other in others)


def test_the_values_follow_the_names() -> None:
    values = contrast_features("The --graph flag is enabled.", "The flag is disabled.")
    assert len(values) == len(CONTRAST_NAMES)
    assert dict(zip(CONTRAST_NAMES, values, strict=True)) == {
        "identifiers_missing": 1.0,
        "antonym_conflict": 1.0,
    }
