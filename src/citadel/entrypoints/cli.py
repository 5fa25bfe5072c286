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
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from citadel.app.answer import AnswerRequest
from citadel.app.errors import AppError, IngestError, InvalidRequest, LibraryChanged
from citadel.app.ingest import IngestOptions
from citadel.app.ports import ProgressCallback
from citadel.bootstrap import Services, build, build_answer_client
from citadel.config import ConfigError, Settings
from citadel.domain.model import Actor, Role, SearchMode, SearchRequest
from citadel.entrypoints import render
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
err = Console(stderr=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON to stdout.")]
HomeOption = Annotated[
    Path | None,
    typer.Option("--home", help="Data directory (default: $CITADEL_HOME or ./.citadel)."),
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
def _services(
    home: Path | None, generator: str | None = None, *, serving: bool = False
) -> Iterator[Services]:
    try:
        settings = Settings.from_env(os.environ).with_overrides(home=home, generator=generator)
        services = build(settings, serving=serving)
    except (ConfigError, AppError) as exc:
        err.print(f"[red]configuration error:[/red] {render.terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    try:
        yield services
    finally:
        services.close()


def _local_actor(settings: Settings) -> Actor:
    # Whoever can run the CLI can open the database: without --as it is the administrator.
    return Actor(user_id="local", tenant=settings.tenant, role=Role.ADMIN)


def _actor(services: Services, as_user: str | None) -> Actor:
    """The actor for a command: the user named by ``--as``, else the local administrator.

    An unknown or disabled user is a usage error (exit 2); nothing runs for it.
    """
    if as_user is None:
        return _local_actor(services.settings)
    try:
        return services.users.actor(as_user)
    except AppError as exc:
        _error(exc)
        raise typer.Exit(2) from exc


def _error(exc: Exception) -> None:
    err.print(f"[red]error:[/red] {escape(render.terminal_safe(str(exc)))}")


def _emit(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")


def _groups(text: str | None) -> frozenset[str]:
    """A comma-separated group list; blanks around and between the commas are dropped."""
    return frozenset(g.strip() for g in (text or "").split(",") if g.strip())


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
        str | None, typer.Option(help="Comma-separated groups that may read it.")
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
    with _services(home) as services:
        options = IngestOptions(
            tenant=tenant or services.settings.tenant,
            source_id=source_id,
            url=url,
            acl_groups=_groups(acl),
            title=title,
            authors=tuple(author) if author else None,
            year=year,
            tags=tuple(tag) if tag else None,
        )
        for path in paths:
            try:
                with _progress(path.name) as (parsed, embedded):
                    report = services.ingest.ingest(path, options, parsed, embedded)
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
def _progress(label: str) -> Iterator[tuple[ProgressCallback, ProgressCallback]]:
    """Two bars on stderr: the file's pages as they are parsed, then its chunks as
    they are embedded (the long part of a large book); the second appears when
    embedding starts, and both vanish when the file is done."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
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
    """Embed the chunks that have no vector for the configured model (after a change of
    CITADEL_EMBEDDER or of the default model); a stopped run keeps what it stored."""
    with _services(home) as services:
        try:
            report = run_reindex(services.reindex, err)
        except LibraryChanged as exc:
            _error(exc)
            raise typer.Exit(1) from exc
        except AppError as exc:
            _error(exc)
            raise typer.Exit(2) from exc
        except KeyboardInterrupt:
            err.print("stopped: the vectors stored so far are kept; run it again to continue")
            raise typer.Exit(130) from None
    if json_out:
        _emit(reindex_json(report))
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
    with _services(home) as services:
        actor = _actor(services, as_user)
        _warn_missing_vectors(services)
        try:
            result = services.search.search(SearchRequest(query=query, limit=limit), actor)
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
    with _services(home, generator) as services:
        actor = _actor(services, as_user)
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
        _emit(render.answer_json(result))
    else:
        print(render.terminal_safe(render.answer_text(result)))


app.command("serve-grpc")(serve_grpc)
app.add_typer(certs_app, name="certs")

sources_app = typer.Typer(no_args_is_help=True, help="Inspect and manage the source registry.")
app.add_typer(sources_app, name="sources")


def _library_call(home: Path | None, call: Any, as_user: str | None = None) -> Any:
    with _services(home) as services:
        actor = _actor(services, as_user)
        try:
            return call(services, actor)
        except AppError as exc:
            _error(exc)
            raise typer.Exit(1) from exc


@sources_app.command("list")
def sources_list(
    json_out: JsonFlag = False, home: HomeOption = None, as_user: AsOption = None
) -> None:
    """Live sources (that the actor may read), by title."""
    found = _library_call(home, lambda s, actor: s.library.list(actor), as_user)
    if json_out:
        for source in found:
            _emit(render.source_json(source))
        return
    if not found:
        print("The library is empty.")
    for source in found:
        print(render.terminal_safe(render.source_line(source)))


@sources_app.command("show")
def sources_show(
    source_id: Annotated[str, typer.Argument(help="The source to show.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """A source's metadata and versions."""
    details = _library_call(home, lambda s, actor: s.library.show(source_id, actor), as_user)
    if json_out:
        _emit(render.source_details_json(details))
    else:
        print(render.terminal_safe(render.source_details_text(details)))


@sources_app.command("chunks")
def sources_chunks(
    source_id: Annotated[str, typer.Argument(help="The source whose chunks to print.")],
    version: Annotated[int | None, typer.Option(min=1, help="Version (default: current).")] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """A version's chunks in reading order (``--json``: one object per line)."""
    chunks = _library_call(
        home, lambda s, actor: s.library.chunks(source_id, actor, version), as_user
    )
    for chunk in chunks:
        if json_out:
            _emit(render.chunk_json(chunk))
        else:
            where = " > ".join(chunk.section_path) or "(no section)"
            pages = chunk.page_label_start or chunk.location or ""
            print(render.terminal_safe(f"#{chunk.ordinal} {where} [{pages}] {chunk.text[:100]!r}"))


@sources_app.command("move")
def sources_move(
    source_id: Annotated[str, typer.Argument(help="The source that moved.")],
    new_path: Annotated[Path, typer.Argument(help="Its new location.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Record a new location; the source id, versions and citations stay the same."""
    moved = _library_call(
        home, lambda s, actor: s.library.move(source_id, str(new_path.resolve()), actor), as_user
    )
    if json_out:
        _emit(render.source_json(moved))
    else:
        err.print(f"moved {source_id} to {render.terminal_safe(moved.origin)}")


@sources_app.command("delete")
def sources_delete(
    source_id: Annotated[str, typer.Argument(help="The source to delete.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Delete a source's text; a tombstone stays so old citations say "deleted"."""
    _library_call(home, lambda s, actor: s.library.delete(source_id, actor), as_user)
    if json_out:
        _emit({"source_id": source_id, "status": "deleted"})
    else:
        err.print(f"deleted {source_id} (tombstone kept)")


@sources_app.command("acl")
def sources_acl(
    source_id: Annotated[str, typer.Argument(help="The source whose readers to change.")],
    groups: Annotated[
        str,
        typer.Option(
            "--set",
            metavar="GROUP,...",
            help='The groups that may read it, replacing the old ones; "" opens it to the tenant.',
        ),
    ],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Replace the groups that may read a source (librarians and admins only)."""
    changed = _library_call(
        home, lambda s, actor: s.library.set_acl(source_id, _groups(groups), actor), as_user
    )
    if json_out:
        _emit(render.source_json(changed))
    else:
        readers = ",".join(sorted(changed.acl_groups)) or "everyone in the tenant"
        err.print(escape(render.terminal_safe(f"{source_id} is readable by {readers}")))


users_app = typer.Typer(no_args_is_help=True, help="Register and disable users (API tokens).")
app.add_typer(users_app, name="users")


def _users_call(home: Path | None, call: Any) -> Any:
    """Run a user-management call; a bad name is a usage error (2), any other refusal 1."""
    with _services(home) as services:
        try:
            return call(services)
        except AppError as exc:
            _error(exc)
            raise typer.Exit(2 if isinstance(exc, InvalidRequest) else 1) from exc


@users_app.command("add")
def users_add(
    name: Annotated[str, typer.Argument(help="The user's name (unique across tenants).")],
    role: Annotated[Role, typer.Option(help="What the user may do.")] = Role.READER,
    tenant: Annotated[
        str | None, typer.Option(help="The user's tenant (default: $CITADEL_TENANT).")
    ] = None,
    groups: Annotated[
        str | None,
        typer.Option(metavar="GROUP,...", help="Comma-separated groups the user belongs to."),
    ] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Register a user and print its API token — the only time it is shown."""
    user, token = _users_call(
        home,
        lambda s: s.users.add(name, role, tenant or s.settings.tenant, _groups(groups)),
    )
    if json_out:
        _emit({"name": user.name, "token": token})
    else:
        print(token)
    err.print(
        escape(
            f"added {user.name} ({user.role.value} of {user.tenant});"
            " its API token is shown only this once: store it now"
        )
    )


@users_app.command("disable")
def users_disable(
    name: Annotated[str, typer.Argument(help="The user to disable.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Disable a user: its token and --as stop working at once."""
    user = _users_call(home, lambda s: s.users.disable(name))
    if json_out:
        _emit(render.user_json(user))
    else:
        err.print(escape(f"disabled {user.name}"))


@users_app.command("list")
def users_list(
    tenant: Annotated[
        str | None, typer.Option(help="Only this tenant's users (default: all).")
    ] = None,
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Users by name (``--json``: one object per line); tokens are never shown."""
    found = _users_call(home, lambda s: s.users.list(tenant))
    if json_out:
        for user in found:
            _emit(render.user_json(user))
        return
    if not found:
        print("No users.")
    for user in found:
        print(render.user_line(user))


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

    link = _library_call(home, resolve, as_user)
    if json_out:
        _emit({"answer_id": answer_id, "ref": ref, "link": render.link_json(link)})
    else:
        print(render.terminal_safe(f"{ref}: {link.state.value} {link.href or ''}".rstrip()))


audit_app = typer.Typer(no_args_is_help=True, help="Read and check the answers' audit log.")
app.add_typer(audit_app, name="audit")


@audit_app.command("show")
def audit_show(
    answer_id: Annotated[str, typer.Argument(help="The answer_id of `ask --json`.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Print one answer's record: actor, manifest, model and prompt, verdict, citations."""
    record = _library_call(home, lambda s, actor: s.audit.show(answer_id, actor), as_user)
    if json_out:
        _emit(json.loads(record.to_json()))
    else:
        print(render.terminal_safe(render.audit_text(record)))


@audit_app.command("verify")
def audit_verify(json_out: JsonFlag = False, home: HomeOption = None) -> None:
    """Check every record's hash and link; exit 1 if anything was edited or removed."""
    report = _library_call(home, lambda s, _: s.audit.verify())
    if json_out:
        _emit({"records": report.records, "intact": report.intact, "problems": report.problems})
    elif report.intact:
        print(f"audit log intact: {report.records} records")
    else:
        print(f"audit log NOT intact ({report.records} records):")
        for problem in report.problems:
            print(f"  - {problem}")
    if not report.intact:
        raise typer.Exit(1)


@audit_app.command("replay")
def audit_replay(
    answer_id: Annotated[str, typer.Argument(help="The answer_id of `ask --json`.")],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Re-validate the recorded output against the recorded manifest; exit 1 if it differs."""
    report = _library_call(home, lambda s, actor: s.audit.replay(answer_id, actor), as_user)
    if json_out:
        _emit(
            {
                "answer_id": report.answer_id,
                "stored": report.stored,
                "replayed": report.replayed,
                "holds": report.holds,
                "note": report.note,
            }
        )
    else:
        verdict = "holds" if report.holds else "DOES NOT HOLD"
        print(f"verdict {verdict}: recorded {report.stored}; replayed {report.replayed}")
        if report.note:
            print(f"  ({report.note})")
    if not report.holds:
        raise typer.Exit(1)


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
        _emit(render.evaluation_json(report))
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
    from citadel.entrypoints.http.observability import configure_logging

    if answer_grpc and certs is None:
        err.print("[red]error:[/red] --answer-grpc needs --certs DIR")
        raise typer.Exit(2)
    with _services(home, serving=True) as services:
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
            proxy_headers=True,
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
