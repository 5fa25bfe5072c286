"""The maintenance_work_mem a pgvector HNSW build asks for (adapters/postgres/hnsw.py)."""

from __future__ import annotations

from citadel.adapters.postgres.hnsw import BUILD_MEMORY_CAP_MB, build_memory_mb


def test_a_graph_of_100k_minilm_vectors_gets_room_for_twice_its_measured_size() -> None:
    # The measured graph: 195 MiB for 100k 384-d vectors. It must fit, with slack.
    megabytes = build_memory_mb(100_000, 384)
    assert 2 * 195 <= megabytes <= 3 * 195


def test_small_libraries_keep_the_server_default_and_huge_ones_stop_at_the_cap() -> None:
    assert build_memory_mb(0, 384) == 64
    assert build_memory_mb(1_000, 384) == 64
    assert build_memory_mb(50_000_000, 384) == BUILD_MEMORY_CAP_MB


def test_the_memory_grows_with_the_vectors_and_their_width() -> None:
    assert build_memory_mb(200_000, 384) > build_memory_mb(100_000, 384)
    assert build_memory_mb(100_000, 768) > build_memory_mb(100_000, 384)
