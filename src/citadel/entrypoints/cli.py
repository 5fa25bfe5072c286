"""The ``citadel`` command line: thin wrappers over the use cases.

Machine output (``--json``) goes to stdout; progress and errors go to stderr.
Exit codes: 0 success, 1 some inputs failed, 2 bad usage or configuration.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    TaskID,
)

from citadel.app.answer import AnswerRequest
from citadel.app.errors import AppError, IngestError, LibraryChanged
from citadel.app.ingest import IngestOptions
from citadel.app.ports import ProgressCallback
from citadel.bootstrap import Services, build_answer_client
from citadel.config import ConfigError, Settings
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from citadel.entrypoints import render
from citadel.entrypoints.cli_admin import audit_app, sources_app, users_app
from citadel.entrypoints.cli_support import (
    AsOption,
    HomeOption,
    JsonFlag,
    actor_for,
    emit,
    err,
    library_call,
    open_services,
    parse_groups,
    print_error,
    progress_bar,
)
from citadel.entrypoints.grpc_cli import certs_app, serve_grpc
from citadel.entrypoints.reindex import (
    missing_vectors_warning,
    reindex_json,
    reindex_line,
    run_reindex,
)

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="citadel: answers over technical books with citations the application proves.",
)


@app.command()
def ingest(
    paths: Annotated[
        list[Path],
        typer.Argument(help="Files (PDF, EPUB, HTML, Markdown, text) or HTML book folders."),
    ],
    source_id: Annotated[str | None, typer.Option(help="Stable id for this source.")] = None,
    url: Annotated[str | None, typer.Option(help="Trusted canonical URL of the source.")] = None,
    tenant: Annotated[str | None, typer.Option(help="Tenant the source belongs to.")] = None,
    acl: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated groups that may read it (default: a new source is open to"
            ' its tenant, a new version keeps the source\'s groups; "" opens it).'
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="Override the title from the file.")] = None,
    author: Annotated[
        list[str] | None, typer.Option(help="Author (repeatable); overrides the file's.")
    ] = None,
    year: Annotated[int | None, typer.Option(help="Publication year.")] = None,
    tag: Annotated[list[str] | None, typer.Option(help="Tag (repeatable).")] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Ingest files; each is committed whole or not at all, and reported on its own."""
    if source_id and len(paths) > 1:
        err.print("[red]error:[/red] --source-id names one source; give one path with it")
        raise typer.Exit(2)
    failed = 0
    with open_services(home) as services:
        options = IngestOptions(
            tenant=tenant or services.settings.tenant,
            source_id=source_id,
            url=url,
            # No --acl keeps a stored source's ACL; --acl "" opens it to its tenant.
            acl_groups=None if acl is None else parse_groups(acl),
            title=title,
            authors=tuple(author) if author else None,
            year=year,
            tags=tuple(tag) if tag else None,
        )
        # Whoever can run the CLI can open the database: the administrator of the tenant.
        operator = Actor(user_id="local", tenant=options.tenant, role=Role.ADMIN)
        for path in paths:
            try:
                with _progress(path.name) as (parsed, embedded):
                    report = services.ingest.ingest(
                        services.documents.open(path),
                        options,
                        actor=operator,
                        progress=parsed,
                        embed_progress=embedded,
                    )
            except AppError as exc:
                # A refused file (IngestError), or what stops any file now (the
                # embedding model cannot load): reported per path, the rest go on.
                failed += 1
                reason = exc.reason if isinstance(exc, IngestError) else _code(exc)
                shown = str(exc) if isinstance(exc, IngestError) else f"{path}: {exc}"
                err.print(f"[red]failed[/red] {escape(render.terminal_safe(shown))}")
                if json_out:
                    emit({"path": str(path), "status": "failed", "reason": reason, "error": shown})
                continue
            if json_out:
                emit(render.ingest_json(report))
            else:
                err.print(
                    f"[green]{report.status}[/green] {escape(render.terminal_safe(report.title))}"
                    f" — source {report.source_id} v{report.version}:"
                    f" {report.pages} pages, {report.sections} sections, {report.chunks} chunks"
                )
    if failed:
        raise typer.Exit(1)


