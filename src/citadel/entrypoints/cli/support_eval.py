"""``citadel eval support``: the shipped support checker on labelled (claim, evidence)
pairs — balanced accuracy, AUROC, precision and recall of "supported" at the shipped
threshold; the confusion of gold labels with predicted ones; the same per gold label
and per kind; and the time per pair."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from citadel.app.errors import AppError
from citadel.app.support_evaluation import (
    GroupFigures,
    LabelledPair,
    SupportEvaluationReport,
    evaluate_support,
    parse_pair_lines,
)
from citadel.bootstrap.support import support_checker
from citadel.config import ConfigError, Settings
from citadel.domain.support import SupportLabel
from citadel.entrypoints.cli.support import JsonFlag, emit, err, progress_bar
from citadel.entrypoints.cli.text import terminal_safe


def _group_json(group: GroupFigures) -> dict[str, Any]:
    return {
        "pairs": group.pairs,
        "gold": dict(group.gold),
        "labels": dict(group.labels),
        "supported_share": round(group.supported_share, 4),
        "right": round(group.right, 4),
        "mean_score": round(group.mean_score, 4),
        "auroc": round(group.auroc, 4),
    }


def support_evaluation_json(report: SupportEvaluationReport) -> dict[str, Any]:
    return {
        "checker": report.checker,
        "pairs": report.pairs,
        "supported": report.positives,
        "auroc": round(report.auroc, 4),
        "balanced_accuracy": round(report.balanced_accuracy, 4),
        "precision": round(report.precision, 4),
        "recall": round(report.recall, 4),
        "three_way_balanced_accuracy": round(report.three_way_balanced_accuracy, 4),
        "ms_per_pair_p50": round(report.ms_per_pair_p50, 3),
        "ms_per_pair_p95": round(report.ms_per_pair_p95, 3),
        "labels": dict(report.labels),
        "confusion": {gold: dict(row) for gold, row in report.confusion.items()},
        "by_gold": {name: _group_json(g) for name, g in report.by_gold.items()},
        "by_kind": {name: _group_json(g) for name, g in report.by_kind.items()},
    }


_COLUMNS = tuple(label.value for label in SupportLabel)


def _table(title: str, groups: dict[str, GroupFigures]) -> list[str]:
    width = max([len(title), *map(len, groups)])
    head = f"{title:<{width}}  {'pairs':>5}  " + "  ".join(f"{c:>12}" for c in _COLUMNS)
    lines = [head + f"  {'supp.share':>10}  {'right':>5}  {'auroc':>5}"]
    for name, g in groups.items():
        counts = "  ".join(f"{g.labels.get(c, 0):>12}" for c in _COLUMNS)
        lines.append(
            f"{name:<{width}}  {g.pairs:>5}  {counts}  {g.supported_share:>10.3f}  {g.right:>5.3f}"
            f"  {g.auroc:>5.3f}"
        )
    return lines


def support_evaluation_text(report: SupportEvaluationReport) -> str:
    labels = ", ".join(f"{name} {count}" for name, count in sorted(report.labels.items()))
    lines = [
        f"checker {report.checker}: {report.pairs} pairs, {report.positives} supported",
        f"AUROC {report.auroc:.3f}  balanced accuracy {report.balanced_accuracy:.3f}"
        f"  precision {report.precision:.3f}  recall {report.recall:.3f}"
        " (supported = verbatim or supported)",
        f"three-way balanced accuracy {report.three_way_balanced_accuracy:.3f}"
        " (SUPPORT: verbatim or supported; CONTRADICT: contradicted;"
        " NEI: partial or unsupported)",
        f"time per pair: p50 {report.ms_per_pair_p50:.2f} ms, p95 {report.ms_per_pair_p95:.2f} ms",
        f"labels: {labels}",
        "",
        "by gold label (columns: predicted labels; supp.share = labelled verbatim or"
        " supported; right = predicted right for its gold label; auroc = against the"
        " other class):",
        *_table("gold", report.by_gold),
    ]
    if report.by_kind:
        lines.extend(("", "by kind:", *_table("kind", report.by_kind)))
    return "\n".join(lines)


def _read(paths: list[Path]) -> list[LabelledPair]:
    pairs: list[LabelledPair] = []
    for path in paths:
        shown = terminal_safe(str(path))
        try:
            pairs.extend(parse_pair_lines(path.read_text(encoding="utf-8").splitlines()))
        except (OSError, UnicodeDecodeError) as exc:
            err.print(f"[red]error:[/red] cannot read {shown}: {exc}")
            raise typer.Exit(2) from exc
        except AppError as exc:
            err.print(f"[red]error:[/red] {shown}: {terminal_safe(str(exc))}")
            raise typer.Exit(2) from exc
    return pairs


def eval_support(
    pairs_files: Annotated[
        list[Path],
        typer.Option(
            "--pairs",
            help="JSON lines: claim (or segment, or sentence), evidence (or passage), label"
            " SUPPORT/CONTRADICT/NEI (or a boolean supported) and an optional kind."
            " Repeat for several files (data/support/written-*.jsonl).",
        ),
    ],
    json_out: JsonFlag = False,
) -> None:
    """Score the support checker CITADEL_SUPPORT_CHECKER names on labelled pairs.

    Scoring the training file (../shared/data/scifact/support_train.jsonl) with the
    shipped weights is in-sample; the cross-validated figures are in docs/support.md."""
    pairs = _read(pairs_files)
    try:
        checker = support_checker(Settings.from_env(os.environ))
    except ConfigError as exc:
        err.print(f"[red]configuration error:[/red] {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    with progress_bar(err) as progress:
        task = progress.add_task("checking pairs", total=len(pairs))
        report = evaluate_support(
            checker, pairs, progress=lambda done, total: progress.update(task, completed=done)
        )
    if json_out:
        emit(support_evaluation_json(report))
    else:
        print(terminal_safe(support_evaluation_text(report)))
