"""``citadel demo``: the main job on the embedded default, end to end.

It finds a real book — ``../shared/books`` when present, else Debian's
``r-doc-pdf`` and ``derivations`` packages fetched with ``apt-get download``,
else the Python Language Reference that ships with CPython — ingests it into
its own library and answers three questions with footnoted citations.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from citadel.app.answer import AnswerRequest
from citadel.app.errors import AppError
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import build
from citadel.config import ConfigError, Settings
from citadel.domain.request_defaults import ANSWER_RESULTS
from citadel.domain.search import SearchRequest
from citadel.domain.users import Actor, Role
from citadel.entrypoints.cli.text import answer_text, terminal_safe
from citadel.entrypoints.present.labels import page_count_text

R_QUESTIONS = (
    "How do I read data from a file into a data frame?",
    "What is a factor and how are factor levels used?",
    "How are missing values represented and tested for?",
)
PYTHON_QUESTIONS = (
    "How does the with statement manage a context?",
    "What happens when a generator function is called?",
    "How are default argument values evaluated in a function definition?",
)


@dataclass(frozen=True, slots=True)
class DemoLibrary:
    books: tuple[Path, ...]
    origin: str
    questions: tuple[str, ...]


def find_library(workdir: Path) -> DemoLibrary:
    shared = Path("../shared/books/pdf/R-intro.pdf")
    if shared.is_file():
        return DemoLibrary(
            (shared,), "../shared/books (R Core Team, An Introduction to R)", R_QUESTIONS
        )
    fetched = _apt_download(workdir)
    if fetched:
        return DemoLibrary(
            fetched, "Debian packages r-doc-pdf and derivations (apt-get download)", R_QUESTIONS
        )
    return DemoLibrary(
        (_python_reference(workdir),),
        "the Python Language Reference shipped with CPython (pydoc_data.topics)",
        PYTHON_QUESTIONS,
    )


def _apt_download(workdir: Path) -> tuple[Path, ...]:
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        return ()
    target = workdir / "apt"
    existing = sorted(target.rglob("R-intro.pdf")) if target.exists() else []
    if existing:
        return (existing[0],)
    target.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            ["apt-get", "download", "r-doc-pdf", "derivations"],
            cwd=target,
            check=True,
            capture_output=True,
            timeout=300,
        )
        for deb in target.glob("*.deb"):
            subprocess.run(
                ["dpkg-deb", "-x", str(deb), str(target / "root")],
                check=True,
                capture_output=True,
                timeout=300,
            )
    except (subprocess.SubprocessError, OSError):
        return ()
    found = sorted(target.rglob("R-intro.pdf"))
    return (found[0],) if found else ()


def _python_reference(workdir: Path) -> Path:
    from pydoc_data.topics import topics

    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "python-language-reference.md"
    lines = ["# The Python Language Reference (pydoc topics)", ""]
    for name in sorted(topics):
        # The topics underline their own headings with =, * or -: Markdown would
        # read those as headings (or rules) and scramble the sections.
        body = [
            "" if re.fullmatch(r"\s*([=*~^-])\1{2,}\s*", line) else line
            for line in topics[name].strip().splitlines()
        ]
        lines += [f"## {name}", "", *body, ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def run_demo(home: Path | None, console: Console) -> int:
    """``home``: None for ``CITADEL_HOME``, else the user's own library (one for every command)."""
    try:
        settings = Settings.from_env(os.environ).with_overrides(home=home, generator="extractive")
    except ConfigError as exc:
        console.print(f"[red]configuration error:[/red] {escape(str(exc))}")
        return 2
    given = "" if home is None else f" --home {shlex.quote(str(home))}"
    home = settings.home
    library = find_library(home)
    console.print(f"Library: {library.origin}")
    console.print(f"Kept in: {escape(str(home))}", soft_wrap=True, highlight=False)
    try:
        services = build(settings)
    except AppError as exc:
        console.print(f"[red]cannot open the library:[/red] {escape(str(exc))}")
        if not settings.db:  # the demo's own folder (no CITADEL_DB), e.g. an older schema
            where = escape(str(home))
            console.print(f"It holds only the demo's book: delete {where} and run it again.")
        return 2
    actor = Actor(user_id="demo", tenant=settings.tenant, role=Role.ADMIN)
    try:
        for book in library.books:
            try:
                report = services.ingest.ingest(
                    services.documents.open(book),
                    IngestOptions(tenant=settings.tenant),
                    actor=actor,
                )
            except AppError as exc:
                console.print(f"[red]could not ingest[/red] {escape(str(exc))}")
                return 1
            console.print(
                f"Ingested {report.title!r} ({report.status}):"
                f" {page_count_text(report.pages)}{report.sections} sections,"
                f" {report.chunks} chunks"
            )
        for number, question in enumerate(library.questions, start=1):
            result = asyncio.run(
                services.answer.answer(
                    AnswerRequest(SearchRequest(question, limit=ANSWER_RESULTS.default)), actor
                )
            )
            print(f"\nQ{number}. {question}\n")
            print(terminal_safe(answer_text(result)))
    finally:
        services.close()
    print(next_steps(library.questions, given=given))
    return 0


def next_steps(questions: tuple[str, ...], *, given: str = "") -> str:
    """The three commands a newcomer runs next: ask, serve with a first user, MCP.

    ``given``: the ``--home`` the demo was given, which the next commands need too.
    """
    question = questions[0].replace('"', "'")
    return "\n".join(
        (
            "",
            "Next, from any directory (this library is the one every command uses):",
            f'  citadel ask "{question}"{given}',
            f"  citadel users add me --role librarian{given}   # prints a sign-in token, once",
            f"  citadel serve{given}   # then open http://127.0.0.1:8080/ and paste the token",
            f"  citadel mcp{given}   # for an MCP client (docs/mcp.md)",
        )
    )
