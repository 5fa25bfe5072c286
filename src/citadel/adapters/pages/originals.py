"""Original files kept on disk, one per source version, under the library's home.

``<root>/<digest of tenant and source id>/v<version>.pdf``: the digest keeps any
source id or tenant name out of the path. Copies are written to a temporary name
and renamed, so a reader never sees half a file. Bounded by the upload limit per
file and by the retained versions per source.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Collection
from pathlib import Path


class FileOriginals:
    def __init__(self, root: Path) -> None:
        self._root = root

    def keep(
        self, tenant: str, source_id: str, version: int, file: Path, retained: Collection[int]
    ) -> None:
        folder = self._folder(tenant, source_id)
        folder.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=".incoming-")
        os.close(fd)
        try:
            shutil.copyfile(file, temporary)
            os.replace(temporary, folder / f"v{version}.pdf")
        finally:
            Path(temporary).unlink(missing_ok=True)
        self.prune(tenant, source_id, {*retained, version})

    def prune(self, tenant: str, source_id: str, retained: Collection[int]) -> None:
        kept = set(retained)
        for old in self._folder(tenant, source_id).glob("v*.pdf"):
            number = old.stem[1:]
            if number.isdigit() and int(number) not in kept:
                old.unlink(missing_ok=True)

    def find(self, tenant: str, source_id: str, version: int) -> Path | None:
        path = self._folder(tenant, source_id) / f"v{version}.pdf"
        return path if path.is_file() else None

    def has(self, tenant: str, source_id: str, version: int) -> bool:
        return self.find(tenant, source_id, version) is not None

    def forget(self, tenant: str, source_id: str) -> None:
        shutil.rmtree(self._folder(tenant, source_id), ignore_errors=True)

    def close(self) -> None:
        """Nothing to stop: the files are the store."""

    def _folder(self, tenant: str, source_id: str) -> Path:
        digest = hashlib.sha256(f"{tenant}\0{source_id}".encode()).hexdigest()[:32]
        return self._root / digest
