"""The real CLI over the embedded default: ingest a real book, ask, and check the contract.

The ``--json`` shape is the one in ARCHITECTURE.md; every citation must point
at evidence the search returned, with the book's printed page labels.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.errors import Unauthenticated
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.entrypoints.cli import app
from tests.conftest import shared_path

QUESTION = "How do I read data from a file into a data frame?"
# Keep the caller's environment out of the run: --home must decide where data goes.
CITADEL_VARIABLES = (
    "CITADEL_HOME",
    "CITADEL_DB",
    "CITADEL_GENERATOR",
    "CITADEL_TENANT",
    "CITADEL_GENERATOR_DEADLINE_S",
    "CITADEL_MAX_CONCURRENT_GENERATIONS",
    "CITADEL_MAX_FILE_BYTES",
)
CLEAN_ENV: dict[str, str | None] = dict.fromkeys(CITADEL_VARIABLES)

RESULT_FIELDS = {
    "evidence_id": str,
    "source_id": str,
    "version": int,
    "chunk_id": str,
    "title": str,
    "author": str,
    "chapter": str,
    "section": str,
    "section_path": list,
    "page_start": int,
    "page_end": int,
    "page_label_start": str,
    "page_label_end": str,
    "score": float,
    "passage": str,
}
CITATION_FIELDS = {
    "ref": str,
    "evidence_id": str,
    "source_id": str,
    "version": int,
    "title": str,
    "chapter": str,
    "section": str,
    "pages": str,
    "link": dict,
}


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=CLEAN_ENV, catch_exceptions=False)


def registry(home: Path) -> SqliteLibrary:
    return SqliteLibrary(Settings(home=home).db_path)


def printed_pages(result: dict[str, Any]) -> str:
    start, end = result["page_label_start"], result["page_label_end"]
    return start if end in (None, start) else f"{start}–{end}"


@pytest.fixture(scope="module")
def library_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """R-intro ingested once for the module (it takes about a second)."""
    book = shared_path("books", "pdf", "R-intro.pdf")
    home = tmp_path_factory.mktemp("citadel-home")
    outcome = cli("ingest", "--home", str(home), "--json", str(book))
    assert outcome.exit_code == 0, outcome.stderr
    report = json.loads(outcome.stdout)
    assert report["status"] == "created"
    assert report["title"] == "An Introduction to R"
    assert report["chunks"] > 100
    return home


@pytest.fixture(scope="module")
def asked(library_home: Path) -> dict[str, Any]:
    outcome = cli("ask", "--home", str(library_home), "--json", QUESTION)
    assert outcome.exit_code == 0, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert len(lines) == 1, "ask --json prints exactly one object"
    value: dict[str, Any] = json.loads(lines[0])
    return value


@pytest.mark.shared
def test_ask_json_follows_the_contract(asked: dict[str, Any]) -> None:
    assert {"answer_id", "request_id", "query", "search", "answer", "degraded"} <= set(asked)
    assert asked["answer_id"] and asked["request_id"]
    assert asked["answer_id"] != asked["request_id"]
    assert asked["query"] == QUESTION
    assert asked["degraded"] is None, asked["degraded"]

    results = asked["search"]["results"]
    assert results
    for result in results:
        assert set(RESULT_FIELDS) <= set(result)
        for name, kind in RESULT_FIELDS.items():
            assert isinstance(result[name], kind), (name, result[name])
        assert 0.0 <= result["score"] <= 1.0
        assert result["evidence_id"]
        assert result["title"] == "An Introduction to R"
        assert result["page_start"] <= result["page_end"]
        assert result["passage"].strip()
    # Best first: the strongest passage leads. Section diversity may place a section's
    # further passages below another section's, each keeping its own score, but never
    # reorders one section's passages.
    scores = [r["score"] for r in results]
    assert scores[0] == max(scores)
    by_section: dict[tuple[str, tuple[str, ...]], list[float]] = {}
    for result in results:
        key = (result["source_id"], tuple(result["section_path"]))
        by_section.setdefault(key, []).append(result["score"])
    assert all(found == sorted(found, reverse=True) for found in by_section.values())
    assert len({r["evidence_id"] for r in results}) == len(results)

    answer = asked["answer"]
    assert answer["generator"] == "extractive"
    assert answer["segments"]
    for segment in answer["segments"]:
        assert isinstance(segment["text"], str) and segment["text"].strip()
        assert segment["citations"]
        for citation in segment["citations"]:
            assert set(CITATION_FIELDS) <= set(citation)
            for name, kind in CITATION_FIELDS.items():
                assert isinstance(citation[name], kind), (name, citation[name])
            assert re.fullmatch(r"E[1-9]\d*", citation["ref"])
            assert {"state", "href"} <= set(citation["link"])


@pytest.mark.shared
def test_every_citation_is_selected_evidence_with_printed_page_labels(
    asked: dict[str, Any],
) -> None:
    by_id = {r["evidence_id"]: r for r in asked["search"]["results"]}
    refs: dict[str, str] = {}
    citations = [c for s in asked["answer"]["segments"] for c in s["citations"]]
    assert citations
    for citation in citations:
        evidence = by_id.get(citation["evidence_id"])
        assert evidence is not None, f"{citation['evidence_id']} is not a search result"
        # One ref stands for one evidence id within the answer.
        assert refs.setdefault(citation["ref"], citation["evidence_id"]) == citation["evidence_id"]
        for name in ("source_id", "version", "title", "chapter", "section"):
            assert citation[name] == evidence[name], name
        assert citation["pages"], "every citation names its pages"
        assert evidence["page_label_start"] is not None, "R-intro has printed page labels"
        assert citation["pages"] == printed_pages(evidence)
    # The printed labels are not the physical page numbers in this book.
    assert any(
        by_id[c["evidence_id"]]["page_label_start"] != str(by_id[c["evidence_id"]]["page_start"])
        for c in citations
    )


@pytest.mark.shared
def test_the_answer_cites_the_chapter_on_reading_data(asked: dict[str, Any]) -> None:
    chapters = {c["chapter"] for s in asked["answer"]["segments"] for c in s["citations"]}
    assert any(chapter.startswith("7 ") for chapter in chapters), chapters


@pytest.mark.shared
def test_ask_prints_footnotes_with_page_labels(library_home: Path, asked: dict[str, Any]) -> None:
    outcome = cli("ask", "--home", str(library_home), QUESTION)
    assert outcome.exit_code == 0, outcome.stderr
    # The cited passages head the evidence list, under the numbers the marks use.
    footnotes = re.findall(
        r"^\[(\d+)\] cited  (An Introduction to R, ch\. .*)$", outcome.stdout, re.M
    )
    assert footnotes, outcome.stdout
    assert [int(n) for n, _ in footnotes] == list(range(1, len(footnotes) + 1))
    assert any(note.startswith("An Introduction to R, ch. 7") for _, note in footnotes)

    # The same question gives the same answer; its footnotes carry the cited pages.
    cited: dict[str, str] = {}
    for segment in asked["answer"]["segments"]:
        for citation in segment["citations"]:
            cited.setdefault(citation["evidence_id"], citation["pages"])
    assert len(footnotes) == len(cited)
    for (_, note), pages in zip(footnotes, cited.values(), strict=True):
        assert note.endswith(f"p. {pages}"), (note, pages)
    # --json says the same: each search result the answer cites carries its footnote.
    numbered = {r["footnote"]: r["evidence_id"] for r in asked["search"]["results"] if r["cited"]}
    assert [numbered[n] for n in sorted(numbered)] == list(cited)
    assert "Further passages:" in outcome.stdout


@pytest.mark.shared
def test_a_query_full_of_fts5_syntax_is_plain_text(library_home: Path) -> None:
    query = '"NEAR( a* -b : )'
    outcome = cli("search", "--home", str(library_home), "--json", query)
    assert outcome.exit_code == 0, outcome.stderr
    assert json.loads(outcome.stdout)["query"] == query
    hostile = "data\" OR title:* NOT frame'; DROP TABLE chunks; -- NEAR(file, 2)"
    outcome = cli("ask", "--home", str(library_home), "--json", hostile)
    assert outcome.exit_code == 0, outcome.stderr
    asked = json.loads(outcome.stdout)
    assert asked["query"] == hostile
    assert asked["search"]["results"], "the plain words in it still find passages"
    # The library is intact afterwards.
    outcome = cli("search", "--home", str(library_home), "--json", "data frame")
    assert outcome.exit_code == 0, outcome.stderr
    assert json.loads(outcome.stdout)["results"]


@pytest.mark.shared
def test_ask_with_no_matching_evidence_degrades(library_home: Path) -> None:
    outcome = cli("ask", "--home", str(library_home), "--json", "zyzzyva quokka")
    assert outcome.exit_code == 0, outcome.stderr
    asked = json.loads(outcome.stdout)
    assert asked["answer"] is None
    assert asked["degraded"]["reason"] == "no_evidence"
    assert asked["degraded"]["detail"]
    assert asked["search"]["results"] == []


@pytest.mark.parametrize("query", ["", "   "])
def test_search_for_nothing_is_a_usage_error(tmp_path: Path, query: str) -> None:
    outcome = cli("search", "--home", str(tmp_path), query)
    assert outcome.exit_code == 2
    assert "query is empty" in outcome.stderr
    assert outcome.stdout == ""


def ingest_failure(home: Path, path: Path) -> dict[str, Any]:
    outcome = cli("ingest", "--home", str(home), "--json", str(path))
    assert outcome.exit_code == 1, (outcome.stdout, outcome.stderr)
    assert "failed" in outcome.stderr
    report: dict[str, Any] = json.loads(outcome.stdout)
    assert report["status"] == "failed"
    assert report["path"] == str(path)
    assert str(path) in report["error"]
    return report


def assert_nothing_written(home: Path) -> None:
    lib = registry(home)
    try:
        assert list(lib.list()) == []
    finally:
        lib.close()


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.txt", b"", "empty"),
        (
            "latin1.txt",
            "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9.\n".encode("latin-1"),
            "not_utf8",
        ),
        ("blank.md", b"  \n\n \n", "no_text"),
    ],
)
def test_a_refused_file_exits_1_and_writes_nothing(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    home = tmp_path / "home"
    path = tmp_path / name
    path.write_bytes(content)
    report = ingest_failure(home, path)
    assert report["reason"] == reason
    assert_nothing_written(home)


def test_a_missing_path_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    report = ingest_failure(home, tmp_path / "no-such-book.pdf")
    assert report["reason"] == "not_found"
    assert_nothing_written(home)


def test_each_file_is_reported_on_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    good = tmp_path / "notes.md"
    good.write_text("# Notes\n\nRetry attempts must be bounded by a budget.\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    outcome = cli("ingest", "--home", str(home), "--json", str(empty), str(good))
    assert outcome.exit_code == 1
    reports = [json.loads(line) for line in outcome.stdout.splitlines()]
    assert [(r["path"], r["status"]) for r in reports] == [
        (str(empty), "failed"),
        (str(good), "created"),
    ]
    lib = registry(home)
    try:
        assert [s.title for s in lib.list()] == ["Notes"]
    finally:
        lib.close()

    # The same content again is a no-op, not a second version.
    outcome = cli("ingest", "--home", str(home), "--json", str(good))
    assert outcome.exit_code == 0, outcome.stderr
    assert json.loads(outcome.stdout)["status"] == "unchanged"
    lib = registry(home)
    try:
        [source] = lib.list()
        assert [v.version for v in lib.versions(source.tenant, source.source_id)] == [1]
    finally:
        lib.close()


# -- users, tenants and ACLs ---------------------------------------------------------------

QUERY = "flux capacitor"


def ingest_note(home: Path, path: Path, text: str, *extra: str) -> str:
    path.write_text(text, encoding="utf-8")
    outcome = cli("ingest", "--home", str(home), "--json", *extra, str(path))
    assert outcome.exit_code == 0, outcome.stderr
    source_id: str = json.loads(outcome.stdout)["source_id"]
    return source_id


def add_user(home: Path, name: str, *options: str) -> str:
    outcome = cli("users", "add", "--home", str(home), "--json", name, *options)
    assert outcome.exit_code == 0, outcome.stderr
    added = json.loads(outcome.stdout)
    assert added["name"] == name
    token: str = added["token"]
    return token


def seen_as(home: Path, *as_user: str) -> set[str]:
    """The source ids a search finds, as the local administrator or ``--as`` a user."""
    outcome = cli("search", "--home", str(home), "--json", *as_user, QUERY)
    assert outcome.exit_code == 0, outcome.stderr
    return {r["source_id"] for r in json.loads(outcome.stdout)["results"]}


@pytest.fixture
def acl_home(tmp_path: Path) -> tuple[Path, str, str]:
    """Two notes of the default tenant, one readable by ops and one by dev."""
    home = tmp_path / "home"
    runbook = ingest_note(
        home,
        tmp_path / "runbook.md",
        "# Runbook\n\nRestart the flux capacitor workers one at a time.\n",
        "--acl",
        "ops",
    )
    design = ingest_note(
        home,
        tmp_path / "design.md",
        "# Design\n\nThe flux capacitor workers keep their state in one queue.\n",
        "--acl",
        "dev,arch",
    )
    return home, runbook, design


def test_users_add_prints_the_token_once_and_stores_only_its_hash(tmp_path: Path) -> None:
    home = tmp_path / "home"
    outcome = cli("users", "add", "--home", str(home), "ada", "--groups", "ops,sre")
    assert outcome.exit_code == 0, outcome.stderr
    token = outcome.stdout.strip()
    assert re.fullmatch(r"ctd_[A-Za-z0-9_-]{43}", token), token
    assert "shown only this once" in outcome.stderr
    assert token not in outcome.stderr

    listed = cli("users", "list", "--home", str(home), "--json")
    assert listed.exit_code == 0, listed.stderr
    [ada] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert ada == {
        "name": "ada",
        "tenant": "default",
        "role": "reader",
        "groups": ["ops", "sre"],
        "status": "active",
        "created_at": ada["created_at"],
    }
    text = cli("users", "list", "--home", str(home))
    assert text.stdout == "ada  default  reader  active  groups: ops,sre\n"
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    for shown in (listed.stdout, text.stdout):
        assert "ctd_" not in shown
    assert token.encode() not in stored


def test_users_enable_and_rotate(tmp_path: Path, acl_home: tuple[Path, str, str]) -> None:
    home, runbook, _ = acl_home
    old = add_user(home, "ada", "--groups", "ops")
    assert cli("users", "disable", "--home", str(home), "ada").exit_code == 0
    assert cli("search", "--home", str(home), "--as", "ada", QUERY).exit_code == 2
    enabled = cli("users", "enable", "--home", str(home), "--json", "ada")
    assert enabled.exit_code == 0, enabled.stderr
    assert json.loads(enabled.stdout)["status"] == "active"
    assert seen_as(home, "--as", "ada") == {runbook}

    rotated = cli("users", "rotate", "--home", str(home), "ada")
    assert rotated.exit_code == 0, rotated.stderr
    new = rotated.stdout.strip()
    assert re.fullmatch(r"ctd_[A-Za-z0-9_-]{43}", new) and new != old
    assert "shown only this once" in rotated.stderr and new not in rotated.stderr
    services = build(Settings(home=home, embedder="none"))
    try:
        assert services.users.authenticate(new).user_id == "ada"
        with pytest.raises(Unauthenticated):
            services.users.authenticate(old)
    finally:
        services.close()
    missing = cli("users", "rotate", "--home", str(home), "nobody")
    assert (missing.exit_code, missing.stdout) == (1, "")
    assert "no user nobody" in missing.stderr


def test_users_add_refuses_duplicates_and_bad_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    add_user(home, "ada")
    again = cli("users", "add", "--home", str(home), "ada", "--tenant", "globex")
    assert again.exit_code == 1
    assert "a user named ada already exists" in again.stderr
    assert again.stdout == ""
    bad = cli("users", "add", "--home", str(home), "two words")
    assert bad.exit_code == 2
    assert "whitespace" in bad.stderr
    bad_group = cli("users", "add", "--home", str(home), "bo", "--groups", "ok,not ok")
    assert bad_group.exit_code == 2
    assert "group name" in bad_group.stderr
    missing = cli("users", "disable", "--home", str(home), "nobody")
    assert missing.exit_code == 1
    assert "no user nobody" in missing.stderr


def test_users_disable_keeps_a_tenants_last_admin(tmp_path: Path) -> None:
    home = tmp_path / "home"
    add_user(home, "root", "--role", "admin", "--tenant", "acme")
    refused = cli("users", "disable", "--home", str(home), "root")
    assert (refused.exit_code, refused.stdout) == (1, "")
    assert "root is the last enabled admin of tenant acme" in refused.stderr
    # The operator's way out: another admin first (the CLI needs no admin of the tenant).
    add_user(home, "boss", "--role", "admin", "--tenant", "acme")
    assert cli("users", "disable", "--home", str(home), "root").exit_code == 0


def test_search_as_a_user_sees_only_what_its_groups_may_read(
    acl_home: tuple[Path, str, str],
) -> None:
    home, runbook, design = acl_home
    add_user(home, "ada", "--groups", "ops,sre")
    add_user(home, "dee", "--groups", "arch")
    add_user(home, "nobody-in-particular")
    assert seen_as(home) == {runbook, design}, "without --as: the local administrator"
    assert seen_as(home, "--as", "ada") == {runbook}
    assert seen_as(home, "--as", "dee") == {design}
    assert seen_as(home, "--as", "nobody-in-particular") == set()
    asked = cli("ask", "--home", str(home), "--json", "--as", "ada", QUERY)
    assert asked.exit_code == 0, asked.stderr
    assert {r["source_id"] for r in json.loads(asked.stdout)["search"]["results"]} == {runbook}


def test_a_disabled_or_unknown_user_is_refused_with_exit_2(
    acl_home: tuple[Path, str, str],
) -> None:
    home, runbook, _ = acl_home
    add_user(home, "ada", "--groups", "ops")
    assert seen_as(home, "--as", "ada") == {runbook}
    disabled = cli("users", "disable", "--home", str(home), "ada")
    assert disabled.exit_code == 0, disabled.stderr
    for command in ("search", "ask"):
        outcome = cli(command, "--home", str(home), "--as", "ada", QUERY)
        assert outcome.exit_code == 2, (command, outcome.stdout)
        assert "user ada is disabled" in outcome.stderr
        assert outcome.stdout == ""
    unknown = cli("search", "--home", str(home), "--as", "mallory", QUERY)
    assert unknown.exit_code == 2
    assert "no user mallory" in unknown.stderr
    listed = cli("users", "list", "--home", str(home), "--json")
    assert json.loads(listed.stdout)["status"] == "disabled"


def test_sources_acl_set_changes_what_a_user_sees(acl_home: tuple[Path, str, str]) -> None:
    home, runbook, design = acl_home
    add_user(home, "ada", "--groups", "ops")
    add_user(home, "lib", "--role", "librarian", "--groups", "dev")

    refused = cli("sources", "acl", "--home", str(home), design, "--set", "ops", "--as", "ada")
    assert refused.exit_code == 1
    assert "only librarians and admins" in refused.stderr
    assert seen_as(home, "--as", "ada") == {runbook}

    widened = cli(
        "sources", "acl", "--home", str(home), "--json", design, "--set", "dev, ops", "--as", "lib"
    )
    assert widened.exit_code == 0, widened.stderr
    assert json.loads(widened.stdout)["acl_groups"] == ["dev", "ops"]
    assert seen_as(home, "--as", "ada") == {runbook, design}

    narrowed = cli("sources", "acl", "--home", str(home), runbook, "--set", "sre")
    assert narrowed.exit_code == 0, narrowed.stderr
    assert seen_as(home, "--as", "ada") == {design}

    cleared = cli("sources", "acl", "--home", str(home), runbook, "--set", "")
    assert cleared.exit_code == 0, cleared.stderr
    assert "everyone in the tenant" in cleared.stderr
    assert seen_as(home, "--as", "ada") == {runbook, design}
    listed = cli("sources", "list", "--home", str(home), "--json", "--as", "ada")
    assert {json.loads(line)["source_id"] for line in listed.stdout.splitlines()} == {
        runbook,
        design,
    }


def test_another_tenants_user_sees_nothing_of_this_one(
    acl_home: tuple[Path, str, str], tmp_path: Path
) -> None:
    home, runbook, design = acl_home
    add_user(home, "gus", "--tenant", "globex", "--role", "admin", "--groups", "ops,dev")
    # A tenant of its own with no book yet: an empty library for gus, said plainly.
    empty = cli("search", "--home", str(home), "--as", "gus", QUERY)
    assert empty.exit_code == 1
    assert "holds no books in tenant globex" in empty.stderr.replace("\n", " ")
    # Ingest --tenant puts a source in another tenant; only that tenant's users see it.
    theirs = ingest_note(
        home,
        tmp_path / "globex.md",
        "# Globex\n\nOur flux capacitor workers run on Tuesdays.\n",
        "--tenant",
        "globex",
    )
    assert seen_as(home, "--as", "gus") == {theirs}
    assert seen_as(home) == {runbook, design}, "the default tenant's view is unchanged"
    foreign = cli("sources", "acl", "--home", str(home), runbook, "--set", "", "--as", "gus")
    assert foreign.exit_code == 1
    assert f"no source {runbook}" in foreign.stderr


def test_titles_that_look_like_terminal_markup_are_printed_as_text(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("# [/bold] Handbook [red]\n\nRestart one worker at a time.\n", "utf-8")
    second.write_text("# Queues\n\nThe workers keep their state in one queue.\n", "utf-8")
    outcome = cli("ingest", "--home", str(home), str(first), str(second))
    assert outcome.exit_code == 0, outcome.stderr
    assert "[/bold] Handbook [red]" in outcome.stdout
    assert "Queues" in outcome.stdout, "the next file is ingested too"
