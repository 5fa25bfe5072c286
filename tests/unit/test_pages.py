"""Page rendering and kept originals: the PNG encoder, the folded text search that places
the highlight, the render limits and cache, and the on-disk originals per version."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from citadel.adapters.pages import FileOriginals, PdfiumRenderer
from citadel.adapters.pages.png import encode_png
from citadel.adapters.pages.render import MIN_MATCH, fold, locate
from tests.http.pdf_sample import write_pdf


def decode(png: bytes) -> np.ndarray:
    width, height = struct.unpack(">II", png[16:24])
    (length,) = struct.unpack(">I", png[33:37])
    assert png[37:41] == b"IDAT"
    rows = np.frombuffer(zlib.decompress(png[41 : 41 + length]), np.uint8)
    return rows.reshape(height, width * 3 + 1)[:, 1:].reshape(height, width, 3)


def test_png_round_trips_and_checks_its_crcs() -> None:
    pixels = np.random.default_rng(7).integers(0, 256, (5, 9, 3), dtype=np.uint8)
    png = encode_png(pixels)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png.endswith(b"IEND\xaeB`\x82")
    assert (decode(png) == pixels).all()
    header = png[12:29]
    assert struct.unpack(">I", png[29:33])[0] == zlib.crc32(header)
    with pytest.raises(ValueError, match="height x width x 3"):
        encode_png(np.zeros((2, 2), np.uint8))


def test_folding_ignores_case_spacing_hyphens_and_ligatures() -> None:
    folded, where = fold("Eﬃcient  exam-\nple")
    assert folded == "efficientexample"
    assert where[0] == 0 and where[-1] == len("Eﬃcient  exam-\nple") - 1
    page, _ = fold("Intro. The efficient example runs fast. Then more.")
    needle, _ = fold("the  Eﬃcient exam-\nple runs fast")
    start, end = locate(page, needle) or (0, 0)
    assert page[start:end] == needle


def test_a_passage_over_a_page_break_is_found_by_its_longest_part() -> None:
    page, _ = fold("Earlier text. The passage begins on this page and runs")
    needle, _ = fold("The passage begins on this page and runs over onto the next one entirely")
    found = locate(page, needle)
    assert found is not None and page[found[0] : found[1]] == needle[: found[1] - found[0]]
    assert found[1] == len(page)
    tail, _ = fold("over onto the next one entirely. Then the next section.")
    found = locate(tail, needle)
    assert found is not None and tail[found[0] : found[1]] == fold("overontothenextoneentirely")[0]
    # A short common part is not enough.
    assert locate(fold("the passage")[0], needle) is None
    assert len("thepassage") < MIN_MATCH


def test_rendering_caps_the_size_refuses_bad_pages_and_caches(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "a.pdf", [["One", "first page text"], ["Two", "second page"]])
    small = PdfiumRenderer(scale=2.0, max_pixels=400)
    image = small.render(pdf, 1)
    assert max(image.width, image.height) <= 400 and not image.highlighted
    assert decode(image.png).shape == (image.height, image.width, 3)
    capped = PdfiumRenderer(scale=5.0, max_scale=2.0, max_pixels=10_000).render(pdf, 1)
    assert capped.width == round(612 * 2.0)
    found = small.render(pdf, 2, "Two second page")
    assert found.highlighted and small.render(pdf, 2, "Two second page") is found
    assert not small.render(pdf, 2, "words that are not on this page at all").highlighted
    with pytest.raises(IndexError):
        small.render(pdf, 3)
    with pytest.raises(IndexError):
        small.render(pdf, 0)
    assert small.page_count(pdf) == 2
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(ValueError, match="not a readable PDF"):
        small.page_count(junk)
    with pytest.raises(ValueError, match="612 x 792 pt"):
        PdfiumRenderer(max_area_pt=1000.0).render(pdf, 1)


def test_the_cache_is_bounded_in_bytes(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "a.pdf", [["One", "text"], ["Two", "text"], ["Three", "x"]])
    size = len(PdfiumRenderer().render(pdf, 1).png)
    renderer = PdfiumRenderer(cache_bytes=int(size * 2.5))
    first = renderer.render(pdf, 1)
    renderer.render(pdf, 2)
    renderer.render(pdf, 3)
    assert renderer.render(pdf, 3) is renderer.render(pdf, 3)
    assert renderer.render(pdf, 1) is not first  # evicted, rendered again


def test_originals_are_kept_per_version_and_pruned(tmp_path: Path) -> None:
    store = FileOriginals(tmp_path / "originals")
    file = tmp_path / "book.pdf"
    file.write_bytes(b"%PDF-1 one")
    store.keep("t", "s1", 1, file, [1])
    file.write_bytes(b"%PDF-1 two")
    store.keep("t", "s1", 2, file, [2])
    assert store.find("t", "s1", 1) is None  # past retention
    kept = store.find("t", "s1", 2)
    assert kept is not None and kept.read_bytes() == b"%PDF-1 two"
    assert "s1" not in kept.relative_to(tmp_path).as_posix()  # ids stay out of paths
    assert store.find("other", "s1", 2) is None
    assert not list(kept.parent.glob(".incoming-*"))
    store.forget("t", "s1")
    assert store.find("t", "s1", 2) is None
