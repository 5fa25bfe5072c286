"""Images of a cold original on PostgreSQL leave /healthz fast (issue 26).

From an attack: a server without a copy of an original yet copied it out of the
database on the request threads, before the reader's image limits, so forty image
requests of one reader held every thread and /healthz waited seconds.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.hostile_pdf import big_pdf
from tests.integration.test_postgres_originals import (  # noqa: F401  (pair is a fixture)
    PAGES,
    Pair,
    bearer,
    image_url,
    pair,
    upload,
)


@pytest.mark.slow
def test_one_readers_images_of_a_cold_original_leave_healthz_fast(
    pair: Pair,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The copy from the database is made in ``_drawable`` on the request thread pool,
    before the reader's image limits: 40 requests for one cold original hold every
    thread (one fills, the others wait on the fill's lock), and /healthz waits too."""
    source_id = str(upload(pair, pair.first, big_pdf(tmp_path / "big.pdf", 96))["source_id"])
    services = pair.second.services
    chunk = next(c for c in services.chunks.chunks("default", source_id, 1) if c.page_start)
    view = services.viewer.href("ada", source_id, 1, chunk.chunk_id, time.time())
    url = pair.second.url + view.replace("/view?", "/pages/1.png?")
    assert pair.second.cached() == []
    threads = [
        threading.Thread(
            target=httpx.get, args=(url,), kwargs={"headers": bearer(pair, "ada"), "timeout": 120}
        )
        for _ in range(40)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    slowest = 0.0
    for _ in range(10):
        began = time.monotonic()
        assert httpx.get(f"{pair.second.url}/healthz", timeout=120).status_code == 200
        slowest = max(slowest, time.monotonic() - began)
        time.sleep(0.1)
    for thread in threads:
        thread.join(120)
    assert slowest < 0.5, f"/healthz took {slowest:.1f} s while one reader's images waited"
