"""Markdown via markdown-it-py: ATX and setext headings give the section path.

:func:`markdown_page` reads one Markdown text as the markup walker's events (a
heading with its anchor, each top-level block's source as a paragraph) and the
links it holds; the single-file parser here and the folder parser
(:mod:`citadel.adapters.parsers.markdown_folder`) both read through it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.token import Token

from citadel.adapters.parsers.markup.walker import Event, Heading, Paragraph
from citadel.adapters.parsers.plaintext import read_utf8
from citadel.app.ports import ProgressCallback
from citadel.domain.document import Block, ParsedDocument

_CODE = frozenset({"fence", "code_block"})
_LEAVES = _CODE | {"html_block"}
_EXPLICIT_ID = re.compile(r"\s*\{:?\s*#([\w-]+)[^}]*\}\s*$")  # "## Setup {#setup}" (attr_list)
_NOT_SLUG = re.compile(r"[^\w\s-]")
_DASHES = re.compile(r"[-\s]+")


@dataclass(slots=True)
class MarkdownPage:
    """One Markdown text as events in reading order, and the link targets it holds."""

    events: list[Event] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


def markdown_parser() -> MarkdownIt:
    return MarkdownIt("commonmark")


def slug(title: str) -> str:
    """A heading's anchor as MkDocs makes it: ASCII, lowercase, punctuation dropped, dashes."""
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    return _DASHES.sub("-", _NOT_SLUG.sub("", text).strip().lower())


def markdown_page(
    md: MarkdownIt, text: str, rewrite: Callable[[str], str] | None = None
) -> MarkdownPage:
    """``text`` as headings (anchored by their slug, unique in the text) and paragraphs, each
    the source of one top-level block; ``rewrite`` is applied to every block but code."""
    lines = text.split("\n")
    tokens = md.parse(text)
    page = MarkdownPage()
    seen: dict[str, int] = {}
    index = 0
    while index < len(tokens):
        token = tokens[index]
        page.links.extend(_links(token))
        if token.type == "heading_open":
            heading = tokens[index + 1].content.strip()
            page.links.extend(_links(tokens[index + 1]))
            explicit = _EXPLICIT_ID.search(heading)
            anchor = explicit.group(1) if explicit else slug(heading)
            heading = heading[: explicit.start()].strip() if explicit else heading
            if heading:
                count = seen.get(anchor, 0)
                seen[anchor] = count + 1
                anchor = f"{anchor}_{count}" if count else anchor
                page.events.append(Heading(int(token.tag[1:]), heading, anchor or None))
            index += 3
            continue
        if (
            token.level == 0
            and token.map
            and (token.type.endswith("_open") or token.type in _LEAVES)
        ):
            start, end = token.map
            body = "\n".join(lines[start:end]).strip()
            if body and token.type != "html_block":
                code = token.type in _CODE
                page.events.append(Paragraph(body if code or rewrite is None else rewrite(body)))
            if token.type.endswith("_open"):  # on to the matching close at level 0
                depth = 1
                index += 1
                while index < len(tokens) and depth:
                    page.links.extend(_links(tokens[index]))
                    if tokens[index].level == 0 and tokens[index].type.endswith("_close"):
                        depth -= 1
                    index += 1
                continue
        index += 1
    return page


def _links(token: Token) -> list[str]:
    return [
        str(child.attrs["href"])
        for child in token.children or ()
        if child.type == "link_open" and child.attrs.get("href")
    ]


class MarkdownParser:
    name = "markdown/1"

    def __init__(self) -> None:
        self._md = markdown_parser()

    def accepts(self, path: Path) -> bool:
        return path.is_file() and path.suffix.lower() in {".md", ".markdown"}

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        page = markdown_page(self._md, read_utf8(path))
        path_stack: list[tuple[int, str]] = []
        title = ""
        blocks: list[Block] = []
        for event in page.events:
            if isinstance(event, Heading):
                if not title and event.level == 1:
                    title = event.text
                while path_stack and path_stack[-1][0] >= event.level:
                    path_stack.pop()
                path_stack.append((event.level, event.text))
            elif isinstance(event, Paragraph):
                section = tuple(h for _, h in path_stack) or (title or path.stem,)
                blocks.append(Block(text=event.text, section_path=section))
        if progress:
            progress(1, 1)
        return ParsedDocument(title=title or path.stem, blocks=tuple(blocks), parser=self.name)
