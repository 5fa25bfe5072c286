"""Ports: what the use cases need from the outside world, as narrow Protocols.

Adapters in ``citadel.adapters`` implement them; in-memory fakes ship beside
the real adapters and pass the same contract suites (``tests/contract``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from citadel.domain.answer import Candidate, GenerationRequest
from citadel.domain.audit import AuditEntry
from citadel.domain.document import Chunk, ParsedDocument
from citadel.domain.search import SearchFilters, SearchRequest, SearchResult
from citadel.domain.source import AccessScope, Source, SourceVersion
from citadel.domain.users import Actor, User, UserStatus

# Vectors are numpy arrays at this boundary: a list of Python floats per chunk
# would cost more than the search itself at 100k chunks.
Vectors = npt.NDArray[np.float32]

ProgressCallback = Callable[[int, int], None]
"""Called with (done, total) units of work — pages, spine items, files."""


class DocumentParser(Protocol):
    """Turns one file into body blocks with sections and page labels."""

    name: str

    def accepts(self, path: Path) -> bool:
        """True when this parser handles files like ``path`` (by name and magic bytes)."""
        ...

    def parse(self, path: Path, progress: ProgressCallback | None = None) -> ParsedDocument:
        """Parse ``path``; raise ``ParseError`` with a clear message on bad input."""
        ...


class Retrieval(Protocol):
    """Search as the answer use case needs it: ``SearchService`` here, or a remote service."""

    def search(self, request: SearchRequest, actor: Actor) -> SearchResult:
        """Rank the chunks ``actor`` may read; ``InvalidRequest`` for a bad request."""
        ...


class SourceRegistry(Protocol):
    """The trusted record of sources and their versions."""

    def get(self, source_id: str) -> Source | None:
        """The source, deleted or not; None when it never existed."""
        ...

    def matching(
        self, tenant: str, *, content_sha256: str = "", origin: str = ""
    ) -> Sequence[Source]:
        """Live sources of ``tenant`` whose current version has this hash (or, given no
        hash, that were ingested from this origin), by id."""
        ...

    def versions(self, source_id: str) -> Sequence[SourceVersion]:
        """All retained versions, oldest first."""
        ...

    def list(self, tenant: str | None = None) -> Sequence[Source]:
        """Live sources, by title."""
        ...

    def revisions(self, source_ids: Collection[str]) -> Mapping[str, int]:
        """The current ``revision`` of each known source (deleted ones too); unknown ids absent."""
        ...

    def commit_version(
        self,
        source: Source,
        version: SourceVersion,
        chunks: Sequence[Chunk],
        vectors: ChunkVectors | None = None,
        *,
        unique_in: AccessScope | None = None,
    ) -> None:
        """Make ``version`` of ``source`` current with its chunks and vectors, all or nothing.

        The commit checks, in the same transaction as its writes, what its caller
        decided from an earlier read, and raises ``VersionConflict`` (writing
        nothing) when another writer got there first: ``version`` must follow the
        stored current version (1 for a source not stored yet), and a stored source
        must be live, of the same tenant and at ``source.revision`` (unchanged since the
        caller read it: no ACL, move or metadata change lost). With ``unique_in``, no
        other live source that scope allows may already hold this content as its
        current version.
        """
        ...

    def update(self, source: Source) -> None:
        """Replace a live source's metadata (origin, title, ACL); versions are untouched.

        A compare-and-swap on ``source.revision``: ``VersionConflict`` (nothing written)
        when the stored source changed since it was read; ``KeyError`` when it is gone
        or deleted."""
        ...

    def delete(self, source_id: str) -> None:
        """Leave a tombstone: the record stays (so citations can say "deleted"), the text goes."""
        ...

    def prune(self, source_id: str, keep: int) -> int:
        """Drop the chunks of all but the newest ``keep`` versions; return how many went."""
        ...


@dataclass(frozen=True, slots=True)
class ChunkVectors:
    """One vector per chunk of a version, and the cache key of the text each embeds."""

    model: str
    keys: tuple[str, ...]
    """sha256 of the embedded text (title, section path, chunk text), one per chunk."""
    matrix: Vectors
    """Shape (len(keys), dimension); row i embeds chunk i."""


@dataclass(frozen=True, slots=True)
class VectorCoverage:
    """How much of the library one model's vectors cover: dense search sees only that."""

    chunks: int
    """Current-version chunks of live sources."""
    missing: int
    """How many of them have no vector under the model."""


