"""The EPUB parser: the package's spine read in order, sections from its table of contents."""

from __future__ import annotations

import zipfile
from pathlib import Path

from citadel.adapters.parsers.epub.archive import Archive, ArchiveLimits
from citadel.adapters.parsers.epub.package import CONTAINER, check_drm, read_package
from citadel.adapters.parsers.epub.safe_xml import parse_content, parse_xml
from citadel.adapters.parsers.epub.sections import Sections, read_item
from citadel.adapters.parsers.epub.toc import TocEntry, nav_entries, ncx_entries
from citadel.adapters.parsers.markup.block_sink import BlockSink
from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import ParsedDocument

_XHTML_TYPES = frozenset({"application/xhtml+xml", "text/html", "application/html"})


class EpubParser:
    name = "epub/1"

    def __init__(self, *, limits: ArchiveLimits | None = None) -> None:
        self._limits = limits or ArchiveLimits()

    def accepts(self, path: Path) -> bool:
        if not path.is_file():
            return False
        if path.suffix.lower() == ".epub":
            return True
        with path.open("rb") as handle:
            head = handle.read(58)
        return head.startswith(b"PK\x03\x04") and head[30:58] == b"mimetypeapplication/epub+zip"

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        try:
            zf = zipfile.ZipFile(path)
        except OSError as exc:
            raise ParseError("unreadable", f"cannot read the file: {exc.strerror}") from exc
        except (zipfile.BadZipFile, ValueError, EOFError) as exc:
            raise ParseError("corrupt", f"the EPUB is not a readable zip archive: {exc}") from exc
        with zf:
            return self._parse(Archive(zf, self._limits), path, progress)

    def _parse(
        self, archive: Archive, path: Path, progress: ProgressCallback | None
    ) -> ParsedDocument:
        if CONTAINER not in archive.names:
            raise ParseError("corrupt", f"the EPUB lacks {CONTAINER}; it is not an EPUB")
        _, package = read_package(archive)
        check_drm(archive, package.spine)
        entries: list[TocEntry] = []
        if package.nav is not None and package.nav.member in archive.names:
            nav_root = parse_content(archive.read(package.nav.member), package.nav.member)
            if nav_root is not None:
                entries = nav_entries(nav_root, package.nav.member)
        if not entries and package.ncx is not None and package.ncx.member in archive.names:
            ncx_root = parse_xml(archive.read(package.ncx.member), package.ncx.member)
            entries = ncx_entries(ncx_root, package.ncx.member)
        by_member: dict[str, list[TocEntry]] = {}
        for entry in entries:
            by_member.setdefault(entry.member, []).append(entry)

        title = package.title or path.stem
        sections = Sections(title)
        sink = BlockSink()
        skipped: list[int] = []
        total = len(package.spine)
        for position, item in enumerate(package.spine, start=1):
            if progress:
                progress(position, total)
            if item.media_type not in _XHTML_TYPES:
                continue  # an image or SVG page: no text to index
            if package.nav is not None and item.member == package.nav.member:
                skipped.append(position)
                continue
            if item.member not in archive.names:
                raise ParseError("corrupt", f"the spine names {item.href}, which is missing")
            kept = read_item(archive, item, by_member.get(item.member, []), sections, sink)
            if not kept:
                skipped.append(position)
        sink.close()
        if not sink.blocks:
            raise ParseError("empty", "no body text was found in the EPUB")
        return ParsedDocument(
            title=title,
            blocks=tuple(sink.blocks),
            parser=self.name,
            authors=package.authors,
            year=package.year,
            tags=package.tags,
            page_count=total,
            skipped_pages=tuple(skipped),
        )
