"""Plain text: one section per file, paragraphs as blocks; strict UTF-8."""

from __future__ import annotations

import re
from pathlib import Path

from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import Block, ParsedDocument

_PARAGRAPHS = re.compile(r"\n\s*\n")


def read_utf8(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ParseError("unreadable", f"cannot read the file: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(
            "not_utf8", f"the file is not valid UTF-8 (byte {exc.start}); convert it first"
        ) from exc
    if "\x00" in text:
        raise ParseError("binary", "the file holds NUL bytes; it is not text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


class PlainTextParser:
    name = "text/1"

    def accepts(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() in {".txt", ".text", ""}

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        text = read_utf8(path)
        title = path.stem
        blocks = tuple(
            Block(text=para.strip(), section_path=(title,))
            for para in _PARAGRAPHS.split(text)
            if para.strip()
        )
        if progress:
            progress(1, 1)
        return ParsedDocument(title=title, blocks=blocks, parser=self.name)
