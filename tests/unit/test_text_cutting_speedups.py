"""The faster sentence splitter, unit cutter and unit choice give exactly what the old ones
gave: compared with the old code, kept as oracles in ``extractive_oracle`` and
``extractive_choice_oracle``, on generated text and on every chunk of real books.

"Exactly" includes the iteration order of each unit's term set: the choice sums weights
over those sets, and a float sum depends on its order (both run in this process, under
one string-hash seed, so equal construction gives equal order).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.generators.extractive import choice, units
from citadel.adapters.parsers.html.parser import HtmlParser
from citadel.adapters.parsers.pdf import PdfParser
from citadel.domain.chunking import chunk_blocks
from citadel.domain.limits import Limits
from citadel.domain.text import (
    contains_url,
    forbidden_character,
    normalise_passage,
    split_sentences,
)
from citadel.domain.validation import check_display_text
from tests.conftest import BOOKS
from tests.unit import extractive_choice_oracle as old_choice
from tests.unit import extractive_oracle as old

# Characters the splitter and the cutter treat specially, and some that case folding or
# str.splitlines treat specially ("ß" and "ﬁ" grow when folded, "İ" too; \x1c-\x1e, \x85,
# U+2028/U+2029 break lines; \x1f and U+3000 are whitespace that does not).
SPECIAL = ".!?,;:\"'()[]“”‘’…$%>#=+-_/\\{}<|`&*"
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\u2028\u2029\u3000\t "
ODD = "ßİﬁıſKé\u200b\x00\x7f"
ALPHABET = st.sampled_from(
    list("aAbBzZ09") + list(SPECIAL) + list(BREAKS) + list(ODD) + ["\r\n", "  "]
)
WORDS = st.sampled_from(
    [
        "e.g.",
        "i.e.",
        "etc.",
        "Fig.",
        "J.",
        "x.",
        "approx.",
        "Approx.",
        "refs.",
        "abbrev.",
        "The",
        "value",
        "git",
        "$",
        ">>>",
        "...",
        ">",
        "+",
        "postgres=#",
        "(venv)",
        "https://example.org",
        "www.example.org",
        "mailto:x",
        "//cdn",
        "SELECT",
        "x[is.na(x)]",
        "--force",
        "STRASSE",
        "Straße.",
        "ﬁle.",
        "İstanbul.",
        "done.)",
        '"Stop."',
        "it.'",
        "(see Fig. 2.)",
        "xapprox.",
        "(approx.",
        "ab.",
        "Ab.",
        "a.b.",
        "?!",
        "Why?",
        'so..."',
        "more…)",
        "Then.”",
    ]
)
SEPARATORS = st.sampled_from([" ", "  ", "\n", "\n\n", "\t", " \n ", "\r\n", "\u2028", "\x0c"])


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Prose-like, code-like and odd text: words and separators, or raw characters."""
    if draw(st.booleans()):
        return "".join(draw(st.lists(ALPHABET, max_size=80)))
    parts = draw(st.lists(st.tuples(WORDS, SEPARATORS), max_size=40))
    return "".join(word + space for word, space in parts)


def unit_fields(found: Sequence[units.Unit] | Sequence[old.Unit]) -> list[tuple[object, ...]]:
    return [(u.start, u.end, u.text, u.code, tuple(u.terms), u.wording) for u in found]


def assert_same_cutting(text: str) -> None:
    assert split_sentences(text) == old.split_sentences(text), text
    assert unit_fields(units.quotable_units(text)) == unit_fields(old.quotable_units(text)), text


@settings(max_examples=1500, deadline=None)
@given(text=texts())
def test_split_sentences_and_quotable_units_match_the_old_code(text: str) -> None:
    assert_same_cutting(text)


