"""adapters/key_files.py: a key made once, whole, by whichever process comes first."""

from __future__ import annotations

import multiprocessing
import stat
from pathlib import Path

from citadel.adapters import key_files


def _make(path: str, start: multiprocessing.synchronize.Event, out: multiprocessing.Queue) -> None:
    start.wait()
    out.put(key_files.read_or_create(Path(path), 32))


def test_racing_processes_all_read_the_one_whole_key(tmp_path: Path) -> None:
    # The old code created the name first and wrote it after: a racer could read an
    # empty file ("holds fewer than 32 bytes"), which test_ingest_races met under load.
    for attempt in range(5):
        path = tmp_path / f"attempt{attempt}" / "viewer.key"
        context = multiprocessing.get_context("fork")
        start, out = context.Event(), context.Queue()
        workers = [context.Process(target=_make, args=(str(path), start, out)) for _ in range(6)]
        for worker in workers:
            worker.start()
        start.set()
        keys = [out.get(timeout=30) for _ in workers]
        for worker in workers:
            worker.join(30)
        assert len(set(keys)) == 1 and len(keys[0]) == 32
        assert path.read_bytes() == keys[0]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert sorted(p.name for p in path.parent.iterdir()) == ["viewer.key"]  # no drafts left


def test_an_existing_key_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "viewer.key"
    path.write_bytes(b"k" * 40)
    assert key_files.read_or_create(path, 32) == b"k" * 40
