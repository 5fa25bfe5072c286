"""PdfParser's helpers: index/contents page detection, text extraction across processes."""

from __future__ import annotations

import os
import time

import pytest

from citadel.adapters.parsers.pdf.extraction import extract_texts, process_count
from citadel.adapters.parsers.pdf.sections import index_like

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
    assert index_like(INDEX_PAGE)
    assert not index_like(PROSE_PAGE)


def test_a_short_page_after_an_index_page_is_its_tail() -> None:
    assert index_like("zeta function, 77", after_index=True)
    assert not index_like("A closing paragraph of ordinary prose, and more of it.", True)


def test_long_lines_without_page_numbers_are_checked_in_linear_time() -> None:
    # Unanchored, the page-reference pattern was quadratic in the line length.
    line = "word, " * 2000 + "end"
    start = time.perf_counter()
    assert not index_like("\n".join([line] * 12))
    assert time.perf_counter() - start < 5.0


class FakePage:
    """A page whose text names it; with ``fail_in_helpers`` it cannot be read in a helper."""

    def __init__(self, index: int, parent: int, fail_in_helpers: bool) -> None:
        self.index, self.parent, self.fail = index, parent, fail_in_helpers

    def extract_text(self) -> str:
        if self.fail and os.getpid() != self.parent:
            raise RuntimeError("a helper's page")
        return f"page {self.index} text\ufb01 \n"


class FakeReader:
    def __init__(self, total: int, fail_in_helpers: bool = False) -> None:
        self.pages = [FakePage(i, os.getpid(), fail_in_helpers) for i in range(total)]


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_pages_come_back_in_order_whatever_the_process_count(processes: int) -> None:
    seen: list[tuple[int, int]] = []
    texts = extract_texts(
        FakeReader(200), 200, lambda done, total: seen.append((done, total)), processes
    )
    assert texts == [f"page {i} textfi" for i in range(200)]
    assert seen[-1] == (200, 200)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_pages_a_helper_could_not_read_are_extracted_here() -> None:
    texts = extract_texts(FakeReader(100, fail_in_helpers=True), 100, None, 2)
    assert texts == [f"page {i} textfi" for i in range(100)]


def test_short_documents_stay_in_one_process() -> None:
    assert process_count(40, 4) == 1
    assert process_count(40, None) == 1
    assert process_count(1000, 1) == 1


class SlowHerePage(FakePage):
    """Slow in this process, instant in a helper; says who extracted it."""

    def extract_text(self) -> str:
        if os.getpid() == self.parent:
            time.sleep(0.01)
            return f"page {self.index} here"
        return f"page {self.index} helper"


def test_helpers_send_the_pages_from_the_end_of_their_range() -> None:
    reader = FakeReader(100)
    reader.pages = [SlowHerePage(i, os.getpid(), False) for i in range(100)]
    texts = extract_texts(reader, 100, None, 2)
    assert [text.rsplit(" ", 1)[0] for text in texts] == [f"page {i}" for i in range(100)]
    assert texts[0] == "page 0 here"
    assert texts[99] == "page 99 helper"
