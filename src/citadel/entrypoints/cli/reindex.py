"""``citadel reindex`` and the missing-vector warning: how both are run and shown.

Vectors belong to one embedding model; after ``CITADEL_EMBEDDER`` changes, or
the default model's name does (as when long chunks came to be read in windows
rather than truncated: ``…-w8a8`` became ``…-w8a8-win``), dense search skips
every chunk embedded under the old one until ``citadel reindex`` fills them in.
Chunks themselves are never redone: the vectors are what changed. Search still answers
(lexically) meanwhile, so the CLI warns on stderr and ``/readyz`` reports the
coverage rather than failing.
"""

from __future__ import annotations

from rich.console import Console

from citadel.app.reindex import ReindexReport, ReindexService
from citadel.entrypoints.cli.support import progress_bar


def run_reindex(service: ReindexService, console: Console) -> ReindexReport:
    """Reindex with a progress bar (chunks) on ``console``."""
    progress = progress_bar(console)
    task = progress.add_task("embedding", total=None)

    def tick(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    with progress:
        return service.reindex(tick)


def reindex_line(report: ReindexReport) -> str:
    return (
        f"{report.model}: {report.chunks:,} chunks; {report.embedded:,} embedded,"
        f" {report.reused:,} reused from stored vectors,"
        f" {report.had_vectors:,} already had one"
        + (f"; quotable units stored for {report.units_stored:,}" if report.units_stored else "")
        + f" ({report.seconds:.1f} s)"
    )


def missing_vectors_warning(service: ReindexService) -> str | None:
    """One line saying how many chunks dense search skips, or None when it skips none."""
    coverage, model = service.coverage(), service.model
    if coverage is None or model is None or coverage.missing == 0:
        return None
    return (
        f"warning: {coverage.missing:,} of {coverage.chunks:,} chunks have no vector for"
        f" {model}; dense search skips them (run: citadel reindex)"
    )
