"""Benchmark: citadel's hybrid and lexical search against LlamaIndex's, same corpus, same run.

A BEIR data set (SciFact: ``../shared/data/scifact``) is ingested into citadel as
``citadel eval retrieval`` does it (each document a source, embedded SQLite in a
scratch directory or ``--home``, with embeddings), and LlamaIndex indexes the very
chunks citadel made: each chunk's text exactly as citadel embedded it (title, then
the passage), with the vector citadel stored for it. Queries are embedded on both
sides by the same packaged embedder object (``MiniLmEmbedder``; LlamaIndex reaches it
through a small ``BaseEmbedding`` subclass), so nothing is downloaded and the vectors
are the same; a sample of chunks is re-embedded through that subclass and compared
with the stored vectors to show it.

Four systems answer every judged query of ``--split``, top ``--limit`` (10):

- citadel hybrid: the search use case (``SearchService``, as ``citadel search``),
  query embedding included — BM25 from memory and exact dense search, fused;
- citadel lexical: the same use case in lexical mode (BM25 only);
- LlamaIndex hybrid: ``BM25Retriever`` (llama-index-retrievers-bm25, on bm25s) and a
  ``VectorStoreIndex`` retriever (its default in-memory vector store), fused by
  ``QueryFusionRetriever`` with reciprocal rerank and ``num_queries=1`` (no LLM call;
  ``MockLLM`` set so nothing reaches for a provider), query embedding included;
- LlamaIndex BM25: ``BM25Retriever`` alone.

Each hybrid takes ``--candidates`` (100, citadel's default) from each side before
fusing. Every system is warmed up on a few altered queries (so citadel's query-vector
cache never hits a timed query), then the queries are timed once each, the four
systems in a rotating order per query. Reported: p50 / p95 / mean per system, the
ratios LlamaIndex / citadel, and then — in a separate pass at depth 100, whose top
``--limit`` is exactly the timed result — nDCG@10 and Recall@100 over documents
(chunks folded into their document, best first), so speed is not bought with quality.

LlamaIndex is a benchmark-only extra, never a dependency of citadel: install it into
its own venv (the main ``.venv`` stays as CI has it).

Run:
  python3.11 -m venv .venv-bench && .venv-bench/bin/pip install -e '.[bench-peers]'
  .venv-bench/bin/python bench/hybrid_peers.py --beir ../shared/data/scifact --split train \
      [--home /tmp/hybrid-peers] [--limit-queries N] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from importlib import import_module
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.app.evaluation import EVAL_TENANT, BeirDataset, RetrievalEvaluation
from citadel.bootstrap import Services, build, load_beir_dataset
from citadel.config import Settings
from citadel.domain.chunking import embedding_text
from citadel.domain.evaluation import evaluate
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role
from search_latency import percentiles

SYSTEMS = ("citadel_hybrid", "citadel_lexical", "llama_hybrid", "llama_bm25")
FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")


@dataclass(frozen=True, slots=True)
class StoredChunk:
    chunk_id: str
    source_id: str
    text: str
    """Exactly what citadel embedded (its sha256 is the chunk's embedding key)."""
    vector: list[float]


Search = Callable[[str, int], list[str]]
"""query, depth → chunk ids, best first."""


def cpu_line() -> dict[str, object]:
    """The CPU model and which of the flags that set the embedder's kernels it has."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {"model": "unknown", "flags": []}
    model = next(
        (ln.split(":", 1)[1].strip() for ln in info.splitlines() if "model name" in ln), ""
    )
    flags = next(
        (ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), []
    )
    return {"model": model, "cores": os.cpu_count(), "flags": [f for f in FLAGS if f in flags]}


@contextmanager
def citadel_library(
    beir: Path, split: str, home: Path | None, embedder: MiniLmEmbedder
) -> Iterator[tuple[Services, BeirDataset, float]]:
    """The services over an evaluation library of ``beir`` (ingested as
    ``citadel eval retrieval`` does; a kept ``home`` is re-used, unchanged
    documents are no-ops), the data set, and the ingest's seconds."""
    dataset = load_beir_dataset(beir, split)
    with tempfile.TemporaryDirectory(prefix="citadel-peers-") as scratch:
        settings = Settings.from_env(os.environ)
        limits = replace(settings.limits, max_results=1000)
        where = home or Path(scratch)
        services = build(replace(settings, home=where, db="", limits=limits), embedder=embedder)
        try:
            began = time.perf_counter()
            RetrievalEvaluation(services.ingest, services.search).run(dataset, modes=())
            yield services, dataset, time.perf_counter() - began
        finally:
            services.close()


def stored_chunks(db: Path, model: str) -> list[StoredChunk]:
    """Every current chunk of the evaluation tenant, with its embedded text and vector."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT c.chunk_id, c.source_id, s.title, c.section_path, c.text, c.embed_key,"
            " e.vector FROM chunks c"
            " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
            "  AND s.current_version = c.version AND s.deleted = 0"
            " JOIN embeddings e ON e.key = c.embed_key AND e.model = ?"
            " WHERE c.tenant = ? ORDER BY c.rowid",
            (model, EVAL_TENANT),
        ).fetchall()
    finally:
        conn.close()
    chunks = []
    for chunk_id, source_id, title, section_path, text, key, blob in rows:
        embedded = embedding_text(title, json.loads(section_path), text)
        assert hashlib.sha256(embedded.encode()).hexdigest() == key, chunk_id
        vector = np.frombuffer(blob, dtype="<f4").astype(float).tolist()
        chunks.append(StoredChunk(chunk_id, source_id, embedded, vector))
    return chunks


def citadel_searches(services: Services) -> dict[str, Search]:
    actor = Actor(user_id="evaluation", tenant=EVAL_TENANT, role=Role.ADMIN)

    def searcher(mode: SearchMode) -> Search:
        def search(query: str, depth: int) -> list[str]:
            found = services.search.search(SearchRequest(query, limit=depth, mode=mode), actor)
            return [evidence.chunk_id for evidence in found.results]

        return search

    return {
        "citadel_hybrid": searcher(SearchMode.HYBRID),
        "citadel_lexical": searcher(SearchMode.LEXICAL),
    }


def llama_searches(
    chunks: Sequence[StoredChunk], embedder: MiniLmEmbedder, candidates: int, limit: int
) -> tuple[dict[str, Search], dict[str, object]]:
    """LlamaIndex's hybrid and BM25 over ``chunks``; imported here, so the rest of the
    script (and ``make check``) runs without the ``bench-peers`` extra."""
    # Through import_module: typed Any, so mypy passes where the extra is missing too.
    stemmer = import_module("Stemmer").Stemmer
    core = import_module("llama_index.core")
    PrivateAttr = import_module("llama_index.core.bridge.pydantic").PrivateAttr
    BaseEmbedding: Any = import_module("llama_index.core.embeddings").BaseEmbedding
    MockLLM = import_module("llama_index.core.llms").MockLLM
    QueryFusionRetriever = import_module("llama_index.core.retrievers").QueryFusionRetriever
    TextNode = import_module("llama_index.core.schema").TextNode
    BM25Retriever = import_module("llama_index.retrievers.bm25").BM25Retriever

    class CitadelEmbedding(BaseEmbedding):  # type: ignore[misc]
        """citadel's packaged embedder, as LlamaIndex asks for one."""

        _embedder: Any = PrivateAttr()

        def __init__(self, model: MiniLmEmbedder) -> None:
            super().__init__(model_name=model.name, embed_batch_size=32)
            self._embedder = model

        @classmethod
        def class_name(cls) -> str:
            return "CitadelEmbedding"

        def _get_query_embedding(self, query: str) -> list[float]:
            return list(self._embedder.embed([query])[0].tolist())

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return list(self._embedder.embed([text])[0].tolist())

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return [list(v.tolist()) for v in self._embedder.embed(texts)]

    embed_model = CitadelEmbedding(embedder)
    core.Settings.llm = MockLLM()
    core.Settings.embed_model = embed_model
    # The same vectors: a sample of chunks embedded again through the subclass.
    sample = list(chunks[:: max(1, len(chunks) // 16)])
    again = embed_model.get_text_embedding_batch([c.text for c in sample])
    drift = float(np.max(np.abs(np.array(again) - np.array([c.vector for c in sample]))))
    nodes = [TextNode(id_=c.chunk_id, text=c.text, embedding=c.vector) for c in chunks]
    began = time.perf_counter()
    bm25 = BM25Retriever.from_defaults(
        nodes=nodes,
        similarity_top_k=candidates,
        stemmer=stemmer("english"),
        language="english",
    )
    bm25_s = time.perf_counter() - began
    began = time.perf_counter()
    index = core.VectorStoreIndex(nodes, embed_model=embed_model)
    vector_s = time.perf_counter() - began
    dense = index.as_retriever(similarity_top_k=candidates)
    bm25_top = BM25Retriever.from_defaults(
        nodes=nodes,
        similarity_top_k=limit,
        stemmer=stemmer("english"),
        language="english",
    )

    def fusion(top: int) -> Any:
        return QueryFusionRetriever(
            [dense, bm25],
            llm=MockLLM(),
            similarity_top_k=top,
            num_queries=1,
            mode="reciprocal_rerank",
            use_async=False,
        )

    fused = {limit: fusion(limit), candidates: fusion(candidates)}

    def hybrid(query: str, depth: int) -> list[str]:
        return [hit.node.node_id for hit in fused[depth].retrieve(query)]

    def lexical(query: str, depth: int) -> list[str]:
        retriever = bm25_top if depth == limit else bm25
        return [hit.node.node_id for hit in retriever.retrieve(query)]

    facts: dict[str, object] = {
        "llama_bm25_index_s": round(bm25_s, 2),
        "llama_vector_index_s": round(vector_s, 2),
        "same_vectors_max_abs_diff": drift,
        "same_vectors_sample": len(sample),
        "versions": {
            name: version(name)
            for name in ("llama-index-core", "llama-index-retrievers-bm25", "bm25s")
        },
    }
    return {"llama_hybrid": hybrid, "llama_bm25": lexical}, facts


def lexical_from_memory(services: Services) -> bool:
    """Wait for the in-memory BM25 index the warm-up started reading (the default
    ``background`` mode, as a server runs: FTS5 answers until it is in), and say
    whether searches now rank from it."""
    library: Any = services.chunks  # the SqliteLibrary; its ranking is private
    live = library._ranking.live(EVAL_TENANT)
    live.wait()
    return live.current(library.database.generation()) is not None


def timed(
    searches: Mapping[str, Search], queries: Sequence[str], limit: int, settle: Callable[[], bool]
) -> tuple[dict[str, list[float]], bool]:
    """Each query once through every system, the order rotating by query."""
    for query in queries[:5]:  # warm-up: models, matrices, caches; altered queries
        for search in searches.values():
            search(query + " warm", limit)
    settled = settle()
    names = list(searches)
    timings: dict[str, list[float]] = {name: [] for name in names}
    for i, query in enumerate(queries):
        turn = i % len(names)
        for name in names[turn:] + names[:turn]:
            began = time.perf_counter()
            searches[name](query, limit)
            timings[name].append((time.perf_counter() - began) * 1000)
    return timings, settled


def quality(
    search: Search, dataset: BeirDataset, owner: Mapping[str, str], depth: int
) -> dict[str, float]:
    """nDCG@10 and Recall@100 over documents: each document at its best chunk."""
    run: dict[str, list[str]] = {}
    for query_id, text in dataset.queries.items():
        ranked: list[str] = []
        for chunk_id in search(text, depth):
            if owner[chunk_id] not in ranked:
                ranked.append(owner[chunk_id])
        run[query_id] = ranked
    metrics = evaluate(run, dataset.qrels)
    return {"ndcg@10": round(metrics["ndcg@10"], 4), "recall@100": round(metrics["recall@100"], 4)}


def measure(args: argparse.Namespace) -> dict[str, object]:
    load = [round(x, 2) for x in os.getloadavg()]
    embedder = MiniLmEmbedder()
    with citadel_library(args.beir, args.split, args.home, embedder) as (services, full, ingest):
        dataset = full
        if args.limit_queries:
            kept = dict(list(full.queries.items())[: args.limit_queries])
            dataset = replace(full, queries=kept, qrels={q: full.qrels[q] for q in kept})
        chunks = stored_chunks(services.settings.db_path, embedder.name)
        owner = {c.chunk_id: c.source_id for c in chunks}
        peers, facts = llama_searches(chunks, embedder, args.candidates, args.limit)
        searches = citadel_searches(services) | peers
        queries = list(dataset.queries.values())
        timings, from_memory = timed(
            searches, queries, args.limit, lambda: lexical_from_memory(services)
        )
        load += [round(x, 2) for x in os.getloadavg()]
        depth = max(100, args.limit)
        scores = {name: quality(searches[name], dataset, owner, depth) for name in SYSTEMS}
    latency: dict[str, dict[str, float]] = {}
    for name in SYSTEMS:
        p50, p95 = percentiles(timings[name])
        mean = round(sum(timings[name]) / len(timings[name]), 2)
        latency[name] = {"p50_ms": p50, "p95_ms": p95, "mean_ms": mean}

    def ratio(peer: str, ours: str, key: str) -> float:
        return round(latency[peer][key] / latency[ours][key], 2)

    return {
        "cpu": cpu_line(),
        "data_set": f"{args.beir.name} {args.split}",
        "documents": len(dataset.documents),
        "chunks": len(chunks),
        "queries": len(queries),
        "limit": args.limit,
        "candidates": args.candidates,
        "embedder": embedder.name,
        "citadel_ingest_s": round(ingest, 1),
        "citadel_lexical_from_memory": from_memory,
        "citadel_hnsw_min_vectors": services.settings.hnsw_min_vectors,
        **facts,
        "load_1_5_15_before_after": load,
        "latency": latency,
        "ratios_llama_over_citadel": {
            "hybrid_p50": ratio("llama_hybrid", "citadel_hybrid", "p50_ms"),
            "hybrid_p95": ratio("llama_hybrid", "citadel_hybrid", "p95_ms"),
            "lexical_p50": ratio("llama_bm25", "citadel_lexical", "p50_ms"),
            "lexical_p95": ratio("llama_bm25", "citadel_lexical", "p95_ms"),
        },
        "quality": scores,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--beir", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--split", default="train")
    parser.add_argument("--home", type=Path, help="keep citadel's library here (re-runs reuse it)")
    parser.add_argument("--limit-queries", type=int, help="only the first N judged queries")
    parser.add_argument("--limit", type=int, default=10, help="results per search")
    parser.add_argument("--candidates", type=int, default=100, help="hits per side before fusion")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    row = measure(args)
    if args.json:
        print(json.dumps(row))
        return
    cpu = row["cpu"]
    assert isinstance(cpu, dict)
    print(f"CPU: {cpu['model']} ({cpu['cores']} cores; {', '.join(cpu['flags']) or 'none'})")
    print(
        f"{row['data_set']}: {row['documents']} documents, {row['chunks']} chunks,"
        f" {row['queries']} queries, top {row['limit']}, {row['candidates']} candidates a side"
    )
    latency, scores = row["latency"], row["quality"]
    assert isinstance(latency, dict) and isinstance(scores, dict)
    for name in SYSTEMS:
        times, q = latency[name], scores[name]
        print(
            f"  {name:<16} p50 {times['p50_ms']:>7.2f} ms  p95 {times['p95_ms']:>7.2f} ms"
            f"  mean {times['mean_ms']:>7.2f} ms  nDCG@10 {q['ndcg@10']:.4f}"
            f"  R@100 {q['recall@100']:.4f}"
        )
    ratios = row["ratios_llama_over_citadel"]
    assert isinstance(ratios, dict)
    print("LlamaIndex / citadel: " + ", ".join(f"{k} {v}x" for k, v in ratios.items()))
    rest = {
        k: v
        for k, v in row.items()
        if k not in {"cpu", "latency", "quality", "ratios_llama_over_citadel"}
    }
    print("  " + "; ".join(f"{k} {v}" for k, v in rest.items()))


if __name__ == "__main__":
    main()
