"""Ingestion is atomic and crash-safe, versioned, and refuses bad input per file."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfWriter

from citadel.adapters.clock import FixedClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.parsers.pdf import PdfParser
from citadel.adapters.parsers.plaintext import PlainTextParser
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.adapters.sqlite.schema import fts_table
from citadel.app.errors import IngestError, VersionConflict
from citadel.app.ingest import IngestOptions, IngestService
from tests.builders import operator
from tests.conftest import ROOT, shared_path


def service(
    tmp_path: Path, *, max_pages: int = 5000, max_file_bytes: int = 512 * 1024 * 1024, **kwargs: int
) -> tuple[IngestService, FileDocuments, SqliteLibrary]:
    library = SqliteLibrary(tmp_path / "lib.db")
    parsers = (PdfParser(max_pages=max_pages), MarkdownParser(), PlainTextParser())
    files = FileDocuments(parsers, max_file_bytes=max_file_bytes)
    return IngestService(library, FixedClock(), **kwargs), files, library


def consistent(db: Path) -> None:
    """Every visible version has all of its chunks, and the index holds exactly those."""
    conn = sqlite3.connect(db)
    try:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        if "sources" not in tables:
            # Killed before the schema was made (seen on a loaded machine at 0.3 s):
            # no source, so no version and no chunk; the rerun must still complete.
            for table in sorted(tables & {"chunks", "source_versions"}):
                assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)
            return
        for source_id, current in conn.execute(
            "SELECT source_id, current_version FROM sources WHERE deleted = 0"
        ):
            (expected,) = conn.execute(
                "SELECT chunk_count FROM source_versions WHERE source_id = ? AND version = ?",
                (source_id, current),
            ).fetchone()
            (stored,) = conn.execute(
                "SELECT count(*) FROM chunks WHERE source_id = ? AND version = ?",
                (source_id, current),
            ).fetchone()
            assert stored == expected > 0
        indexed = sum(
            conn.execute(f"SELECT count(*) FROM {fts_table(tenant)}").fetchone()[0]
            for (tenant,) in conn.execute("SELECT DISTINCT tenant FROM chunks").fetchall()
        )
        (current_chunks,) = conn.execute(
            "SELECT count(*) FROM chunks c JOIN sources s ON s.tenant = c.tenant"
            " AND s.source_id = c.source_id"
            " WHERE s.deleted = 0 AND c.version = s.current_version"
        ).fetchone()
        assert indexed == current_chunks
    finally:
        conn.close()


def test_identical_content_is_a_no_op_and_changed_content_a_new_version(tmp_path: Path) -> None:
    ingest, files, library = service(tmp_path, retain_versions=2)
    book = tmp_path / "notes.md"
    book.write_text(
        "# Notes\n\n## Retries\n\nA retry policy caps attempts so failures stay bounded.\n"
    )
    first = ingest.ingest(files.open(book), IngestOptions(), actor=operator())
    again = ingest.ingest(files.open(book), IngestOptions(), actor=operator())
    assert (first.status, again.status) == ("created", "unchanged")
    assert again.source_id == first.source_id and again.version == 1

    moved = tmp_path / "moved" / "notes-renamed.md"
    moved.parent.mkdir()
    book.rename(moved)
    assert (
        ingest.ingest(files.open(moved), IngestOptions(), actor=operator()).status == "unchanged"
    )  # identity survives a move

    moved.write_text(moved.read_text() + "\nBackoff spreads retries out over time.\n")
    second = ingest.ingest(files.open(moved), IngestOptions(), actor=operator())
    assert (second.status, second.source_id, second.version) == ("updated", first.source_id, 2)
    assert library.chunks("default", first.source_id, 1), "the older version stays addressable"

    moved.write_text(moved.read_text() + "\nJitter avoids synchronised retries.\n")
    third = ingest.ingest(files.open(moved), IngestOptions(), actor=operator())
    assert third.version == 3
    retained = {v.version: v.retained for v in library.versions("default", first.source_id)}
    assert retained == {1: False, 2: True, 3: True}  # retention keeps the newest two
    assert not library.chunks("default", first.source_id, 1)


def test_explicit_source_id_makes_a_revision_of_that_source(tmp_path: Path) -> None:
    ingest, files, _ = service(tmp_path)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("The first edition says one thing about matrices and vectors.")
    b.write_text("The second edition says another thing about matrices and vectors.")
    one = ingest.ingest(files.open(a), IngestOptions(source_id="linear-algebra"), actor=operator())
    two = ingest.ingest(files.open(b), IngestOptions(source_id="linear-algebra"), actor=operator())
    assert (one.source_id, one.version, two.source_id, two.version) == (
        "linear-algebra",
        1,
        "linear-algebra",
        2,
    )


def test_sidecar_manifest_supplies_trusted_metadata_and_flags_override_it(tmp_path: Path) -> None:
    ingest, files, library = service(tmp_path)
    book = tmp_path / "guide.md"
    book.write_text("# Guide\n\nSee https://evil.example/x for more; this is body text.\n")
    (tmp_path / "guide.md.citadel.json").write_text(
        json.dumps(
            {"url": "https://docs.example.org/guide.html", "title": "The Guide", "year": 2024}
        )
    )
    report = ingest.ingest(files.open(book), IngestOptions(title="Flag Title"), actor=operator())
    source = library.get("default", report.source_id)
    assert source is not None
    assert source.canonical_url == "https://docs.example.org/guide.html"  # never from the text
    assert (source.title, source.year) == ("Flag Title", 2024)


def test_a_received_file_is_shown_by_its_name_and_has_no_sidecar(tmp_path: Path) -> None:
    ingest, files, library = service(tmp_path)
    spooled = tmp_path / "spool" / "guide.md"
    spooled.parent.mkdir()
    spooled.write_text("# Guide\n\nRestart the workers one at a time.\n")
    (spooled.parent / "guide.md.citadel.json").write_text(json.dumps({"title": "Not Read"}))
    report = ingest.ingest(
        files.received(spooled, name="guide.md"), IngestOptions(), actor=operator()
    )
    source = library.get("default", report.source_id)
    assert report.path == "guide.md" and source is not None and source.title == "Guide"
    spooled.write_bytes(b"")
    with pytest.raises(IngestError) as caught:
        files.received(spooled, name="guide.md")
    assert (caught.value.reason, caught.value.path) == ("empty", "guide.md")


class ConflictOnce(SqliteLibrary):
    """Loses the first commit race, as when another writer committed meanwhile."""

    lost = False

    def commit_version(self, *args: Any, **kwargs: Any) -> None:
        if not self.lost:
            self.lost = True
            raise VersionConflict("another writer won")
        super().commit_version(*args, **kwargs)


def test_the_request_is_checked_once_per_file_even_when_its_commit_is_retried(
    tmp_path: Path,
) -> None:
    checked: list[str] = []

    def check_url(url: str) -> str:
        checked.append(url)
        return url

    library = ConflictOnce(tmp_path / "lib.db")
    ingest = IngestService(library, FixedClock(), check_url=check_url)
    book = tmp_path / "guide.md"
    book.write_text("# Guide\n\nRestart the workers one at a time.\n")
    files = FileDocuments([MarkdownParser()], max_file_bytes=1 << 20)
    options = IngestOptions(url="https://docs.example.org/guide.html")
    report = ingest.ingest(files.open(book), options, actor=operator())
    assert library.lost and report.status == "created"
    assert checked == ["https://docs.example.org/guide.html"]


@pytest.mark.parametrize(
    ("options", "sidecar", "message"),
    [
        (IngestOptions(tenant="team a"), None, "tenant name may not contain whitespace"),
        (IngestOptions(tenant=""), None, "tenant needs a non-empty name"),
        (IngestOptions(tenant="t" * 65), None, "at most 64 characters"),
        (IngestOptions(acl_groups=frozenset({"ops\u200b"})), None, "group name may not"),
        (IngestOptions(), {"acl": ["good", "bad group"]}, "group name may not"),
    ],
)
def test_a_tenant_or_group_no_user_could_have_is_refused_before_anything_is_written(
    tmp_path: Path, options: IngestOptions, sidecar: dict[str, object] | None, message: str
) -> None:
    ingest, files, library = service(tmp_path)
    book = tmp_path / "guide.md"
    book.write_text("# Guide\n\nRestart the workers one at a time.\n")
    if sidecar is not None:
        (tmp_path / "guide.md.citadel.json").write_text(json.dumps(sidecar))
    with pytest.raises(IngestError, match=message) as caught:
        ingest.ingest(files.open(book), options, actor=operator())
    assert caught.value.reason == "invalid_name"
    assert library.list() == []


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.txt", b"", "empty"),
        ("latin1.txt", "caf\xe9 cr\xe8me".encode("latin-1"), "not_utf8"),
        ("truncated.pdf", b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog", "corrupt"),
        ("garbage.pdf", b"%PDF-1.4\n" + os.urandom(4096), "corrupt"),
        ("binary.txt", b"text\x00with\x00nul", "binary"),
        ("image.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 32, "unsupported"),
    ],
)
def test_bad_files_get_a_clear_error_and_nothing_is_written(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    ingest, files, library = service(tmp_path)
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(IngestError) as caught:
        ingest.ingest(files.open(path), IngestOptions(), actor=operator())
    assert caught.value.reason == reason
    assert name in str(caught.value)
    assert library.list() == []


def test_encrypted_pdf_is_refused(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("secret")
    path = tmp_path / "locked.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    ingest, files, library = service(tmp_path)
    with pytest.raises(IngestError) as caught:
        ingest.ingest(files.open(path), IngestOptions(), actor=operator())
    assert caught.value.reason == "encrypted"
    assert library.list() == []


def test_size_and_page_limits_are_enforced(tmp_path: Path) -> None:
    book = tmp_path / "big.txt"
    book.write_text("word " * 1000)
    ingest, files, _ = service(tmp_path, max_file_bytes=1000)
    with pytest.raises(IngestError) as caught:
        ingest.ingest(files.open(book), IngestOptions(), actor=operator())
    assert caught.value.reason == "too_large"

    writer = PdfWriter()
    for _ in range(3):
        writer.add_blank_page(200, 200)
    pdf = tmp_path / "pages.pdf"
    with pdf.open("wb") as handle:
        writer.write(handle)
    ingest, files, _ = service(tmp_path / "second", max_pages=2)
    with pytest.raises(IngestError) as caught:
        ingest.ingest(files.open(pdf), IngestOptions(), actor=operator())
    assert caught.value.reason == "too_many_pages"


def test_a_batch_ingests_what_it_can_and_reports_each_file(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nA perfectly fine paragraph about eigenvalues and eigenvectors.\n")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe\xfa not utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "citadel",
            "ingest",
            str(bad),
            str(good),
            "--json",
            "--home",
            str(tmp_path / "home"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["path"].endswith("bad.txt"), line["status"]) for line in lines] == [
        (True, "failed"),
        (False, "created"),
    ]
    assert lines[0]["reason"] == "not_utf8"
    assert "not valid UTF-8" in result.stderr


def test_kill_9_during_ingest_leaves_no_partial_version_and_a_rerun_completes(
    tmp_path: Path,
) -> None:
    book = shared_path("books", "pdf", "R-intro.pdf")
    home = tmp_path / "home"
    command = [sys.executable, "-m", "citadel", "ingest", str(book), "--home", str(home)]
    # Kill at several points: while parsing, around the commit, after it.
    for delay in (0.3, 0.9, 1.5, 2.1, 2.7):
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        if (home / "citadel.db").exists():
            consistent(home / "citadel.db")
    done = subprocess.run(
        [*command, "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout)
    assert report["status"] in {"created", "unchanged"} and report["chunks"] > 100
    consistent(home / "citadel.db")


def _ingest_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citadel", "ingest", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        env={**os.environ, "CITADEL_HOME": str(tmp_path / "home"), "CITADEL_EMBEDDER": "hashing"},
    )


def test_a_sidecar_year_out_of_range_fails_its_file_alone_and_the_batch_goes_on(
    tmp_path: Path,
) -> None:
    files = []
    for name, year in (("huge", "99999999999999999999"), ("long", "1" + "0" * 5000)):
        book = tmp_path / f"{name}.md"
        book.write_text(f"# {name}\n\nA paragraph about eigenvalues of the {name} matrix.\n")
        (tmp_path / f"{name}.md.citadel.json").write_text(f'{{"year": {year}}}')
        files.append(str(book))
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nA perfectly fine paragraph about eigenvectors.\n")
    result = _ingest_cli(tmp_path, *files, str(good))
    assert "Traceback" not in result.stderr and result.returncode == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["status"], line.get("reason")) for line in lines] == [
        ("failed", "bad_sidecar"),
        ("failed", "bad_sidecar"),
        ("created", None),
    ]
    assert "year must be from -9999 to 9999" in lines[0]["error"]
    assert "5001 digits is over the 64-digit limit" in lines[1]["error"]


def test_a_year_flag_out_of_range_is_bad_usage_said_plainly(tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nA perfectly fine paragraph about eigenvectors.\n")
    result = _ingest_cli(tmp_path, str(good), "--year", "9" * 30)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "a year must be from -9999 to 9999" in result.stderr


def test_the_use_case_refuses_a_year_out_of_range_before_parsing(tmp_path: Path) -> None:
    ingest, files, _ = service(tmp_path)
    good = tmp_path / "good.md"
    good.write_text("# Good\n\nA perfectly fine paragraph about eigenvectors.\n")
    with pytest.raises(IngestError) as caught:
        ingest.ingest(files.open(good), IngestOptions(year=10**30), actor=operator())
    assert caught.value.reason == "invalid_year" and "from -9999 to 9999" in str(caught.value)
