"""The README opens with a quickstart: clone to an answer in the browser, under 40 lines."""

from __future__ import annotations

import re

import typer

from citadel.entrypoints.cli import app
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def quickstart() -> str:
    sections = re.split(r"^## ", README, flags=re.MULTILINE)
    first = sections[1]
    assert first.startswith("Quickstart"), "the README's first section is the quickstart"
    return first


def test_the_quickstart_is_first_and_under_forty_lines() -> None:
    before = README[: README.index("## Quickstart")]
    assert len(before.splitlines()) + len(quickstart().splitlines()) < 40


def test_the_quickstart_goes_from_make_demo_to_the_browser_with_real_commands() -> None:
    commands = [
        line.split("#")[0].strip()
        for line in quickstart().splitlines()
        if line.startswith(("make ", "citadel ", "cd ~ && citadel "))
    ]
    assert commands[0] == "make demo"
    named = [c.removeprefix("cd ~ && ").split()[1] for c in commands[1:]]
    assert named == ["ask", "users", "serve"]
    commands_of_citadel = set(getattr(typer.main.get_command(app), "commands", {}))
    assert set(named) <= commands_of_citadel
    assert "http://127.0.0.1:8080/" in quickstart()
