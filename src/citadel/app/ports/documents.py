"""Reading documents: parsers, the files a user names, and what they hold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from citadel.domain.document import ParsedDocument

# Vectors are numpy arrays at this boundary: a list of Python floats per chunk
# would cost more than the search itself at 100k chunks.


ProgressCallback = Callable[[int, int], None]
"""Called with (done, total) units of work — pages, spine items, files."""


class DocumentParser(Protocol):
    """Turns one file into body blocks with sections and page labels."""

    name: str

    def accepts(self, path: Path) -> bool:
        """True when this parser handles files like ``path`` (by name and magic bytes)."""
        ...

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        """Parse ``path``; raise ``ParseError`` with a clear message on bad input."""
        ...


@dataclass(frozen=True, slots=True)
class DocumentMetadata:
    """What a trusted manifest beside a document (its sidecar) says of it; ``None``
    where it is silent. Besides the caller's options, the only place a canonical
    URL may come from: never the document's text."""

    source_id: str | None = None
    url: str | None = None
    title: str | None = None
    authors: tuple[str, ...] | None = None
    year: int | None = None
    tags: tuple[str, ...] | None = None
    acl_groups: frozenset[str] | None = None


class IncomingDocument(Protocol):
    """One document offered for ingestion, not parsed until the use case asks: the
    request is checked first, so a refused one costs no parse."""

    @property
    def shown(self) -> str:
        """The name errors and reports give it: the path as given, an upload's file name."""
        ...

    @property
    def origin(self) -> str:
        """Where it is kept (a resolved path, ``beir:ID``): same content at a new
        origin is a moved file; a changed one at the same origin, its next version.
        ``""`` for an upload, which is kept nowhere (its spool file goes with the
        request): it never moves a source, and a new version keeps the source's."""
        ...

    @property
    def metadata(self) -> DocumentMetadata | None:
        """Its sidecar manifest's fields; ``None`` when it has none (always, for an
        upload or a parsed corpus)."""
        ...

    @property
    def original(self) -> Path | None:
        """The file to keep as the ingested version's original, asked after the ingest:
        a PDF's (for the viewer's page images); ``None`` for any other file, a
        folder-as-book or text parsed already."""
        ...

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        """The parsed document; ``IngestError`` naming ``shown`` when no parser takes
        it (``unsupported``) or its parser refuses it (the parser's reason)."""
        ...


class DocumentReader(Protocol):
    """Reads documents from files and folders-as-books, for the ingest use case."""

    def open(self, path: Path) -> IncomingDocument:
        """The document at ``path`` with its sidecar manifest, shown as ``path``;
        ``IngestError`` when it is missing (``not_found``), ``empty``, ``too_large``,
        or its sidecar is malformed (``bad_sidecar``, naming the sidecar)."""
        ...

    def received(self, path: Path, *, name: str) -> IncomingDocument:
        """A file received whole (an upload, spooled at ``path``) shown as ``name``;
        never a sidecar beside it. ``IngestError`` as for ``open``."""
        ...
