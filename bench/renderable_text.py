"""Benchmark: the renderable-text rule over real technical prose, as if a model wrote it.

Every sentence of the shared HTML books (the Python 3.11 tutorial, the Git user
manual, the PostgreSQL 15 manual: text of each page, split by ``split_sentences``) is
checked by the earlier rule (``contains_url`` or ``contains_markup``) and by
``renderable_form``. Printed: sentences, how many each rule refuses, a sample of what
only the new rule refuses (the cost in ordinary prose), and the time per sentence of
``renderable_form`` (p50 and p95 of per-page means). Run:
`.venv/bin/python bench/renderable_text.py [--books DIR] [--sample N]`.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path

import lxml.html

from citadel.domain.markup import contains_markup
from citadel.domain.renderable import renderable_form
from citadel.domain.text import contains_url, split_sentences

BOOKS = ("python-3.11-tutorial", "git-user-manual", "postgresql-15-manual")


def cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def sentences(page: Path) -> list[str]:
    text = lxml.html.fromstring(page.read_bytes()).text_content()
    return [" ".join(text[a:b].split()) for a, b in split_sentences(text) if text[a:b].strip()]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--books", type=Path, default=Path(__file__).parents[1] / "../shared/books/html"
    )
    parser.add_argument("--sample", type=int, default=12)
    args = parser.parse_args()
    print(f"CPU: {cpu()}")
    for book in BOOKS:
        pages = sorted((args.books / book).rglob("*.html"))
        total = old = new = 0
        only_new: list[str] = []
        per_page: list[float] = []
        for page in pages:
            found = sentences(page)
            if not found:
                continue
            started = time.perf_counter()
            forms = [renderable_form(s) for s in found]
            per_page.append((time.perf_counter() - started) / len(found) * 1e6)
            for sentence, form in zip(found, forms, strict=True):
                total += 1
                before = contains_url(sentence) or contains_markup(sentence)
                old += before
                new += form is not None
                if form is not None and not before:
                    only_new.append(sentence)
        p95 = statistics.quantiles(per_page, n=20)[-1] if len(per_page) > 1 else per_page[0]
        print(
            f"{book}: {len(pages)} pages, {total} sentences; refused before {old}"
            f" ({old / total:.2%}), now {new} ({new / total:.2%}); renderable_form"
            f" {statistics.median(per_page):.1f} us/sentence p50, {p95:.1f} us p95 (per page)"
        )
        for sentence in only_new[: args.sample]:
            print(f"    only now: {sentence[:110]!r}")


if __name__ == "__main__":
    main()
