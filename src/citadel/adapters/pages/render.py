"""PDF pages rendered by pdfium (pypdfium2), a span of their text highlighted.

The text to highlight is what the parser extracted; pdfium's own text of the page
differs in whitespace, hyphenation and ligatures, so both are compared folded
(NFKC, case-folded, letters and digits only). When the whole text is not on the
page (a passage running over a page break), its longest prefix or suffix that is
there is boxed instead. Each line of the match gets one translucent box.

Limits: at most ``max_scale`` times the page's size in points and ``max_pixels``
on the longer side; a page larger than ``max_area_pt`` (a poster, a malformed
box) is refused. pdfium is not safe to call from several threads, so one lock
serialises every call; rendered pages are kept in an LRU cache bounded in bytes.
"""

from __future__ import annotations

import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from citadel.adapters.pages.png import encode_png
from citadel.app.ports.pages import PageImage

if TYPE_CHECKING:  # pdfium loads on the first render, not when the CLI starts
    import pypdfium2 as pdfium

MIN_MATCH = 24
"""Folded characters a partial match needs, so a common word is never boxed alone."""

_TINT = np.array([1.0, 0.86, 0.25], dtype=np.float32)
"""Multiplied into the highlighted pixels: a yellow marker over dark text."""

_CLOSING = ".,;:!?)]\"'’”"
"""Punctuation that may close the highlighted text."""

Box = tuple[float, float, float, float]
"""left, bottom, right, top in PDF points."""


class PdfiumRenderer:
    def __init__(
        self,
        *,
        scale: float = 1.5,
        max_scale: float = 2.0,
        max_pixels: int = 2000,
        max_area_pt: float = 4_000_000.0,
        cache_bytes: int = 32 * 1024 * 1024,
    ) -> None:
        self._scale = min(scale, max_scale)
        self._max_pixels = max_pixels
        self._max_area_pt = max_area_pt
        self._cache_bytes = cache_bytes
        self._cache: OrderedDict[tuple[object, ...], PageImage] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()

    def page_count(self, pdf: Path) -> int:
        with self._lock:
            document = _open(pdf)
            try:
                return len(document)
            finally:
                document.close()

    def render(self, pdf: Path, page: int, highlight: str | None = None) -> PageImage:
        stat = pdf.stat()
        key = (str(pdf), stat.st_mtime_ns, stat.st_size, page, highlight)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
            image = self._render(pdf, page, highlight)
            self._remember(key, image)
            return image

    def _render(self, pdf: Path, page_no: int, highlight: str | None) -> PageImage:
        document = _open(pdf)
        try:
            if not 1 <= page_no <= len(document):
                raise IndexError(f"the PDF has no page {page_no}")
            page = document[page_no - 1]
            width_pt, height_pt = page.get_size()
            if width_pt <= 0 or height_pt <= 0 or width_pt * height_pt > self._max_area_pt:
                raise ValueError(f"page {page_no} is {width_pt:.0f} x {height_pt:.0f} pt")
            scale = min(self._scale, self._max_pixels / max(width_pt, height_pt))
            boxes: list[Box] = []
            if highlight:
                textpage = page.get_textpage()
                boxes = find_boxes(textpage, highlight)
                textpage.close()
            bitmap = page.render(scale=scale, rev_byteorder=True, may_draw_forms=False)
            pixels = np.array(bitmap.to_numpy()[:, :, :3], dtype=np.uint8)
            bitmap.close()
            page.close()
        finally:
            document.close()
        mark(pixels, boxes, scale, height_pt)
        return PageImage(
            encode_png(pixels), int(pixels.shape[1]), int(pixels.shape[0]), bool(boxes)
        )

    def _remember(self, key: tuple[object, ...], image: PageImage) -> None:
        if len(image.png) > self._cache_bytes:
            return
        self._cache[key] = image
        self._cached += len(image.png)
        while self._cached > self._cache_bytes:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old.png)


def _open(pdf: Path) -> pdfium.PdfDocument:
    import pypdfium2 as pdfium  # loaded on first use (see above)

    try:
        return pdfium.PdfDocument(pdf)
    except pdfium.PdfiumError as exc:
        raise ValueError(f"not a readable PDF: {exc}") from None


def fold(text: str) -> tuple[str, list[int]]:
    """``text`` folded for comparison, and each folded character's index in ``text``."""
    out: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        for part in unicodedata.normalize("NFKC", char).casefold():
            if part.isalnum():
                out.append(part)
                where.append(index)
    return "".join(out), where


def locate(haystack: str, needle: str) -> tuple[int, int] | None:
    """``[start, end)`` in folded ``haystack`` of folded ``needle``, or of its longest
    prefix or suffix found there (at least ``MIN_MATCH`` characters)."""
    if not needle:
        return None
    found = haystack.find(needle)
    if found >= 0:
        return found, found + len(needle)
    least = min(MIN_MATCH, len(needle))
    best: tuple[int, int] | None = None
    prefix = _longest(lambda n: haystack.find(needle[:n]), least, len(needle))
    if prefix is not None:
        best = (prefix[0], prefix[0] + prefix[1])
    suffix = _longest(lambda n: haystack.find(needle[len(needle) - n :]), least, len(needle))
    if suffix is not None and (best is None or suffix[1] > best[1] - best[0]):
        best = (suffix[0], suffix[0] + suffix[1])
    return best


def _longest(find: Callable[[int], int], least: int, most: int) -> tuple[int, int] | None:
    """The largest ``n`` in ``[least, most)`` with ``find(n) >= 0`` (found for ``n``
    means found for every smaller ``n``), as (position, n)."""
    if find(least) < 0:
        return None
    low, high = least, most - 1
    while low < high:
        middle = (low + high + 1) // 2
        if find(middle) >= 0:
            low = middle
        else:
            high = middle - 1
    return find(low), low


def find_boxes(textpage: pdfium.PdfTextPage, text: str) -> list[Box]:
    """One box per line of the page's characters that match ``text``."""
    count = textpage.count_chars()
    if count <= 0:
        return []
    page_text = textpage.get_text_range(0, count)
    if len(page_text) != count:  # characters outside the BMP: indices no longer line up
        return []
    haystack, where = fold(page_text)
    needle, _ = fold(text)
    span = locate(haystack, needle)
    if span is None:
        return []
    first, last = where[span[0]], where[span[1] - 1]
    if span[1] == len(needle):
        # Folding dropped the text's closing punctuation ("wide."): box it too.
        closing = len(text.rstrip()) - len(text.rstrip().rstrip(_CLOSING))
        while closing > 0 and last + 1 < count and page_text[last + 1] in _CLOSING:
            last += 1
            closing -= 1
    rects = textpage.count_rects(first, last - first + 1)
    return [tuple(textpage.get_rect(i)) for i in range(rects)]


def mark(
    pixels: npt.NDArray[np.uint8], boxes: Sequence[Box], scale: float, height_pt: float
) -> None:
    """Tint ``boxes`` (PDF points, origin bottom left) on the rendered ``pixels``."""
    rows, cols = int(pixels.shape[0]), int(pixels.shape[1])
    for left, bottom, right, top in boxes:
        x0 = max(int(left * scale) - 2, 0)
        x1 = min(int(right * scale) + 2, cols)
        y0 = max(int((height_pt - top) * scale) - 2, 0)
        y1 = min(int((height_pt - bottom) * scale) + 2, rows)
        if x0 < x1 and y0 < y1:
            area = pixels[y0:y1, x0:x1].astype(np.float32) * _TINT
            pixels[y0:y1, x0:x1] = area.astype(np.uint8)
