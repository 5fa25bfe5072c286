"""The ``citadel`` command line: thin wrappers over the use cases.

Machine output (``--json``) goes to stdout; progress and errors go to stderr.
Exit codes: 0 success, 1 some inputs failed, 2 bad usage or configuration.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    TaskID,
)

from citadel import package_version
from citadel.app.answer import AnswerRequest
from citadel.app.errors import AppError, IngestError, LibraryChanged
from citadel.app.ingest import IngestOptions
from citadel.app.ports import ProgressCallback
from citadel.app.resolver import ResolvedLink
from citadel.bootstrap import Services
from citadel.domain.errors import DomainError
from citadel.domain.request_defaults import ANSWER_RESULTS, EVIDENCE_FLOOR, SEARCH_RESULTS
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli.admin import audit_app, sources_app, users_app
from citadel.entrypoints.cli.chat import chat
from citadel.entrypoints.cli.db import db_app
from citadel.entrypoints.cli.evaluation import eval_app
from citadel.entrypoints.cli.filters import (
    SourceOption,
    TagOption,
    YearFromOption,
    YearToOption,
    search_filters,
    whole,
)
from citadel.entrypoints.cli.filters import (
    year as year_option,
)
from citadel.entrypoints.cli.mcp import mcp
from citadel.entrypoints.cli.reindex import missing_vectors_warning, reindex_line, run_reindex
from citadel.entrypoints.cli.serve import certs_app, serve, serve_grpc
from citadel.entrypoints.cli.shadow import shadow
from citadel.entrypoints.cli.support import (
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
    refuse_empty,
    require_books,
)
from citadel.entrypoints.cli.text import (
    answer_text,
    citation_hint,
    citation_line,
    search_lines,
    terminal_safe,
)
from citadel.entrypoints.present.labels import page_count_text
from citadel.entrypoints.present.public_links import absolute_link, absolute_links
from citadel.entrypoints.present.shapes import (
    answer_json,
    ingest_json,
    link_json,
    reindex_json,
    search_json,
)

# Plain help (click's): rich's panels cut long option names to fit 80 columns
# (`--minimum-evidence-sc…`) and draw boxes into a pipe; click's wraps and keeps them whole.
app = typer.Typer(
    rich_markup_mode=None,
    add_completion=False,
    no_args_is_help=True,
    help="citadel: answers over technical books with citations the application proves.",
)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"citadel {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """citadel: answers over technical books with citations the application proves."""


@app.command()
def ingest(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Files (PDF, EPUB, HTML, Markdown, text), or HTML or Markdown book folders."
        ),
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
    year: Annotated[
        int | None, typer.Option(parser=year_option, help="Publication year, -9999–9999.")
    ] = None,
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
            except (AppError, DomainError) as exc:
                # A refused file (IngestError), a value the domain refused, or what
                # stops any file now (the embedding model cannot load): reported per
                # path, the rest go on.
                failed += 1
                reason = exc.reason if isinstance(exc, IngestError) else _code(exc)
                shown = str(exc) if isinstance(exc, IngestError) else f"{path}: {exc}"
                err.print(f"[red]failed[/red] {escape(terminal_safe(shown))}", soft_wrap=True)
                if json_out:
                    emit({"path": str(path), "status": "failed", "reason": reason, "error": shown})
                continue
            if json_out:
                emit(ingest_json(report))
            else:
                # The result is what a pipe reads: stdout, one unwrapped line per file.
                print(
                    f"{report.status} {terminal_safe(report.title)}"
                    f" — source {report.source_id} v{report.version}:"
                    f" {page_count_text(report.pages)}{report.sections} sections,"
                    f" {report.chunks} chunks",
                    flush=True,
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
    name = terminal_safe(label)[:40]
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
        print(terminal_safe(reindex_line(report)))


def _warn_missing_vectors(services: Services) -> None:
    """One line on stderr when dense search cannot see some chunks; stdout is untouched."""
    warning = missing_vectors_warning(services.reindex)
    if warning:
        err.print(escape(terminal_safe(warning)), soft_wrap=True, highlight=False)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for (plain text).")],
    limit: Annotated[
        int,
        typer.Option(
            parser=whole(SEARCH_RESULTS.low, SEARCH_RESULTS.high, "limit"),
            help=f"How many results, {SEARCH_RESULTS.low}–{SEARCH_RESULTS.high}.",
        ),
    ] = SEARCH_RESULTS.default,
    source: SourceOption = None,
    tag: TagOption = None,
    year_from: YearFromOption = None,
    year_to: YearToOption = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Search the library; results never depend on a generator."""
    filters = search_filters(source, tag, year_from, year_to)
    refuse_empty(query)
    with open_services(home, reading=True) as services:
        actor = actor_for(services, as_user)
        require_books(services, actor)
        _warn_missing_vectors(services)
        try:
            result = services.search.search(
                SearchRequest(query=query, limit=limit, filters=filters), actor
            )
        except AppError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
    if json_out:
        emit(search_json(result))
    elif not result.results:
        print("No results.")
    else:
        print(terminal_safe("\n".join(search_lines(result, limit))))


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question to answer.")],
    generator: Annotated[
        str | None,
        typer.Option(help="extractive (default, no LLM) or openai (needs CITADEL_LLM_*)."),
    ] = None,
    minimum_evidence_score: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Score floor for evidence, in [0, 1].")
    ] = EVIDENCE_FLOOR,
    limit: Annotated[
        int,
        typer.Option(
            parser=whole(ANSWER_RESULTS.low, ANSWER_RESULTS.high, "limit"),
            help=f"Search results to consider, {ANSWER_RESULTS.low}–{ANSWER_RESULTS.high}.",
        ),
    ] = ANSWER_RESULTS.default,
    source: SourceOption = None,
    tag: TagOption = None,
    year_from: YearFromOption = None,
    year_to: YearToOption = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Answer from the library with footnoted, application-proven citations."""
    filters = search_filters(source, tag, year_from, year_to)
    refuse_empty(question)
    with open_services(home, generator, reading=True) as services:
        actor = actor_for(services, as_user)
        require_books(services, actor)
        _warn_missing_vectors(services)
        try:
            result = asyncio.run(
                services.answer.answer(
                    AnswerRequest(
                        SearchRequest(query=question, limit=limit, filters=filters),
                        minimum_evidence_score,
                    ),
                    actor,
                )
            )
        except AppError as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        public_url = services.settings.public_url
    result = absolute_links(result, public_url)
    if json_out:
        emit(answer_json(result))
    else:
        shown = answer_text(result, viewer_links=as_user is not None, public_url=public_url)
        print(terminal_safe(shown))


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

    def resolve(services: Services, actor: Actor) -> tuple[ResolvedLink, str]:
        target = services.audit.target(answer_id, ref, actor)
        public_url = services.settings.public_url
        return absolute_link(services.resolver.resolve([target], actor)[0], public_url), public_url

    link, public_url = library_call(home, resolve, as_user)
    if json_out:
        emit({"answer_id": answer_id, "ref": ref, "link": link_json(link)})
        return
    print(terminal_safe(citation_line(ref, link, viewer_links=as_user is not None)))
    hint = citation_hint(link, viewer_links=as_user is not None, public_url=public_url)
    if hint:
        print(hint)


app.add_typer(audit_app, name="audit")


app.add_typer(eval_app, name="eval")
app.add_typer(db_app, name="db")
app.command()(serve)
app.command()(mcp)
app.command()(chat)
app.command()(shadow)


@app.command()
def demo(
    home: HomeOption = None,
) -> None:
    """Ingest a real book and answer three questions with footnoted citations."""
    from citadel.entrypoints.cli.demo import run_demo

    raise typer.Exit(run_demo(home, err))


def main() -> None:
    app()
