"""Each ingested document counted and timed by format and outcome (``OperationMetrics``).

The format is the parser's family when the document got as far as being parsed,
else a guess from its name's extension (a refusal before or during the parse);
anything else is ``other``. Label values come from these closed sets only: an
upload's file name never becomes one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from citadel.app.errors import IngestError
from citadel.app.ingest.versions import IngestReport
from citadel.app.ports import (
    DocumentMetadata,
    IncomingDocument,
    OperationMetrics,
    ProgressCallback,
)
from citadel.domain.document import ParsedDocument

FORMATS = ("pdf", "epub", "html", "markdown", "markdown-folder", "text")
"""The parser families (``pdf/1`` is ``pdf``); any other is counted as ``other``."""

_EXTENSIONS = {
    ".pdf": "pdf",
    ".epub": "epub",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
}


def format_of(parser: str | None, shown: str) -> str:
    """The format label: the parser's family, else the name's extension, else ``other``."""
    if parser is not None:
        family = parser.split("/", 1)[0]
        return family if family in FORMATS else "other"
    return _EXTENSIONS.get(PurePosixPath(shown.replace("\\", "/")).suffix.lower(), "other")


class _Observed:
    """``document`` as it is, remembering which parser read it."""

    def __init__(self, document: IncomingDocument) -> None:
        self._document = document
        self.parser: str | None = None

    @property
    def shown(self) -> str:
        return self._document.shown

    @property
    def origin(self) -> str:
        return self._document.origin

    @property
    def metadata(self) -> DocumentMetadata | None:
        return self._document.metadata

    @property
    def original(self) -> Path | None:
        return self._document.original

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        parsed = self._document.parse(progress)
        self.parser = parsed.parser
        return parsed


def metered(
    metrics: OperationMetrics | None,
    document: IncomingDocument,
    run: Callable[[IncomingDocument], IngestReport],
) -> IngestReport:
    """``run(document)``, its outcome and duration recorded in ``metrics`` (if any):
    the report's status, ``refused`` with the refusal's code, or ``failed``."""
    if metrics is None:
        return run(document)
    observed = _Observed(document)
    started = time.perf_counter()
    try:
        report = run(observed)
    except IngestError as exc:
        fmt = format_of(observed.parser, document.shown)
        metrics.ingest(fmt, "refused", time.perf_counter() - started, exc.reason)
        raise
    except Exception:
        fmt = format_of(observed.parser, document.shown)
        metrics.ingest(fmt, "failed", time.perf_counter() - started)
        raise
    fmt = format_of(observed.parser, document.shown)
    metrics.ingest(fmt, report.status, time.perf_counter() - started)
    return report
