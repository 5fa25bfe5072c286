"""The per-server cache of originals: verified by sha256, renamed whole, bounded, LRU."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from citadel.adapters.pages.original_cache import OriginalCache


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_fill_is_kept_only_when_it_hashes_to_what_was_asked(tmp_path: Path) -> None:
    cache = OriginalCache(tmp_path)
    good = b"%PDF-1.4 good"
    path = cache.fill(sha(good), len(good), [good[:5], good[5:]])
    assert path is not None and path.read_bytes() == good
    assert cache.hit(sha(good), len(good)) == path
    other = b"%PDF-1.4 other"
    assert cache.fill(sha(other), len(other), [b"%PDF-1.4 tampered"]) is None
    assert cache.hit(sha(other), len(other)) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name], "no temporary left"


def test_past_its_bound_the_least_recently_used_copies_go_first(tmp_path: Path) -> None:
    cache = OriginalCache(tmp_path, max_bytes=250)
    blobs = [bytes([n]) * 100 for n in range(3)]
    first, second = (cache.fill(sha(b), 100, [b]) for b in blobs[:2])
    assert first is not None and second is not None
    os.utime(second, (1, 1))  # long unused
    assert cache.hit(sha(blobs[0]), 100) == first  # used just now
    third = cache.fill(sha(blobs[2]), 100, [blobs[2]])
    assert third is not None
    assert sorted(cache.hashes()) == sorted([sha(blobs[0]), sha(blobs[2])])
    cache.drop(sha(blobs[0]))
    assert cache.hashes() == [sha(blobs[2])]


def test_a_copy_handed_out_recently_is_not_evicted_even_past_the_bound(tmp_path: Path) -> None:
    # Three originals read within minutes through a cache that holds two: the first
    # copy's renderer may not have opened it yet, so it stays (the bound is exceeded
    # for a while); once unused for longer than in_use_s, the next fill evicts it.
    cache = OriginalCache(tmp_path, max_bytes=250)
    blobs = [bytes([n]) * 100 for n in range(4)]
    handed = [cache.fill(sha(b), 100, [b]) for b in blobs[:3]]
    assert all(p is not None and p.stat().st_size == 100 for p in handed)
    assert len(cache.hashes()) == 3
    for path in handed[:2]:
        assert path is not None
        os.utime(path, (1, 1))  # long unused
    assert cache.fill(sha(blobs[3]), 100, [blobs[3]]) is not None
    assert sorted(cache.hashes()) == sorted(sha(b) for b in blobs[2:])
