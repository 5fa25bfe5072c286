"""A reader's first page images of a large original leave /healthz fast (issue 26).

From an attack: the first image requests of a 96 MiB original each hashed it on the
request threads every request shares, before the reader's image limits, and
/healthz waited 2 s behind them. Now the reader's limits come first and the work on
an original has threads of its own (``entrypoints/http/original_work.py``).
"""

from __future__ import annotations

import threading
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from citadel.config import HttpSettings
from citadel.domain.document import Chunk
from citadel.entrypoints.http import create_app
from tests.hostile_pdf import big_pdf
from tests.http.conftest import SECRET, Library, browser, make_library, serving, sign_in
from tests.http.test_viewer_pages import upload

LIMIT_S = 0.6
READERS = [f"mallory{n}" for n in range(5)]


def first_chunk(library: Library, tenant: str, word: str) -> Chunk:
    services = library.services
    for source in services.registry.list(tenant):
        if word in source.title.lower():
            chunks = services.chunks.chunks(tenant, source.source_id, 1)
            return next(c for c in chunks if c.page_start == 1)
    raise AssertionError(f"no {word} in {tenant}")


def image_url(url: str, library: Library, chunk: Chunk, page: int, user: str) -> str:
    href = library.services.viewer.href(user, chunk.source_id, 1, chunk.chunk_id, time.time())
    token = parse_qs(urlsplit(href).query)["token"][0]
    return (
        f"{url}/v1/sources/{chunk.source_id}/versions/1/pages/{page}.png"
        f"?chunk={chunk.chunk_id}&token={token}"
    )


@pytest.mark.slow
def test_one_readers_first_images_of_a_large_original_leave_healthz_fast(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """``_drawable`` asks the pool's ``refusal``, which hashes the original on the
    request thread pool, before the reader's image limits, and each request hashes it
    for itself (no single flight): 40 first requests for a 96 MiB original hold every
    thread, and /healthz (a sync route, on the same pool) waits behind them."""
    home = tmp_path_factory.mktemp("digest")
    library = make_library(home, http=HttpSettings(rate_per_minute=10_000))
    services = library.services
    app = create_app(services, session_secret=SECRET)
    try:
        with browser(app) as c:
            sign_in(c, library, "lib")
            upload(c, big_pdf(home / "big.pdf", 96))
        big = first_chunk(library, "default", "kestrel")
        with serving(app) as url:
            target = image_url(url, library, big, 1, "ada")
            ada = {"Authorization": f"Bearer {library.tokens['ada']}"}
            threads = [
                threading.Thread(
                    target=httpx.get, args=(target,), kwargs={"headers": ada, "timeout": 120}
                )
                for _ in range(40)
            ]
            for thread in threads:
                thread.start()
            time.sleep(0.2)
            slowest = 0.0
            for _ in range(10):
                began = time.monotonic()
                assert httpx.get(f"{url}/healthz", timeout=120).status_code == 200
                slowest = max(slowest, time.monotonic() - began)
                time.sleep(0.1)
            for thread in threads:
                thread.join(120)
        assert slowest < 0.5, f"/healthz took {slowest:.1f} s while one reader's images waited"
    finally:
        services.close()
