"""A server's own copies of originals kept elsewhere, so the renderer gets a file.

``<root>/<sha256>.pdf``: named by the content's hash, each is written to a temporary
name, checked against that hash and renamed, so a reader never sees half a file or
a wrong one. The cache is derived data (the store it copies from decides what
exists; ``PostgresOriginals.find`` asks it first), so it may differ per server and
may be removed at any time. Bounded by ``max_bytes``: after each fill the least
recently used files (by modification time, which a fill or a hit refreshes) go until
the total fits, except a copy handed out (filled or hit) in the last ``in_use_s``
(5 minutes): the renderer it was handed to may not have opened it yet, and a file
removed under it fails that page image. So while more than ``max_bytes`` of
originals are being read within those minutes, the cache holds more than its bound
until they go unused.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

DEFAULT_MAX_BYTES = 2 << 30  # 2 GiB
# A temporary file older than this was left by a fill that died (a crash, a kill).
_STALE_INCOMING_S = 3600.0
# A copy handed out this recently may still be on its way to the renderer: kept.
IN_USE_S = 300.0


class OriginalCache:
    def __init__(
        self, root: Path, max_bytes: int = DEFAULT_MAX_BYTES, *, in_use_s: float = IN_USE_S
    ) -> None:
        self._root = root
        self._max_bytes = max_bytes
        self._in_use_s = in_use_s
        # A hit's refresh, a fill's rename and an eviction's last look are one at a
        # time, so a copy handed out is never one an eviction judged unused just before.
        self._handing_out = threading.Lock()

    def hit(self, sha256: str, size: int) -> Path | None:
        """The cached copy of that content, refreshed as recently used, if there is one."""
        path = self._path(sha256)
        with self._handing_out:
            try:
                if path.stat().st_size != size:
                    return None
                os.utime(path)
            except OSError:
                return None
        return path

    def fill(self, sha256: str, size: int, parts: Iterable[bytes]) -> Path | None:
        """Write ``parts`` as the copy of that content; None (nothing kept) when they do
        not hash to ``sha256`` or add up to ``size`` (the original changed meanwhile)."""
        self._root.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=self._root, prefix=".incoming-")
        digest, written = hashlib.sha256(), 0
        try:
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    out.write(part)
                    digest.update(part)
                    written += len(part)
            if digest.hexdigest() != sha256 or written != size:
                return None
            path = self._path(sha256)
            with self._handing_out:  # never between an eviction's last look and its unlink
                os.replace(temporary, path)
        finally:
            Path(temporary).unlink(missing_ok=True)
        self._sweep(keep=path)
        return path

    def hashes(self) -> list[str]:
        """The contents this cache holds a copy of."""
        if not self._root.is_dir():
            return []
        return [p.stem for p in self._root.glob("*.pdf") if len(p.stem) == 64]

    def drop(self, sha256: str) -> None:
        """Remove the copy of that content (its original was deleted)."""
        self._path(sha256).unlink(missing_ok=True)

    def _path(self, sha256: str) -> Path:
        if len(sha256) != 64 or not all(c in "0123456789abcdef" for c in sha256):
            raise ValueError("not a sha256 in hex")
        return self._root / f"{sha256}.pdf"

    def _sweep(self, keep: Path) -> None:
        now = time.time()
        files: list[tuple[float, int, Path]] = []
        for entry in self._root.iterdir():
            with contextlib.suppress(OSError):
                stat = entry.stat()
                if entry.name.startswith(".incoming-"):
                    if now - stat.st_mtime > _STALE_INCOMING_S:
                        entry.unlink()
                elif entry.suffix == ".pdf":
                    files.append((stat.st_mtime, stat.st_size, entry))
        total = sum(size for _, size, _ in files)
        for _, size, entry in sorted(files):
            if total <= self._max_bytes:
                break
            if entry == keep:
                continue
            with self._handing_out, contextlib.suppress(OSError):
                if time.time() - entry.stat().st_mtime < self._in_use_s:
                    continue  # handed out recently: the renderer may not have it open yet
                entry.unlink()
                total -= size
