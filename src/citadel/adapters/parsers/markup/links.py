"""Links between the files of a folder book, resolved without leaving the folder."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit


class FolderLinks:
    """Resolves hrefs to file paths inside one directory, refusing every way out of it.

    A link is followed only when it is a relative path (no scheme, no host, not
    absolute, no backslash) to a file with one of ``suffixes`` that stays inside the
    directory, through ``..`` or a symlink alike. Paths are POSIX, relative to the
    directory; the fragment is dropped (:meth:`split` keeps it).
    """

    def __init__(self, base: Path, suffixes: Sequence[str]) -> None:
        self._base = base
        self._suffixes = tuple(s.lower() for s in suffixes)
        self._inside: dict[str, bool] = {}

    def resolve(self, page: str, hrefs: Sequence[str]) -> list[str]:
        """The distinct files ``hrefs`` (written in ``page``) name, in order, ``page`` left out."""
        found: dict[str, None] = {}
        for href in hrefs:
            target = self.split(page, href)
            if target is not None and target[0] != page:
                found.setdefault(target[0])
        return list(found)

    def split(self, page: str, href: str) -> tuple[str, str] | None:
        """``(file, fragment)`` for an href inside the directory, else None."""
        parts = urlsplit(href.strip())
        path = unquote(parts.path)
        if parts.scheme or parts.netloc or not path or path.startswith("/"):
            return None
        if "\\" in path or "\x00" in path:
            return None
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
        if target == ".." or target.startswith(("../", "/")):
            return None
        if posixpath.splitext(target)[1].lower() not in self._suffixes:
            return None
        return (target, parts.fragment) if self.inside(target) else None

    def inside(self, target: str) -> bool:
        """Whether ``target`` is a file that resolves (symlinks followed) inside the directory."""
        inside = self._inside.get(target)
        if inside is None:
            try:
                real = (self._base / target).resolve()
                inside = real.is_file() and real.is_relative_to(self._base)
            except (OSError, RuntimeError):
                inside = False
            self._inside[target] = inside
        return inside
