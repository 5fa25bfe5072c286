"""The render pool on its own: worker processes bounded in time and memory, pages past
their limits remembered, a full queue refused at once, processes stopped on close."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from citadel.adapters.pages.pool import PoolLimits, RenderPool
from citadel.app.errors import PageUnrenderable, RenderBusy
from tests.hostile_pdf import mesh_pdf, path_pdf
from tests.http.pdf_sample import write_pdf

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def normal(tmp_path: Path) -> Path:
    return write_pdf(tmp_path / "normal.pdf", [["A page of plain text."], ["And another."]])


def test_a_worker_draws_and_counts_pages_and_stops_on_close(normal: Path) -> None:
    pool = RenderPool(PoolLimits(workers=1))
    try:
        image = asyncio.run(pool.render(normal, 2))
        assert image.png.startswith(PNG) and image.width > 100
        assert asyncio.run(pool.page_count(normal)) == 2
        (pid,) = pool.worker_ids()
        assert pid != os.getpid()
        with pytest.raises(IndexError):
            asyncio.run(pool.render(normal, 3))
    finally:
        pool.close()
    assert pool.worker_ids() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_page_past_the_time_limit_is_killed_and_refused_at_once_after(tmp_path: Path) -> None:
    hostile = path_pdf(tmp_path / "paths.pdf", operators=200_000)
    pool = RenderPool(PoolLimits(workers=1, timeout_s=0.4))
    try:
        started = time.monotonic()
        with pytest.raises(PageUnrenderable, match=r"longer than 0\.4 s"):
            asyncio.run(pool.render(hostile, 1))
        assert time.monotonic() - started < 2.0
        assert pool.refusal(hostile, 1) is not None
        started = time.monotonic()
        with pytest.raises(PageUnrenderable):
            asyncio.run(pool.render(hostile, 1))
        assert time.monotonic() - started < 0.1
        # The same bytes under another name are the same page: it is keyed by SHA-256.
        copy = tmp_path / "copy.pdf"
        copy.write_bytes(hostile.read_bytes())
        assert pool.refusal(copy, 1) is not None
    finally:
        pool.close()


def test_a_page_past_the_memory_limit_is_not_drawn(normal: Path) -> None:
    pool = RenderPool(PoolLimits(workers=1, memory_mb=100))
    try:
        with pytest.raises(PageUnrenderable):
            asyncio.run(pool.render(normal, 1))
        assert pool.refusal(normal, 1) is not None
    finally:
        pool.close()


def test_a_full_queue_is_refused_at_once(tmp_path: Path) -> None:
    hostile = mesh_pdf(tmp_path / "mesh.pdf", pages=3)
    pool = RenderPool(PoolLimits(workers=1, queue=1, timeout_s=0.5))

    async def three() -> list[BaseException | object]:
        first = asyncio.ensure_future(pool.render(hostile, 1))
        second = asyncio.ensure_future(pool.render(hostile, 2))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(RenderBusy) as busy:
            await pool.render(hostile, 3)
        assert time.monotonic() - started < 0.05 and busy.value.retry_after >= 1
        return await asyncio.gather(first, second, return_exceptions=True)

    try:
        done = asyncio.run(three())
        assert all(isinstance(r, PageUnrenderable) for r in done)
    finally:
        pool.close()


def test_no_workers_draws_in_this_process(normal: Path) -> None:
    pool = RenderPool(PoolLimits(workers=0))
    try:
        assert asyncio.run(pool.render(normal, 1)).png.startswith(PNG)
        assert pool.worker_ids() == []
    finally:
        pool.close()
