"""Shadow records refuse every case of the shared bad-input table, record by record.

The case is a citation's ``version``: each bad one is a ``BadRecord`` naming its
line, and ``citadel shadow`` says so and exits 2 (never Python's conversion error).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from citadel.app.shadow_input import BadRecord, parse_record
from citadel.entrypoints.cli import app
from tests.bad_inputs import BAD_INPUTS, IDS, BadInput

HEAD = (
    '{"question": "q", "answer": "a", "timestamp": "2026-05-01T09:30:00Z",'
    ' "citations": [{"doc_id": "pol"'
)
TAIL = "]}"


@pytest.mark.parametrize("case", BAD_INPUTS, ids=IDS)
def test_each_bad_input_is_a_bad_record(case: BadInput) -> None:
    with pytest.raises(BadRecord) as caught:
        parse_record(3, case.text(HEAD, "version", TAIL).encode())
    assert caught.value.line == 3 and case.expected("version") in str(caught.value)


def test_the_record_without_the_defect_parses() -> None:
    record = parse_record(3, (HEAD + ', "version": 5}' + TAIL).encode())
    assert record.citations[0].version == 5


LONG_ID = (
    '{"id": 1' + "0" * 5000 + ', "question": "q", "answer": "a", "citations": [],'
    ' "timestamp": "2026-05-01T09:30:00Z"}'
)
LONG_AT = (
    '{"question": "q", "answer": "a", "citations": ["pol@1' + "0" * 4000 + '"],'
    ' "timestamp": "2026-05-01T09:30:00Z"}'
)


@pytest.mark.parametrize(
    ("raw", "needle"),
    [(LONG_ID, "5001 digits"), (LONG_AT, "the version after @ must be a whole number")],
    ids=["long id literal", "long version after @"],
)
def test_citadel_shadow_reports_a_long_integer_as_a_bad_record(
    tmp_path: Path, raw: str, needle: str
) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(raw + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["shadow", str(answers), "--home", str(tmp_path / "h")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())  # as printed, without the terminal's wrapping
    assert "line 1: citation 1" in said or "line 1: an integer" in said
    assert needle in said
