"""``citadel chat``: questions on stdin, one a line, each a turn of one conversation,
printed as ``citadel ask`` prints an answer (after "searched for: …" when the follow-up
was rewritten); ``--json`` one object per turn; ``--conversation`` continues one;
``--list`` and ``--delete`` manage the acting user's conversations, and no one else's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citadel.entrypoints.cli import app as cli_app
from tests.http.conftest import QUESTION, Library, make_library
from tests.integration.test_cli import CLEAN_ENV

ENV = dict(CLEAN_ENV, CITADEL_EMBEDDER="hashing", CITADEL_RELEVANCE="off")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Library:
    lib = make_library(tmp_path_factory.mktemp("chat"))
    lib.services.close()  # the CLI opens the library itself
    return lib


def chat(library: Library, *args: str, lines: str = "", code: int = 0) -> Result:
    outcome = CliRunner().invoke(
        cli_app, ["chat", "--home", str(library.home), *args], input=lines, env=ENV
    )
    assert outcome.exit_code == code, (outcome.stdout, outcome.stderr)
    return outcome


def turns_of(outcome: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in outcome.stdout.splitlines()]


def test_each_line_is_a_turn_printed_with_footnotes_and_the_rewrite(library: Library) -> None:
    outcome = chat(library, "--as", "ada", lines=f"{QUESTION}\nand its cap?\n\nignored\n")
    text = outcome.stdout
    first, second = text.split("searched for: ")
    # The first turn as `citadel ask` prints an answer: prose with marks, then footnotes.
    assert "retry budget caps the attempts" in first and "[1" in first
    assert "Reliable Service Design" in first
    # The follow-up: what it searched for, then its own answer.
    query = second.splitlines()[0]
    assert query.startswith("and its cap? ") and "retry" in query.lower()
    assert "Reliable Service Design" in second
    assert "ignored" not in text  # the empty line ended the conversation
    assert "conversation " in outcome.stderr and "--conversation" in outcome.stderr
    listed = chat(library, "--as", "ada", "--list").stdout
    assert QUESTION in listed


def test_json_prints_one_object_per_turn_and_continue_adds_to_it(library: Library) -> None:
    first = turns_of(chat(library, "--as", "ada", "--json", lines=f"{QUESTION}\nand its cap?\n"))
    assert [t["number"] for t in first] == [1, 2]
    cid = first[0]["conversation_id"]
    assert first[1]["conversation_id"] == cid
    assert first[0]["rewrite"] == "none" and first[1]["rewrite"] == "deterministic"
    assert first[1]["query"] != first[1]["question"] == "and its cap?"
    assert first[0]["answer"]["answer"] is not None
    assert first[0]["answer"]["answer_id"] != first[1]["answer"]["answer_id"]

    more = turns_of(
        chat(library, "--as", "ada", "--json", "--conversation", cid, lines="and then?")
    )
    assert [(t["conversation_id"], t["number"]) for t in more] == [(cid, 3)]

    listed = json.loads(chat(library, "--as", "ada", "--list", "--json").stdout)
    assert cid in [c["conversation_id"] for c in listed["items"]]


def test_another_users_conversation_is_not_theirs(library: Library) -> None:
    cid = turns_of(chat(library, "--as", "ada", "--json", lines=QUESTION))[0]["conversation_id"]
    # Not even an admin of the same tenant: a conversation is its reader's alone.
    refused = chat(library, "--as", "root", "--conversation", cid, lines="and?", code=1)
    assert f"no conversation {cid}" in refused.stderr and refused.stdout == ""
    assert chat(library, "--as", "root", "--delete", cid, code=1).stdout == ""
    assert cid not in chat(library, "--as", "root", "--list").stdout
    assert cid not in chat(library, "--as", "eve", "--list").stdout
    assert "No conversations." in chat(library, "--as", "eve", "--list").stdout
    # The local administrator is a user of its own: it does not see ada's either.
    assert cid not in chat(library, "--list").stdout

    deleted = chat(library, "--as", "ada", "--delete", cid)
    assert deleted.stdout == f"deleted conversation {cid}\n"
    assert cid not in chat(library, "--as", "ada", "--list").stdout
    chat(library, "--as", "ada", "--delete", cid, code=1)


def test_options_that_contradict_are_a_usage_error(library: Library) -> None:
    outcome = chat(library, "--list", "--delete", "x", code=2)
    assert "use one of --list, --delete and --conversation" in outcome.stderr


def test_no_question_is_no_conversation(library: Library) -> None:
    before = chat(library, "--list", "--json").stdout
    outcome = chat(library, lines="\n")
    assert outcome.stdout == "" and chat(library, "--list", "--json").stdout == before


def test_a_refused_question_is_said_and_the_next_one_still_asked(library: Library) -> None:
    too_long = "retry " * 400
    outcome = chat(library, "--as", "ada", "--json", lines=f"{too_long}\n{QUESTION}\n", code=1)
    assert "a search query has 1 to 2000 characters" in outcome.stderr
    assert "Traceback" not in outcome.stderr
    [turn] = turns_of(outcome)
    assert turn["number"] == 1 and turn["question"] == QUESTION
