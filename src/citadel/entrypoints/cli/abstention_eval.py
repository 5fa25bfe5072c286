"""What ``citadel eval answers --unanswerable`` adds to its report: the abstention
figures as text and as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from citadel.app.abstention_evaluation import KINDS, AbstentionReport, Decisions

GROUPS = (*KINDS, "all")


def decisions_json(d: Decisions) -> dict[str, Any]:
    return {
        "questions": d.questions,
        "answered": d.answered,
        "answered_share": round(d.answered_share, 4),
        "abstained": d.abstained,
        "abstained_share": round(d.abstained_share, 4),
        "degraded": dict(d.degraded),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def abstention_json(report: AbstentionReport) -> dict[str, Any]:
    return {
        "answerable": decisions_json(report.answerable),
        "answerable_per_book": {
            book: decisions_json(d) for book, d in report.answerable_per_book.items()
        },
        "unanswerable": decisions_json(report.unanswerable),
        "unanswerable_per_kind": {
            kind: decisions_json(d) for kind, d in report.unanswerable_per_kind.items()
        },
        "unanswerable_per_near_book": {
            book: decisions_json(d) for book, d in report.unanswerable_per_near_book.items()
        },
        "scored": dict(report.scored),
        "decided_by": [
            {"scorer": scorer, "threshold": threshold} for scorer, threshold in report.decided_by
        ],
        "auroc": {group: _rounded(value) for group, value in report.auroc.items()},
        "thresholds": [
            {
                "threshold": row.threshold,
                "answerable_answered": round(row.answerable_answered, 4),
                "abstained": {group: round(v, 4) for group, v in row.abstained.items()},
            }
            for row in report.thresholds
        ],
        "questions": [
            {
                "id": o.id,
                "kind": o.kind,
                "near_book": o.near_book,
                "degraded": o.degraded,
                "answerability": (
                    round(o.answerability.score, 4) if o.answerability is not None else None
                ),
                "latency_ms": round(o.latency_ms, 2),
            }
            for o in report.outcomes
        ],
    }


def _table(title: str, rows: Mapping[str, Decisions], total: Decisions) -> list[str]:
    lines = [f"{title:40} {'n':>5} {'answered':>8} {'abstained':>9}  other degraded"]

    def row(name: str, d: Decisions) -> str:
        others = ", ".join(f"{reason} {n}" for reason, n in d.degraded.items()) or "-"
        return (
            f"{name[:40]:40} {d.questions:>5} {d.answered_share:>8.3f}"
            f" {d.abstained_share:>9.3f}  {others}"
        )

    lines.extend(row(name, d) for name, d in rows.items())
    lines.append(row("all", total))
    return lines


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def abstention_text(report: AbstentionReport) -> str:
    unanswerable = dict(report.unanswerable_per_kind)
    unanswerable.update({f"  near {b}": d for b, d in report.unanswerable_per_near_book.items()})
    lines = [
        f"abstention (degraded not_in_library): {report.unanswerable.questions} unanswerable"
        f" and {report.answerable.questions} answerable questions",
        *_table("unanswerable", unanswerable, report.unanswerable),
        *_table("answerable", report.answerable_per_book, report.answerable),
    ]
    scored = report.scored
    total = report.answerable.questions + report.unanswerable.questions
    if not report.thresholds:
        lines.append("answerability: no result carries a score (is a relevance scorer set?)")
        return "\n".join(lines)
    decided = ", ".join(f"{scorer} at {threshold:g}" for scorer, threshold in report.decided_by)
    lines.append(
        f"answerability: {sum(scored.values())} of {total} results scored ({decided});"
        " AUROC answerable against "
        + ", ".join(f"{group} {_score(report.auroc.get(group))}" for group in GROUPS)
    )
    lines.append(
        f"{'threshold':>9} {'answerable answered':>19} "
        + " ".join(f"{'abstained ' + group:>14}" for group in GROUPS)
    )
    lines.extend(
        f"{row.threshold:>9g} {row.answerable_answered:>19.3f} "
        + " ".join(f"{row.abstained.get(group, 0.0):>14.3f}" for group in GROUPS)
        for row in report.thresholds
    )
    lines.append("(the threshold rows count scored questions only: what the decision would do)")
    return "\n".join(lines)
