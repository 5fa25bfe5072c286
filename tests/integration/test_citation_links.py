"""Links from the resolver through the real CLI: canonical, refused, forbidden on re-display.

A trusted URL registered with ``--url`` renders as ``canonical`` when its
host is allowlisted; a hostile URL is refused at ingestion and nothing is
written; a reader whose group is removed after the answer gets ``forbidden``
when the citation is displayed again. The audit log records every answer and
verifies.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citadel.entrypoints.cli import app
from tests.integration.test_cli import CLEAN_ENV

ALLOWED = "docs.example.org"
NOTE = "# Capacitors\n\nThe flux capacitor workers restart one at a time after a deploy.\n"
QUESTION = "How do the flux capacitor workers restart?"


def cli(*args: str, hosts: str = ALLOWED) -> Result:
    env = dict(CLEAN_ENV, CITADEL_LINK_ALLOWED_HOSTS=hosts, CITADEL_EMBEDDER="hashing")
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


def ingest(home: Path, note: Path, *extra: str) -> Result:
    note.write_text(NOTE, encoding="utf-8")
    return cli("ingest", "--home", str(home), "--json", *extra, str(note))


def ask(home: Path, *extra: str) -> dict[str, Any]:
    outcome = cli("ask", "--home", str(home), "--json", *extra, QUESTION)
    assert outcome.exit_code == 0, outcome.stderr
    value: dict[str, Any] = json.loads(outcome.stdout)
    return value


def links(answer: dict[str, Any]) -> list[dict[str, Any]]:
    assert answer["answer"] is not None, answer["degraded"]
    return [c["link"] for s in answer["answer"]["segments"] for c in s["citations"]]


def test_an_allowlisted_trusted_url_renders_canonical(tmp_path: Path) -> None:
    home = tmp_path / "home"
    url = f"https://{ALLOWED}/x.html"
    outcome = ingest(home, tmp_path / "note.md", "--url", url)
    assert outcome.exit_code == 0, outcome.stderr
    answer = ask(home)
    assert links(answer) == [{"state": "canonical", "href": url}]
    shown = cli("ask", "--home", str(home), QUESTION)
    assert url in shown.stdout
    # The same URL once the policy no longer allows the host: a viewer link instead.
    again = cli("ask", "--home", str(home), "--json", QUESTION, hosts="other.example.org")
    [link] = links(json.loads(again.stdout))
    assert link["state"] == "viewer" and link["href"].startswith("/v1/sources/")
    # A terminal gets no signed routes it cannot open: those are for --json and the web UI.
    text = cli("ask", "--home", str(home), QUESTION, hosts="other.example.org")
    assert "token=" not in text.stdout and "[1]" in text.stdout


HOSTILE = [
    "javascript:alert(1)",
    "http://docs.example.org/x.html",
    "https://docs.example.org@evil.example/x",
    "https://127.0.0.1/x",
    "https://2130706433/x",
    "https://[::1]/x",
    "https://dоcs.example.org/x",  # Cyrillic о
    "https://docs.example.org/x%0d%0aSet-Cookie:a=b",
    "https://docs.example.org:8443/x",
    "https://evil.example/x",
    "data:text/html,<script>alert(1)</script>",
    "https://localhost/x",
]


@pytest.mark.parametrize("url", HOSTILE)
def test_a_hostile_url_is_refused_at_ingestion_and_nothing_is_written(
    tmp_path: Path, url: str
) -> None:
    home = tmp_path / "home"
    outcome = ingest(home, tmp_path / "note.md", "--url", url)
    assert outcome.exit_code == 1
    assert "url_refused" in outcome.stderr or "refused" in outcome.stderr
    listed = cli("sources", "list", "--home", str(home), "--json")
    assert listed.stdout.strip() in ("", "[]")


def test_a_sidecar_url_goes_through_the_same_policy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    note = tmp_path / "note.md"
    (tmp_path / "note.md.citadel.json").write_text(
        json.dumps({"url": "https://evil.example/phish"}), encoding="utf-8"
    )
    outcome = ingest(home, note)
    assert outcome.exit_code == 1
    assert "refused" in outcome.stderr


def test_a_reader_whose_group_is_removed_gets_forbidden_on_re_display(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingested = ingest(home, tmp_path / "note.md", "--acl", "ops")
    source_id = json.loads(ingested.stdout)["source_id"]
    added = cli("users", "add", "--home", str(home), "--json", "ada", "--groups", "ops")
    assert added.exit_code == 0, added.stderr
    answer = ask(home, "--as", "ada")
    [link] = links(answer)
    assert link["state"] == "viewer"
    [citation] = [c for s in answer["answer"]["segments"] for c in s["citations"]]

    changed = cli("sources", "acl", "--home", str(home), source_id, "--set", "board")
    assert changed.exit_code == 0, changed.stderr
    again = cli(
        "citation",
        "--home",
        str(home),
        "--json",
        "--as",
        "ada",
        answer["answer_id"],
        citation["ref"],
    )
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["link"] == {"state": "forbidden", "href": None}
    assert "Capacitors" not in again.stdout

    # The record quotes the source: ada may no longer read it, so not through the
    # record either (access is decided now); the administrator still sees the answer
    # as first shown, and the log verifies.
    refused = cli(
        "audit", "show", "--home", str(home), "--json", "--as", "ada", answer["answer_id"]
    )
    assert refused.exit_code != 0 and "may no longer read" in refused.stderr
    assert "Capacitors" not in refused.stdout + refused.stderr
    shown = cli("audit", "show", "--home", str(home), "--json", answer["answer_id"])
    assert shown.exit_code == 0, shown.stderr
    record = json.loads(shown.stdout)
    assert record["citations"][0]["state"] == "viewer"
    assert "token=" not in shown.stdout
    assert cli("audit", "verify", "--home", str(home)).exit_code == 0
    replayed = cli("audit", "replay", "--home", str(home), answer["answer_id"])
    assert replayed.exit_code == 0 and "holds" in replayed.stdout


def test_audit_verify_fails_when_a_record_is_removed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert ingest(home, tmp_path / "note.md").exit_code == 0
    for _ in range(3):
        ask(home)
    assert cli("audit", "verify", "--home", str(home)).exit_code == 0
    with sqlite3.connect(home / "citadel.db") as raw:
        raw.execute("DROP TRIGGER audit_log_no_delete")
        raw.execute("DELETE FROM audit_log WHERE seq = 2")
    outcome = cli("audit", "verify", "--home", str(home))
    assert outcome.exit_code == 1
    assert "NOT intact" in outcome.stdout and "missing" in outcome.stdout
