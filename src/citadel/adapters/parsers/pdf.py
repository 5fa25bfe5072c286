"""PDF via pypdf: outline for sections, /PageLabels for printed page labels.

Every page's text is split at the outline headings that land on it (found by
their titles in the page text), so a section that starts mid-page gets the
text after its heading, and the text before it stays with the previous one.
Pages before the first outline entry, and pages under contents/index/list
entries, are front or back matter and are not indexed.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import signal
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import NoReturn

from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import Block, ParsedDocument

_SKIP_TITLES = re.compile(
    r"^\s*(?:[A-Z]|\d+|[IVX]+)?[.:]?\s*(?:"
    r"(?:table of )?contents"
    r"|(?:general |subject |function and variable |concept |author |name )?index"
    r"|list of (?:figures|tables|listings|algorithms)"
    r"|title page|copyright"
    r")\s*$",
    re.I,
)
# An index or contents page: most lines end in page numbers ("surface, 174, 181").
# Used with ``match`` on one line: anchored at the line's first non-space, the
# lazy ``.*?`` is tried once per position instead of once per start position,
# which made an unanchored ``search`` quadratic in the line length (~2 s on an
# 800-page book); for a single line the two accept exactly the same lines.
_PAGE_REFERENCE_LINE = re.compile(
    r"\s*\S.*?(?:,|(?:\s*\.){2,}|\s{2,})\s*(?:\d+|[ivxlc]+)(?:[–-]\d+)?(?:,\s*\d+(?:[–-]\d+)?)*\s*$",
    re.I,
)
_SPACE = re.compile(r"\s+")
# Fewer pages than this per process and a forked helper costs more than it saves.
_MIN_PAGES_PER_PROCESS = 32
_MAX_PROCESSES = 4


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    depth: int
    title: str
    page: int  # 0-based physical index


class PdfParser:
    name = "pdf/1"

    def __init__(self, *, max_pages: int = 5000, processes: int | None = None) -> None:
        """``processes`` caps the text-extraction processes (default: one per usable core)."""
        self._max_pages = max_pages
        self._processes = processes

    def accepts(self, path: Path) -> bool:
        if not path.is_file():
            return False
        if path.suffix.lower() == ".pdf":
            return True
        with path.open("rb") as handle:
            return handle.read(5) == b"%PDF-"

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError, PyPdfError

        try:
            reader = PdfReader(path, strict=False)
            if reader.is_encrypted:
                raise ParseError("encrypted", "the PDF is encrypted; decrypt it before ingesting")
            total = len(reader.pages)
            if total > self._max_pages:
                raise ParseError(
                    "too_many_pages", f"{total} pages is over the {self._max_pages} limit"
                )
            labels = _labels(reader, total)
            outline = _outline(reader)
            texts = _extract_texts(reader, total, progress, self._processes)
            meta: object = reader.metadata or {}
        except ParseError:
            raise
        except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ParseError("corrupt", f"the PDF cannot be read: {exc}") from exc
        except RecursionError as exc:
            raise ParseError("corrupt", "the PDF's structure is too deeply nested") from exc
        title = _meta(meta, "/Title") or _first_line(texts)
        author = _meta(meta, "/Author")
        if not outline:
            outline = outline_from_text(texts, labels)
        texts = [
            _strip_running_lines(text, label) for text, label in zip(texts, labels, strict=True)
        ]
        blocks, skipped = _blocks(texts, labels, outline)
        return ParsedDocument(
            title=title,
            blocks=tuple(blocks),
            parser=self.name,
            authors=(author,) if author else (),
            year=_year(_meta(meta, "/CreationDate")),
            page_count=total,
            skipped_pages=tuple(skipped),
        )


def _extract_texts(
    reader: object, total: int, progress: ProgressCallback | None, processes: int | None = None
) -> list[str]:
    """Page texts in order, extracted by this process and, for long documents, forked helpers.

    Text extraction is pure Python and CPU-bound, so more cores need more
    processes. The helpers are forked after the reader has loaded the page
    tree and its object streams, so none of them re-reads the file (spawned
    workers that each opened their own reader measured slower than one
    process). Each helper owns a contiguous range of pages and works through
    it from the end, sending every page's text as soon as it has it; this
    process goes through all pages from the start and extracts each one no
    helper has sent yet. The two meet in the middle whatever the pages cost,
    and this process never waits: a helper that dies or stalls only leaves
    it more pages to do.
    """
    pages = reader.pages  # type: ignore[attr-defined]
    texts: list[str | None] = [None] * total
    count = _process_count(total, processes)
    helpers: list[tuple[int, Connection]] = []
    # Frozen objects are left alone by the collector, so neither side of the
    # fork copies the reader's memory pages just to scan them (minor
    # page faults, measured 20k -> 7k per process on derivations.pdf).
    freeze = count > 1 and gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        if count > 1:
            helpers = _fork_helpers(pages, total, count)
        done = 0
        for index in range(total):
            done += _receive(helpers, texts)
            if texts[index] is None:
                texts[index] = _page_text(pages[index])
                done += 1
            if progress:
                progress(done, total)
    finally:
        _stop(helpers)
        if freeze:
            gc.unfreeze()
    return [text or "" for text in texts]


def _page_text(page: object) -> str:
    return _clean(page.extract_text() or "")  # type: ignore[attr-defined]


def _process_count(total: int, processes: int | None) -> int:
    """How many processes extract text: one per usable core, each with enough pages."""
    if not hasattr(os, "fork") or sys.platform == "darwin":
        return 1  # no fork, or one that is unsafe once system frameworks are loaded
    if processes is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        processes = min(cores or os.cpu_count() or 1, _MAX_PROCESSES)
    return max(1, min(processes, total // _MIN_PAGES_PER_PROCESS))


def _fork_helpers(pages: Sequence[object], total: int, count: int) -> list[tuple[int, Connection]]:
    """Fork ``count - 1`` helpers, the k-th owning the k-th of ``count`` equal page ranges."""
    helpers: list[tuple[int, Connection]] = []
    bounds = [total * k // count for k in range(count + 1)]
    for k in range(1, count):
        receiver, sender = Pipe(duplex=False)
        try:
            with warnings.catch_warnings():
                # Python 3.12+ warns when forking with threads running (a progress
                # bar's); the helper only runs pypdf and writes to its own pipe.
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:
            receiver.close()
            sender.close()
            break  # this process extracts the helper's pages itself
        if pid == 0:
            receiver.close()
            for _, other in helpers:
                other.close()
            _helper(pages, range(bounds[k + 1] - 1, bounds[k] - 1, -1), sender)
        sender.close()
        helpers.append((pid, receiver))
    return helpers


def _helper(pages: Sequence[object], order: range, sender: Connection) -> NoReturn:
    """A forked helper's whole life: extract and send its pages, then exit without cleanup."""
    code = 1
    try:
        # Never touch the parent's terminal, pipes or log handlers (another
        # thread may have held their locks at the fork); pypdf's warnings for
        # these pages are dropped.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        logging.disable(logging.CRITICAL)
        warnings.simplefilter("ignore")
        for index in order:
            sender.send((index, _page_text(pages[index])))
        code = 0
    finally:
        os._exit(code)  # on any error too: the parent extracts whatever is missing


