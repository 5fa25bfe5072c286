"""The PDF parser: pypdf reads the file; outline, extraction and sections do the rest."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from citadel.adapters.parsers import DEFAULT_MAX_PAGES
from citadel.adapters.parsers.pdf.extraction import extract_texts
from citadel.adapters.parsers.pdf.outline import outline_from_text, page_labels, read_outline
from citadel.adapters.parsers.pdf.repairs import collected, cut_short, damage_note
from citadel.adapters.parsers.pdf.sections import section_blocks, strip_running_lines
from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import ParsedDocument

_SPACE = re.compile(r"\s+")
log = logging.getLogger("citadel.parsers.pdf")


class PdfParser:
    name = "pdf/1"

    def __init__(self, *, max_pages: int = DEFAULT_MAX_PAGES, processes: int | None = None) -> None:
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

        with collected() as problems:
            try:
                reader = PdfReader(path, strict=False)
                if reader.is_encrypted:
                    raise ParseError(
                        "encrypted", "the PDF is encrypted; decrypt it before ingesting"
                    )
                total = len(reader.pages)
                if total > self._max_pages:
                    raise ParseError(
                        "too_many_pages", f"{total} pages is over the {self._max_pages} limit"
                    )
                labels = page_labels(reader, total)
                outline = read_outline(reader)
                texts = extract_texts(reader, total, progress, self._processes)
                meta: object = reader.metadata or {}
            except ParseError:
                raise
            except (
                PdfReadError,
                PyPdfError,
                ValueError,
                KeyError,
                TypeError,
                AttributeError,
            ) as exc:
                # pypdf's own words stay in the log (the exception's cause), not the message.
                how = (
                    "it looks cut short" if cut_short(problems, exc) else "its structure is broken"
                )
                raise ParseError(
                    "corrupt", f"the PDF is damaged and cannot be read: {how}"
                ) from exc
            except RecursionError as exc:
                raise ParseError("corrupt", "the PDF's structure is too deeply nested") from exc
        notes = (damage_note(problems),) if problems else ()
        for note in notes:
            log.warning("%s: %s", path.name, note)
        title = _meta(meta, "/Title") or _first_line(texts)
        author = _meta(meta, "/Author")
        if not outline:
            outline = outline_from_text(texts, labels)
        texts = [
            strip_running_lines(text, label) for text, label in zip(texts, labels, strict=True)
        ]
        blocks, skipped = section_blocks(texts, labels, outline)
        return ParsedDocument(
            title=title,
            blocks=tuple(blocks),
            parser=self.name,
            authors=(author,) if author else (),
            year=_year(_meta(meta, "/CreationDate")),
            page_count=total,
            skipped_pages=tuple(skipped),
            warnings=notes,
        )


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
