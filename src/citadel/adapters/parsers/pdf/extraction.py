"""Page text, extracted by this process and, for long documents, by forked helpers."""

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
from multiprocessing.connection import Connection, Pipe
from typing import NoReturn

from citadel.app.ports import ProgressCallback

# Fewer pages than this per process and a forked helper costs more than it saves.
_MIN_PAGES_PER_PROCESS = 32
_MAX_PROCESSES = 4


def extract_texts(
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
    count = process_count(total, processes)
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


def process_count(total: int, processes: int | None) -> int:
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


# A vertical tab or form feed ends a line (pypdf gives them for some line and page
# breaks); a carriage return alone or before a newline is one newline; every other
# C0 control and DEL (a backspace, a bell) is removed: no font draws them, so they
# showed as empty boxes in the evidence list and the viewer. Newline and tab stay.
_BREAKS = re.compile(r"\r\n?|[\x0b\x0c]")
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def strip_controls(text: str) -> str:
    """``text`` with line-breaking controls as newlines and the other C0 controls gone.

    This runs on a page's text before anything measures it, so every offset kept
    (a block's, a chunk's) is into the cleaned text; the viewer finds a passage on
    its page by its letters and digits only, so the removed characters change no
    highlight."""
    return _CONTROLS.sub("", _BREAKS.sub("\n", text))


def _clean(text: str) -> str:
    # Hyphenation across lines and ligature forms are the usual extraction noise.
    text = strip_controls(text.replace("\ufb01", "fi").replace("\ufb02", "fl"))
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)
    return text.strip()
