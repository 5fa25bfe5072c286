"""A damaged PDF: pypdf's own warnings never reach the user; citadel says what it found.

The files are real PDFs written by the test and then damaged (cut short, or with
a wrong cross-reference pointer, which pypdf repairs while it reads)."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.parsers.pdf import PdfParser
from citadel.app.errors import ParseError
from tests.http.pdf_sample import write_pdf

PAGES = [
    ["Retry budgets cap the attempts a client makes", "so failures stay bounded"],
    ["Circuit breakers open after repeated failures", "and shed load until recovery"],
]


def _good(tmp_path: Path) -> Path:
    return write_pdf(tmp_path / "good.pdf", PAGES)


def _repaired(tmp_path: Path) -> Path:
    data = _good(tmp_path).read_bytes()
    path = tmp_path / "repaired.pdf"
    path.write_bytes(re.sub(rb"startxref\s+\d+", b"startxref\n999", data))
    return path


class Seen(logging.Handler):
    """What reaches the root logger's handlers (the terminal's, in the CLI). pytest's
    caplog cannot tell: it attaches its handlers to non-propagating loggers too."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def of(self, name: str) -> list[str]:
        return [r.getMessage() for r in self.records if r.name.split(".")[0] == name]


@pytest.fixture
def seen() -> Iterator[Seen]:
    handler = Seen()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def test_a_pdf_cut_short_is_refused_in_citadels_words(tmp_path: Path, seen: Seen) -> None:
    data = _good(tmp_path).read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) * 3 // 4])
    with pytest.raises(ParseError) as refused:
        PdfParser().parse(cut)
    assert refused.value.reason == "corrupt"
    assert str(refused.value) == "the PDF is damaged and cannot be read: it looks cut short"
    assert seen.of("pypdf") == []  # "EOF marker not found" stays out of sight


def test_a_repaired_pdf_is_read_with_one_warning_in_citadels_words(
    tmp_path: Path, seen: Seen
) -> None:
    document = PdfParser().parse(_repaired(tmp_path))
    assert "Retry budgets" in " ".join(b.text for b in document.blocks)
    assert seen.of("pypdf") == []  # "incorrect startxref pointer(3)", for one
    (note,) = document.warnings
    assert note.startswith("the PDF is damaged (its structure is broken) and was read with")
    assert "some of its text may be missing" in note
    assert seen.of("citadel") == [f"repaired.pdf: {note}"]


def test_a_sound_pdf_has_no_warnings(tmp_path: Path) -> None:
    assert PdfParser().parse(_good(tmp_path)).warnings == ()


def test_pypdf_warnings_outside_a_parse_pass_on_while_another_thread_parses(
    tmp_path: Path, seen: Seen
) -> None:
    repaired = _repaired(tmp_path)
    good = _good(tmp_path)
    results: dict[str, tuple[str, ...]] = {}

    def parse(name: str, path: Path) -> None:
        for _ in range(5):
            results[name] = PdfParser().parse(path).warnings

    threads = [
        threading.Thread(target=parse, args=("repaired", repaired)),
        threading.Thread(target=parse, args=("good", good)),
    ]
    for thread in threads:
        thread.start()
    for _ in range(20):
        logging.getLogger("pypdf._reader").warning("a warning of no parse")
    for thread in threads:
        thread.join()
    assert len(results["repaired"]) == 1
    assert results["good"] == ()  # the other thread's repairs are not this parse's
    assert seen.of("pypdf") == ["a warning of no parse"] * 20
