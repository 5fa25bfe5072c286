"""Reading the JSON-lines files the CLI takes (shadow answers, golden citation cases)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


class LineTooLong(Exception):
    def __init__(self, number: int, limit: int) -> None:
        super().__init__(f"line {number}: longer than {limit} bytes")
        self.number = number
        self.limit = limit


def lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for each non-blank line, without its line break; no line
    is read past ``max_line_bytes`` (``LineTooLong``), so a file of one huge line
    costs no more memory than the limit."""
    with path.open("rb") as handle:
        number = 0
        while raw := handle.readline(max_line_bytes + 2):
            number += 1
            if not raw.endswith(b"\n") and len(raw) > max_line_bytes:
                raise LineTooLong(number, max_line_bytes)
            line = raw.rstrip(b"\r\n")
            if line.strip():
                yield number, line
