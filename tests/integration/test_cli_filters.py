"""``--source``, ``--tag``, ``--year-from`` and ``--year-to`` on ``citadel search`` and ``ask``:
the API's domain filters, applied inside retrieval; a backwards range is bad usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citadel.entrypoints.cli import app
from tests.integration.test_cli import CLEAN_ENV

BOOKS = {
    "ops.md": (
        "# Operations Guide\n\n## Retries\n\nA retry budget caps the attempts.\n",
        "ops",
        2001,
    ),
    "sre.md": (
        "# Reliability Notes\n\n## Retries\n\nRetry storms take a fleet down.\n",
        "sre",
        2019,
    ),
}


def run(*args: str) -> Result:
    env = {**CLEAN_ENV, "CITADEL_EMBEDDER": "hashing"}
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    home = tmp_path_factory.mktemp("filters")
    ids = {}
    for name, (text, tag, year) in BOOKS.items():
        path = home / name
        path.write_text(text, encoding="utf-8")
        out = run(
            "ingest", str(path), "--tag", tag, "--year", str(year), "--home", str(home), "--json"
        )
        assert out.exit_code == 0, out.output
        ids[tag] = json.loads(out.stdout.splitlines()[-1])["source_id"]
    return home, ids


def titles(result: Result, key: str = "results") -> set[str]:
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    found = body[key] if key == "results" else body["search"]["results"]
    return {r["title"] for r in found}


def test_search_filters_by_source_tag_and_years(home: tuple[Path, dict[str, str]]) -> None:
    where, ids = home
    base = ("search", "retry", "--home", str(where), "--json")
    assert titles(run(*base)) == {"Operations Guide", "Reliability Notes"}
    assert titles(run(*base, "--source", ids["ops"])) == {"Operations Guide"}
    assert titles(run(*base, "--tag", "sre")) == {"Reliability Notes"}
    assert titles(run(*base, "--tag", "sre", "--tag", "ops")) == {
        "Operations Guide",
        "Reliability Notes",
    }
    assert titles(run(*base, "--year-from", "2010")) == {"Reliability Notes"}
    assert titles(run(*base, "--year-to", "2010")) == {"Operations Guide"}
    assert titles(run(*base, "--year-from", "2002", "--year-to", "2018")) == set()


def test_ask_takes_the_same_filters(home: tuple[Path, dict[str, str]]) -> None:
    where, ids = home
    for tag, title in (("sre", "Reliability Notes"), ("ops", "Operations Guide")):
        answer = run(
            "ask", "What about retry?", "--source", ids[tag], "--home", str(where), "--json"
        )
        assert titles(answer, "search") == {title}
        assert run("ask", "What about retry?", "--tag", tag, "--home", str(where)).exit_code == 0


@pytest.mark.parametrize("command", ["search", "ask"])
def test_bad_years_are_refused_plainly(home: tuple[Path, dict[str, str]], command: str) -> None:
    where, _ = home
    backwards = run(
        command, "retry", "--year-from", "2020", "--year-to", "2010", "--home", str(where)
    )
    assert backwards.exit_code == 2
    assert "--year-from 2020 is after --year-to 2010" in backwards.output
    not_a_year = run(command, "retry", "--year-to", "soon", "--home", str(where))
    assert not_a_year.exit_code == 2 and "--year-to" in not_a_year.output
