"""One contract for the OriginalStore port, run against files in a home and PostgreSQL.

A kept original reads back byte for byte as a file, per tenant, source and version;
keeping a version again replaces it; retention (at keep or by ``prune``) and
``forget`` drop what they name and nothing else. PostgreSQL's own rules (what a
second server sees, its cache) are in tests/integration/test_postgres_originals.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from citadel.adapters.pages import FileOriginals
from citadel.adapters.pages.original_cache import OriginalCache
from citadel.adapters.postgres.database import Database
from citadel.adapters.postgres.originals import PART_BYTES, PostgresOriginals
from citadel.app.ports.pages import OriginalStore


@pytest.fixture(params=["files", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OriginalStore]:
    if request.param == "files":
        yield FileOriginals(tmp_path / "originals")
        return
    # A fresh database of its own (tests/postgres.py); skips saying why without a server.
    db = Database(request.getfixturevalue("postgres_url"))
    store = PostgresOriginals(db, OriginalCache(tmp_path / "originals-cache"))
    yield store
    store.close()
    db.close()


def pdf(tmp_path: Path, name: str, body: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(b"%PDF-1.4\n" + body)
    return path


def test_a_kept_original_reads_back_whole_as_a_file(store: OriginalStore, tmp_path: Path) -> None:
    # More than one 1 MiB part, and not a multiple of it.
    body = bytes(range(256)) * (PART_BYTES // 128) + b"tail"
    file = pdf(tmp_path, "book.pdf", body)
    store.keep("acme", "book", 1, file, [1])
    found = store.find("acme", "book", 1)
    assert found is not None and found.read_bytes() == file.read_bytes()
    assert store.find("acme", "book", 1) == found, "asked again: the same file"
    assert store.has("acme", "book", 1)


def test_an_original_is_found_only_under_its_own_tenant_source_and_version(
    store: OriginalStore, tmp_path: Path
) -> None:
    store.keep("acme", "book", 1, pdf(tmp_path, "a.pdf", b"acme"), [1])
    assert store.find("globex", "book", 1) is None
    assert store.find("acme", "other", 1) is None
    assert store.find("acme", "book", 2) is None
    assert not store.has("globex", "book", 1) and not store.has("acme", "book", 2)


def test_keeping_a_version_again_replaces_its_original(
    store: OriginalStore, tmp_path: Path
) -> None:
    store.keep("acme", "book", 1, pdf(tmp_path, "a.pdf", b"first"), [1])
    store.keep("acme", "book", 1, pdf(tmp_path, "b.pdf", b"second"), [1])
    found = store.find("acme", "book", 1)
    assert found is not None and found.read_bytes() == b"%PDF-1.4\nsecond"


def test_keeping_a_version_drops_the_originals_of_versions_no_longer_retained(
    store: OriginalStore, tmp_path: Path
) -> None:
    for version in (1, 2):
        store.keep("acme", "book", version, pdf(tmp_path, f"v{version}.pdf", b"v%d" % version), [])
    store.keep("acme", "book", 3, pdf(tmp_path, "v3.pdf", b"v3"), [2, 3])
    assert store.find("acme", "book", 1) is None
    found = {v: store.find("acme", "book", v) for v in (2, 3)}
    assert [p.read_bytes()[-2:] if p else None for p in found.values()] == [b"v2", b"v3"]


def test_prune_drops_the_versions_not_retained_and_nothing_of_other_sources(
    store: OriginalStore, tmp_path: Path
) -> None:
    for version in (1, 2, 3):
        store.keep("acme", "book", version, pdf(tmp_path, "v.pdf", b"v%d" % version), [1, 2, 3])
    store.keep("acme", "other", 1, pdf(tmp_path, "o.pdf", b"other"), [1])
    store.prune("acme", "book", [3])
    assert [store.find("acme", "book", v) is None for v in (1, 2, 3)] == [True, True, False]
    assert store.find("acme", "other", 1) is not None


def test_forget_drops_every_version_of_the_source_and_only_that_source(
    store: OriginalStore, tmp_path: Path
) -> None:
    store.keep("acme", "book", 1, pdf(tmp_path, "v1.pdf", b"v1"), [1])
    store.keep("acme", "book", 2, pdf(tmp_path, "v2.pdf", b"v2"), [1, 2])
    # The same bytes under another tenant: kept apart, not forgotten with it.
    store.keep("globex", "book", 1, pdf(tmp_path, "v1.pdf", b"v1"), [1])
    store.forget("acme", "book")
    assert store.find("acme", "book", 1) is None and store.find("acme", "book", 2) is None
    assert not store.has("acme", "book", 1)
    kept = store.find("globex", "book", 1)
    assert kept is not None and kept.read_bytes() == b"%PDF-1.4\nv1"
    store.forget("acme", "never-kept")  # forgetting nothing is no error
