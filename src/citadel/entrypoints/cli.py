"""The ``citadel`` command line: thin wrappers over the use cases.

Machine output (``--json``) goes to stdout; progress and errors go to stderr.
Exit codes: 0 success, 1 some inputs failed, 2 bad usage or configuration.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citadel.app.answer import AnswerRequest
from citadel.app.errors import AppError, IngestError
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.config import ConfigError, Settings
from citadel.domain.model import Actor, Role, SearchRequest
from citadel.entrypoints import render

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="citadel: answers over technical books with citations the application proves.",
)
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON to stdout.")]
HomeOption = Annotated[
    Path | None,
    typer.Option("--home", help="Data directory (default: $CITADEL_HOME or ./.citadel)."),
]


@contextmanager
def _services(home: Path | None, generator: str | None = None) -> Iterator[Services]:
    try:
        settings = Settings.from_env(os.environ).with_overrides(home=home, generator=generator)
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        raise typer.Exit(2) from exc
    services = build(settings)
    try:
        yield services
    finally:
        services.close()


def _local_actor(settings: Settings) -> Actor:
    # Until users exist (the authorization issue), the CLI acts as the local administrator.
    return Actor(user_id="local", tenant=settings.tenant, role=Role.ADMIN)


def _emit(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files (PDF, Markdown, text) to ingest.")],
    source_id: Annotated[str | None, typer.Option(help="Stable id for this source.")] = None,
    url: Annotated[str | None, typer.Option(help="Trusted canonical URL of the source.")] = None,
    tenant: Annotated[str | None, typer.Option(help="Tenant the source belongs to.")] = None,
    acl: Annotated[
        str | None, typer.Option(help="Comma-separated groups that may read it.")
    ] = None,
    title: Annotated[str | None, typer.Option(help="Override the title from the file.")] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Ingest files; each is committed whole or not at all, and reported on its own."""
    if source_id and len(paths) > 1:
        err.print("[red]error:[/red] --source-id names one source; give one path with it")
        raise typer.Exit(2)
    failed = 0
    with _services(home) as services:
        options = IngestOptions(
            tenant=tenant or services.settings.tenant,
            source_id=source_id,
            url=url,
            acl_groups=frozenset(g.strip() for g in (acl or "").split(",") if g.strip()),
            title=title,
        )
        for path in paths:
            try:
                with _progress(path.name) as tick:
                    report = services.ingest.ingest(path, options, tick)
            except IngestError as exc:
                failed += 1
                err.print(f"[red]failed[/red] {render.terminal_safe(str(exc))}")
                if json_out:
                    _emit(
                        {
                            "path": str(path),
                            "status": "failed",
                            "reason": exc.reason,
                            "error": str(exc),
                        }
                    )
                continue
            if json_out:
                _emit(render.ingest_json(report))
            else:
                err.print(
                    f"[green]{report.status}[/green] {render.terminal_safe(report.title)}"
                    f" — source {report.source_id} v{report.version}:"
                    f" {report.pages} pages, {report.sections} sections, {report.chunks} chunks"
                )
    if failed:
        raise typer.Exit(1)


@contextmanager
def _progress(label: str) -> Iterator[Any]:
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    task = progress.add_task(render.terminal_safe(label)[:40], total=None)

    def tick(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    with progress:
        yield tick


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for (plain text).")],
    limit: Annotated[int, typer.Option(min=1, max=100, help="How many results.")] = 10,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Search the library; results never depend on a generator."""
    with _services(home) as services:
        try:
            result = services.search.search(
                SearchRequest(query=query, limit=limit), _local_actor(services.settings)
            )
        except AppError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    if json_out:
        _emit(render.search_json(result))
    elif not result.results:
        print("No results.")
    else:
        print(render.terminal_safe("\n".join(render.search_lines(result, limit))))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    generator: Annotated[str | None, typer.Option(help="extractive (default, no LLM).")] = None,
    minimum_evidence_score: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Score floor for evidence, in [0, 1].")
    ] = 0.0,
    limit: Annotated[int, typer.Option(min=1, max=50, help="Search results to consider.")] = 20,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Answer from the library with footnoted, application-proven citations."""
    with _services(home, generator) as services:
        try:
            result = asyncio.run(
                services.answer.answer(
                    AnswerRequest(
                        SearchRequest(query=question, limit=limit), minimum_evidence_score
                    ),
                    _local_actor(services.settings),
                )
            )
        except AppError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    if json_out:
        _emit(render.answer_json(result))
    else:
        print(render.terminal_safe(render.answer_text(result)))


@app.command()
def demo(
    home: Annotated[Path, typer.Option("--home", help="Where the demo keeps its library.")] = Path(
        ".citadel-demo"
    ),
) -> None:
    """Ingest a real book and answer three questions with footnoted citations."""
    from citadel.entrypoints.demo import run_demo

    raise typer.Exit(run_demo(home, err))


def main() -> None:
    app()
