"""Every JSON line citadel writes stays one line for any reader's line splitting.

A passage may hold characters JSON lets through raw that many readers take for a
line break (U+2028, U+2029, U+0085) or a control (DEL, C1). A hostile review saw a
line-splitting SSE client read a ``search`` event as ``answer``; the same bytes went
into the CLI's ``--json`` lines and the server's JSON logs. One encoder
(``present.json_lines``) writes all three, and these tests read each back with a
reader that splits lines the widest common way (Python's ``str.splitlines``).
"""

from __future__ import annotations

import io
import json
import logging
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import httpx
import pytest

from citadel.app.ingest import IngestOptions
from citadel.app.ingest import service as ingest_service
from citadel.entrypoints.cli.support import emit
from citadel.entrypoints.http import create_app
from citadel.entrypoints.http.observability import JsonFormatter
from citadel.entrypoints.present.json_lines import LINE_BREAKING, json_line
from tests.builders import operator
from tests.http.conftest import SECRET, bearer, make_library, serving

# What a passage smuggles: a forged event after a line separator, and every class of
# character JSON leaves raw that a reader may split on or act on.
FORGED = '\u2028event: answer\u2028data: {"forged": true}\u2029\u0085\x7f\x9b\x85'
BOOK = f"""# Odd Characters

## Ledgers

### Zebra Ledger

The quixotic zebra ledger records every crossing of the river{FORGED} and the
keeper signs each page of the quixotic zebra ledger at dusk.
"""
QUERY = "quixotic zebra ledger"


def splitting_client(raw: str) -> list[tuple[str, Any]]:
    """An SSE reader that ends a line wherever ``str.splitlines`` does."""
    events: list[tuple[str, Any]] = []
    name, data = "message", []
    for line in raw.splitlines():
        if not line:
            if data:
                events.append((name, json.loads("\n".join(data))))
            name, data = "message", []
        elif line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
    return events


def test_json_line_escapes_every_character_a_reader_may_split_on() -> None:
    assert {0x85, 0x2028, 0x2029, 0x7F, 0x9F} <= LINE_BREAKING
    value = {"text": "".join(map(chr, sorted(LINE_BREAKING))) + "é ✓", "n": [1, 2]}
    for compact in (False, True):
        line = json_line(value, compact=compact)
        assert len(line.splitlines()) == 1
        assert not set(map(ord, line)) & LINE_BREAKING
        assert json.loads(line) == value
    assert json_line({"a": 1}, compact=True) == '{"a":1}'
    assert "é ✓" in json_line(value), "other characters stay readable"


def test_a_line_splitting_sse_client_reads_the_events_of_such_a_passage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = make_library(tmp_path)
    try:
        book = tmp_path / "odd.md"
        book.write_text(BOOK, encoding="utf-8")
        # Ingest now turns these into newlines (``without_controls``); a library made
        # before, or rows another tool wrote, still hold them: ingest the old way.
        with monkeypatch.context() as before:
            before.setattr(ingest_service, "without_controls", lambda document: document)
            library.services.ingest.ingest(
                library.services.documents.open(book),
                IngestOptions(tenant="default"),
                actor=operator("default"),
            )
        with serving(create_app(library.services, session_secret=SECRET)) as base:
            reply = httpx.post(
                base + "/v1/answer/stream",
                json={"search": {"query": QUERY, "limit": 3}},
                headers=bearer(library, "ada"),
                timeout=30,
            )
        assert reply.status_code == 200
        raw = reply.content.decode()
        assert not set(map(ord, raw)) & LINE_BREAKING
        events = splitting_client(raw)
        assert [name for name, _ in events] == ["search", "answer", "done"]
        passage = events[0][1]["results"][0]["passage"]
        assert FORGED in passage, "the passage arrives as the book holds it"
    finally:
        library.services.close()


def test_cli_json_lines_stay_one_line() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        emit({"passage": FORGED})
        emit({"passage": "next"})
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["passage"] for line in lines] == [FORGED, "next"]


@pytest.mark.parametrize("logger", ["citadel.http", "uvicorn.error"])
def test_json_log_lines_stay_one_line(logger: str) -> None:
    record = logging.LogRecord(logger, logging.INFO, __file__, 1, "seen %s", (FORGED,), None)
    line = JsonFormatter().format(record)
    assert len(line.splitlines()) == 1
    assert not set(map(ord, line)) & LINE_BREAKING
    assert json.loads(line)["level"] == "info"
