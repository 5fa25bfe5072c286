"""An MCP client starts ``citadel mcp`` wherever it likes, with a minimal environment.

Before the per-user default, that process looked for ``./.citadel`` of the client's
working directory and served another, empty library. Now it serves the user's own
library (``~/.local/share/citadel`` with no ``XDG_DATA_HOME``), the one ``citadel
ingest`` filled from elsewhere; an empty library is served with a note on stderr.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.mcp.conftest import citadel_command

BOOK = "# Zebracorn notes\n\n## Feeding\n\nA zebracorn eats quokka leaves at dawn.\n"


def minimal_env(home: Path) -> dict[str, str]:
    """What an MCP client typically passes: HOME and PATH, no citadel variables."""
    kept = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "PYTHONPATH")}
    return {**kept, "HOME": str(home), "CITADEL_EMBEDDER": "none", "HF_HUB_OFFLINE": "1"}


def search_over_stdio(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def main() -> None:
        command = citadel_command()
        params = StdioServerParameters(
            command=command[0], args=[*command[1:], "mcp"], env=env, cwd=str(cwd)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("search", {"query": "zebracorn quokka"})
            assert not result.is_error, result.content
            found.update(result.structured_content or {})

    anyio.run(main)
    return found


def test_mcp_started_anywhere_serves_the_users_own_library(tmp_path: Path) -> None:
    user_home = tmp_path / "user"
    notes = tmp_path / "notes"
    client_dir = tmp_path / "client"
    for folder in (user_home, notes, client_dir):
        folder.mkdir()
    (notes / "zebracorn.md").write_text(BOOK, encoding="utf-8")
    env = minimal_env(user_home)
    ingested = subprocess.run(
        [*citadel_command(), "ingest", "zebracorn.md"],
        cwd=notes,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ingested.returncode == 0, ingested.stderr
    assert (user_home / ".local" / "share" / "citadel" / "citadel.db").is_file()

    found = search_over_stdio(env, client_dir)
    assert [r["title"] for r in found["results"]] == ["Zebracorn notes"]
    assert not (client_dir / ".citadel").exists()


def test_mcp_on_an_empty_library_says_so_on_stderr_and_still_serves(tmp_path: Path) -> None:
    env = minimal_env(tmp_path)
    started = subprocess.run(
        [*citadel_command(), "mcp"],
        cwd=tmp_path,
        env=env,
        input="",  # the client hangs up at once
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert started.stdout == ""  # stdout is the transport's alone
    assert "note: the library at" in started.stderr
    assert "holds no books" in started.stderr
