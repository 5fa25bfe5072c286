"""Ports: what the use cases need from the outside world, as narrow Protocols.

Adapters in ``citadel.adapters`` implement them; in-memory fakes ship beside
the real adapters and pass the same contract suites (``tests/contract``).

The ports by family: ``documents`` (parsers and readers), ``library`` (registry,
chunks, indexes, retrieval), ``inference`` (embedder, generator, relevance scorer), ``users``, and
``records`` (audit log, trust metrics, clock), ``operations`` (ingest and
search metrics). This package is their public surface: import ports from
``citadel.app.ports``.
"""

from __future__ import annotations

from citadel.app.ports.documents import (
    DocumentMetadata,
    DocumentParser,
    DocumentReader,
    IncomingDocument,
    ProgressCallback,
)
from citadel.app.ports.inference import AnswerGenerator, Embedder, RelevanceScorer
from citadel.app.ports.library import (
    ChunkStore,
    ChunkVectors,
    DenseHit,
    LexicalHit,
    LexicalIndex,
    Retrieval,
    SourceLocation,
    SourceRegistry,
    StoredPassage,
    UnembeddedChunk,
    UnitStore,
    VectorCoverage,
    VectorIndex,
    Vectors,
)
from citadel.app.ports.operations import OperationMetrics
from citadel.app.ports.records import AuditLog, AuditSnapshot, Clock, TrustMetrics
from citadel.app.ports.users import UserRecord, UserStore

__all__ = [
    "AnswerGenerator",
    "AuditLog",
    "AuditSnapshot",
    "ChunkStore",
    "ChunkVectors",
    "Clock",
    "DenseHit",
    "DocumentMetadata",
    "DocumentParser",
    "DocumentReader",
    "Embedder",
    "IncomingDocument",
    "LexicalHit",
    "LexicalIndex",
    "OperationMetrics",
    "ProgressCallback",
    "RelevanceScorer",
    "Retrieval",
    "SourceLocation",
    "SourceRegistry",
    "StoredPassage",
    "TrustMetrics",
    "UnembeddedChunk",
    "UnitStore",
    "UserRecord",
    "UserStore",
    "VectorCoverage",
    "VectorIndex",
    "Vectors",
]
