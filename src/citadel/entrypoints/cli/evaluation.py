"""``citadel eval retrieval``: the command, and wiring the evaluation to its own library
and progress bars."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    TaskID,
)

from citadel.app.errors import AppError
from citadel.app.evaluation import EvaluationReport, RetrievalEvaluation
from citadel.bootstrap import build, load_beir_dataset
from citadel.config import ConfigError, Settings
from citadel.domain.search import SearchMode
from citadel.entrypoints.cli.support import JsonFlag, emit, err, progress_bar
from citadel.entrypoints.cli.text import evaluation_text, terminal_safe
from citadel.entrypoints.present.shapes import evaluation_json


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
        services = build(replace(settings, home=where, db="", limits=limits))
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


eval_app = typer.Typer(no_args_is_help=True, help="Measure retrieval quality.")


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
