"""The support check's pure features: quotation spans and the pair features."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from citadel.domain.quotation import find_quotation, fold, folded_text, same_modulo_whitespace
from citadel.domain.support_features import (
    FEATURE_NAMES,
    lexical_features,
    numbers,
    numbers_missing,
)

_SPACE = re.compile(r"\s+")
WHITESPACE = st.text(alphabet=" \t\n\r\u00a0\u2003", min_size=1, max_size=3)
WORD = st.text(alphabet="abcXYZ019.,'\u2019\u2014-\ufb01é", min_size=1, max_size=6)


def squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@st.composite
def quoted(draw: st.DrawFn) -> tuple[str, str]:
    """A passage of words and whitespace runs, and a run of its words re-spaced."""
    words = draw(st.lists(WORD, min_size=1, max_size=12))
    gaps = draw(st.lists(WHITESPACE, min_size=len(words) + 1, max_size=len(words) + 1))
    passage = "".join(g + w for g, w in zip(gaps, words, strict=False)) + gaps[-1]
    start = draw(st.integers(0, len(words) - 1))
    end = draw(st.integers(start + 1, len(words)))
    spacing = draw(st.lists(WHITESPACE, min_size=len(words), max_size=len(words)))
    segment = "".join(w + s for w, s in zip(words[start:end], spacing, strict=False))
    return segment, passage


@given(quoted())
def test_a_quotation_is_found_and_its_span_is_the_segment_modulo_whitespace(
    pair: tuple[str, str],
) -> None:
    segment, passage = pair
    span = find_quotation(segment, passage)
    assert span is not None
    start, end = span
    assert 0 <= start < end <= len(passage)
    assert same_modulo_whitespace(passage[start:end], segment)
    assert not passage[start].isspace() and not passage[end - 1].isspace()


@given(st.text(max_size=40))
def test_the_quick_fold_agrees_with_the_offset_keeping_one(text: str) -> None:
    assert folded_text(text) == fold(text).text


@given(st.text(max_size=30))
def test_fold_maps_every_character_back_into_the_original(text: str) -> None:
    folded = fold(text)
    assert len(folded.starts) == len(folded.ends) == len(folded.text)
    assert all(0 <= a < b <= len(text) for a, b in zip(folded.starts, folded.ends, strict=True))


def test_the_span_points_into_the_original_passage() -> None:
    passage = "Intro.  The   quick\n\tbrown fox — it jumps.  End."
    span = find_quotation("The quick brown fox - it jumps.", passage)
    assert span is not None
    assert passage[span[0] : span[1]] == "The   quick\n\tbrown fox — it jumps."


def test_typographic_quotes_ligatures_and_case() -> None:
    passage = "He said \u201cno\u201d to the \ufb01rst of them."
    assert find_quotation('said "no" to the first', passage) is not None
    assert find_quotation("SAID", passage) is None
    assert find_quotation("said yes", passage) is None
    assert find_quotation("   ", passage) is None


def test_numbers_carry_their_units() -> None:
    assert numbers("It took 5 mg, then 12.5% and 1,000 cells in 2019.") == {
        "5mg",
        "12.5%",
        "1000",
        "2019",
    }
    assert numbers_missing("It was 7 mg.", "It was 5 mg per day.")
    assert not numbers_missing("It was 5 mg.", "It was 5 mg per day.")


def test_features_see_coverage_negation_and_direction() -> None:
    passage = "Aspirin reduces the risk of stroke in adults. Dosage was 75 mg."
    names = list(FEATURE_NAMES)
    same = dict(zip(names, lexical_features("Aspirin reduces stroke risk.", passage), strict=True))
    other = dict(zip(names, lexical_features("Quantum gravity is unsolved.", passage), strict=True))
    negated = dict(
        zip(names, lexical_features("Aspirin does not reduce stroke risk.", passage), strict=True)
    )
    flipped = dict(
        zip(names, lexical_features("Aspirin increases stroke risk.", passage), strict=True)
    )
    assert len(same) == len(FEATURE_NAMES)
    assert same["coverage"] == 1.0 and other["coverage"] == 0.0
    assert negated["negation_mismatch"] == 1.0 and same["negation_mismatch"] == 0.0
    assert flipped["direction_conflict"] == 1.0 and same["direction_conflict"] == 0.0
    numbered = dict(zip(names, lexical_features("Dosage was 80 mg.", passage), strict=True))
    assert numbered["numbers_missing"] == 1.0 and same["numbers_missing"] == 0.0