def test_the_oracle_comparison_can_fail() -> None:
    # The comparison sees a difference in spans and in a term set's order alike.
    assert old.split_sentences("One. Two three.") != old.split_sentences("One.Two three.")
    here = unit_fields(units.quotable_units("A sentence of five words here."))
    assert len(here) == 1
    assert here != unit_fields(units.quotable_units("A sentence of five words there."))
    assert split_sentences("See e.g. this. And that.") == [(0, 14), (15, 24)]
    assert split_sentences("Heading\nBody text. Next one.") == [(0, 7), (8, 18), (19, 28)]
    # A stop whose next sentence would start in the next standalone run is no stop.
    assert split_sentences("Foo.)\nBar baz.") == old.split_sentences("Foo.)\nBar baz.")
    assert split_sentences("Foo.)\nBar baz.") == [(0, 5), (6, 14)]
    # A passage that ends trailing off, a closing quote after the ellipsis: no unit.
    trailing = 'This one is quoted whole. Then the value goes on and on so..."'
    assert [u.text for u in units.quotable_units(trailing)] == ["This one is quoted whole."]
    assert_same_cutting(trailing)
    # An abbreviation of the longest length, and a word one longer.
    assert split_sentences("About approx. Ten.") == [(0, 18)]
    assert split_sentences("About xapprox. Ten.") == [(0, 14), (15, 19)]


@settings(max_examples=800, deadline=None)
@given(text=texts())
def test_the_display_checks_match_the_old_code(text: str) -> None:
    def old_forbidden(value: str) -> str | None:
        categories = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}
        return next((c for c in value if c != "\n" and unicodedata.category(c) in categories), None)

    old_url = re.compile(
        r"(?i)(?:\b[a-z][a-z0-9+.\-]{1,31}:/{1,3}\S|\bwww\d{0,3}\.\S|(?<![\w/])//[a-z0-9]"
        r"|\b(?:javascript|vbscript|data|mailto|file|blob)\s*:)"
    )
    assert forbidden_character(text) == old_forbidden(text)
    assert contains_url(text) == (old_url.search(text) is not None)
    old_normalised = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().casefold()
    assert normalise_passage(text) == old_normalised


def test_the_display_checks_still_refuse_what_they_refused() -> None:
    limits = Limits()
    assert forbidden_character("tab\there") == "\t"
    assert forbidden_character("line\nbreak") is None
    assert forbidden_character("zero\u200bwidth") == "\u200b"
    assert contains_url("see WWW.example.org") and contains_url("go to //cdn.example")
    assert not contains_url("a plain sentence without links.")
    assert check_display_text("javascript : alert(1)", limits) is not None
    assert normalise_passage("  A\u3000b\n\nC  ") == "a b c"


QUESTIONS = st.sampled_from(
    [
        "How do I find missing values with is.na?",
        "What does git log show?",
        "How do I create a virtual environment?",
        "Straße value approx.?",
    ]
)


@settings(max_examples=300, deadline=None)
@given(question=QUESTIONS, passages=st.lists(texts(), min_size=1, max_size=5))
def test_the_choice_matches_the_old_code(question: str, passages: list[str]) -> None:
    headings = [f"Section {i}" for i in range(len(passages))]
    limits = Limits()

    def shown(text: str) -> bool:
        return check_display_text(text, limits) is None

    for embedder in (None, HashingEmbedder()):
        new_vectors = choice.VectorCache(embedder) if embedder else None
        old_vectors = old_choice.VectorCache(embedder) if embedder else None
        new = choice.choose(
            question,
            [units.quotable_units(p) for p in passages],
            headings,
            new_vectors,
            shown,
        )
        before = old_choice.choose(
            question,
            [old.quotable_units(p) for p in passages],
            headings,
            old_vectors,
            shown,
        )
        assert [(c.passage, c.unit.start, c.unit.end, c.unit.text) for c in new] == [
            (c.passage, c.unit.start, c.unit.end, c.unit.text) for c in before
        ]


def book_chunks(path: Path) -> list[str]:
    if not path.exists():
        pytest.skip(f"the shared books are not here ({path}); they live in ../shared/books")
    parser = PdfParser() if path.suffix == ".pdf" else HtmlParser()
    document = parser.parse(path, None)
    _, chunks = chunk_blocks(document.blocks, path.stem, 1, tenant="t")
    return [c.text for c in chunks]


@pytest.mark.slow
@pytest.mark.parametrize(
    "book",
    [
        Path("pdf") / "R-intro.pdf",
        Path("html") / "python-3.11-tutorial",
        Path("html") / "git-user-manual" / "user-manual.html",
    ],
)
def test_every_chunk_of_a_real_book_is_cut_as_before(book: Path) -> None:
    chunks = book_chunks(BOOKS / book)
    assert len(chunks) > 100  # R-intro, the tutorial and the git manual have 235-343
    for text in chunks:
        assert_same_cutting(text)
    whole = "\n\n".join(chunks[:60])  # many runs, code and prose in one text
    assert_same_cutting(whole)
