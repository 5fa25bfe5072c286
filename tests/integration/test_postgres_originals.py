"""Kept originals on PostgreSQL are every server's: two real servers, two homes, one database.

Each server is ``citadel serve``'s app under uvicorn on loopback, with a home of its
own (only its cache of originals is there) and the settings every server shares
(the database, the link secret). A PDF uploaded through one has its page image
rendered by the other; a delete or retention through either removes the original
from the database and from every server's cache.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from pydantic import SecretStr

from citadel.adapters.pages.original_cache import OriginalCache
from citadel.adapters.postgres.database import Database
from citadel.adapters.postgres.originals import PostgresOriginals
from citadel.bootstrap import Services, build
from citadel.bootstrap.originals import CACHE_FOLDER
from citadel.config import HttpSettings, Settings
from citadel.domain.users import Role
from citadel.entrypoints.http import create_app
from tests.http.conftest import SECRET, serving
from tests.http.pdf_sample import write_pdf

PNG = b"\x89PNG\r\n\x1a\n"
PAGES = [
    ["Kestrel Manual", "Chapter one introduces the kestrel engine and its crew."],
    ["The Engine", "The kestrel engine rotates its turbines whenever the valve opens."],
]


@dataclass
class Server:
    services: Services
    url: str
    home: Path

    @property
    def originals(self) -> PostgresOriginals:
        kept = self.services.originals
        assert isinstance(kept, PostgresOriginals)
        return kept

    def cached(self) -> list[str]:
        return sorted(p.name for p in (self.home / CACHE_FOLDER).glob("*.pdf"))


@dataclass
class Pair:
    first: Server
    second: Server
    tokens: dict[str, str]
    db_url: str

    def rows(self) -> tuple[int, int]:
        with psycopg.connect(self.db_url) as conn:
            kept = conn.execute("SELECT count(*) FROM originals").fetchone()
            parts = conn.execute("SELECT count(*) FROM original_parts").fetchone()
        assert kept is not None and parts is not None
        return int(kept[0]), int(parts[0])


@pytest.fixture
def pair(postgres_url: str, tmp_path: Path) -> Iterator[Pair]:
    servers: list[Server] = []
    with ExitStack() as stack:
        for name in ("a", "b"):
            settings = Settings(
                home=tmp_path / name,
                db=postgres_url,
                embedder="none",
                retain_versions=1,
                link_secret=SecretStr("l" * 32),
                http=HttpSettings(rate_per_minute=10_000),
            )
            services = build(settings)
            stack.callback(services.close)
            url = stack.enter_context(serving(create_app(services, session_secret=SECRET)))
            servers.append(Server(services, url, tmp_path / name))
        tokens = {}
        for user, role in (("lib", Role.LIBRARIAN), ("ada", Role.READER)):
            _, tokens[user] = servers[0].services.users.add(user, role, "default", ())
        yield Pair(servers[0], servers[1], tokens, postgres_url)


def bearer(pair: Pair, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {pair.tokens[user]}"}


def upload(pair: Pair, server: Server, pdf: Path, **fields: str) -> dict[str, object]:
    reply = httpx.post(
        f"{server.url}/v1/sources",
        files={"file": (pdf.name, pdf.read_bytes(), "application/pdf")},
        data=fields,
        headers=bearer(pair, "lib"),
        timeout=30,
    )
    assert reply.status_code == 201, reply.text
    body: dict[str, object] = reply.json()
    return body


def image_url(pair: Pair, server: Server, source_id: str, version: int) -> str:
    """The page-2 image of the cited chunk on page 2, as ada's viewer link names it."""
    chunks = server.services.chunks.chunks("default", source_id, version)
    chunk = next(c for c in chunks if c.page_start == 2)
    view = server.services.viewer.href("ada", source_id, version, chunk.chunk_id, time.time())
    page = httpx.get(server.url + view, headers=bearer(pair, "ada"), timeout=30)
    assert page.status_code == 200, page.text
    assert '<img src="' in page.text, "the viewer shows the page as printed"
    return server.url + view.replace("/view?", "/pages/2.png?")


