"""How long the viewer takes to render a cited PDF page: p50/p95 per page image.

Renders pages of ``../shared/books/pdf/R-intro.pdf`` the way the page-image route
does (``PdfiumRenderer``: scale 1.5, <= 2000 px, the passage highlighted), each
with a renderer whose cache is off (cold: open, search the text, rasterise, tint,
encode the PNG), then again with the cache on (a reload of the same image). The
passage to highlight on each page is a line pdfium reads from that page, so the
search always succeeds. Also times the PNG encoding alone, prints the CPU, and
counts how many of the book's chunks (as citadel's parser and chunker cut them)
the highlight search finds on their first page: the figure that says whether
real citations get a box.

    .venv/bin/python bench/page_render.py [--book PATH] [--pages 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium

from citadel.adapters.pages import PdfiumRenderer
from citadel.adapters.pages.png import encode_png
from citadel.adapters.pages.render import find_boxes
from citadel.adapters.parsers.pdf import PdfParser
from citadel.domain.chunking import ChunkingPolicy, chunk_blocks

BOOK = Path(__file__).resolve().parents[1] / ".." / "shared" / "books" / "pdf" / "R-intro.pdf"


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def passages(book: Path, pages: list[int]) -> dict[int, str]:
    """A line of at least 40 characters from each page, as pdfium reads it."""
    out: dict[int, str] = {}
    document = pdfium.PdfDocument(book)
    for number in pages:
        textpage = document[number - 1].get_textpage()
        lines = [x for x in textpage.get_text_range().splitlines() if len(x.strip()) >= 40]
        out[number] = lines[len(lines) // 2] if lines else ""
    document.close()
    return out


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--book", type=Path, default=BOOK)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    book = args.book.resolve()
    count = PdfiumRenderer().page_count(book)
    step = max(count // args.pages, 1)
    pages = list(range(1, count + 1, step))[: args.pages]
    text = passages(book, pages)
    print(f"{cpu()}; {book.name}, {count} pages; {len(pages)} pages x {args.rounds} rounds")
    cold: list[float] = []
    plain: list[float] = []
    found = 0
    sizes: list[int] = []
    for _ in range(args.rounds):
        for number in pages:
            renderer = PdfiumRenderer(cache_bytes=0)
            started = time.perf_counter()
            image = renderer.render(book, number, text[number] or None)
            cold.append(time.perf_counter() - started)
            found += image.highlighted
            sizes.append(len(image.png))
            started = time.perf_counter()
            renderer.render(book, number)
            plain.append(time.perf_counter() - started)
    warm = PdfiumRenderer()
    cached: list[float] = []
    for number in pages:
        warm.render(book, number, text[number] or None)
        started = time.perf_counter()
        warm.render(book, number, text[number] or None)
        cached.append(time.perf_counter() - started)
    pixels = np.full((1188, 918, 3), 255, np.uint8)
    pixels[::7, :, :] = 0
    encode: list[float] = []
    for _ in range(20):
        started = time.perf_counter()
        encode_png(pixels)
        encode.append(time.perf_counter() - started)
    print(f"highlighted, no cache: {percentiles(cold)} ({found}/{len(cold)} highlights found)")
    print(f"plain, no cache:       {percentiles(plain)}")
    print(f"cached (a reload):     {percentiles(cached)}")
    print(f"PNG encode 918x1188:   {percentiles(encode)}")
    print(f"PNG size: median {statistics.median(sizes) / 1024:.0f} KiB")
    _, chunks = chunk_blocks(
        PdfParser().parse(book).blocks, "bench", 1, ChunkingPolicy(), tenant="bench"
    )
    document = pdfium.PdfDocument(book)
    located = 0
    paged = [c for c in chunks if c.page_start]
    for chunk in paged:
        assert chunk.page_start is not None
        textpage = document[chunk.page_start - 1].get_textpage()
        located += bool(find_boxes(textpage, chunk.text))
    print(f"chunks boxed on their first page: {located}/{len(paged)}")


if __name__ == "__main__":
    main()
