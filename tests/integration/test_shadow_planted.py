"""``citadel shadow`` on 200 answers with planted citations reports each category exactly.

The library is made through the CLI as a team would make it: sources ingested with
trusted URLs, a new version of one, a new URL and a move of another, a staff-only
source, a deleted one, and one whose oldest version fell out of retention. The
answers (``tests/shadow_planted.py``) cite it in every way shadow mode knows; the
report, through the CLI and through the use case, must give each citation the
category planted there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from citadel.app.shadow import ShadowService
from citadel.bootstrap import build
from citadel.config import Settings
from citadel.entrypoints.cli import app
from citadel.entrypoints.cli.shadow import read_records
from citadel.entrypoints.cli.support import local_actor
from tests.integration.test_cli import CLEAN_ENV
from tests.shadow_planted import HOST, URL, Places, counts, plant

ENV = {
    **CLEAN_ENV,
    "CITADEL_EMBEDDER": "none",
    "CITADEL_LINK_ALLOWED_HOSTS": HOST,
    "CITADEL_RETAIN_VERSIONS": "2",
}


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env=ENV, catch_exceptions=False)


def ok(*args: str) -> Result:
    outcome = cli(*args)
    assert outcome.exit_code == 0, outcome.stderr
    return outcome


def note(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {path.stem}\n\n{text}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def planted_library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Places]:
    root = tmp_path_factory.mktemp("shadow")
    home = str(root / "home")

    def ingest(source_id: str, file: Path, *extra: str) -> None:
        ok("ingest", "--home", home, "--source-id", source_id, *extra, str(file))

    guide = root / "books" / "guide.md"
    ingest("guide", note(guide, "The guide, first edition."), "--url", f"{URL}/guide")
    ingest("guide", note(guide, "The guide, second edition."))
    ingest("other", note(root / "books" / "other.md", "Another book."), "--url", f"{URL}/other")
    secret = note(root / "books" / "secret.md", "Staff only.")
    ingest("secret", secret, "--url", f"{URL}/secret", "--acl", "staff")
    moved = root / "old" / "moved.md"
    ingest("moved", note(moved, "It moves."), "--url", f"{URL}/old-place")
    ingest("moved", note(moved, "It moved, second edition."), "--url", f"{URL}/new-place")
    new_place = note(root / "new" / "moved.md", "It moved, second edition.")
    ok("sources", "move", "--home", home, "moved", str(new_place))
    ingest("gone", note(root / "books" / "gone.md", "Soon deleted."), "--url", f"{URL}/gone")
    ok("sources", "delete", "--home", home, "gone")
    kept = root / "books" / "retained.md"
    for edition in ("first", "second", "third"):
        ingest("retained", note(kept, f"The {edition} edition."))
    ok("users", "add", "--home", home, "alice")
    ok("users", "add", "--home", home, "sam", "--groups", "staff")
    places = Places(str(moved.resolve()), str(new_place.resolve()))
    return root / "home", places


def test_every_planted_category_is_reported_exactly(
    planted_library: tuple[Path, Places], tmp_path: Path
) -> None:
    home, places = planted_library
    lines, planted = plant(places)
    assert len(lines) == 200
    expected = counts(planted)
    assert all(expected[c] >= 10 for c in expected), expected  # every category is exercised
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")

    outcome = ok("shadow", "--home", str(home), "--json", str(answers))
    report: dict[str, Any] = json.loads(outcome.stdout)
    assert report["answers"] == 200 and report["citations"] == len(planted)
    assert report["counts"] == expected
    got = [f["category"] for f in report["findings"]]
    wrong = [
        (f["record_id"], f["cited"], f["category"], p)
        for f, p in zip(report["findings"], planted, strict=True)
        if f["category"] != p
    ]
    assert got == planted, wrong[:5]
    rates = report["rates"]
    assert rates["fabricated_link_rate"] == expected["fabricated"] / len(planted)
    assert rates["wrong_document_rate"] == expected["wrong_document"] / len(planted)
    assert rates["outdated_version_rate"] == expected["outdated"] / len(planted)
    assert rates["unavailable_rate"] == expected["unavailable"] / len(planted)
    assert rates["verified_rate"] == expected["ok"] / len(planted)

    # The readable report says the same.
    text = ok("shadow", "--home", str(home), str(answers)).stdout
    for category, count in expected.items():
        assert any(line.split()[:2] == [category, str(count)] for line in text.splitlines()), (
            category
        )
    assert "ans-001 [1]" in text

    # The use case directly, on the same library.
    settings = Settings.from_env({**os.environ, **{k: v for k, v in ENV.items() if v}})
    services = build(settings.with_overrides(home=home))
    try:
        direct = ShadowService(services.registry, services.users.actor).run(
            read_records(answers), local_actor(services.settings)
        )
    finally:
        services.close()
    assert [f.category.value for f in direct.findings] == planted


def test_a_reader_cannot_judge_answers_shown_to_others(
    planted_library: tuple[Path, Places], tmp_path: Path
) -> None:
    home, places = planted_library
    lines, _ = plant(places, answers=20)
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused = cli("shadow", "--home", str(home), "--as", "alice", "--json", str(answers))
    assert refused.exit_code == 1 and refused.stdout == ""
    assert "only an admin" in refused.stderr
    # Her own answers she may check: the staff-only source is forbidden, and not named.
    own = tmp_path / "own.jsonl"
    record = {"question": "q", "answer": "a", "timestamp": "2100-01-01T00:00:00Z"}
    own.write_text(json.dumps({**record, "citations": ["secret", "guide"]}) + "\n")
    mine = json.loads(ok("shadow", "--home", str(home), "--as", "alice", "--json", str(own)).stdout)
    assert [(f["category"], f["source_id"]) for f in mine["findings"]] == [
        ("forbidden", None),
        ("ok", "guide"),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"question": "q"}\n', "line 2: missing field 'answer'"),
        (b"not json at all\n", "line 2: not valid JSON"),
        (b'{"question": "q", "answer": "a", "citations": [], "timestamp": "now"}\n', "line 2"),
        (b'"x' + b"y" * (1 << 20) + b'"\n', "line 2: longer than"),
    ],
)
def test_bad_input_stops_with_its_line_and_prints_nothing(
    planted_library: tuple[Path, Places], tmp_path: Path, content: bytes, message: str
) -> None:
    home, _ = planted_library
    good = (
        b'{"question": "q", "answer": "a", "citations": ["guide"],'
        b' "timestamp": "2026-01-01T00:00:00Z"}\n'
    )
    answers = tmp_path / "bad.jsonl"
    answers.write_bytes(good + content + good)
    outcome = cli("shadow", "--home", str(home), "--json", str(answers))
    assert outcome.exit_code == 2
    assert outcome.stdout == ""
    assert message in " ".join(outcome.stderr.split())
    missing = cli("shadow", "--home", str(home), str(tmp_path / "absent.jsonl"))
    assert missing.exit_code == 2 and "cannot read" in missing.stderr