def _code(exc: Exception) -> str:
    """A stable reason code from an error's class: EmbedderUnavailable -> embedder_unavailable."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()


@contextmanager
def _progress(label: str) -> Iterator[tuple[ProgressCallback, ProgressCallback]]:
    """Two bars on stderr: the file's pages as they are parsed, then its chunks as
    they are embedded (the long part of a large book); the second appears when
    embedding starts, and both vanish when the file is done."""
    progress = progress_bar(err)
    name = render.terminal_safe(label)[:40]
    parsing = progress.add_task(f"{name}: parsing", total=None)
    embedding: list[TaskID] = []

    def parsed(done: int, total: int) -> None:
        progress.update(parsing, completed=done, total=total)

    def embedded(done: int, total: int) -> None:
        if not embedding:
            embedding.append(progress.add_task(f"{name}: embedding chunks", total=total))
        progress.update(embedding[0], completed=done, total=total)

    with progress:
        yield parsed, embedded


@app.command()
def reindex(json_out: JsonFlag = False, home: HomeOption = None) -> None:
    """Embed the chunks that lack a vector for the configured model; a stopped run keeps its work.

    Run it after changing CITADEL_EMBEDDER, or after an upgrade renames the default model.
    """
    with open_services(home) as services:
        try:
            report = run_reindex(services.reindex, err)
        except LibraryChanged as exc:
            print_error(exc)
            raise typer.Exit(1) from exc
        except AppError as exc:
            print_error(exc)
            raise typer.Exit(2) from exc
        except KeyboardInterrupt:
            err.print("stopped: the vectors stored so far are kept; run it again to continue")
            raise typer.Exit(130) from None
    if json_out:
        emit(reindex_json(report))
    else:
        print(render.terminal_safe(reindex_line(report)))


def _warn_missing_vectors(services: Services) -> None:
    """One line on stderr when dense search cannot see some chunks; stdout is untouched."""
    warning = missing_vectors_warning(services.reindex)
    if warning:
        err.print(escape(render.terminal_safe(warning)), soft_wrap=True, highlight=False)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for (plain text).")],
    limit: Annotated[int, typer.Option(min=1, max=100, help="How many results.")] = 10,
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Search the library; results never depend on a generator."""
    with open_services(home) as services:
        actor = actor_for(services, as_user)
        _warn_missing_vectors(services)
        try:
            result = services.search.search(SearchRequest(query=query, limit=limit), actor)
        except AppError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    if json_out:
        emit(render.search_json(result))
    elif not result.results:
        print("No results.")
    else:
        print(render.terminal_safe("\n".join(render.search_lines(result, limit))))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    generator: Annotated[
        str | None,
        typer.Option(help="extractive (default, no LLM) or openai (needs CITADEL_LLM_*)."),
    ] = None,
    minimum_evidence_score: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Score floor for evidence, in [0, 1].")
    ] = 0.0,
    limit: Annotated[int, typer.Option(min=1, max=50, help="Search results to consider.")] = 20,
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Answer from the library with footnoted, application-proven citations."""
    with open_services(home, generator) as services:
        actor = actor_for(services, as_user)
        _warn_missing_vectors(services)
        try:
            result = asyncio.run(
                services.answer.answer(
                    AnswerRequest(
                        SearchRequest(query=question, limit=limit), minimum_evidence_score
                    ),
                    actor,
                )
            )
        except AppError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    if json_out:
        emit(render.answer_json(result))
    else:
        print(render.terminal_safe(render.answer_text(result)))


app.command("serve-grpc")(serve_grpc)
app.add_typer(certs_app, name="certs")

app.add_typer(sources_app, name="sources")
app.add_typer(users_app, name="users")


@app.command()
def citation(
    answer_id: Annotated[str, typer.Argument(help="The answer_id of `ask --json`.")],
    ref: Annotated[str, typer.Argument(help="The citation's ref, e.g. E1.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Resolve one citation of an earlier answer again, for this reader now."""

    def resolve(services: Services, actor: Actor) -> Any:
        target = services.audit.target(answer_id, ref, actor)
        return services.resolver.resolve([target], actor)[0]

    link = library_call(home, resolve, as_user)
    if json_out:
        emit({"answer_id": answer_id, "ref": ref, "link": render.link_json(link)})
    else:
        print(render.terminal_safe(f"{ref}: {link.state.value} {link.href or ''}".rstrip()))


