"""``citadel db``: the database itself. ``db migrate --to postgresql://…`` copies the
embedded (SQLite) library into PostgreSQL, verified, in one transaction, then runs
``audit verify`` on the target through the services a server would build.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import TaskID

from citadel.app.errors import AppError
from citadel.bootstrap import build, migrate_library
from citadel.config import ConfigError, Settings
from citadel.entrypoints.cli.support import HomeOption, JsonFlag, emit, err, progress_bar
from citadel.entrypoints.cli.text import terminal_safe
from citadel.setting_kinds import is_postgres_url

db_app = typer.Typer(
    rich_markup_mode=None, help="The database: copy an embedded library into PostgreSQL."
)

_STAGES = {
    "sources": "sources",
    "source_versions": "versions",
    "chunks": "chunks",
    "embeddings": "vectors",
    "users": "users",
    "ended_sessions": "sessions",
    "audit_log": "audit records",
    "lexical": "lexical index",
    "originals": "kept originals",
    "verify": "verifying",
}


@db_app.command("migrate")
def db_migrate(
    to: Annotated[
        str, typer.Option("--to", metavar="URL", help="The PostgreSQL database: postgresql://…")
    ],
    source: Annotated[
        Path | None,
        typer.Option(
            "--from", help="The SQLite library (default: CITADEL_DB, else CITADEL_HOME/citadel.db)."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Copy into a target that holds rows already (a clash undoes it all)."
        ),
    ] = False,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Copy the embedded library (sources, versions, chunks, vectors, users, the audit
    chain, the kept PDF originals of CITADEL_HOME) into PostgreSQL and verify counts,
    content hashes and the chain.

    One transaction: on any failure the target is left as it was. The audit key
    (CITADEL_HOME/audit.key) is not in the database: copy it to every server.
    """
    try:
        settings = Settings.from_env(os.environ).with_overrides(home=home)
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    if not is_postgres_url(to):
        err.print("[red]error:[/red] --to must be a postgresql:// (or postgres://) URL")
        raise typer.Exit(2)
    if source is not None:
        settings = settings.with_overrides(db=str(source))
    elif settings.postgres_url is not None:
        err.print(
            "[red]error:[/red] CITADEL_DB names a PostgreSQL database: pass the SQLite"
            " library with --from"
        )
        raise typer.Exit(2)
    try:
        with progress_bar(err) as bar:
            tasks: dict[str, TaskID] = {}

            def progress(stage: str, done: int, total: int) -> None:
                if stage not in tasks:
                    tasks[stage] = bar.add_task(_STAGES.get(stage, stage), total=total)
                bar.update(tasks[stage], completed=done, total=total)

            report = migrate_library(settings, to, force=force, progress=progress)
    except AppError as exc:
        err.print(f"[red]error:[/red] {terminal_safe(str(exc))}")
        err.print("nothing was copied: the target is as it was")
        raise typer.Exit(1) from exc
    try:
        target = build(settings.with_overrides(db=to))
        try:
            chain = target.audit.verify()
        finally:
            target.close()
    except (AppError, ConfigError) as exc:
        err.print(f"[red]error:[/red] copied, but audit verify on the target failed: {exc}")
        raise typer.Exit(1) from exc
    if json_out:
        emit(
            {
                "rows": report.rows,
                "seconds": {k: round(v, 3) for k, v in report.seconds.items()},
                "audit": {"records": chain.records, "intact": chain.intact},
            }
        )
    else:
        for table, count in report.rows.items():
            print(f"{_STAGES.get(table, table)}: {count}")
        state = "intact" if chain.intact else "BROKEN: " + "; ".join(chain.problems)
        print(f"audit verify on the target: {chain.records} records, {state}")
        print("copy CITADEL_HOME/audit.key to every server that uses this database")
    if not chain.intact:
        raise typer.Exit(1)
