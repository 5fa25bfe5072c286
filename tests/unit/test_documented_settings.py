"""What the prose documents is what the code has: every ``CITADEL_*`` variable the
README and docs/ name is a setting of the table (a hostile review found the docs
naming a rate-limit variable that does not exist, so setting it did nothing), and
the query limits docs/api.md states are the schemas' and ``Limits``'s own figures."""

from __future__ import annotations

import logging
import re
import typing
from pathlib import Path

import pytest

from citadel.config import Settings
from citadel.domain.limits import Limits
from citadel.entrypoints.http.ask_query import MAX_QUESTION
from citadel.entrypoints.http.schemas import SearchBody
from citadel.entrypoints.mcp import server as mcp_server
from citadel.settings_table import NOT_SETTINGS, SETTINGS, table_in, unknown_variables
from citadel.settings_tracing import RESOURCE_VARIABLES
from tests.postgres import URL_ENV

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NAME = re.compile(r"\bCITADEL_[A-Z0-9_]*[A-Z0-9]\b")


def test_every_documented_variable_is_a_setting_of_the_table() -> None:
    known = {s.name for s in SETTINGS} | NOT_SETTINGS
    unknown = [
        f"{path.relative_to(ROOT)}:{number}: {name}"
        for path in DOCUMENTS
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for name in NAME.findall(line)
        if name not in known
    ]
    assert not unknown, "documented but not in src/citadel/settings_table.py:\n" + "\n".join(
        unknown
    )


def test_every_variable_the_scripts_and_tests_read_is_declared() -> None:
    assert URL_ENV in NOT_SETTINGS
    read = {
        name
        for folder in ("scripts", "tests", "bench")
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and path.suffix in {"", ".py", ".sh"} and path != Path(__file__)
        for name in NAME.findall(path.read_text(encoding="utf-8", errors="replace"))
    }
    known = {s.name for s in SETTINGS} | NOT_SETTINGS | {"CITADEL_VARIABLES"}
    assert read - known == set()


def test_a_variable_that_is_no_setting_is_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {"CITADEL_HTTP_RATE_PER_MINUTE": "5", "CITADEL_TEST_PG_URL": "x", "OTHER": "1"}
    assert unknown_variables(env) == [("CITADEL_HTTP_RATE_PER_MINUTE", "CITADEL_HTTP_RATE_LIMIT")]
    with caplog.at_level(logging.WARNING, logger="citadel.config"):
        settings = Settings.from_env(env)
    assert settings.http.rate_per_minute == Settings.from_env({}).http.rate_per_minute
    (record,) = [r for r in caplog.records if r.name == "citadel.config"]
    assert record.getMessage() == (
        "CITADEL_HTTP_RATE_PER_MINUTE is not a citadel setting and changes nothing;"
        " did you mean CITADEL_HTTP_RATE_LIMIT?"
    )


def test_every_setting_is_in_the_generated_readme_table() -> None:
    table = table_in((ROOT / "README.md").read_text(encoding="utf-8"))
    assert set(NAME.findall(table)) == {s.name for s in SETTINGS if not s.standard}
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \|", table, flags=re.MULTILINE)
    assert rows == [s.name for s in SETTINGS] + [name for name, _ in RESOURCE_VARIABLES]


def _bounds(metadata: typing.Iterable[object], low: str, high: str) -> tuple[int, int]:
    found = {k: getattr(m, k) for m in metadata for k in (low, high) if hasattr(m, k)}
    return found[low], found[high]


def _row(text: str, interface: str) -> str:
    rows = [line for line in text.splitlines() if line.startswith(f"| {interface}")]
    assert len(rows) == 1, interface
    return rows[0]


def test_the_documented_query_limits_are_the_codes() -> None:
    api = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    limits = Limits()
    in_bytes = f"at most {limits.max_query_bytes:,} bytes of UTF-8"
    returned = f"at most {limits.max_results} returned"
    query = SearchBody.model_fields["query"].metadata
    limit = SearchBody.model_fields["limit"].metadata
    http = _row(api, "HTTP API")
    assert f"{_fmt(_bounds(query, 'min_length', 'max_length'))} characters" in http
    assert f"{_fmt(_bounds(limit, 'ge', 'le'))} asked" in http
    assert in_bytes in http and returned in http
    assert f"1–{MAX_QUESTION:,} characters" in _row(api, "web UI")
    mcp = _row(api, "MCP")
    for annotation in (mcp_server.Query, mcp_server.Question):
        field = typing.get_args(annotation)[1]
        assert f"{_fmt(_bounds(field.metadata, 'min_length', 'max_length'))} characters" in mcp
    search_limit = typing.get_args(mcp_server.Limit)[1].metadata
    ask_limit = typing.get_args(mcp_server.AskLimit)[1].metadata
    assert f"`search` {_fmt(_bounds(search_limit, 'ge', 'le'))}" in mcp
    assert f"`ask` {_fmt(_bounds(ask_limit, 'ge', 'le'))}" in mcp
    assert in_bytes in mcp and returned in mcp
    cli = _row(api, "CLI")
    assert in_bytes in cli and "characters" not in cli
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"at most {limits.max_query_bytes // 1024} KiB" in readme
    assert f"at most {MAX_QUESTION:,} characters" in readme


def _fmt(bounds: tuple[int, int]) -> str:
    return f"{bounds[0]:,}–{bounds[1]:,}"
