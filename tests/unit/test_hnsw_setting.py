"""CITADEL_HNSW_MIN_VECTORS: when dense search goes through the HNSW index."""

from __future__ import annotations

import pytest

from citadel.adapters.storage.search_defaults import DEFAULT_MIN_VECTORS
from citadel.config import ConfigError, Settings
from citadel.settings_table import setting


def test_the_default_and_zero_which_keeps_search_exact() -> None:
    assert Settings.from_env({}).hnsw_min_vectors == DEFAULT_MIN_VECTORS == 50_000
    assert Settings.from_env({"CITADEL_HNSW_MIN_VECTORS": "0"}).hnsw_min_vectors == 0
    assert Settings.from_env({"CITADEL_HNSW_MIN_VECTORS": "200000"}).hnsw_min_vectors == 200_000


@pytest.mark.parametrize("raw", ["-1", "many", "1e5"])
def test_a_malformed_threshold_is_refused_by_name(raw: str) -> None:
    with pytest.raises(ConfigError, match="CITADEL_HNSW_MIN_VECTORS"):
        Settings.from_env({"CITADEL_HNSW_MIN_VECTORS": raw})


def test_the_settings_table_takes_the_threshold_from_the_index() -> None:
    declared = setting("CITADEL_HNSW_MIN_VECTORS")
    assert declared.default == DEFAULT_MIN_VECTORS
    assert declared.default_markdown() == f"`{DEFAULT_MIN_VECTORS}`"