def _receive(helpers: Sequence[tuple[int, Connection]], texts: list[str | None]) -> int:
    """Store the page texts helpers have sent so far; how many were new."""
    new = 0
    for _, receiver in helpers:
        try:
            while not receiver.closed and receiver.poll():
                index, text = receiver.recv()
                if texts[index] is None:
                    texts[index] = text
                    new += 1
        except (EOFError, OSError):
            receiver.close()  # the helper has finished or died
    return new


def _stop(helpers: Sequence[tuple[int, Connection]]) -> None:
    """End and reap the helpers; any still running only have pages already done."""
    for pid, receiver in helpers:
        receiver.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _strip_running_lines(text: str, label: str) -> str:
    """Drop a running head or foot: a short first/last line that carries the page's label."""
    lines = text.split("\n")
    token = re.escape(label)
    running = re.compile(rf"^\s*(?:{token}\b.{{0,80}}|.{{0,80}}\b{token})\s*$")
    if lines and len(lines[0]) <= 90 and running.match(lines[0]):
        lines = lines[1:]
    if lines and len(lines[-1]) <= 90 and running.match(lines[-1]):
        lines = lines[:-1]
    return "\n".join(lines).strip()


def _index_like(text: str, after_index: bool = False) -> bool:
    """An index or contents page; a short page right after one (its tail) counts too."""
    lines = [line for line in text.splitlines() if line.strip()]
    hits = sum(1 for line in lines if _PAGE_REFERENCE_LINE.match(line))
    if len(lines) >= 12:
        return hits / len(lines) >= 0.6
    if after_index:
        return len(" ".join(lines).split()) <= 4 or hits / max(len(lines), 1) >= 0.5
    return False


