"""The EPUB's zip archive, untrusted: every member checked before anything is inflated.

Member names may not be absolute or climb out with ``..``; declared sizes are bounded per
member, in total and by compression ratio, and reads are bounded anyway in case a header
lies. An href that leaves the archive is refused. All of these raise
``ParseError("unsafe_archive")``.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
import zlib
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from citadel.app.errors import ParseError

_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_member_bytes: int = 64 * _MIB
    max_total_bytes: int = 512 * _MIB
    max_ratio: int = 100
    max_members: int = 10_000
    ratio_floor_bytes: int = _MIB  # small members may compress well; only big ones are judged


def unsafe(message: str) -> ParseError:
    return ParseError("unsafe_archive", message)


def check_name(name: str) -> None:
    if (
        name.startswith(("/", "\\"))
        or "\\" in name
        or "\x00" in name
        or re.match(r"^[A-Za-z]:", name)
        or ".." in name.split("/")
    ):
        raise unsafe(f"the archive holds an unsafe member name {name!r}")


class Archive:
    """A zip opened for reading with every member checked before anything is inflated."""

    def __init__(self, zf: zipfile.ZipFile, limits: ArchiveLimits) -> None:
        self._zf = zf
        self._limits = limits
        self._read_total = 0
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise unsafe(f"{len(infos)} members is over the {limits.max_members} limit")
        total = 0
        for info in infos:
            check_name(info.filename)
            if info.file_size > limits.max_member_bytes:
                raise unsafe(
                    f"{info.filename} would inflate to {info.file_size} bytes, over the "
                    f"{limits.max_member_bytes} limit (zip bomb?)"
                )
            if (
                info.file_size > limits.ratio_floor_bytes
                and info.file_size > limits.max_ratio * max(info.compress_size, 1)
            ):
                raise unsafe(
                    f"{info.filename} compresses {info.file_size}:{info.compress_size}, over "
                    f"the {limits.max_ratio}:1 limit (zip bomb?)"
                )
            total += info.file_size
        if total > limits.max_total_bytes:
            raise unsafe(
                f"the archive would inflate to {total} bytes, over the "
                f"{limits.max_total_bytes} limit (zip bomb?)"
            )
        self.names = frozenset(info.filename for info in infos)

    def read(self, name: str) -> bytes:
        try:
            info = self._zf.getinfo(name)
        except KeyError as exc:
            raise ParseError("corrupt", f"the EPUB lacks {name}") from exc
        limit = min(self._limits.max_member_bytes, info.file_size)
        try:
            with self._zf.open(info) as handle:
                # Bounded even if the header lies about the size.
                data = handle.read(limit + 1)
        except RuntimeError as exc:  # zipfile's word for an encrypted member
            raise ParseError("encrypted", f"{name} is encrypted") from exc
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, OSError) as exc:
            raise ParseError("corrupt", f"{name} cannot be read from the archive: {exc}") from exc
        if len(data) > limit:
            raise unsafe(f"{name} inflates past its declared size (zip bomb?)")
        self._read_total += len(data)
        if self._read_total > self._limits.max_total_bytes:
            raise unsafe("the archive inflates past the total size limit (zip bomb?)")
        return data


def resolve_href(base: str, href: str) -> tuple[str, str | None] | None:
    """``href`` relative to the member ``base`` as (member, fragment); None when external."""
    parts = urlsplit(href.strip())
    if parts.scheme or parts.netloc:
        return None
    fragment = unquote(parts.fragment) or None
    path = unquote(parts.path)
    if not path:
        return (base, fragment)
    if path.startswith("/") or "\\" in path or "\x00" in path:
        raise unsafe(f"the book refers to {href!r}, outside the archive")
    target = posixpath.normpath(posixpath.join(posixpath.dirname(base), path))
    if target == ".." or target.startswith("../"):
        raise unsafe(f"the book refers to {href!r}, outside the archive")
    return (target, fragment)