@dataclass(frozen=True, slots=True)
class UnembeddedChunk:
    """A current chunk without a vector under some model, with what its vector would embed."""

    chunk_id: str
    title: str
    """Its source's title as it is now (a title edit changes the embedded text)."""
    section_path: tuple[str, ...]
    text: str


@dataclass(frozen=True, slots=True)
class DenseHit:
    chunk_id: str
    score: float
    """Cosine similarity in [-1, 1]."""


class VectorIndex(Protocol):
    def cached_vectors(self, keys: Sequence[str], model: str) -> dict[str, Vectors]:
        """Vectors already stored for these text hashes under ``model``: re-ingesting
        unchanged text never re-embeds it."""
        ...

    def search_vectors(
        self, vector: Vectors, model: str, scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[DenseHit]:
        """Current-version chunks nearest ``vector`` (unit length), best first.

        ``scope`` and ``filters`` are applied inside the search: a chunk the scope
        may not read is never scored or returned.
        """
        ...

    def score_vectors(
        self, vector: Vectors, model: str, chunk_ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine similarity of ``vector`` with each of these (already admitted) chunks;
        chunks without a vector are absent."""
        ...

    def vector_coverage(self, model: str) -> VectorCoverage:
        """How many current chunks of live sources there are, and how many have no vector
        under ``model``: dense search cannot find those, so callers can say so."""
        ...

    def unembedded_chunks(
        self, model: str, source_id: str | None = None, limit: int | None = None
    ) -> Sequence[UnembeddedChunk]:
        """The current chunks of live sources (of ``source_id`` only, when given) that have
        no vector under ``model``, by source id then reading order; the first ``limit``
        of them when given (storing their vectors takes them off the list)."""
        ...

    def store_vectors(
        self, model: str, chunk_ids: Sequence[str], keys: Sequence[str], matrix: Vectors
    ) -> None:
        """Store row i of ``matrix`` under (``keys[i]``, ``model``), keeping a vector already
        stored there, and make ``keys[i]`` the embedding key of ``chunk_ids[i]``: one write,
        seen by the next search. An unknown chunk id or mismatched lengths raise
        ``ValueError`` and nothing is written."""
        ...


@dataclass(frozen=True, slots=True)
class StoredPassage:
    """A chunk joined with its source's stored metadata."""

    chunk: Chunk
    source: Source


class ChunkStore(Protocol):
    def chunks(self, source_id: str, version: int) -> Sequence[Chunk]:
        """A version's chunks in reading order."""
        ...

    def passages(self, chunk_ids: Sequence[str]) -> dict[str, StoredPassage]:
        """Chunks by id with their sources; unknown ids are absent from the result."""
        ...


@dataclass(frozen=True, slots=True)
class LexicalHit:
    chunk_id: str
    score: float
    """Raw relevance, larger is better (BM25, sign flipped)."""


class LexicalIndex(Protocol):
    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        """Current-version chunks matching any of ``terms``, best first.

        ``scope`` is applied inside the search: chunks the scope may not read are
        never scored or returned. ``terms`` are plain words, never query syntax.
        """
        ...


class Embedder(Protocol):
    """Text to unit-length vectors; the same text always gives the same vector."""

    name: str
    """Model identity, part of the vector cache key (vectors of two models never mix)."""
    dimension: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """A float32 array of shape (len(texts), dimension), each row L2-normalised.

        Batching and threading are the adapter's business.
        """
        ...


class AnswerGenerator(Protocol):
    """Writes a candidate answer from the closed evidence; never an authority.

    ``model`` and ``prompt_version`` name what would write the next answer;
    with ``name`` they are part of an answer's cache key, so a change of
    either never serves an answer written under the old one.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def prompt_version(self) -> str: ...

    async def generate(self, request: GenerationRequest) -> Candidate:
        """Return a candidate (any JSON value) or raise; the caller validates and degrades."""
        ...


@dataclass(frozen=True, slots=True)
class UserRecord:
    """A stored user with the sha256 (hex) of its API token; never leaves the app layer."""

    user: User
    token_sha256: str


class UserStore(Protocol):
    """Registered users and the hashes of their API tokens (never the tokens)."""

    def add(self, user: User, token_sha256: str) -> bool:
        """Register ``user``; False (and nothing written) when its name is taken."""
        ...

    def get(self, name: str) -> User | None:
        """The user of that name, disabled or not; None when there is none."""
        ...

    def by_token(self, token_sha256: str) -> UserRecord | None:
        """The user whose token has this hash, disabled or not; None when there is none."""
        ...

    def set_status(self, name: str, status: UserStatus) -> User:
        """Change a user's status and return the user as stored; ``KeyError`` when unknown."""
        ...

    def record(self, name: str) -> UserRecord | None:
        """The user of that name with its token's hash; None when there is none."""
        ...

    def set_token(self, name: str, token_sha256: str) -> User:
        """Replace a user's token hash: the old token stops acting at once.

        ``KeyError`` when the user is unknown; ``ValueError`` when another user
        has that hash (nothing changes).
        """
        ...

    def list(self, tenant: str | None = None) -> Sequence[User]:
        """Users (of ``tenant``, or all), by name."""
        ...

    def end_session(self, session_id: str, expires_at: int, now: int) -> None:
        """Remember that a browser session was signed out, until it would have expired
        (``expires_at``, Unix seconds); forget records already past theirs at ``now``."""
        ...

    def session_ended(self, session_id: str) -> bool:
        """Whether that session was signed out (and has not expired since)."""
        ...


class Clock(Protocol):
    def now_iso(self) -> str:
        """The current UTC time, ISO 8601."""
        ...


class AuditLog(Protocol):
    """Append-only, hash-chained answer records (``citadel.domain.audit``)."""

    def append(self, answer_id: str, body: str) -> AuditEntry:
        """Chain ``body`` after the last record, atomically; an answer is recorded once.

        ``ValueError`` (nothing appended) when ``body`` does not name ``answer_id``
        or the answer is already recorded. Contract: tests/contract/test_audit_log_contract.py.
        """
        ...

    def get(self, answer_id: str) -> AuditEntry | None:
        """The record whose body names ``answer_id``; ``None`` when there is none."""
        ...

    def entries(self) -> Iterator[AuditEntry]:
        """Every record, oldest first."""
        ...

    def head(self) -> tuple[int, str]:
        """How many records the log has appended, and the last one's hash."""
        ...


class TrustMetrics(Protocol):
    """The trust counters and stage timings (exposed at /metrics by the HTTP layer)."""

    def answer(self, outcome: str) -> None:
        """``accepted`` or a degraded reason."""
        ...

    def rejection(self, reason: str) -> None: ...

    def resolution(self, state: str) -> None: ...

    def display_denial(self) -> None: ...

    def fabricated_link(self) -> None:
        """An href that did not come from the resolver was about to be shown (must stay 0)."""
        ...

    def stage(self, name: str, seconds: float) -> None:
        """search, selection, generation, validation or resolution."""
        ...


@dataclass(frozen=True, slots=True)
class DocumentMetadata:
    """What a trusted manifest beside a document (its sidecar) says of it; ``None``
    where it is silent. Besides the caller's options, the only place a canonical
    URL may come from: never the document's text."""

    source_id: str | None = None
    url: str | None = None
    title: str | None = None
    authors: tuple[str, ...] | None = None
    year: int | None = None
    tags: tuple[str, ...] | None = None
    acl_groups: frozenset[str] | None = None


class IncomingDocument(Protocol):
    """One document offered for ingestion, not parsed until the use case asks: the
    request is checked first, so a refused one costs no parse."""

    @property
    def shown(self) -> str:
        """The name errors and reports give it: the path as given, an upload's file name."""
        ...

    @property
    def origin(self) -> str:
        """Where it is kept (a resolved path, ``beir:ID``): same content at a new
        origin is a moved file; a changed one at the same origin, its next version."""
        ...

    @property
    def metadata(self) -> DocumentMetadata | None:
        """Its sidecar manifest's fields; ``None`` when it has none (always, for an
        upload or a parsed corpus)."""
        ...

    def parse(self, progress: ProgressCallback | None = None) -> ParsedDocument:
        """The parsed document; ``IngestError`` naming ``shown`` when no parser takes
        it (``unsupported``) or its parser refuses it (the parser's reason)."""
        ...


class DocumentReader(Protocol):
    """Reads documents from files and folders-as-books, for the ingest use case."""

    def open(self, path: Path) -> IncomingDocument:
        """The document at ``path`` with its sidecar manifest, shown as ``path``;
        ``IngestError`` when it is missing (``not_found``), ``empty``, ``too_large``,
        or its sidecar is malformed (``bad_sidecar``, naming the sidecar)."""
        ...

    def received(self, path: Path, *, name: str) -> IncomingDocument:
        """A file received whole (an upload, spooled at ``path``) shown as ``name``;
        never a sidecar beside it. ``IngestError`` as for ``open``."""
        ...