def _meta(meta: object, key: str) -> str:
    try:
        value = meta.get(key)  # type: ignore[attr-defined]
    except Exception:
        return ""
    return _SPACE.sub(" ", str(value)).strip() if value else ""


def _year(date: str) -> int | None:
    match = re.match(r"D:(\d{4})", date)
    return int(match.group(1)) if match else None


def _first_line(texts: Sequence[str]) -> str:
    for text in texts:
        for line in text.splitlines():
            if len(line.strip()) > 3:
                return line.strip()[:200]
    return ""


def _clean(text: str) -> str:
    # Hyphenation across lines and ligature forms are the usual extraction noise.
    text = text.replace("\ufb01", "fi").replace("\ufb02", "fl").replace("\x00", "")
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)
    return text.strip()


def _labels(reader: object, total: int) -> list[str]:
    try:
        labels = list(reader.page_labels)  # type: ignore[attr-defined]
    except Exception:
        labels = []
    if len(labels) != total:
        labels = [str(i + 1) for i in range(total)]
    return labels


def _outline(reader: object) -> list[OutlineEntry]:
    entries: list[OutlineEntry] = []

    def walk(items: object, depth: int) -> None:
        for item in items:  # type: ignore[attr-defined]
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)  # type: ignore[attr-defined]
            except Exception:
                continue
            title = _SPACE.sub(" ", str(getattr(item, "title", "") or "")).strip()
            if title and page is not None and page >= 0:
                entries.append(OutlineEntry(depth, title, int(page)))

    try:
        walk(reader.outline, 0)  # type: ignore[attr-defined]
    except Exception:
        return []
    return entries


_TOC_LINE = re.compile(
    r"^\s*((?:\d+|[A-Z])(?:\.\d+)*)\.?\s+(\S.*?)\s*(?:\.\s*){3,}\s*(\d+|[ivxlc]+)\s*$", re.I
)
_NUMBERED_HEADING = re.compile(r"^\s*(\d+(?:\.\d+){0,3})\.?\s+([A-Z][^\n]{2,80}?)\s*$")