app.add_typer(audit_app, name="audit")


eval_app = typer.Typer(no_args_is_help=True, help="Measure retrieval quality.")
app.add_typer(eval_app, name="eval")


@eval_app.command("retrieval")
def eval_retrieval(
    beir: Annotated[Path, typer.Option("--beir", help="A BEIR-format data set directory.")],
    split: Annotated[str, typer.Option("--split", help="Which qrels/SPLIT.tsv to score.")],
    modes: Annotated[
        str, typer.Option(help="Comma-separated: lexical, dense, hybrid.")
    ] = "lexical,dense,hybrid",
    max_queries: Annotated[
        int | None, typer.Option(min=1, help="Score only the first N judged queries.")
    ] = None,
    json_out: JsonFlag = False,
    home: Annotated[
        Path | None,
        typer.Option("--home", help="Keep the evaluation library here (re-runs skip ingestion)."),
    ] = None,
) -> None:
    """Ingest a BEIR corpus (each document a source) and report nDCG@10, Recall@10,
    Recall@100 and MRR@10 for each retrieval mode, in one run."""
    from citadel.entrypoints.evaluation import run_retrieval_evaluation

    try:
        chosen = tuple(SearchMode(m.strip()) for m in modes.split(",") if m.strip())
    except ValueError:
        err.print("[red]error:[/red] --modes takes lexical, dense and hybrid")
        raise typer.Exit(2) from None
    try:
        settings = Settings.from_env(os.environ)
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        raise typer.Exit(2) from exc
    try:
        report = run_retrieval_evaluation(
            settings, beir, split, chosen, home=home, max_queries=max_queries, console=err
        )
    except AppError as exc:
        err.print(f"[red]error:[/red] {render.terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    if json_out:
        emit(render.evaluation_json(report))
    else:
        print(render.evaluation_text(report))


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8080,
    home: HomeOption = None,
    answer_grpc: Annotated[
        str | None,
        typer.Option(
            "--answer-grpc",
            metavar="HOST:PORT",
            help="Split mode: answers come from this Answer service over mTLS (needs --certs).",
        ),
    ] = None,
    certs: Annotated[
        Path | None,
        typer.Option(help="Certificates of `citadel certs dev` (ca.crt, edge-api.crt/.key)."),
    ] = None,
) -> None:
    """Serve the HTTP API (/v1, OpenAPI at /openapi.json) and the web UI; JSON logs on stderr."""
    import uvicorn

    from citadel.entrypoints.http import create_app
    from citadel.entrypoints.http.app import server_options
    from citadel.entrypoints.http.observability import configure_logging

    if answer_grpc and certs is None:
        err.print("[red]error:[/red] --answer-grpc needs --certs DIR")
        raise typer.Exit(2)
    with open_services(home, serving=True) as services:
        answering = None
        if answer_grpc and certs is not None:
            try:
                answering = build_answer_client(services.settings, answer_grpc, certs)
            except (AppError, ConfigError, OSError) as exc:
                err.print(f"[red]configuration error:[/red] {render.terminal_safe(str(exc))}")
                raise typer.Exit(2) from exc
        configure_logging()
        err.print(
            f"citadel: serving http://{host}:{port}/ (sign in with a `citadel users add` token)"
        )
        uvicorn.run(
            create_app(services, answering=answering),
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            server_header=False,
            # Forwarded headers only from CITADEL_HTTP_TRUSTED_PROXIES (default: none).
            **server_options(services.settings.http),
        )


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
