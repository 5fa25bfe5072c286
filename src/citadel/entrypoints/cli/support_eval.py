"""``citadel eval support``: the shipped support checker on labelled (claim, evidence)
pairs — balanced accuracy, AUROC, precision and recall of "supported" at the shipped
threshold, and the time per pair."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from citadel.app.errors import AppError
from citadel.app.support_evaluation import (
    SupportEvaluationReport,
    evaluate_support,
    parse_pair_lines,
)
from citadel.bootstrap import support_checker
from citadel.entrypoints.cli.support import JsonFlag, emit, err, progress_bar
from citadel.entrypoints.cli.text import terminal_safe


def support_evaluation_json(report: SupportEvaluationReport) -> dict[str, Any]:
    return {
        "checker": report.checker,
        "pairs": report.pairs,
        "supported": report.positives,
        "auroc": round(report.auroc, 4),
        "balanced_accuracy": round(report.balanced_accuracy, 4),
        "precision": round(report.precision, 4),
        "recall": round(report.recall, 4),
        "ms_per_pair_p50": round(report.ms_per_pair_p50, 3),
        "ms_per_pair_p95": round(report.ms_per_pair_p95, 3),
        "labels": dict(report.labels),
    }


def support_evaluation_text(report: SupportEvaluationReport) -> str:
    labels = ", ".join(f"{name} {count}" for name, count in sorted(report.labels.items()))
    return "\n".join(
        (
            f"checker {report.checker}: {report.pairs} pairs, {report.positives} supported",
            f"AUROC {report.auroc:.3f}  balanced accuracy {report.balanced_accuracy:.3f}"
            f"  precision {report.precision:.3f}  recall {report.recall:.3f}"
            " (supported = verbatim or supported)",
            f"time per pair: p50 {report.ms_per_pair_p50:.2f} ms,"
            f" p95 {report.ms_per_pair_p95:.2f} ms",
            f"labels: {labels}",
        )
    )


def eval_support(
    pairs_file: Annotated[
        Path,
        typer.Option(
            "--pairs",
            help="JSON lines: claim (or segment), evidence (or passage), and label"
            " SUPPORT/CONTRADICT/NEI (or a boolean supported).",
        ),
    ],
    json_out: JsonFlag = False,
) -> None:
    """Score the shipped support checker on labelled pairs.

    Scoring the training file (../shared/data/scifact/support_train.jsonl) with the
    shipped weights is in-sample; the cross-validated figures are in docs/support.md."""
    try:
        pairs = parse_pair_lines(pairs_file.read_text(encoding="utf-8").splitlines())
    except (OSError, UnicodeDecodeError) as exc:
        err.print(f"[red]error:[/red] cannot read {terminal_safe(str(pairs_file))}: {exc}")
        raise typer.Exit(2) from exc
    except AppError as exc:
        err.print(f"[red]error:[/red] {terminal_safe(str(pairs_file))}: {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    checker = support_checker()
    with progress_bar(err) as progress:
        task = progress.add_task("checking pairs", total=len(pairs))
        report = evaluate_support(
            checker, pairs, progress=lambda done, total: progress.update(task, completed=done)
        )
    if json_out:
        emit(support_evaluation_json(report))
    else:
        print(terminal_safe(support_evaluation_text(report)))
