"""One library per user: every command finds the same library from any directory.

Before, the default was ``./.citadel`` of the working directory: ``citadel ask`` run
anywhere but where the book was ingested printed ``No generated answer
(no_evidence)`` and exit 0, and an MCP client (which starts ``citadel mcp`` wherever
it likes) saw another, empty library. Now the default is the platform's per-user
data directory (``$XDG_DATA_HOME/citadel`` here), ``CITADEL_HOME`` or ``--home``
override it, and an empty or missing library is said, with where citadel looked.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import Result
from rich.console import Console
from typer.testing import CliRunner

from citadel.config import Settings, cli_default
from citadel.entrypoints.cli import app, demo

BOOK = """# Handling missing values

## Missing data

In R a missing value is written NA. The function is.na(x) tests each element of x
and returns TRUE where the value is missing.

## Reading files

The function read.table reads a data frame from a text file, one row per line.
"""
QUESTION = "How is a missing value tested for?"


@pytest.fixture
def user_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The per-user data directory's parent (``XDG_DATA_HOME``), fresh for the test."""
    data = tmp_path / "xdg"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.delenv("CITADEL_HOME", raising=False)
    monkeypatch.delenv("CITADEL_DB", raising=False)
    monkeypatch.setenv("CITADEL_EMBEDDER", "hashing")
    return data


def run(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def elsewhere(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    place = tmp_path / name
    place.mkdir()
    monkeypatch.chdir(place)
    return place


def ingested_from(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, *how: str) -> Path:
    """The test book ingested by the CLI from a new directory ``name`` (now the cwd)."""
    place = elsewhere(tmp_path, name, monkeypatch)
    (place / "missing.md").write_text(BOOK, encoding="utf-8")
    ingested = run("ingest", "missing.md", *how)
    assert ingested.exit_code == 0, ingested.stderr
    return place


def test_the_default_home_is_the_users_data_directory(user_data: Path) -> None:
    assert Settings.from_env({}).home == user_data / "citadel"
    assert Settings().home == user_data / "citadel"
    assert Settings.from_env({"CITADEL_HOME": "lib"}).home == Path("lib")
    assert cli_default("CITADEL_HOME") == (
        f"$CITADEL_HOME or the per-user data directory ({user_data / 'citadel'})"
    )


def test_a_book_ingested_in_one_directory_is_found_from_another(
    user_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = ingested_from(tmp_path, "notes", monkeypatch)
    assert (user_data / "citadel" / "citadel.db").is_file()
    assert not (place / ".citadel").exists()

    elsewhere(tmp_path, "somewhere-else", monkeypatch)
    asked = run("ask", QUESTION, "--json")
    assert asked.exit_code == 0, asked.stderr
    reply = json.loads(asked.stdout)
    assert reply["answer"] is not None, reply["degraded"]
    cited = {c["title"] for s in reply["answer"]["segments"] for c in s["citations"]}
    assert cited == {"Handling missing values"}


def test_a_missing_library_is_said_with_where_citadel_looked_and_nothing_is_made(
    user_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere(tmp_path, "anywhere", monkeypatch)
    for command in (["ask", QUESTION], ["search", "missing values"]):
        outcome = run(*command)
        assert outcome.exit_code == 1, (command, outcome.stdout)
        assert "there is no library at" in outcome.stderr
        assert str(user_data / "citadel") in outcome.stderr.replace("\n", "")
        assert "citadel ingest" in outcome.stderr
        assert outcome.stdout == ""
    assert not (user_data / "citadel").exists()
    # An empty CITADEL_HOME is the working directory, named as a reader can find it.
    monkeypatch.setenv("CITADEL_HOME", "")
    blank = run("search", "missing values")
    assert f"there is no library at {Path.cwd()}." in blank.stderr.replace("\n", "")


def test_an_empty_library_is_said_plainly_and_exits_non_zero(
    user_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "empty"
    listed = run("sources", "list", "--home", str(home))  # creates the library, no book
    assert listed.exit_code == 0, listed.stderr
    outcome = run("ask", QUESTION, "--home", str(home))
    assert outcome.exit_code == 1
    assert f"the library at {home} holds no books" in outcome.stderr.replace("\n", "")
    assert "No generated answer" not in outcome.stdout


def test_books_a_reader_may_not_read_are_no_results_not_an_empty_library(
    user_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingested_from(tmp_path, "books", monkeypatch, "--acl", "staff")
    assert run("users", "add", "ada", "--role", "reader").exit_code == 0
    outcome = run("search", "missing values", "--as", "ada", "--json")
    assert outcome.exit_code == 0, outcome.stderr
    assert json.loads(outcome.stdout)["results"] == []
    assert "holds no books" not in outcome.stderr


def test_a_working_directory_library_of_an_older_citadel_is_pointed_out(
    user_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingested_from(tmp_path, "old-project", monkeypatch, "--home", ".citadel")
    outcome = run("ask", QUESTION)
    assert "note: ./.citadel holds a library" in outcome.stderr
    assert "CITADEL_HOME=./.citadel" in outcome.stderr.replace("\n", "")
    # Named, it is used, and the note is not repeated.
    monkeypatch.setenv("CITADEL_HOME", ".citadel")
    named = run("ask", QUESTION)
    assert named.exit_code == 0 and "note:" not in named.stderr


def test_the_demo_builds_the_users_library_and_names_the_next_three_commands(
    user_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    place = elsewhere(tmp_path, "checkout", monkeypatch)
    book = place / "missing.md"
    book.write_text(BOOK, encoding="utf-8")
    # The book finder is the one part replaced: the real ones ingest a whole manual.
    monkeypatch.setattr(
        demo, "find_library", lambda home: demo.DemoLibrary((book,), "a test book", (QUESTION,))
    )
    shown = io.StringIO()
    stdout = io.StringIO()
    monkeypatch.setattr("sys.stdout", stdout)
    assert demo.run_demo(None, Console(file=shown, width=200)) == 0
    printed = stdout.getvalue()
    assert f"Kept in: {user_data / 'citadel'}" in shown.getvalue()
    next_lines = printed[printed.index("Next,") :].splitlines()
    assert [line.split()[1] for line in next_lines[1:]] == ["ask", "users", "serve", "mcp"]
    assert "--home" not in printed  # the next commands find this library alone

    monkeypatch.setattr("sys.stdout", io.StringIO())
    elsewhere(tmp_path, "another-shell", monkeypatch)
    asked = run("ask", QUESTION, "--json")
    assert asked.exit_code == 0, asked.stderr
    assert json.loads(asked.stdout)["answer"] is not None


def test_a_demo_given_a_home_passes_it_on_to_the_next_commands() -> None:
    steps = demo.next_steps(('Why "quote"?',), given=" --home '/tmp/my lib'")
    assert "citadel ask \"Why 'quote'?\" --home '/tmp/my lib'" in steps
    assert steps.count("--home '/tmp/my lib'") == 4
