"""C0 control characters in a PDF's text (no font draws them: empty boxes in the
evidence list and the viewer) are gone from what is indexed; line breaks stay."""

from __future__ import annotations

import re
from pathlib import Path

from citadel.adapters.parsers.pdf import PdfParser
from citadel.adapters.parsers.pdf.extraction import strip_controls
from tests.http.pdf_sample import write_pdf

CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def test_vertical_tab_and_form_feed_end_a_line_and_other_controls_go() -> None:
    assert strip_controls("one\x0btwo\x0cthree") == "one\ntwo\nthree"
    assert strip_controls("a\r\nb\rc") == "a\nb\nc"
    assert strip_controls("back\bspace, bell\x07, nul\x00, del\x7f") == "backspace, bell, nul, del"
    assert strip_controls("tab\tand\nnewline stay") == "tab\tand\nnewline stay"


def test_a_pdf_with_control_characters_is_indexed_without_them(tmp_path: Path) -> None:
    path = write_pdf(
        tmp_path / "controls.pdf",
        [["Retry budgets\x0bcap the attempts", "a client\x08 makes, so\x07 failures stay bounded"]],
    )
    document = PdfParser().parse(path)
    text = "\n".join(block.text for block in document.blocks)
    assert "Retry budgets" in text and "cap the attempts" in text
    assert "a client makes, so failures stay bounded" in text
    assert not CONTROLS.search(text), repr(text)
