"""Paragraphs joined into the blocks a parsed document is made of."""

from __future__ import annotations

from citadel.domain.document import Block

_MAX_BLOCK_CHARS = 4000


class BlockSink:
    """Joins consecutive paragraphs of one section and location into blocks of bounded size."""

    def __init__(self, max_chars: int = _MAX_BLOCK_CHARS) -> None:
        self.blocks: list[Block] = []
        self._max = max_chars
        self._paras: list[str] = []
        self._size = 0
        self._key: tuple[tuple[str, ...], str | None] = ((), None)

    def add(self, text: str, section_path: tuple[str, ...], location: str | None) -> None:
        key = (section_path, location)
        if self._paras and (key != self._key or self._size + len(text) > self._max):
            self.close()
        self._key = key
        self._paras.append(text)
        self._size += len(text) + 2

    def close(self) -> None:
        if self._paras:
            path, location = self._key
            self.blocks.append(Block("\n\n".join(self._paras), path, location=location))
        self._paras = []
        self._size = 0
