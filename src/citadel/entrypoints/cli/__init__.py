"""The ``citadel`` command line (``citadel.entrypoints.cli:main``, ``python -m citadel``).

``commands`` holds the root app and the library's commands (ingest, reindex,
search, ask, citation, demo); ``admin`` the sources, users and audit groups;
``serve`` the HTTP and gRPC servers and their certificates; ``evaluation`` the
eval group; ``support`` what they share; ``text`` the terminal's forms.
"""

from citadel.entrypoints.cli.commands import app, main

__all__ = ["app", "main"]
