"""The search settings of ``settings_table``: the embedder, fusion, BM25, candidates, HNSW.

Kept in their own module so the table stays short; ``SETTINGS`` splices them in at
their place, so the README's table keeps its order.
"""

from __future__ import annotations

from citadel.adapters.storage.search_defaults import DEFAULT_MIN_VECTORS, DEFAULT_WEIGHTS
from citadel.app.search import DEFAULT_CANDIDATES
from citadel.domain.fusion import FusionPolicy
from citadel.setting_choices import EMBEDDERS
from citadel.setting_kinds import Choice, Integer, Number, Setting, Weights

FUSION_METHODS = ("weighted", "rrf")
_FUSION = FusionPolicy()

SEARCH_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_EMBEDDER",
        "embedder",
        Choice(EMBEDDERS),
        "minilm",
        "`minilm` (int8 arithmetic, `all-MiniLM-L6-v2-w8a8-win`), `minilm-float` (the float"
        " graph, `all-MiniLM-L6-v2-int8-win`: other vectors; `-win`: long texts are read in"
        " 256-piece windows, libraries built before windowing need `citadel reindex`;"
        " int8 is exact and the same on every CPU, but only CPUs with VNNI or AMX run it"
        " fast), `hashing` (a deterministic test fake) or `none` (lexical only); after a"
        " change, run `citadel reindex`",
    ),
    Setting(
        "CITADEL_EMBEDDER_THREADS",
        "embedder_threads",
        Integer(),
        None,
        "threads for embedding: one session on that many threads for queries, and that many"
        " single-threaded sessions side by side for bulk ingestion",
        shown="`2` (`1` on one core)",
    ),
    Setting(
        "CITADEL_FUSION",
        "fusion.method",
        Choice(FUSION_METHODS),
        _FUSION.method,
        "`weighted` (per-query normalised scores) or `rrf`",
    ),
    Setting(
        "CITADEL_FUSION_LEXICAL_WEIGHT",
        "fusion.lexical_weight",
        Number(zero_ok=True),
        _FUSION.lexical_weight,
        "weight of the lexical ranking, tuned on SciFact train",
    ),
    Setting(
        "CITADEL_FUSION_DENSE_WEIGHT",
        "fusion.dense_weight",
        Number(zero_ok=True),
        _FUSION.dense_weight,
        "weight of the dense ranking, tuned on SciFact train",
    ),
    Setting(
        "CITADEL_FUSION_RRF_K",
        "fusion.rrf_k",
        Integer(),
        _FUSION.rrf_k,
        "the k of reciprocal-rank fusion",
    ),
    Setting(
        "CITADEL_FUSION_SECTION_DECAY",
        "fusion.section_decay",
        Number(),
        _FUSION.section_decay,
        "search results: each further passage of a section already listed is placed as if"
        " it scored this many times less, so other sections move up (`1` = off; every"
        " result keeps its own score; docs/retrieval.md)",
    ),
    Setting(
        "CITADEL_FUSION_NEAR_TOP",
        "fusion.near_top",
        Number(),
        _FUSION.near_top,
        "an answer's evidence: a passage scoring at least this share of the best is"
        " admitted before section diversity, so it is never left out (`1`: only ties with"
        " the best; docs/retrieval.md)",
    ),
    Setting(
        "CITADEL_BM25_WEIGHTS",
        "bm25_weights",
        Weights(),
        DEFAULT_WEIGHTS,
        "BM25 weights of title, headings, body",
    ),
    Setting(
        "CITADEL_SEARCH_CANDIDATES",
        "search_candidates",
        Integer(),
        DEFAULT_CANDIDATES,
        "hits each method contributes before fusion",
    ),
    Setting(
        "CITADEL_HNSW_MIN_VECTORS",
        "hnsw_min_vectors",
        Integer(minimum=0),
        DEFAULT_MIN_VECTORS,
        "from this many chunk vectors, dense search goes through an HNSW index kept in"
        " `<db>.hnsw` (built at the first search: in the background by `serve` and"
        " `serve-grpc`, which search exactly meanwhile; then updated; `0` = always exact"
        " numpy; `docs/benchmarks.md`)",
    ),
)
