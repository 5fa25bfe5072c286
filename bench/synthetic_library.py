"""The synthetic libraries the search benchmarks share (``search_latency.py``,
``lexical_latency.py``): chunk text with the statistics of English prose,
questions of middling-frequency content words, random or clustered unit vectors,
filled once into a directory and reused. Library and questions come from fixed
seeds, so a kept library answers the same questions as a fresh one.
"""

from __future__ import annotations

import itertools
import random
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.app.ports import ChunkVectors
from citadel.domain.chunking import CHUNKER_VERSION, chunk_id, embedding_key
from citadel.domain.document import Chunk
from citadel.domain.source import Source, SourceVersion
from citadel.domain.text import STOPWORDS

# Text with the statistics of English prose: about 45% function words (which
# the query side drops as stop words) and content words drawn from a Zipf
# distribution (exponent 1.07) over a 50,000-word vocabulary.
STOP = sorted(STOPWORDS)
CONTENT = [
    "".join(random.Random(rank).choices("abcdefghijklmnopqrstuvwxyz", k=4 + rank % 7)) + f"{rank}"
    for rank in range(50_000)
]
ZIPF = list(itertools.accumulate(1 / (rank + 1) ** 1.07 for rank in range(len(CONTENT))))
QUERY_RANKS = slice(30, 20_000)


def prose(rng: random.Random, length: int) -> str:
    function_words = rng.choices(STOP, k=int(length * 0.45))
    content = rng.choices(CONTENT, cum_weights=ZIPF, k=length - len(function_words))
    tokens = function_words + content
    rng.shuffle(tokens)
    return " ".join(tokens) + "."


def question(rng: random.Random) -> str:
    # What readers ask about: content words of middling frequency, with a few
    # function words around them.
    ranks = CONTENT[QUERY_RANKS]
    cumulative = [w - ZIPF[QUERY_RANKS.start - 1] for w in ZIPF[QUERY_RANKS]]
    content = rng.choices(ranks, cum_weights=cumulative, k=rng.randint(2, 5))
    return " ".join(rng.choices(STOP, k=3) + content)


CHUNKS_PER_SOURCE = 500


def clustered(
    rng: np.random.Generator, count: int, dimension: int, topic: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """One source's vectors: its topic (shared by four sources), plus a direction per
    50-chunk section, plus noise: cosine about 0.70 within a section, 0.47 within a
    topic, 0 otherwise."""
    sections = unit(rng, (count + 49) // 50, dimension)[np.arange(count) // 50]
    return normalised(topic + 0.7 * sections + 0.8 * unit(rng, count, dimension))


def normalised(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return np.asarray(matrix / np.linalg.norm(matrix, axis=1, keepdims=True), dtype=np.float32)


def unit(rng: np.random.Generator, count: int, dimension: int) -> npt.NDArray[np.float32]:
    return normalised(rng.standard_normal((count, dimension)).astype(np.float32))


def fill(
    library: SqliteLibrary, size: int, dimension: int, rng: random.Random, vectors: str = "random"
) -> None:
    vectors_rng = np.random.default_rng(7)
    topics = unit(np.random.default_rng(8), max(1, size // CHUNKS_PER_SOURCE // 4), dimension)
    for first in range(0, size, CHUNKS_PER_SOURCE):
        count = min(CHUNKS_PER_SOURCE, size - first)
        source_id = f"bench-{first // CHUNKS_PER_SOURCE:05d}"
        chunks = []
        for ordinal in range(count):
            text = prose(rng, 180)
            sha = f"{rng.getrandbits(256):064x}"
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(source_id, 1, ordinal, sha, tenant="bench"),
                    source_id=source_id,
                    version=1,
                    ordinal=ordinal,
                    text=text,
                    sha256=sha,
                    section_path=(f"Chapter {ordinal // 50 + 1}",),
                    chapter=f"Chapter {ordinal // 50 + 1}",
                    section="",
                    page_start=ordinal + 1,
                    page_end=ordinal + 1,
                    page_label_start=str(ordinal + 1),
                    page_label_end=str(ordinal + 1),
                    char_start=ordinal * 2000,
                    char_end=ordinal * 2000 + len(text),
                )
            )
        if vectors == "clustered":
            topic = topics[(first // CHUNKS_PER_SOURCE) % len(topics)]
            matrix = clustered(vectors_rng, count, dimension, topic)
        else:
            matrix = vectors_rng.standard_normal((count, dimension)).astype(np.float32)
            matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        source = Source(
            source_id=source_id,
            tenant="bench",
            title=f"Synthetic book {source_id}",
            origin=source_id,
            current_version=1,
        )
        version = SourceVersion(
            source_id=source_id,
            version=1,
            content_sha256=source_id,
            parser="bench",
            chunker=CHUNKER_VERSION,
            page_count=count,
            section_count=10,
            chunk_count=count,
            created_at="2026-01-01",
        )
        keys = tuple(embedding_key(c.text + c.chunk_id) for c in chunks)
        library.commit_version(
            source, version, chunks, ChunkVectors(model=EMBEDDER.name, keys=keys, matrix=matrix)
        )


EMBEDDER = MiniLmEmbedder()


def open_library(home: Path, size: int, vectors: str = "random") -> tuple[SqliteLibrary, float]:
    """The synthetic library of ``size`` chunks in ``home``, filled unless a complete
    one is already there; returns it (exact dense search) with the seconds spent
    filling (0 if reused). The vectors are stored under the embedder's name, so a
    library filled for another model is filled again."""
    name = f"library-{size}" + ("" if vectors == "random" else f"-{vectors}")
    path = home / f"{name}.db"
    done = home / f"{name}.done"
    marker = f"{size} {EMBEDDER.name}\n"
    if path.exists() and done.exists() and done.read_text() == marker:
        return SqliteLibrary(path, hnsw_min_vectors=0, lexical_memory="sync"), 0.0
    for stale in (
        done,
        path,
        path.with_name(path.name + "-wal"),
        path.with_name(path.name + "-shm"),
    ):
        stale.unlink(missing_ok=True)
    library = SqliteLibrary(path, hnsw_min_vectors=0, lexical_memory="sync")
    started = time.perf_counter()
    fill(library, size, EMBEDDER.dimension, random.Random(size), vectors)
    fill_s = time.perf_counter() - started
    done.write_text(marker)
    return library, fill_s
