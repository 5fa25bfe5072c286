"""What every ``citadel`` command shares: the stderr console, the common options,
opening the services, choosing the actor, and printing errors and JSON.

Machine output (``--json``) goes to stdout; progress and errors go to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citadel.app.errors import AppError
from citadel.bootstrap import Services, build
from citadel.config import ConfigError, Settings, cli_default
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli.text import terminal_safe
from citadel.entrypoints.present.json_lines import json_line

err = Console(stderr=True)


def progress_bar(console: Console) -> Progress:
    """The bars long commands show on stderr: label, bar, done/total, time; gone when done."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON to stdout.")]
HomeOption = Annotated[
    Path | None,
    typer.Option("--home", help=f"Data directory (default: {cli_default('CITADEL_HOME')})."),
]
AsOption = Annotated[
    str | None,
    typer.Option(
        "--as",
        metavar="USER",
        help="Act as this user: its tenant, role and groups"
        " (default: the local administrator of $CITADEL_TENANT).",
    ),
]


@contextmanager
def open_services(
    home: Path | None, generator: str | None = None, *, serving: bool = False
) -> Iterator[Services]:
    try:
        settings = Settings.from_env(os.environ).with_overrides(home=home, generator=generator)
        services = build(settings, serving=serving)
    except (ConfigError, AppError) as exc:
        err.print(f"[red]configuration error:[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    try:
        yield services
    finally:
        services.close()


def local_actor(settings: Settings) -> Actor:
    # Whoever can run the CLI can open the database: without --as it is the administrator.
    return Actor(user_id="local", tenant=settings.tenant, role=Role.ADMIN)


def actor_for(services: Services, as_user: str | None) -> Actor:
    """The actor for a command: the user named by ``--as``, else the local administrator.

    An unknown or disabled user is a usage error (exit 2); nothing runs for it.
    """
    if as_user is None:
        return local_actor(services.settings)
    try:
        return services.users.actor(as_user)
    except AppError as exc:
        print_error(exc)
        raise typer.Exit(2) from exc


def print_error(exc: Exception) -> None:
    err.print(f"[red]error:[/red] {escape(terminal_safe(str(exc)))}")


def emit(value: Any) -> None:
    sys.stdout.write(json_line(value) + "\n")


def parse_groups(text: str | None) -> frozenset[str]:
    """A comma-separated group list; blanks around and between the commas are dropped."""
    return frozenset(g.strip() for g in (text or "").split(",") if g.strip())


def library_call(home: Path | None, call: Any, as_user: str | None = None) -> Any:
    with open_services(home) as services:
        actor = actor_for(services, as_user)
        try:
            return call(services, actor)
        except AppError as exc:
            print_error(exc)
            raise typer.Exit(1) from exc
