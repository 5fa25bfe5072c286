"""Documents from files: the ``DocumentReader`` of the CLI, the demo and HTTP uploads.

Everything ingestion asks of the file system is here: whether the path is
there and of a size worth reading, the sidecar manifest beside it (the
curator's trusted metadata), which parser takes it, and where it is (the
resolved path, by which a moved file is recognised). Refusals are
``IngestError`` with a stable ``reason``, naming the file as the caller knows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from citadel.app.errors import IngestError, ParseError
from citadel.app.ports import DocumentMetadata, DocumentParser, ProgressCallback
from citadel.domain.document import ParsedDocument
from citadel.domain.errors import InvalidValue
from citadel.domain.integers import YEAR_MAX, YEAR_MIN, check_int
from citadel.domain.json_input import loads_strict

SIDECAR_SUFFIX = ".citadel.json"
_SIDECAR_FIELDS = frozenset({"source_id", "url", "title", "authors", "year", "tags", "acl"})


def sidecar_path(path: Path) -> Path:
    """``book.pdf`` → ``book.pdf.citadel.json``; for a directory, ``DIR/citadel.json``."""
    return path / "citadel.json" if path.is_dir() else path.with_name(path.name + SIDECAR_SUFFIX)


@dataclass(frozen=True, slots=True)
class FileDocument:
    """A file (or folder-as-book) that passed the path checks, parsed on demand."""

    path: Path
    shown: str
    origin: str
    metadata: DocumentMetadata | None
    parsers: tuple[DocumentParser, ...]

    @property
    def original(self) -> Path | None:
        """The file itself when it is a PDF (its first bytes say so)."""
        if not self.path.is_file():  # a folder book (HTML with its index.html) is no PDF
            return None
        with self.path.open("rb") as handle:
            return self.path if handle.read(5) == b"%PDF-" else None

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        parser = self._parser()
        try:
            return parser.parse(self.path, progress)
        except ParseError as exc:
            raise IngestError(self.shown, exc.reason, str(exc)) from exc

    def _parser(self) -> DocumentParser:
        for parser in self.parsers:
            if parser.accepts(self.path):
                return parser
        if self.path.is_dir():
            raise IngestError(
                self.shown,
                "unsupported",
                "a folder is read as a book when it holds an index.html (HTML) or Markdown "
                "files (.md, .markdown; hidden folders are not read); this one holds neither",
            )
        raise IngestError(self.shown, "unsupported", "no parser for this kind of file")


class FileDocuments:
    """Opens files for ingestion with the configured parsers and size limit."""

    def __init__(self, parsers: Sequence[DocumentParser], *, max_file_bytes: int) -> None:
        self._parsers = tuple(parsers)
        self._max_file_bytes = max_file_bytes

    def open(self, path: Path) -> FileDocument:
        shown = str(path)
        self._check(path, shown)
        return FileDocument(path, shown, str(path.resolve()), _sidecar(path), self._parsers)

    def received(self, path: Path, *, name: str) -> FileDocument:
        # No origin: the spool path is gone once the request ends, so it can
        # neither identify the source later nor count as where the file moved.
        self._check(path, name)
        return FileDocument(path, name, "", None, self._parsers)

    def _check(self, path: Path, shown: str) -> None:
        if not path.exists():
            raise IngestError(shown, "not_found", "no such file or directory")
        if path.is_file():
            size = path.stat().st_size
            if size == 0:
                raise IngestError(shown, "empty", "the file is empty")
            if size > self._max_file_bytes:
                raise IngestError(
                    shown, "too_large", f"{size} bytes is over the {self._max_file_bytes} limit"
                )


def _sidecar(path: Path) -> DocumentMetadata | None:
    """The trusted sidecar manifest beside the file, if there is one.

    The sidecar is written by whoever curates the library; it is the only place
    besides ``--url`` that a canonical URL may come from (never the document text).
    """
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        return None
    shown = str(sidecar)
    try:
        data = loads_strict(sidecar.read_bytes())
    except OSError as exc:
        raise IngestError(
            shown, "bad_sidecar", f"the sidecar manifest cannot be read: {exc}"
        ) from exc
    except InvalidValue as exc:
        raise IngestError(shown, "bad_sidecar", f"the sidecar manifest: {exc}") from None
    if not isinstance(data, dict) or set(data) - _SIDECAR_FIELDS:
        raise IngestError(
            shown, "bad_sidecar", f"a sidecar holds an object with only: {sorted(_SIDECAR_FIELDS)}"
        )
    year = data.get("year")
    if year is not None:
        try:
            year = check_int(year, low=YEAR_MIN, high=YEAR_MAX, what="year")
        except InvalidValue as exc:
            raise IngestError(shown, "bad_sidecar", str(exc)) from None
    acl = _names(data, "acl", shown)
    return DocumentMetadata(
        source_id=_text(data, "source_id", shown),
        url=_text(data, "url", shown),
        title=_text(data, "title", shown),
        authors=_names(data, "authors", shown),
        year=year,
        tags=_names(data, "tags", shown),
        acl_groups=frozenset(acl) if acl is not None else None,
    )


def _text(data: dict[str, Any], key: str, shown: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise IngestError(shown, "bad_sidecar", f"{key} must be a non-empty string")
    return value.strip()


def _names(data: dict[str, Any], key: str, shown: str) -> tuple[str, ...] | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise IngestError(shown, "bad_sidecar", f"{key} must be a list of strings")
    return tuple(v.strip() for v in value if v.strip())
