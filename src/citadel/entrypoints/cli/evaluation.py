"""``citadel eval retrieval`` and ``citadel eval answers``: the commands, and wiring each
evaluation to its own library and progress bars (``eval support`` is in ``support_eval``)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    TaskID,
)

from citadel.app.abstention_evaluation import (
    DEFAULT_THRESHOLDS,
    UnanswerableQuestion,
    parse_thresholds,
    parse_unanswerable_lines,
)
from citadel.app.answer_evaluation import (
    AnswerEvaluation,
    AnswerEvaluationReport,
    AnswerFigures,
    QaQuestion,
    parse_qa_lines,
)
from citadel.app.errors import AppError, IngestError
from citadel.app.evaluation import EvaluationReport, RetrievalEvaluation
from citadel.bootstrap import build, load_beir_dataset
from citadel.config import ConfigError, Settings
from citadel.domain.search import SearchMode
from citadel.entrypoints.cli.abstention_eval import abstention_json, abstention_text
from citadel.entrypoints.cli.citation_eval import eval_citations
from citadel.entrypoints.cli.support import JsonFlag, emit, err, local_actor, progress_bar
from citadel.entrypoints.cli.support_eval import eval_support
from citadel.entrypoints.cli.text import evaluation_text, terminal_safe
from citadel.entrypoints.present.shapes import answer_evaluation_json, evaluation_json

DEFAULT_BOOKS = Path("../shared/books")
T = TypeVar("T")


def run_retrieval_evaluation(
    settings: Settings,
    beir: Path,
    split: str,
    modes: tuple[SearchMode, ...],
    *,
    home: Path | None,
    max_queries: int | None,
    console: Console,
) -> EvaluationReport:
    dataset = load_beir_dataset(beir, split)
    if max_queries is not None:
        kept = dict(list(dataset.queries.items())[:max_queries])
        dataset = replace(dataset, queries=kept, qrels={q: dataset.qrels[q] for q in kept})
    with tempfile.TemporaryDirectory(prefix="citadel-eval-") as scratch:
        where = home or Path(scratch)
        # Deep result lists: Recall@100 needs 100 documents, and documents can span chunks.
        limits = replace(settings.limits, max_results=1000)
        # A PostgreSQL CITADEL_DB is kept (the library is ingested into it); a SQLite
        # path is not: the library goes to the evaluation's home.
        db = settings.db if settings.postgres_url else ""
        services = build(replace(settings, home=where, db=db, limits=limits))
        try:
            with progress_bar(console) as progress:
                tasks: dict[str, TaskID] = {}

                def tick(stage: str, done: int, total: int) -> None:
                    if stage not in tasks:
                        tasks[stage] = progress.add_task(stage, total=total)
                    progress.update(tasks[stage], completed=done, total=total)

                return RetrievalEvaluation(services.ingest, services.search).run(
                    dataset, modes, progress=tick
                )
        finally:
            services.close()


eval_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Measure retrieval, answer and support-check quality.",
)
eval_app.command("support")(eval_support)
eval_app.command("citations")(eval_citations)


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
        err.print(f"[red]error:[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    if json_out:
        emit(evaluation_json(report))
    else:
        print(evaluation_text(report))


def run_answer_evaluation(
    settings: Settings,
    questions: tuple[QaQuestion, ...],
    books: Path,
    *,
    home: Path | None,
    console: Console,
    unanswerable: tuple[UnanswerableQuestion, ...] = (),
    thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS,
) -> AnswerEvaluationReport:
    """Each named book opened through the services' document reader and ingested into
    ``home`` (a scratch library without it), then every question answered, the
    unanswerable ones last."""
    with tempfile.TemporaryDirectory(prefix="citadel-eval-") as scratch:
        services = build(replace(settings, home=home or Path(scratch), db=""))
        try:
            names = dict.fromkeys(q.book for q in questions)
            documents = {name: services.documents.open(books / name) for name in names}
            with progress_bar(console) as progress:
                tasks: dict[str, TaskID] = {}

                def tick(stage: str, done: int, total: int) -> None:
                    if stage not in tasks:
                        tasks[stage] = progress.add_task(terminal_safe(stage)[:60], total=total)
                    progress.update(tasks[stage], completed=done, total=total)

                evaluation = AnswerEvaluation(services.ingest, services.answer)
                return asyncio.run(
                    evaluation.run(
                        questions,
                        documents,
                        local_actor(settings),
                        unanswerable=unanswerable,
                        thresholds=thresholds,
                        progress=tick,
                    )
                )
        finally:
            services.close()


@eval_app.command("answers")
def eval_answers(
    qa: Annotated[
        Path,
        typer.Option(
            "--qa", help="A QA set: JSON lines with id, question, book and section (gold)."
        ),
    ],
    books: Annotated[
        Path, typer.Option("--books", help="The folder the QA set's book paths are relative to.")
    ] = DEFAULT_BOOKS,
    json_out: JsonFlag = False,
    home: Annotated[
        Path | None,
        typer.Option("--home", help="Keep the evaluation library here (re-runs skip ingestion)."),
    ] = None,
    unanswerable: Annotated[
        Path | None,
        typer.Option(
            "--unanswerable",
            help="Questions the books do not answer: JSON lines with id, kind (far or near)"
            " and question; adds abstention figures.",
        ),
    ] = None,
    thresholds: Annotated[
        str | None,
        typer.Option(
            "--thresholds",
            help="With --unanswerable: comma-separated candidate answerability thresholds"
            " (default 0.1,0.2,...,0.9).",
        ),
    ] = None,
) -> None:
    """Answer a QA set over its books and score search, citations and latency.

    Ingests the books the set names (once: unchanged books are no-ops), answers every
    question with the configured generator, and reports search hit@1, hit@5 and
    MRR@10, the answers and citations on the gold section, degraded answers and the
    answer call's latency, overall and per book. With --unanswerable it also answers
    those questions and reports abstention (not_in_library) per kind, the answered
    share per book, and, when results carry answerability scores, their AUROC and the
    shares at each candidate threshold."""
    try:
        settings = Settings.from_env(os.environ)
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if thresholds is not None and unanswerable is None:
        err.print("[red]error:[/red] --thresholds needs --unanswerable")
        raise typer.Exit(2)
    try:
        cuts = parse_thresholds(thresholds) if thresholds is not None else DEFAULT_THRESHOLDS
    except AppError as exc:
        err.print(f"[red]error:[/red] --thresholds: {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    questions = _read_set(qa, parse_qa_lines)
    others = _read_set(unanswerable, parse_unanswerable_lines) if unanswerable else ()
    try:
        report = run_answer_evaluation(
            settings,
            questions,
            books,
            home=home,
            console=err,
            unanswerable=others,
            thresholds=cuts,
        )
    except IngestError as exc:
        err.print(f"[red]failed[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(1) from exc
    except AppError as exc:
        err.print(f"[red]error:[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    if json_out:
        shape = answer_evaluation_json(report)
        if report.abstention is not None:
            shape["abstention"] = abstention_json(report.abstention)
        emit(shape)
    else:
        text = answer_evaluation_text(report)
        if report.abstention is not None:
            text += "\n" + abstention_text(report.abstention)
        print(terminal_safe(text))


def _read_set(path: Path, parse: Callable[[list[str]], tuple[T, ...]]) -> tuple[T, ...]:
    """The set in ``path``, parsed; exit 2 naming the file when it is unreadable or bad."""
    try:
        return parse(path.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError) as exc:
        err.print(f"[red]error:[/red] cannot read {terminal_safe(str(path))}: {exc}")
        raise typer.Exit(2) from exc
    except AppError as exc:
        err.print(f"[red]error:[/red] {terminal_safe(str(path))}: {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc


def answer_evaluation_text(report: AnswerEvaluationReport) -> str:
    overall = report.overall
    lines = [
        f"{report.books} books ({report.ingested} ingested in {report.ingest_seconds:.1f} s),"
        f" {overall.questions} questions, {overall.answered} answered",
        f"{'book':40} {'n':>4} {'hit@1':>6} {'hit@5':>6} {'MRR@10':>6} {'cites':>6}"
        f" {'on gold':>7} {'p50 ms':>7} {'p95 ms':>7}",
    ]

    def row(name: str, f: AnswerFigures) -> str:
        return (
            f"{name[:40]:40} {f.questions:>4} {f.hit_at_1:>6.3f} {f.hit_at_5:>6.3f}"
            f" {f.mrr_at_10:>6.3f} {f.answers_citing_gold:>6.3f} {f.citations_on_gold:>7.3f}"
            f" {f.latency_ms_p50:>7.1f} {f.latency_ms_p95:>7.1f}"
        )

    lines.extend(row(book, figures) for book, figures in report.per_book.items())
    lines.append(row("all", overall))
    lines.append(
        "cites: share of answers citing the gold section;"
        f" on gold: share of the {overall.citations} citations shown"
    )
    if overall.degraded:
        lines.append(
            "degraded: " + ", ".join(f"{reason} {n}" for reason, n in overall.degraded.items())
        )
    if overall.support:
        lines.append(
            "support: " + ", ".join(f"{label} {n}" for label, n in overall.support.items())
        )
    return "\n".join(lines)
