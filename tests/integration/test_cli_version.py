"""``citadel --version`` answers before the commands are imported.

Importing the commands pulls in the services, numpy, httpx, the parsers, typer and
rich: about half a second for one line (``bench/cli_version.py`` measures it). The
check here is what the version path imports, not how long it takes.
"""

from __future__ import annotations

import json
import subprocess
import sys

from citadel import package_version

HEAVY = (
    "citadel.entrypoints.cli.commands",
    "citadel.bootstrap",
    "citadel.app",
    "numpy",
    "httpx",
    "pypdf",
    "typer",
    "rich",
    "pydantic",
)

PROBE = """
import json, sys
sys.argv = ["citadel", "--version"]
from citadel.entrypoints.cli import main
try:
    main()
except SystemExit as exit:  # click's way out of an eager option
    assert exit.code in (None, 0), exit.code
print(json.dumps(sorted(sys.modules)))
"""


def test_the_version_path_imports_nothing_heavy() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    version_line, modules_line = ran.stdout.splitlines()
    assert version_line == f"citadel {package_version()}"
    loaded = json.loads(modules_line)
    heavy = [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == [], heavy


def test_python_dash_m_prints_the_same_version() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "citadel", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ran.stdout == f"citadel {package_version()}\n" and ran.stderr == ""


def test_the_full_cli_still_answers_help_and_commands() -> None:
    from typer.testing import CliRunner

    from citadel.entrypoints.cli import app

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"citadel {package_version()}"
    assert "ingest" in CliRunner().invoke(app, ["--help"]).stdout
