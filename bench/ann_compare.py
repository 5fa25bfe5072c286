"""hnswlib against the maintained ANN libraries that ship wheels, at citadel's scale.

Each library builds an index over the same 100,000 unit vectors of dimension 384
(inner product, like adapters/sqlite/hnsw.py) with the same graph settings as
citadel's (M 16, ef_construction 200, ef 200), in a fresh process of its own so
the memory it adds is its own. Then the same questions are asked one at a time on
one thread, k = 100 (what the dense side asks for), and each answer is compared
with the exact top 10 / top 100 from the full product.

Vectors: the clustered generator of bench/search_latency.py (a topic shared by
four 500-chunk sources, a direction per 50-chunk section, noise: cosine ~0.70
within a section, ~0.47 within a topic), questions a stored vector plus as much
noise (in distribution, as real questions are). Random vectors have no
neighbourhoods and say nothing about a graph (docs/benchmarks.md).

``--filtered SHARE`` also asks with a filter admitting whole sources (SHARE of the
rows): hnswlib and faiss take a predicate inside the graph walk; usearch's Python
API has none, so it over-fetches (k x 1/SHARE) and filters after.

The libraries are a benchmark-only environment, never citadel's dependencies::

    python3.11 -m venv /tmp/ann && /tmp/ann/bin/pip install numpy hnswlib==0.8.0 \\
        usearch==2.26.6 faiss-cpu==1.15.1
    /tmp/ann/bin/python bench/ann_compare.py [--size 100000] [--queries 1000] [--filtered 0.2]

sqlite-vec (0.1.9) is not measured: its vec0 table answers by exact scan (no
approximate index in 0.1.x), and it loads only into a sqlite3 built with
loadable extensions, which Python 3.11 here is not (``enable_load_extension``
is missing).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

DIMENSION = 384
CHUNKS_PER_SOURCE = 500
M, EF_CONSTRUCTION, EF = 16, 200, 200
K = 100
BUILD_THREADS = 2
LIBRARIES = ("hnswlib", "usearch", "faiss")

Matrix = npt.NDArray[np.float32]


def normalised(matrix: Matrix) -> Matrix:
    return np.asarray(matrix / np.linalg.norm(matrix, axis=1, keepdims=True), dtype=np.float32)


def unit(rng: np.random.Generator, count: int) -> Matrix:
    return normalised(rng.standard_normal((count, DIMENSION)).astype(np.float32))


def dataset(size: int, queries: int) -> tuple[Matrix, Matrix, npt.NDArray[np.int64]]:
    """The vectors, the questions, and each row's source number (for filters)."""
    rng = np.random.default_rng(7)
    topics = unit(np.random.default_rng(8), max(1, size // CHUNKS_PER_SOURCE // 4))
    parts = []
    for number, first in enumerate(range(0, size, CHUNKS_PER_SOURCE)):
        count = min(CHUNKS_PER_SOURCE, size - first)
        topic = topics[number % len(topics)]
        sections = unit(rng, (count + 49) // 50)[np.arange(count) // 50]
        parts.append(normalised(topic + 0.7 * sections + 0.8 * unit(rng, count)))
    vectors = np.vstack(parts)
    picked = np.random.default_rng(9).choice(size, size=queries, replace=False)
    questions = normalised(vectors[picked] + unit(np.random.default_rng(10), queries))
    sources = np.arange(size, dtype=np.int64) // CHUNKS_PER_SOURCE
    return vectors, questions, sources


def exact_top(vectors: Matrix, questions: Matrix, admitted: npt.NDArray[np.bool_] | None) -> Any:
    scores = questions @ vectors.T
    if admitted is not None:
        scores[:, ~admitted] = -np.inf
    top = np.argpartition(-scores, K, axis=1)[:, :K]
    order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
    return np.take_along_axis(top, order, axis=1)


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Hnswlib:
    def __init__(self) -> None:
        import hnswlib  # type: ignore[import-untyped]

        self.version = hnswlib.__version__ if hasattr(hnswlib, "__version__") else "0.8.0"
        self.index = hnswlib.Index(space="ip", dim=DIMENSION)

    def build(self, vectors: Matrix) -> None:
        self.index.init_index(
            max_elements=len(vectors), M=M, ef_construction=EF_CONSTRUCTION, random_seed=100
        )
        self.index.set_ef(EF)
        self.index.add_items(vectors, np.arange(len(vectors)), num_threads=BUILD_THREADS)

    def search(self, question: Matrix, k: int, admit: Any = None) -> npt.NDArray[np.int64]:
        labels, _ = self.index.knn_query(question, k=k, num_threads=1, filter=admit)
        return np.asarray(labels[0], dtype=np.int64)

    def predicate(self, admitted: npt.NDArray[np.bool_]) -> Any:
        return lambda label: bool(admitted[label])

    def save(self, path: str) -> None:
        self.index.save_index(path)


class Usearch:
    def __init__(self) -> None:
        import usearch
        from usearch.index import Index

        self.version = usearch.__version__
        self.index = Index(
            ndim=DIMENSION,
            metric="ip",
            dtype="f32",
            connectivity=M,
            expansion_add=EF_CONSTRUCTION,
            expansion_search=EF,
        )

    def build(self, vectors: Matrix) -> None:
        self.index.add(np.arange(len(vectors)), vectors, threads=BUILD_THREADS)

    def search(self, question: Matrix, k: int, admit: Any = None) -> npt.NDArray[np.int64]:
        if admit is None:
            return np.asarray(self.index.search(question[0], k, threads=1).keys, dtype=np.int64)
        admitted, share = admit
        keys = np.asarray(
            self.index.search(question[0], int(k / share), threads=1).keys, dtype=np.int64
        )
        return keys[admitted[keys]][:k]

    def predicate(self, admitted: npt.NDArray[np.bool_]) -> Any:
        return (admitted, float(admitted.mean()))

    def save(self, path: str) -> None:
        self.index.save(path)


class Faiss:
    def __init__(self) -> None:
        import faiss  # type: ignore[import-untyped]

        self.faiss = faiss
        self.version = faiss.__version__
        self.index = faiss.IndexHNSWFlat(DIMENSION, M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = EF_CONSTRUCTION
        self.index.hnsw.efSearch = EF

    def build(self, vectors: Matrix) -> None:
        self.faiss.omp_set_num_threads(BUILD_THREADS)
        self.index.add(vectors)
        self.faiss.omp_set_num_threads(1)

    def search(self, question: Matrix, k: int, admit: Any = None) -> npt.NDArray[np.int64]:
        if admit is None:
            _, labels = self.index.search(question, k)
        else:
            _, labels = self.index.search(question, k, params=admit)
        return np.asarray(labels[0], dtype=np.int64)

    def predicate(self, admitted: npt.NDArray[np.bool_]) -> Any:
        bits = np.packbits(admitted, bitorder="little")
        self._bits = bits  # the selector keeps a pointer: keep the array alive
        selector = self.faiss.IDSelectorBitmap(len(admitted), self.faiss.swig_ptr(bits))
        self._selector = selector
        return self.faiss.SearchParametersHNSW(sel=selector, efSearch=EF)

    def save(self, path: str) -> None:
        self.faiss.write_index(self.index, path)


def recall(found: list[npt.NDArray[np.int64]], truth: Any, k: int) -> float:
    hits = sum(
        len(set(f[:k].tolist()) & set(t[:k].tolist())) for f, t in zip(found, truth, strict=True)
    )
    return hits / (k * len(found))


def percentiles(timings: list[float]) -> tuple[float, float]:
    p50, p95 = np.percentile(np.asarray(timings), [50, 95])
    return round(float(p50), 3), round(float(p95), 3)


def measure(name: str, size: int, queries: int, filtered: float | None) -> dict[str, Any]:
    vectors, questions, sources = dataset(size, queries)
    truth = exact_top(vectors, questions, None)
    library = {"hnswlib": Hnswlib, "usearch": Usearch, "faiss": Faiss}[name]()
    before = rss_mib()
    began = time.perf_counter()
    library.build(vectors)
    build_s = time.perf_counter() - began
    added = rss_mib() - before
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "index")
        library.save(path)
        file_mib = os.path.getsize(path) / 2**20
    for question in questions[:20]:  # warm caches and lazy initialisation
        library.search(question[None, :], K)
    found, timings = [], []
    for question in questions:
        began = time.perf_counter()
        found.append(library.search(question[None, :], K))
        timings.append((time.perf_counter() - began) * 1000)
    row: dict[str, Any] = {
        "library": name,
        "version": library.version,
        "build_s": round(build_s, 1),
        "rss_added_mib": round(added, 1),
        "file_mib": round(file_mib, 1),
        "recall_at_10": round(recall(found, truth, 10), 4),
        "recall_at_100": round(recall(found, truth, K), 4),
        "query_ms": percentiles(timings),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    if filtered is not None:
        wanted = round(filtered * int(sources.max() + 1))
        chosen = np.random.default_rng(11).choice(sources.max() + 1, size=wanted, replace=False)
        admitted = np.isin(sources, chosen)
        truth_f = exact_top(vectors, questions, admitted)
        admit = library.predicate(admitted)
        found, timings = [], []
        for question in questions:
            began = time.perf_counter()
            found.append(library.search(question[None, :], K, admit))
            timings.append((time.perf_counter() - began) * 1000)
        row["filtered_share"] = round(float(admitted.mean()), 3)
        row["filtered_recall_at_10"] = round(recall(found, truth_f, 10), 4)
        row["filtered_query_ms"] = percentiles(timings)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--filtered", type=float, default=None, help="share of rows admitted")
    parser.add_argument("--libraries", nargs="+", default=list(LIBRARIES), choices=LIBRARIES)
    parser.add_argument("--one", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.size, args.queries, args.filtered)))
        return
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown",
    )
    flags = set(
        next(
            (
                line.split(":", 1)[1].split()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("flags")
            ),
            [],
        )
    )
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8")
    print(f"cpu: {cpu}; flags: {' '.join(f for f in wanted if f in flags) or 'none of'}")
    load = os.getloadavg()
    print(f"{args.size} vectors x {DIMENSION}, {args.queries} questions, k={K}, load {load}")
    for name in args.libraries:
        command = [sys.executable, __file__, "--one", name, "--size", str(args.size)]
        command += ["--queries", str(args.queries)]
        if args.filtered is not None:
            command += ["--filtered", str(args.filtered)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        print(out.strip().splitlines()[-1], flush=True)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