def outline_from_text(texts: Sequence[str], labels: Sequence[str]) -> list[OutlineEntry]:
    """An outline for a PDF without bookmarks, from its own text.

    First choice: a printed table of contents (numbered entries with dotted
    leaders and page labels), mapped to physical pages through the labels.
    Otherwise: numbered heading lines ("2.3 Vectors") whose numbers follow on
    from the previous heading, which rules out numbered list items and
    equations. No font information is used.
    """
    by_label: dict[str, int] = {}
    for index, label in enumerate(labels):
        by_label.setdefault(label.lower(), index)
    toc: list[OutlineEntry] = []
    for page, text in enumerate(texts[:20]):
        found = [m for m in map(_TOC_LINE.match, text.splitlines()) if m is not None]
        if len(found) < 3:
            continue
        for match in found:
            number, title, label = match.groups()
            target = by_label.get(label.lower())
            if target is not None and target > page:
                toc.append(OutlineEntry(number.count("."), f"{number}. {title}", target))
    if len(toc) >= 3:
        return toc
    headings: list[OutlineEntry] = []
    previous: tuple[int, ...] = ()
    for page, text in enumerate(texts):
        for line in text.splitlines():
            heading = _NUMBERED_HEADING.match(line)
            if heading is None:
                continue
            number = tuple(int(part) for part in heading.group(1).split("."))
            if _follows(previous, number):
                headings.append(OutlineEntry(len(number) - 1, line.strip(), page))
                previous = number
    return headings if len(headings) >= 2 else []


def _follows(previous: tuple[int, ...], number: tuple[int, ...]) -> bool:
    """True when ``number`` can be the next heading after ``previous`` (1 → 1.1, 1.2 → 2)."""
    if not previous:
        return number in {(1,), (1, 1)}
    if len(number) == len(previous) + 1:
        return number[:-1] == previous and number[-1] == 1
    if len(number) <= len(previous):
        head = previous[: len(number)]
        return number[:-1] == head[:-1] and number[-1] == head[-1] + 1
    return False


def _find_heading(text: str, title: str, after: int) -> int | None:
    """Where ``title`` starts in ``text`` at or after ``after``, whitespace-insensitively."""
    words = [re.escape(w) for w in title.split()]
    if not words:
        return None
    pattern = re.compile(r"\s*".join(words), re.I)
    match = pattern.search(text, after)
    if (
        match is None
        and len(words) > 1
        and re.fullmatch(r"[\dIVXLC.]+", title.split(maxsplit=1)[0])
    ):
        # Outline titles carry numbers the page may render apart ("1 Introduction").
        match = re.compile(r"\s*".join(words[1:]), re.I).search(text, after)
    return match.start() if match else None


def _blocks(
    texts: Sequence[str], labels: Sequence[str], outline: Sequence[OutlineEntry]
) -> tuple[list[Block], list[int]]:
    by_page: dict[int, list[OutlineEntry]] = {}
    for entry in outline:
        by_page.setdefault(entry.page, []).append(entry)
    first_page = min((e.page for e in outline), default=0)
    stack: list[OutlineEntry] = []
    blocks: list[Block] = []
    skipped: list[int] = []

    def path() -> tuple[str, ...]:
        return tuple(e.title for e in stack)

    def emit(text: str, page: int) -> None:
        text = text.strip()
        if not text:
            return
        if outline and (page < first_page or any(_SKIP_TITLES.match(e.title) for e in stack)):
            return
        blocks.append(Block(text=text, section_path=path(), page=page + 1, page_label=labels[page]))

    previous_index = False
    for page, text in enumerate(texts):
        cursor = 0
        previous_index = _index_like(text, previous_index)
        if previous_index:
            skipped.append(page + 1)
            for entry in by_page.get(page, []):
                while stack and stack[-1].depth >= entry.depth:
                    stack.pop()
                stack.append(entry)
            continue
        for entry in by_page.get(page, []):
            found = _find_heading(text, entry.title, cursor)
            # Text before the book's first heading has no section; it joins that heading.
            if found is not None and found > cursor and stack:
                emit(text[cursor:found], page)
                cursor = found
            while stack and stack[-1].depth >= entry.depth:
                stack.pop()
            stack.append(entry)
        emit(text[cursor:], page)
        if outline and (page < first_page or any(_SKIP_TITLES.match(e.title) for e in stack)):
            skipped.append(page + 1)
    return blocks, skipped
