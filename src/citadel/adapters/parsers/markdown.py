"""Markdown via markdown-it-py: ATX and setext headings give the section path."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt

from citadel.adapters.parsers.plaintext import read_utf8
from citadel.app.ports import ProgressCallback
from citadel.domain.document import Block, ParsedDocument


class MarkdownParser:
    name = "markdown/1"

    def __init__(self) -> None:
        self._md = MarkdownIt("commonmark")

    def accepts(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() in {".md", ".markdown"}

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        text = read_utf8(path)
        lines = text.split("\n")
        tokens = self._md.parse(text)
        path_stack: list[tuple[int, str]] = []
        title = ""
        blocks: list[Block] = []
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token.type == "heading_open":
                level = int(token.tag[1:])
                heading = tokens[index + 1].content.strip()
                if not title and level == 1:
                    title = heading
                while path_stack and path_stack[-1][0] >= level:
                    path_stack.pop()
                path_stack.append((level, heading))
                index += 3
                continue
            if (token.level == 0 and token.map and token.type.endswith("_open")) or (
                token.level == 0
                and token.map
                and token.type in {"fence", "code_block", "html_block"}
            ):
                start, end = token.map
                body = "\n".join(lines[start:end]).strip()
                if body and token.type != "html_block":
                    section = tuple(h for _, h in path_stack) or (title or path.stem,)
                    blocks.append(Block(text=body, section_path=section))
                # Skip to the matching close at level 0.
                if token.type.endswith("_open"):
                    depth = 1
                    index += 1
                    while index < len(tokens) and depth:
                        if tokens[index].level == 0 and tokens[index].type.endswith("_close"):
                            depth -= 1
                        index += 1
                    continue
            index += 1
        if progress:
            progress(1, 1)
        return ParsedDocument(title=title or path.stem, blocks=tuple(blocks), parser=self.name)
