"""PdfParser's text-only helpers: index/contents page detection."""

from __future__ import annotations

import time

from citadel.adapters.parsers.pdf import _index_like

INDEX_PAGE = "\n".join(
    [
        "surface, 174, 181",
        "  tangent plane, 12–14",
        "Taylor series . . . . . 203",
        "vector field  vii",
        "wave equation, 88, 90, 101–103",
    ]
    * 3
)
PROSE_PAGE = "\n".join(
    [
        "The derivative of a function, at a point, is the slope of its tangent.",
        "Some aspects of this are allowed to depend on the OS, and do, even down to",
        "the version of the compiler; see chapter 3 for details of each case.",
    ]
    * 5
)


def test_index_and_contents_pages_are_recognised() -> None:
    assert _index_like(INDEX_PAGE)
    assert not _index_like(PROSE_PAGE)


def test_a_short_page_after_an_index_page_is_its_tail() -> None:
    assert _index_like("zeta function, 77", after_index=True)
    assert not _index_like("A closing paragraph of ordinary prose, and more of it.", True)


def test_long_lines_without_page_numbers_are_checked_in_linear_time() -> None:
    # Unanchored, the page-reference pattern was quadratic in the line length.
    line = "word, " * 2000 + "end"
    start = time.perf_counter()
    assert not _index_like("\n".join([line] * 12))
    assert time.perf_counter() - start < 5.0
