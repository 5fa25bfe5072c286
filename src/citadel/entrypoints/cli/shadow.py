"""``citadel shadow FILE.jsonl``: what the registry says about another assistant's citations.

The whole file is read and checked before the library is opened: a bad line stops
the command (exit 2, its line number on stderr) and nothing is printed on stdout.
The report is the use case's (``citadel.app.shadow``); ``docs/shadow.md`` explains it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from citadel.app.errors import AppError
from citadel.app.shadow import MEASURES, Category, ShadowReport
from citadel.app.shadow_input import MAX_LINE_BYTES, BadRecord, ShadowRecord, parse_record
from citadel.entrypoints.cli import jsonl
from citadel.entrypoints.cli.support import (
    AsOption,
    HomeOption,
    JsonFlag,
    actor_for,
    emit,
    err,
    open_services,
    print_error,
)
from citadel.entrypoints.cli.text import terminal_safe

MAX_RECORDS = 1_000_000


def read_records(path: Path) -> list[ShadowRecord]:
    """Every record of ``path``; ``BadRecord`` at the first bad line (blank lines skipped)."""
    records: list[ShadowRecord] = []
    try:
        for number, line in jsonl.lines(path, MAX_LINE_BYTES):
            if len(records) == MAX_RECORDS:
                raise BadRecord(number, f"more than {MAX_RECORDS} records")
            records.append(parse_record(number, line))
    except jsonl.LineTooLong as exc:
        raise BadRecord(exc.number, f"longer than {exc.limit} bytes") from None
    return records


def shadow_json(report: ShadowReport) -> dict[str, Any]:
    return {
        "answers": report.answers,
        "citations": report.citations,
        "counts": {c.value: report.counts.get(c, 0) for c in Category},
        "rates": report.measures(),
        "findings": [
            {
                "record_id": f.record_id,
                "line": f.line,
                "citation": f.index,
                "cited": f.cited,
                "category": f.category.value,
                "reason": f.reason,
                "source_id": f.source_id,
                "version": f.version,
            }
            for f in report.findings
        ],
    }


def shadow_text(report: ShadowReport) -> str:
    lines = [f"{report.answers} answers, {report.citations} citations"]
    for category in Category:
        rate = report.rate(category)
        share = "   n/a" if rate is None else f"{100 * rate:5.1f}%"
        count = report.counts.get(category, 0)
        lines.append(f"  {category.value:<17}{count:>7}  {share}  {MEASURES[category]}")
    lines.append("")
    for f in report.findings:
        where = f" -> {f.source_id}" if f.source_id else ""
        lines.append(f"{f.record_id} [{f.index}] {f.category.value}: {f.cited}{where} ({f.reason})")
    return terminal_safe("\n".join(lines))


def shadow(
    file: Annotated[
        Path,
        typer.Argument(help="JSON lines of another system's answers (docs/shadow.md)."),
    ],
    json_out: JsonFlag = False,
    home: HomeOption = None,
    as_user: AsOption = None,
) -> None:
    """Classify another assistant's citations by this library's registry; no URL is fetched."""
    try:
        records = read_records(file)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot read {terminal_safe(str(file))}: {exc.strerror}")
        raise typer.Exit(2) from exc
    except BadRecord as exc:
        err.print(f"[red]error:[/red] {terminal_safe(str(file))} {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    with open_services(home) as services:
        actor = actor_for(services, as_user)
        try:
            report = services.shadow.run(records, actor)
        except AppError as exc:
            print_error(exc)
            raise typer.Exit(1) from exc
    if json_out:
        emit(shadow_json(report))
    else:
        print(shadow_text(report))
