"""The names each model family's setting takes: its table's keys.

Written by ``scripts/settings_table.py --write`` from the name → builder tables in
``citadel.bootstrap`` (``families.py``, ``support.py``, ``relevance.py``), which the
settings may not import; ``tests/unit/test_settings.py`` fails when it is stale.
Add a name to its table, not here.
"""

from __future__ import annotations

EMBEDDERS = (
    "minilm",
    "minilm-float",
    "hashing",
    "none",
)
GENERATORS = (
    "extractive",
    "openai",
)
SUPPORT_CHECKERS = (
    "entailment",
    "features",
)
RELEVANCE_SCORERS = (
    "model",
    "cross-encoder",
    "lexical",
    "off",
)