def test_a_pdf_uploaded_through_one_server_renders_through_the_other_and_a_delete_reaches_both(
    pair: Pair, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / "kestrel.pdf", PAGES)
    source_id = str(upload(pair, pair.first, pdf)["source_id"])
    assert pair.rows() == (1, 1)
    assert pair.second.cached() == []
    on_second = httpx.get(image_url(pair, pair.second, source_id, 1), headers=bearer(pair, "ada"))
    assert on_second.status_code == 200, on_second.text
    assert on_second.content.startswith(PNG)
    on_first = httpx.get(image_url(pair, pair.first, source_id, 1), headers=bearer(pair, "ada"))
    assert on_first.status_code == 200 and on_first.content.startswith(PNG)
    assert len(pair.first.cached()) == len(pair.second.cached()) == 1
    (cached,) = pair.second.cached()
    assert (pair.second.home / CACHE_FOLDER / cached).read_bytes() == pdf.read_bytes()
    # Deleted through the second server: gone from the database, from the second's
    # cache at once, and from the first's at its next sweep; its image is gone too.
    image = image_url(pair, pair.first, source_id, 1)
    deleted = httpx.delete(f"{pair.second.url}/v1/sources/{source_id}", headers=bearer(pair, "lib"))
    assert deleted.status_code == 200, deleted.text
    assert pair.rows() == (0, 0)
    assert pair.second.cached() == []
    assert httpx.get(image, headers=bearer(pair, "ada")).status_code == 404
    assert pair.first.originals.find("default", source_id, 1) is None
    assert pair.first.originals.sweep_deleted() == 1
    assert pair.first.cached() == []


def sweepers() -> int:
    return sum(t.name == "citadel-originals-sweep" for t in threading.enumerate())


def test_a_restarted_server_does_not_keep_a_copy_of_an_original_deleted_elsewhere(
    pair: Pair, tmp_path: Path
) -> None:
    # Deleted through the second server while the first is asked for no page image
    # (the attack's reproduction): the first's start-up sweep removes its copy.
    pdf = write_pdf(tmp_path / "kestrel.pdf", PAGES)
    source_id = str(upload(pair, pair.first, pdf)["source_id"])
    shown = httpx.get(image_url(pair, pair.first, source_id, 1), headers=bearer(pair, "ada"))
    assert shown.status_code == 200, shown.text
    assert len(pair.first.cached()) == 1
    deleted = httpx.delete(f"{pair.second.url}/v1/sources/{source_id}", headers=bearer(pair, "lib"))
    assert deleted.status_code == 200, deleted.text
    assert pair.rows() == (0, 0)
    running = sweepers()
    restarted = build(pair.first.services.settings)  # the first server, started again
    try:
        assert pair.first.cached() == [], "the deleted book's PDF is still on this server's disk"
        assert sweepers() == running + 1
    finally:
        restarted.close()
    assert sweepers() == running, "Services.close() stops the store's sweep"


