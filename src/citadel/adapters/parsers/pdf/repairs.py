"""pypdf's warnings, kept from the terminal and told in citadel's words.

pypdf logs each robustness fix it applies to a damaged file (``EOF marker not
found``, ``incorrect startxref pointer``) on its ``pypdf.*`` loggers. During a
parse those lines are collected for that parse only (a context variable: each
thread, and each task, has its own), and the parser says once, in its own
words, that the file was damaged. Outside a parse they reach the root logger's
handlers as if pypdf's loggers propagated as usual. The handler and
``propagate = False`` on ``pypdf`` are set once, under a lock, and never changed
again, so no parse changes what another thread sees.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_KEPT = 50  # per parse: enough to say what went wrong, bounded for a hostile file

_sink: ContextVar[list[str] | None] = ContextVar("citadel_pypdf_warnings", default=None)
_installed = False
_lock = threading.Lock()


class _Collect(logging.Handler):
    """Keep a record for the parse running in this context; else pass it on to root."""

    def emit(self, record: logging.LogRecord) -> None:
        sink = _sink.get()
        if sink is None:
            logging.getLogger().handle(record)
        elif len(sink) < _KEPT:
            sink.append(record.getMessage())

    def handle(self, record: logging.LogRecord) -> bool:
        # No lock is needed to append to this context's own list.
        self.emit(record)
        return True


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        logger = logging.getLogger("pypdf")
        logger.addHandler(_Collect(logging.NOTSET))
        logger.propagate = False
        _installed = True


@contextmanager
def collected() -> Iterator[list[str]]:
    """The pypdf warnings logged in this context while the block runs."""
    _install()
    sink: list[str] = []
    token = _sink.set(sink)
    try:
        yield sink
    finally:
        _sink.reset(token)


def cut_short(problems: list[str], error: BaseException | None = None) -> bool:
    """Whether the file looks truncated: no end-of-file marker, or a stream ends early."""
    said = " ".join([*problems, str(error or "")]).lower()
    return "eof marker" in said or "ended unexpectedly" in said


def damage_note(problems: list[str]) -> str:
    """The one warning a readable but damaged PDF gets, in citadel's words."""
    count = len(problems)
    repairs = f"{count}{'+' if count >= _KEPT else ''} repair{'' if count == 1 else 's'}"
    how = "it looks cut short" if cut_short(problems) else "its structure is broken"
    return (
        f"the PDF is damaged ({how}) and was read with {repairs}:"
        " some of its text may be missing or out of order"
    )
