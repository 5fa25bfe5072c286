"""Retrieval evaluation on a BEIR data set, through the normal ingestion and search paths.

Each corpus document becomes a source (its BEIR id is the source id), so
ingestion, chunking, embedding, FTS5 and fusion are exactly what users get.
Chunk hits are folded into documents by their best chunk before scoring.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from citadel.app.ingest import IngestOptions, IngestService, ParsedInput
from citadel.app.search import SearchService
from citadel.domain.document import Block, ParsedDocument
from citadel.domain.evaluation import evaluate
from citadel.domain.search import SearchMode, SearchRequest
from citadel.domain.users import Actor, Role

EVAL_TENANT = "beir"


@dataclass(frozen=True, slots=True)
class BeirDocument:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class BeirDataset:
    documents: tuple[BeirDocument, ...]
    queries: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]


@dataclass(frozen=True, slots=True)
class ModeReport:
    mode: str
    metrics: Mapping[str, float]
    latency_ms_p50: float
    latency_ms_p95: float


@dataclass(frozen=True, slots=True)
class EvaluationReport:
    documents: int
    queries: int
    ingest_seconds: float
    created: int
    modes: tuple[ModeReport, ...] = field(default=())


Progress = Callable[[str, int, int], None]


class RetrievalEvaluation:
    def __init__(self, ingest: IngestService, search: SearchService) -> None:
        self._ingest = ingest
        self._search = search

    def run(
        self,
        dataset: BeirDataset,
        modes: Sequence[SearchMode] = (SearchMode.LEXICAL, SearchMode.DENSE, SearchMode.HYBRID),
        *,
        depth: int = 100,
        progress: Progress | None = None,
    ) -> EvaluationReport:
        started = time.perf_counter()
        options = IngestOptions(tenant=EVAL_TENANT)
        documents = [
            (
                ParsedInput(
                    ParsedDocument(
                        title=doc.title,
                        blocks=(Block(text=doc.text or doc.title, section_path=()),),
                        parser="beir/1",
                    ),
                    origin=f"beir:{doc.doc_id}",
                ),
                IngestOptions(tenant=options.tenant, source_id=doc.doc_id, title=doc.title or None),
            )
            for doc in dataset.documents
            if (doc.text or doc.title).strip()
        ]
        actor = Actor(user_id="evaluation", tenant=EVAL_TENANT, role=Role.ADMIN)
        reports = self._ingest.ingest_documents(
            documents,
            (lambda done, total: progress("embed", done, total)) if progress else None,
            actor=actor,
        )
        ingest_seconds = time.perf_counter() - started
        results: list[ModeReport] = []
        for mode in modes:
            run: dict[str, list[str]] = {}
            timings: list[float] = []
            for index, (query_id, text) in enumerate(dataset.queries.items()):
                began = time.perf_counter()
                found = self._search.search(
                    SearchRequest(query=text, limit=depth * 2, mode=mode), actor
                )
                timings.append((time.perf_counter() - began) * 1000)
                ranked: list[str] = []
                for evidence in found.results:  # best chunk per document
                    if evidence.source_id not in ranked:
                        ranked.append(evidence.source_id)
                run[query_id] = ranked[:depth]
                if progress:
                    progress(mode.value, index + 1, len(dataset.queries))
            timings.sort()
            results.append(
                ModeReport(
                    mode=mode.value,
                    metrics=evaluate(run, dataset.qrels),
                    latency_ms_p50=statistics.median(timings) if timings else 0.0,
                    latency_ms_p95=timings[int(0.95 * (len(timings) - 1))] if timings else 0.0,
                )
            )
        return EvaluationReport(
            documents=len(documents),
            queries=len(dataset.queries),
            ingest_seconds=ingest_seconds,
            created=sum(1 for r in reports if r.status != "unchanged"),
            modes=tuple(results),
        )
