"""``citadel eval citations --golden FILE.jsonl``: the golden citation set against a library.

Exit 0 when every case holds, 1 when any fails, 2 for a file that is not a golden
set (its line number on stderr, nothing on stdout). Runs as the local administrator
of ``$CITADEL_TENANT``; each case is resolved for its own reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from citadel.app.citation_golden import GoldenCase, GoldenReport, parse_golden
from citadel.app.errors import AppError, InvalidRequest
from citadel.entrypoints.cli import jsonl
from citadel.entrypoints.cli.support import (
    HomeOption,
    JsonFlag,
    emit,
    err,
    local_actor,
    open_services,
    print_error,
)
from citadel.entrypoints.cli.text import terminal_safe

MAX_CASES = 100_000
MAX_LINE_BYTES = 1 << 20


def read_golden(path: Path) -> list[GoldenCase]:
    cases: list[GoldenCase] = []
    first_of: dict[str, GoldenCase] = {}
    try:
        for number, line in jsonl.lines(path, MAX_LINE_BYTES):
            if len(cases) == MAX_CASES:
                raise InvalidRequest(f"line {number}: more than {MAX_CASES} cases")
            case = parse_golden(number, line)
            if case.case_id in first_of:
                raise InvalidRequest(f"line {number}: id {case.case_id!r} is used twice")
            first_of[case.case_id] = case
            cases.append(case)
    except jsonl.LineTooLong as exc:
        raise InvalidRequest(str(exc)) from None
    return cases


def golden_json(report: GoldenReport) -> dict[str, Any]:
    return {
        "cases": len(report.outcomes),
        "passed": report.passed,
        "by_state": {s: {"cases": n, "passed": p} for s, (n, p) in report.by_state().items()},
        "outcomes": [
            {
                "id": o.case.case_id,
                "line": o.case.line,
                "ref": o.case.ref,
                "source_id": o.case.source_id,
                "version": o.case.version,
                "reader": o.case.reader,
                "expected": {"state": o.case.state.value, "href": o.case.href},
                "state": o.state.value if o.state is not None else None,
                "href": o.href,
                "passed": o.passed,
                "failures": list(o.failures),
            }
            for o in report.outcomes
        ],
    }


def golden_text(report: GoldenReport) -> str:
    lines = [f"golden citations: {len(report.outcomes)} cases, {report.passed} passed"]
    for state, (cases, passed) in sorted(report.by_state().items()):
        lines.append(f"  {state:<12} {passed}/{cases}")
    for o in report.outcomes:
        case = o.case
        head = f"{case.case_id} {case.ref} {case.source_id} v{case.version}"
        head += f" as {case.reader or 'the operator'}: expected {case.state.value}"
        lines.append(f"{head} — {'ok' if o.passed else 'FAILED: ' + '; '.join(o.failures)}")
    return terminal_safe("\n".join(lines))


def eval_citations(
    golden: Annotated[
        Path, typer.Option("--golden", help="The golden set (JSON lines; docs/shadow.md).")
    ],
    json_out: JsonFlag = False,
    home: HomeOption = None,
) -> None:
    """Check claim → allowed ref → source/version/span → expected link state on a library."""
    try:
        cases = read_golden(golden)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot read {terminal_safe(str(golden))}: {exc.strerror}")
        raise typer.Exit(2) from exc
    except InvalidRequest as exc:
        err.print(f"[red]error:[/red] {terminal_safe(str(golden))} {terminal_safe(str(exc))}")
        raise typer.Exit(2) from exc
    with open_services(home) as services:
        try:
            report = services.golden_citations.run(cases, local_actor(services.settings))
        except AppError as exc:
            print_error(exc)
            raise typer.Exit(1) from exc
    if json_out:
        emit(golden_json(report))
    else:
        print(golden_text(report))
    if report.passed != len(report.outcomes):
        raise typer.Exit(1)
