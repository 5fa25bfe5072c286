"""Secret keys kept in the data directory, made once by whichever process comes first.

Several processes may start on one ``CITADEL_HOME`` at the same moment (a batch of
ingests, the servers of one deployment). A key is written whole to a private file
of its own and then linked to its name, which fails if the name exists: a reader
sees no key or the whole key, never a file still being written, and every process
ends with the one key that won. The audit key (``AuditKeyFile``, which the SQLite and
PostgreSQL audit logs and ``citadel db migrate`` share) and the viewer's key are made
this way.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from citadel.domain.audit_chain import KEY_BYTES, AuditKey


def create_once(path: Path, secret: bytes) -> bool:
    """Put ``secret`` at ``path`` (mode 0600) unless a key is there already; whether this
    call's key is the one there now. The name is made durable before returning."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    try:
        write_private(draft, secret)
        try:
            os.link(draft, path)
            created = True
        except FileExistsError:
            created = False
        except OSError:  # no hard links on this file system: create it in place
            try:
                write_private(path, secret)
                created = True
            except FileExistsError:
                created = False
    finally:
        draft.unlink(missing_ok=True)
    if created:
        sync_directory(path.parent)
    return created


def read_or_create(path: Path, size: int) -> bytes:
    """The key at ``path``, made first (``size`` random bytes) if there is none."""
    if not path.exists():
        create_once(path, secrets.token_bytes(size))
    return path.read_bytes()


def write_private(path: Path, data: bytes) -> None:
    """``data`` in a new file only its owner may read (``FileExistsError`` if it exists)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def sync_directory(directory: Path) -> None:
    """Make a new file's name durable before anything keyed with it commits."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.fsync(fd)
    os.close(fd)


class AuditKeyFile:
    """The audit key's file: read as it is now, or created once (0600, whole or not at all)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> AuditKey:
        where = str(self.path)
        try:
            secret = self.path.read_bytes()
        except FileNotFoundError:
            return AuditKey(where)
        except OSError as exc:
            return AuditKey(where, trouble=f"it cannot be read: {exc.strerror or exc}")
        if len(secret) < KEY_BYTES:
            return AuditKey(where, trouble=f"it holds fewer than {KEY_BYTES} bytes")
        return AuditKey(where, secret)

    def create(self) -> tuple[bytes, bool]:
        """A new key, written to a private file and linked into place so no reader sees
        it half-written; ``(key, False)`` when another writer's key got there first."""
        created = create_once(self.path, secrets.token_bytes(KEY_BYTES))
        key = self.read()
        if key.secret is None:
            raise ValueError(f"the audit key {key.where} cannot be used ({key.trouble})")
        return key.secret, created

    def discard(self) -> None:
        """Remove a key this writer created for an append that did not commit."""
        self.path.unlink(missing_ok=True)