def test_a_running_server_sweeps_a_copy_deleted_elsewhere_without_being_asked_for_it(
    postgres_url: str, tmp_path: Path
) -> None:
    pdf = write_pdf(tmp_path / "kestrel.pdf", PAGES)
    db = Database(postgres_url)
    first = PostgresOriginals(db, OriginalCache(tmp_path / "a"), sweep_s=0.05)
    second = PostgresOriginals(db, OriginalCache(tmp_path / "b"), sweep_s=0.05)
    try:
        first.keep("t", "book", 1, pdf, [1])
        assert second.find("t", "book", 1) is not None
        first.forget("t", "book")
        deadline = time.monotonic() + 5
        while list((tmp_path / "b").glob("*.pdf")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert list((tmp_path / "b").glob("*.pdf")) == [], "no sweep while the server runs"
    finally:
        first.close()
        second.close()
        db.close()


def test_retention_through_one_server_drops_the_original_the_other_kept(
    pair: Pair, tmp_path: Path
) -> None:
    first = write_pdf(tmp_path / "kestrel.pdf", PAGES)
    source_id = str(upload(pair, pair.first, first)["source_id"])
    second = write_pdf(tmp_path / "kestrel-2.pdf", [*PAGES, ["Appendix", "Spare parts."]])
    report = upload(pair, pair.second, second, source_id=source_id)
    assert report["version"] == 2
    # One version retained (CITADEL_RETAIN_VERSIONS=1): version 1's original went with
    # its text, whichever server kept it.
    with psycopg.connect(pair.db_url) as conn:
        kept = conn.execute("SELECT version FROM originals ORDER BY version").fetchall()
    assert kept == [(2,)]
    found = pair.first.originals.find("default", source_id, 2)
    assert found is not None and found.read_bytes() == second.read_bytes()
    assert pair.first.originals.find("default", source_id, 1) is None


def test_an_original_kept_after_its_source_was_deleted_is_not_written(
    pair: Pair, tmp_path: Path
) -> None:
    # A keep that lost the race with a delete on another server: the tombstone wins.
    pdf = write_pdf(tmp_path / "kestrel.pdf", PAGES)
    source_id = str(upload(pair, pair.first, pdf)["source_id"])
    deleted = httpx.delete(f"{pair.second.url}/v1/sources/{source_id}", headers=bearer(pair, "lib"))
    assert deleted.status_code == 200, deleted.text
    pair.first.originals.keep("default", source_id, 1, pdf, [1])
    assert pair.rows() == (0, 0)


class CountingCache(OriginalCache):
    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.fills = 0

    def fill(self, sha256: str, size: int, parts: Iterable[bytes]) -> Path | None:
        self.fills += 1
        return super().fill(sha256, size, parts)


def test_concurrent_finds_on_a_cold_server_copy_the_original_once(
    postgres_url: str, tmp_path: Path
) -> None:
    # Many page images of one PDF asked at once of a server that has no copy yet.
    pdf = tmp_path / "big.pdf"
    pdf.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * (12 << 12))  # 12 MiB
    db = Database(postgres_url)
    try:
        warm = PostgresOriginals(db, OriginalCache(tmp_path / "a"))
        warm.keep("t", "big", 1, pdf, [1])
        warm.close()
        cache = CountingCache(tmp_path / "b")
        cold = PostgresOriginals(db, cache)
        found: list[Path | None] = []
        start = threading.Barrier(8)

        def ask() -> None:
            start.wait()
            found.append(cold.find("t", "big", 1))

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(found) == 8 and len(set(found)) == 1 and found[0] is not None
        assert found[0].read_bytes() == pdf.read_bytes()
        assert cache.fills == 1
        cold.close()
    finally:
        db.close()


def test_an_original_found_stays_on_disk_while_others_are_read_past_the_cache_bound(
    postgres_url: str, tmp_path: Path
) -> None:
    # A cache of 1 MiB, three originals of 0.6 MiB read one after the other: each path
    # ``find`` handed out is still a file when its renderer stats it.
    db = Database(postgres_url)
    try:
        store = PostgresOriginals(db, OriginalCache(tmp_path / "cache", 1 << 20))
        for n in range(3):
            pdf = tmp_path / f"{n}.pdf"
            pdf.write_bytes(b"%PDF-1.4\n" + bytes([n]) * (600 << 10))
            store.keep("t", f"book-{n}", 1, pdf, [1])
        found = [store.find("t", f"book-{n}", 1) for n in range(3)]
        assert [p.stat().st_size if p else None for p in found] == [(600 << 10) + 9] * 3
        store.close()
    finally:
        db.close()


def test_an_unchanged_upload_keeps_the_original_a_version_lacked(
    pair: Pair, tmp_path: Path
) -> None:
    # A version whose original was kept in a server's home before schema 3: uploading
    # the same PDF again leaves the version as it is and keeps its original here.
    pdf = write_pdf(tmp_path / "kestrel.pdf", PAGES)
    source_id = str(upload(pair, pair.first, pdf)["source_id"])
    with psycopg.connect(pair.db_url, autocommit=True) as conn:
        conn.execute("DELETE FROM originals")
    assert pair.rows() == (0, 0)
    again = upload(pair, pair.second, pdf)
    assert (again["status"], again["source_id"], again["version"]) == ("unchanged", source_id, 1)
    assert pair.rows() == (1, 1)
