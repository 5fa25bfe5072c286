"""The embedder's files, read from their packages and checked against their pins.

The model and the tokenizer come from data-only packages of small publishers:
their bytes are compared with a pinned sha256 before anything parses them, and
the caller builds from those same bytes (``adapters/pinned_files.py``).
"""

from __future__ import annotations

from pathlib import Path

from citadel.adapters import pinned_files
from citadel.app.errors import AppError


class EmbedderUnavailable(AppError):
    """The embedding model cannot be used: a package is missing or a file was altered."""


def read_pinned(path: Path | None, package: str, parts: tuple[str, ...], sha256: str) -> bytes:
    """The file's bytes after checking their sha256; the packaged file unless ``path``."""
    return pinned_files.read_pinned(path, package, parts, sha256, error=EmbedderUnavailable)
