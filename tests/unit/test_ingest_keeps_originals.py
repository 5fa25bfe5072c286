"""The ingest use case keeps a PDF's original itself, whichever edge handed it the
document: once per version, and never for a document with no original."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.memory import InMemoryLibrary
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.app.ingest import IngestOptions, IngestService
from citadel.app.ports import DocumentMetadata, IncomingDocument, ProgressCallback
from citadel.domain.document import ParsedDocument
from tests.builders import operator

FILES = FileDocuments([MarkdownParser()], max_file_bytes=1 << 20)


@dataclass
class KeptOriginals:
    """An OriginalStore that records what it is asked to keep."""

    kept: list[tuple[str, str, int, str, tuple[int, ...]]] = field(default_factory=list)

    def keep(
        self, tenant: str, source_id: str, version: int, file: Path, retained: Collection[int]
    ) -> None:
        self.kept.append((tenant, source_id, version, file.name, tuple(sorted(retained))))

    def find(self, tenant: str, source_id: str, version: int) -> Path | None:
        return None

    def has(self, tenant: str, source_id: str, version: int) -> bool:
        return any(k[:3] == (tenant, source_id, version) for k in self.kept)

    def prune(self, tenant: str, source_id: str, retained: Collection[int]) -> None:
        pass

    def forget(self, tenant: str, source_id: str) -> None:
        pass

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class WithOriginal:
    """``inner`` as it is, naming ``original`` as the file to keep."""

    inner: IncomingDocument
    original: Path | None

    @property
    def shown(self) -> str:
        return self.inner.shown

    @property
    def origin(self) -> str:
        return self.inner.origin

    @property
    def metadata(self) -> DocumentMetadata | None:
        return self.inner.metadata

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        return self.inner.parse(progress)


def test_a_documents_original_is_kept_once_per_version(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    book.write_text("# Book\n\nText.\n")
    originals = KeptOriginals()
    ingest = IngestService(InMemoryLibrary(), FixedClock(), originals=originals)
    document = WithOriginal(FILES.open(book), tmp_path / "book.pdf")
    first = ingest.ingest(document, IngestOptions(), actor=operator())
    again = ingest.ingest(document, IngestOptions(), actor=operator())
    assert (first.status, again.status) == ("created", "unchanged")
    assert originals.kept == [("default", first.source_id, 1, "book.pdf", (1,))]


def test_a_document_without_an_original_keeps_nothing(tmp_path: Path) -> None:
    book = tmp_path / "book.md"
    book.write_text("# Book\n\nText.\n")
    originals = KeptOriginals()
    IngestService(InMemoryLibrary(), FixedClock(), originals=originals).ingest(
        FILES.open(book), IngestOptions(), actor=operator()
    )
    assert originals.kept == []


def test_a_files_original_is_the_file_only_when_it_is_a_pdf(tmp_path: Path) -> None:
    pdf, text, folder = tmp_path / "a.pdf", tmp_path / "b.md", tmp_path / "book"
    pdf.write_bytes(b"%PDF-1.7\n")
    text.write_text("# B\n")
    folder.mkdir()
    (folder / "index.html").write_text("<p>x</p>")
    assert FILES.open(pdf).original == pdf
    assert FILES.open(text).original is None
    assert FILES.open(folder).original is None
