"""A directory read as one book, in the order of its table of contents.

From ``index.html`` the links inside contents containers are followed depth first, so a
chapter's sections come right after the chapter; each page's title prefixes the section
paths of the pages listed under it. Pages reached only through links in body text follow
(at the top level); pages nothing links to are left out. ``markup.links.FolderLinks`` follows a
link only when it is a relative path that stays inside the directory.
"""

from __future__ import annotations

import os
import posixpath
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from citadel.adapters.parsers.html.document import DocumentMeta, content_root, document_meta
from citadel.adapters.parsers.markup.block_sink import BlockSink
from citadel.adapters.parsers.markup.links import FolderLinks
from citadel.adapters.parsers.markup.names import Element
from citadel.adapters.parsers.markup.pages import emit_page, first_title
from citadel.adapters.parsers.markup.titles import is_skip_title
from citadel.adapters.parsers.markup.walker import extract
from citadel.app.errors import ParseError
from citadel.app.ports import ProgressCallback
from citadel.domain.document import Block


@dataclass(frozen=True, slots=True)
class FolderBook:
    """What a directory held: the index page's metadata and every linked page's blocks."""

    meta: DocumentMeta
    blocks: list[Block]
    pages: int  # pages visited
    skipped: list[int]  # 1-based visiting positions of pages not indexed


def read_folder(
    root: Path,
    load: Callable[[Path], Element],
    *,
    max_pages: int,
    progress: ProgressCallback | None,
) -> FolderBook:
    """Every page linked from ``root``'s index, in toc order; ``load`` reads one page."""
    base = root.resolve()
    index = "index.html" if (root / "index.html").is_file() else "index.htm"
    links = FolderLinks(base, (".html", ".htm"))
    if not links.resolve("", [index]):
        raise ParseError("unreadable", f"{index} is missing or points outside {root.name}")
    total = sum(
        1 for _, _, files in os.walk(root) for f in files if f.lower().endswith((".html", ".htm"))
    )
    sink = BlockSink()
    skipped: list[int] = []
    visited: set[str] = set()
    meta: DocumentMeta | None = None
    stack: list[tuple[str, tuple[str, ...]]] = [(index, ())]
    by_body: deque[str] = deque()
    while True:
        while stack:
            rel, prefix = stack.pop()
            if rel in visited:
                continue
            visited.add(rel)
            if len(visited) > max_pages:
                raise ParseError("too_many_pages", f"more than {max_pages} linked pages")
            try:
                doc = load(base / rel)
            except ParseError as exc:
                if exc.reason != "empty" or rel == index:
                    raise
                skipped.append(len(visited))  # an empty page in a set is no reason to fail
                continue
            if meta is None:
                meta = document_meta(doc, root.name)
            found = extract(content_root(doc))
            fallback = document_meta(doc, posixpath.basename(rel)).title
            skip = is_skip_title(first_title(found.events, fallback))
            title = fallback
            if skip:
                skipped.append(len(visited))
            else:
                title = emit_page(
                    found.events, sink, href=rel, prefix=prefix, rooted=True, fallback=fallback
                )
                by_body.extend(links.resolve(rel, found.body_links))
            toc = found.toc_links if found.toc_links or rel != index else found.body_links
            below = prefix if rel == index or skip else (*prefix, title)
            children = [c for c in links.resolve(rel, toc) if c not in visited]
            stack.extend((child, below) for child in reversed(children))
            if progress:
                progress(len(visited), max(total, len(visited)))
        while by_body and by_body[0] in visited:
            by_body.popleft()
        if not by_body:
            break
        stack.append((by_body.popleft(), ()))
    if progress:
        progress(len(visited), len(visited))
    assert meta is not None
    return FolderBook(meta, sink.blocks, len(visited), skipped)
