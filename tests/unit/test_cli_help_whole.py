"""Every command's help names every option whole, at 80 columns and into a pipe.

Rich's help panels cut long option names to fit (``--minimum-evidence-sc…`` in
``citadel ask --help``); the CLI prints click's plain help, which wraps instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import typer
from typer.testing import CliRunner

from citadel.entrypoints.cli import app


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, group
    for name, command in sorted(getattr(group, "commands", {}).items()):
        yield from commands(command, (*path, name))


def test_every_option_of_every_command_is_named_whole_in_its_help() -> None:
    root = typer.main.get_command(app)
    seen = 0
    for path, command in commands(root):
        shown = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
        assert shown.exit_code == 0, (path, shown.output)
        assert not re.search(r"--[\w-]+…", shown.stdout), path  # a name cut short
        assert not set("╭╰│─") & set(shown.stdout), path  # no boxes into a pipe
        for parameter in command.params:
            for option in getattr(parameter, "opts", ()):
                if option.startswith("--"):
                    assert option in shown.stdout, (path, option)
                    seen += 1
        assert all(len(line) <= 80 for line in shown.stdout.splitlines()), path
    assert seen > 50  # the walk reached the commands' options
