"""The support checker's quick forms give what the rules they stand for give.

The latency work (issue 14's 5 ms budget) replaced loops over characters, repeated
tokenisation and a quadratic LCS by quicker equivalents; each is held here to the
plain rule on generated text, and ``test_support_reference.py`` holds the whole
checker to its earlier outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citadel.adapters.support import StaticTokens
from citadel.adapters.support.static_tokens import MAX_PIECES
from citadel.domain import quotation
from citadel.domain import support_features as sf
from citadel.domain.text import split_sentences, terms, words

# Letters (with case-folding traps: dotted capital I, sharp s, a ligature, Greek sigma),
# digits, word joiners, sentence punctuation, quotes, brackets, backticks and many kinds
# of whitespace, including the separators str.isspace knows and tokenizers may not.
ALPHABET = (
    "abcAZ09 .,;:!?'-\"()[]`\t\n\r\x0b\x0c\x1c\x1f\x85\u00a0\u2003\u2028"
    "\u00e9\u0130\u00df\u03a3\u03c3\ufb01\u2019\u201c\u2014\u00b1\u03b2\u4e2d"
)
TEXT = st.text(alphabet=ALPHABET, max_size=80)
ASCII = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=80)
WORDS = st.sampled_from(
    ["cell", "cells", "The", "not", "isn't", "Increased", "x-ray", "2019", "5mg", "CLS", "SEP"]
)
PROSE = st.lists(st.one_of(WORDS, st.sampled_from([" ", ". ", "\n", "  ", ", ", '." ', "e.g. "])))


def lcs_by_table(a: list[str], b: list[str], limit: int = 48) -> int:
    a, b = a[:limit], b[:limit]
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@given(
    st.lists(st.sampled_from("abcde"), max_size=60),
    st.lists(st.sampled_from("abcdef"), max_size=60),
)
def test_the_bit_parallel_lcs_is_the_table_one(a: list[str], b: list[str]) -> None:
    assert sf._lcs(a, b) == lcs_by_table(a, b)


# Words joined by hyphens and apostrophes, and joiners loose at a word's edge or doubled:
# the quick word split must hand the loose ones to the pattern.
JOINED = st.text(alphabet="aZ09-' .,\t_", max_size=30)


@given(st.one_of(TEXT, ASCII, PROSE.map("".join), JOINED))
def test_quick_words_and_terms_are_the_text_rules(text: str) -> None:
    assert sf._words(text) == words(text)
    assert sf._terms(text) == terms(text)
    assert sf._terms(text) == terms(text)  # memoised the second time


@given(st.one_of(TEXT, ASCII))
def test_the_quick_fold_is_the_offset_keeping_one(text: str) -> None:
    assert quotation.folded_text(text) == quotation.fold(text).text


def quotation_by_fold(segment: str, passage: str) -> tuple[int, int] | None:
    needle = quotation.fold(segment).text
    haystack = quotation.fold(passage)
    at = haystack.text.find(needle) if needle else -1
    return None if at < 0 else (haystack.starts[at], haystack.ends[at + len(needle) - 1])


@given(st.one_of(TEXT, ASCII, PROSE.map("".join)), st.data())
def test_a_quotation_span_is_the_one_fold_gives(passage: str, data: st.DataObject) -> None:
    sf.clear_passage_caches()
    start = data.draw(st.integers(0, len(passage)))
    end = data.draw(st.integers(start, len(passage)))
    for segment in (passage[start:end], " ".join(passage[start:end].split()), "cell"):
        assert quotation.find_quotation(segment, passage) == quotation_by_fold(segment, passage)
        assert quotation.find_quotation(segment, passage) == quotation_by_fold(segment, passage)


@given(st.one_of(TEXT, PROSE.map("".join)))
def test_a_passage_view_is_its_sentences_terms(passage: str) -> None:
    sf.clear_passage_caches()
    view = sf.passage_view(passage)
    sentences = tuple(passage[a:b] for a, b in split_sentences(passage)) or (passage,)
    assert view.sentences == sentences
    assert view.sentence_terms == tuple(tuple(terms(x)) for x in sentences)
    assert view.term_count == sum(len(terms(x)) for x in sentences)
    assert sf._passage_words(passage) == frozenset(words(passage))
    assert view.folded == quotation.fold(passage).text.casefold()


def test_sentences_sharing_as_much_keep_their_order() -> None:
    passage = "Alpha beta gamma. Delta beta alpha. Gamma delta beta."
    view = sf.passage_view(passage)
    assert sf._ranked({"alpha", "beta"}, view)[:2] == [0, 1]
    assert sf._ranked({"delta"}, view) == [1, 2, 0]


@pytest.fixture(scope="module")
def tokens() -> StaticTokens:
    return StaticTokens()


@settings(max_examples=150, deadline=None)
@given(st.one_of(TEXT, ASCII, PROSE.map("".join), st.just("a [CLS] b [SEP] [cls]")))
def test_word_pieces_are_the_tokenizers(tokens: StaticTokens, text: str) -> None:
    tokenizer, codes, scales = tokens._ensure()
    expected = tokenizer.encode_batch_fast([text], add_special_tokens=False)[0].ids
    assert tokens.ids([text]) == [expected]
    ids = np.asarray(expected[:MAX_PIECES], dtype=np.int64)
    assert tokens._skip is not None
    kept = ids[~tokens._skip[ids]]
    rows64 = codes[kept].astype(np.float64) * scales[kept].astype(np.float64)
    rows64 /= np.maximum(np.linalg.norm(rows64, axis=1, keepdims=True), 1e-9)
    rows = rows64.astype(np.float32)
    (got,) = tokens.pieces([text])
    assert np.array_equal(got, rows)  # to the bit


def test_a_long_text_is_cut_at_the_pieces_limit(tokens: StaticTokens) -> None:
    text = "Cells, x-rays and 5 mg of aspirin. " * 60
    tokenizer, _, _ = tokens._ensure()
    expected = tokenizer.encode(text, add_special_tokens=False).ids[:MAX_PIECES]
    assert tokens._skip is not None
    assert tokens._content_ids(text) == [i for i in expected if not tokens._skip[i]]
