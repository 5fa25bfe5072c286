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

LEGACY_HOME = Path(".citadel")
"""The working-directory library that citadel used before the per-user default."""


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
    home: Path | None,
    generator: str | None = None,
    *,
    serving: bool = False,
    reading: bool = False,
) -> Iterator[Services]:
    """The services over the library ``home`` (else ``CITADEL_HOME``, else the user's own).

    ``reading``: the command only reads (search, ask), so a library that is not there
    is said, with where citadel looked, and the command exits 1 before creating one.
    """
    try:
        settings = Settings.from_env(os.environ).with_overrides(home=home, generator=generator)
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    note_legacy_home(settings, given=home is not None or "CITADEL_HOME" in os.environ)
    if reading and settings.postgres_url is None and not settings.db_path.is_file():
        err.print(
            f"[red]error:[/red] there is no library at {escape(where(settings))}. {NEXT_STEP}",
            soft_wrap=True,
        )
        raise typer.Exit(1)
    try:
        services = build(settings, serving=serving)
    except (ConfigError, AppError) as exc:
        err.print(f"[red]configuration error:[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    try:
        yield services
    finally:
        services.close()


NEXT_STEP = (
    "Add a book with `citadel ingest FILE` (or run `citadel demo`), or point CITADEL_HOME"
    " (or --home) at the library you meant."
)


def where(settings: Settings) -> str:
    """The library's place as a reader can check it (never a database URL's password)."""
    if settings.postgres_url is not None:
        return "the PostgreSQL database CITADEL_DB names"
    place = settings.db_path.parent if not settings.db else settings.db_path
    return terminal_safe(str(place.absolute()))  # CITADEL_HOME="" is the working directory


def require_books(services: Services, actor: Actor) -> None:
    """A library that holds no book at all in ``actor``'s tenant is said plainly; exit 1.

    Without it an empty library answered ``No generated answer (no_evidence)`` and
    exit 0, which reads as "the books do not say" rather than "there are no books".
    Books that exist but that ``--as`` a reader may not read are not an empty library:
    that reader gets no results, as over HTTP.
    """
    if holds_books(services, actor.tenant):
        return
    err.print(f"[red]error:[/red] {empty_library(services, actor.tenant)}", soft_wrap=True)
    raise typer.Exit(1)


def holds_books(services: Services, tenant: str | None = None) -> bool:
    """Whether the library holds a live book in ``tenant`` (default: the configured one),
    whoever may read it."""
    tenant = services.settings.tenant if tenant is None else tenant
    return bool(services.library.list(Actor(user_id="local", tenant=tenant, role=Role.ADMIN)))


def empty_library(services: Services, tenant: str | None = None) -> str:
    """What an empty library is told as, with where citadel looked (rich markup escaped);
    a tenant other than the configured one is named."""
    named = "" if tenant in (None, services.settings.tenant) else f" in tenant {tenant}"
    return (
        f"the library at {escape(where(services.settings))} holds no books"
        f"{escape(terminal_safe(named))}. {NEXT_STEP}"
    )


def refuse_empty(text: str) -> None:
    """A blank query is a usage error (exit 2), said before the library is looked for.

    The search use case refuses it too; this only keeps the usage error first.
    """
    if not text.strip():
        err.print("[red]error:[/red] the query is empty")
        raise typer.Exit(2)


def note_legacy_home(settings: Settings, *, given: bool) -> None:
    """One line when ``./.citadel`` holds a library that the per-user default passes over.

    Before the per-user default, a library lived in ``./.citadel`` of the working
    directory; such a library is not moved or read without being asked for.
    """
    legacy = LEGACY_HOME / "citadel.db"
    if given or settings.db or not legacy.is_file():
        return
    if legacy.resolve() == settings.db_path.resolve():
        return
    err.print(
        f"note: ./{LEGACY_HOME} holds a library, but citadel now keeps one per user in"
        f" {escape(where(settings))}; to use the old one, set CITADEL_HOME=./{LEGACY_HOME}"
        " (or pass --home), or move it there.",
        soft_wrap=True,
        highlight=False,
    )


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
