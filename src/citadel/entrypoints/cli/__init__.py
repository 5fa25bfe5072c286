"""The ``citadel`` command line (``citadel.entrypoints.cli:main``, ``python -m citadel``).

``commands`` holds the root app and the library's commands (ingest, reindex,
search, ask, citation, demo); ``admin`` the sources, users and audit groups;
``serve`` the HTTP and gRPC servers and their certificates; ``evaluation`` the
eval group; ``support`` what they share; ``text`` the terminal's forms.

``citadel --version`` is answered here from the package metadata, before the
commands (and with them the services, numpy, httpx and the parsers) are imported:
loading them all took about half a second, for one line.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citadel.entrypoints.cli.commands import app

__all__ = ["app", "main"]


def main() -> None:
    """Run the command line; a lone ``--version`` prints the version and imports nothing more."""
    if sys.argv[1:] == ["--version"]:
        from citadel import package_version

        sys.stdout.write(f"citadel {package_version()}\n")
        return
    from citadel.entrypoints.cli.commands import main as run

    run()


def __getattr__(name: str) -> Any:
    # ``app`` is imported on first use, so that ``main`` can answer --version without it.
    if name == "app":
        from citadel.entrypoints.cli.commands import app as commands_app

        return commands_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
