"""``citadel eval retrieval``: wiring the evaluation to its own library and progress bars."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import (
    TaskID,
)

from citadel.app.evaluation import EvaluationReport, RetrievalEvaluation
from citadel.bootstrap import build, load_beir_dataset
from citadel.config import Settings
from citadel.domain.search import SearchMode
from citadel.entrypoints.cli_support import progress_bar


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
