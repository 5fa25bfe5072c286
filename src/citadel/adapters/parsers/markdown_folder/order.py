"""Which Markdown files of a folder make the book, and in which order.

The files are every ``.md`` / ``.markdown`` file under the folder (under its
``docs_dir`` when an ``mkdocs.yml`` names one, or ``docs/`` beside it), hidden
files and folders aside, symlinks only where they stay inside. Their order: the
``nav`` of ``mkdocs.yml``; else the folder's ``index.md`` or ``README.md`` first and
the files it links to, in its order; then every other file in the folder's order
(names compared with their numbers as numbers, each folder's index first).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from citadel.adapters.parsers.markdown_folder.mkdocs import MkDocsConfig, read_mkdocs
from citadel.adapters.parsers.markup.links import FolderLinks
from citadel.app.errors import ParseError

MARKDOWN_SUFFIXES = (".md", ".markdown")
CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")
_INDEX_NAMES = ("index.md", "readme.md", "index.markdown", "readme.markdown")
_MAX_CONFIG_BYTES = 1024 * 1024
_MAX_DEPTH = 64  # folders deeper than this are not read
_NUMBER = re.compile(r"(\d+)")


@dataclass(frozen=True, slots=True)
class Chapter:
    """One file of the book: its path under the root (POSIX) and its title in the nav."""

    path: str
    nav_title: str | None


@dataclass(frozen=True, slots=True)
class Reading:
    root: Path
    """The folder the files are under, resolved (the docs_dir of an mkdocs.yml)."""
    chapters: tuple[Chapter, ...]
    config: MkDocsConfig
    warnings: tuple[str, ...]
    led: bool
    """Whether the first chapter leads the book (the nav's first page, or the index)."""


def holds_markdown(folder: Path) -> bool:
    """Whether a Markdown file is somewhere under ``folder`` (hidden folders aside)."""
    try:
        base = folder.resolve()
        return next(markdown_files(base), None) is not None
    except OSError:
        return False


def markdown_files(base: Path) -> Iterator[str]:
    """The Markdown files under ``base`` in the folder's order, as POSIX paths under it."""
    links = FolderLinks(base, MARKDOWN_SUFFIXES)

    def walk(folder: Path, prefix: str) -> Iterator[str]:
        if prefix.count("/") >= _MAX_DEPTH:
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda e: _order_key(e.name))
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                yield from walk(Path(entry.path), f"{rel}/")
            elif entry.name.lower().endswith(MARKDOWN_SUFFIXES) and links.inside(rel):
                yield rel

    return walk(base, "")


def reading_order(
    folder: Path, *, max_files: int, links_of: Callable[[Path, str], list[str]]
) -> Reading:
    """The book's files in order; ``links_of(file, path)`` gives the link targets of one file."""
    base = folder.resolve()
    warnings: list[str] = []
    config = _config(base, warnings)
    root = base if config is None else _docs_root(base, folder.name, config, warnings)
    config = config or MkDocsConfig()
    files: list[str] = []
    for rel in markdown_files(root):
        files.append(rel)
        if len(files) > max_files:
            raise ParseError("too_many_pages", f"more than {max_files} Markdown files")
    if not files:
        raise ParseError(
            "no_markdown",
            f"{folder.name} holds no Markdown files (.md, .markdown; hidden folders are not read)",
        )
    known = set(files)
    links = FolderLinks(root, MARKDOWN_SUFFIXES)
    first: list[Chapter] = []
    if config.nav is not None:
        for entry in config.nav:
            target = links.split("", entry.target)
            if target is not None and target[0] in known:
                first.append(Chapter(target[0], entry.title))
            elif not re.match(r"^[a-z][a-z0-9+.-]*:", entry.target, re.I):  # not a web link
                warnings.append(
                    f"mkdocs.yml's nav names {entry.target}, which is not a Markdown file "
                    f"inside {folder.name}; it is left out"
                )
    else:
        index = next((f for f in files if f.lower() in _INDEX_NAMES), None)
        if index is not None:
            first.append(Chapter(index, None))
            first.extend(
                Chapter(f, None) for f in links.resolve(index, links_of(root / index, index))
            )
    chapters: dict[str, Chapter] = {}
    for chapter in [*first, *(Chapter(f, None) for f in files)]:
        if chapter.path in known:
            chapters.setdefault(chapter.path, chapter)
    return Reading(root, tuple(chapters.values()), config, tuple(warnings), led=bool(first))


def _config(base: Path, warnings: list[str]) -> MkDocsConfig | None:
    """The folder's mkdocs.yml (empty when it cannot be read); None when there is none."""
    for name in CONFIG_NAMES:
        path = base / name
        if not path.is_file():
            continue
        try:
            real = path.resolve()
            if not real.is_relative_to(base):
                warnings.append(f"{name} points outside the folder; it is not read")
                return MkDocsConfig()
            if real.stat().st_size > _MAX_CONFIG_BYTES:
                warnings.append(f"{name} is over {_MAX_CONFIG_BYTES} bytes; it is not read")
                return MkDocsConfig()
            text = real.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            warnings.append(f"{name} cannot be read as UTF-8 text; it is not read")
            return MkDocsConfig()
        config = read_mkdocs(text.replace("\r\n", "\n"))
        warnings.extend(config.problems)
        return config
    return None


def _docs_root(base: Path, shown: str, config: MkDocsConfig, warnings: list[str]) -> Path:
    """The docs_dir an mkdocs.yml names (``docs`` by default), if it is a folder inside."""
    name = config.docs_dir or "docs"
    try:
        root = (base / name).resolve()
    except (OSError, RuntimeError):
        root = base
    if root.is_dir() and root.is_relative_to(base) and not name.startswith("/"):
        return root
    if config.docs_dir:
        warnings.append(
            f"mkdocs.yml's docs_dir {name} is not a folder inside {shown}; "
            f"the Markdown files of {shown} itself are read"
        )
    return base


def _order_key(name: str) -> tuple[int, list[tuple[int, int | str]]]:
    """Each folder's index first, then names with their runs of digits compared as numbers."""
    parts: list[tuple[int, int | str]] = [
        (0, int(part)) if part.isdigit() else (1, part.casefold())
        for part in _NUMBER.split(name)
        if part
    ]
    return (0 if name.lower() in _INDEX_NAMES else 1, parts)
