"""The search defaults both libraries start from, declared once.

The SQLite and PostgreSQL libraries rank alike (``lexical_rank.py``,
``dense_matrix.py``), so they share these too; the settings table reads them here
(``CITADEL_BM25_WEIGHTS``, ``CITADEL_MAX_TERM_SHARE``, ``CITADEL_HNSW_MIN_VECTORS``).
Only the standard library: the settings are read before any backend is chosen.
"""

from __future__ import annotations

# bm25() column weights: title, headings (section path), body. Chosen on SciFact
# train (docs/retrieval.md).
DEFAULT_WEIGHTS = (2.0, 2.0, 1.0)
DEFAULT_MAX_TERM_SHARE = 1.0
"""No query term is dropped for being common (``CITADEL_MAX_TERM_SHARE``)."""
# Below this many vectors dense search stays exact (0 turns HNSW off). Chosen on
# the 100k benchmark library: docs/benchmarks.md, "Search latency".
DEFAULT_MIN_VECTORS = 50_000
# With HNSW on, filters admitting under this share of the rows are searched
# exactly over the admitted rows: the graph search slows as the filter tightens
# (measured: docs/benchmarks.md, "Search latency").
DEFAULT_EXACT_SHARE = 0.2
