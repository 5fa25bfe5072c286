"""Where a user's library lives when nothing says otherwise: the platform's convention.

``platformdirs`` knows each platform's per-user data folder: on Linux and the BSDs
``$XDG_DATA_HOME/citadel`` (``~/.local/share/citadel`` when unset), on macOS
``~/Library/Application Support/citadel``, on Windows ``%LOCALAPPDATA%\\citadel``.
One folder per user, whatever the working directory, so ``citadel demo``, every
other command, ``serve`` and an MCP client's ``citadel mcp`` share one library.
``CITADEL_HOME`` (or ``--home``) overrides it.
"""

from __future__ import annotations

from pathlib import Path

import platformdirs

APP_NAME = "citadel"


def default_home() -> Path:
    """The per-user data directory, read from the environment at each call (not cached)."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False, roaming=False))
