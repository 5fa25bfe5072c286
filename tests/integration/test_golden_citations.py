"""The golden citation set (data/citations/golden.jsonl) holds on its library, through the CLI.

The library (``tests/golden_library.py``) is two shared books made into the states a
citation can be in: URLs, three versions (one past retention), an ACL, a move, a
deletion. Every golden case must hold; a case changed to expect what is not so
must fail, naming why, and a file that is not a golden set is refused by line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citadel.entrypoints.cli import app
from tests.conftest import ROOT, shared_path
from tests.golden_library import ENV, build_golden_library
from tests.integration.test_cli import CLEAN_ENV

GOLDEN = ROOT / "data" / "citations" / "golden.jsonl"

pytestmark = pytest.mark.shared


def cli(*args: str) -> Result:
    env = {**CLEAN_ENV, **ENV}
    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    books = shared_path("books")
    root = tmp_path_factory.mktemp("golden")
    build_golden_library(books, root / "scratch", root / "home", cli)
    return root / "home"


def check(home: Path, golden: Path) -> tuple[Result, dict[str, Any]]:
    outcome = cli("eval", "citations", "--golden", str(golden), "--home", str(home), "--json")
    return outcome, json.loads(outcome.stdout) if outcome.stdout else {}


def test_the_golden_set_holds(home: Path) -> None:
    outcome, report = check(home, GOLDEN)
    failed = [(o["id"], o["failures"]) for o in report.get("outcomes", []) if not o["passed"]]
    assert outcome.exit_code == 0, failed or outcome.stderr
    assert report["cases"] == report["passed"] == 13
    # Every link behaviour the seed asks for is in the set.
    assert set(report["by_state"]) == {"canonical", "superseded", "viewer", "forbidden", "deleted"}
    hrefs = {o["id"]: o["href"] for o in report["outcomes"]}
    assert hrefs["c01"] == "https://git-scm.com/docs/user-manual"
    assert hrefs["c06"] is None  # superseded past retention: no URL available
    assert hrefs["c10"].startswith("/v1/sources/epub-nourl/versions/1/view?chunk=")
    assert hrefs["c10"].endswith("&token=…")  # no signed token in a report
    assert hrefs["c08"] is None  # forbidden for this reader
    text = cli("eval", "citations", "--golden", str(GOLDEN), "--home", str(home))
    assert text.exit_code == 0 and "13 cases, 13 passed" in text.stdout


def changed(case: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {**case, **fields}


def test_a_wrong_expectation_fails_and_says_why(home: Path, tmp_path: Path) -> None:
    cases = {c["id"]: c for c in map(json.loads, GOLDEN.read_text().splitlines())}
    wrong = [
        changed(
            cases["c08"], expect={"state": "canonical", "href": cases["c07"]["expect"]["href"]}
        ),
        changed(cases["c01"], quote="a sentence this manual never had"),
        changed(cases["c10"], expect={"state": "viewer", "href": "https://www.w3.org/x"}),
        changed(cases["c06"], quote="The clone command creates a new directory"),
        changed(cases["c02"], reader="mallory"),
        changed(cases["c04"], version=7),
    ]
    golden = tmp_path / "wrong.jsonl"
    golden.write_text("".join(json.dumps(c) + "\n" for c in wrong))
    outcome, report = check(home, golden)
    assert outcome.exit_code == 1 and report["passed"] == 0
    failures = [" ".join(o["failures"]) for o in report["outcomes"]]
    assert "state forbidden, expected canonical" in failures[0]
    assert "the quote is not in version 3 of git-manual" in failures[1]
    assert "expected https://www.w3.org/x" in failures[2]
    assert "the version's text is gone" in failures[3]
    assert "no active reader mallory" in failures[4]
    assert "git-manual has no version 7" in failures[5]


def test_an_id_used_twice_is_refused_at_its_second_line(home: Path, tmp_path: Path) -> None:
    first = GOLDEN.read_text().splitlines()[0]
    golden = tmp_path / "twice.jsonl"
    golden.write_text(first + "\n" + first + "\n")
    outcome = cli("eval", "citations", "--golden", str(golden), "--home", str(home), "--json")
    assert outcome.exit_code == 2 and outcome.stdout == ""
    said = " ".join(outcome.stderr.split())
    assert "line 2: id 'c01' is used twice" in said


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 2: not a JSON object"),
        # Read no further than the limit: one huge line costs no more memory than it.
        ("[" * ((1 << 20) + 10), "line 2: longer than 1048576 bytes"),
        ('{"id": "x"}', "line 2: 'claim' must be a non-empty string"),
        (
            '{"id": "x", "claim": "c", "ref": "[1]", "source_id": "s", "version": 1,'
            ' "expect": {"state": "canonical", "href": null}}',
            "line 2: 'ref' is a citation ref",
        ),
        (
            '{"id": "x", "claim": "c", "ref": "E1", "source_id": "s", "version": 1,'
            ' "expect": {"state": "linked", "href": null}}',
            "line 2: unknown link state 'linked'",
        ),
    ],
)
def test_a_file_that_is_not_a_golden_set_is_refused_by_line(
    home: Path, tmp_path: Path, line: str, message: str
) -> None:
    golden = tmp_path / "bad.jsonl"
    golden.write_text(GOLDEN.read_text().splitlines()[0] + "\n" + line + "\n")
    outcome = cli("eval", "citations", "--golden", str(golden), "--home", str(home), "--json")
    assert outcome.exit_code == 2 and outcome.stdout == ""
    assert message in " ".join(outcome.stderr.split())
