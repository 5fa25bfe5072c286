"""Secret keys kept in the data directory, made once by whichever process comes first.

Several processes may start on one ``CITADEL_HOME`` at the same moment (a batch of
ingests, the servers of one deployment). A key is written whole to a private file
of its own and then linked to its name, which fails if the name exists: a reader
sees no key or the whole key, never a file still being written, and every process
ends with the one key that won.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def read_or_create(path: Path, size: int) -> bytes:
    """The key at ``path``, made first (``size`` random bytes, mode 0600) if there is none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(secrets.token_bytes(size))
                out.flush()
                os.fsync(out.fileno())
            # Another process's key may have won meanwhile: then that one is read.
            with contextlib.suppress(FileExistsError):
                os.link(draft, path)
        finally:
            draft.unlink(missing_ok=True)
    return path.read_bytes()
