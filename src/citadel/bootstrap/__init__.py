"""The composition root: the one place adapters are chosen and wired."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citadel.adapters import key_files
from citadel.adapters.beir import load_beir
from citadel.adapters.clock import SystemClock
from citadel.adapters.embedding.hashing import HashingEmbedder
from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.adapters.files import FileDocuments
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.extractive.stored import stored_units
from citadel.adapters.generators.openai import GeneratorConfigError, OpenAICompatibleGenerator
from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.adapters.parsers.epub import EpubParser
from citadel.adapters.parsers.html import HtmlParser
from citadel.adapters.parsers.markdown import MarkdownParser
from citadel.adapters.parsers.pdf import PdfParser
from citadel.adapters.parsers.plaintext import PlainTextParser
from citadel.adapters.sqlite.audit import SqliteAuditLog
from citadel.adapters.sqlite.library import SqliteLibrary
from citadel.adapters.sqlite.users import SqliteUsers
from citadel.adapters.tracing import tracer_for
from citadel.app.answer import AnswerService
from citadel.app.answer_cache import AnswerCache
from citadel.app.answerability import DEFAULT_THRESHOLD, AnswerabilityStep
from citadel.app.audit import AuditService
from citadel.app.circuit import CircuitBreaker
from citadel.app.evaluation import BeirDataset
from citadel.app.ingest import IngestService
from citadel.app.library import LibraryService
from citadel.app.names import NameRegister
from citadel.app.ports import (
    AnswerGenerator,
    AuditLog,
    ChunkStore,
    DocumentParser,
    DocumentReader,
    Embedder,
    RelevanceScorer,
    Retrieval,
    SourceRegistry,
    UserStore,
)
from citadel.app.ports.pages import OriginalStore, PageImages
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.app.reindex import ReindexService
from citadel.app.resolver import CitationResolver
from citadel.app.search import SearchService
from citadel.app.support import SupportStep
from citadel.app.users import UserService
from citadel.bootstrap.originals import kept_originals
from citadel.bootstrap.pages import page_images
from citadel.bootstrap.relevance import relevance_scorer
from citadel.bootstrap.support import judged, support_checker
from citadel.config import ConfigError, Settings
from citadel.domain.errors import InvalidValue
from citadel.domain.links import Link, LinkPolicy
from citadel.domain.support import SupportPolicy
from citadel.domain.viewer import ViewerSigner

if TYPE_CHECKING:
    from citadel.adapters.postgres.library import PostgresLibrary
    from citadel.adapters.postgres.migrate import MigrationReport

    _Library = SqliteLibrary | PostgresLibrary


@dataclass(frozen=True, slots=True)
class Services:
    """Everything an entrypoint may call."""

    settings: Settings
    ingest: IngestService
    documents: DocumentReader
    """Opens files and received uploads as documents for ``ingest``."""
    reindex: ReindexService
    """Fills in the configured embedder's missing vectors, and says how many are missing."""
    search: SearchService
    answer: AnswerService
    library: LibraryService
    users: UserService
    registry: SourceRegistry
    chunks: ChunkStore
    audit: AuditService
    resolver: CitationResolver
    metrics: PrometheusMetrics
    viewer: ViewerSigner
    """Mints (through the resolver) and verifies the signed viewer links."""
    closers: tuple[Any, ...] = ()
    pages: PageImages | None = None
    """Renders a cited PDF page for the viewer; None shows text only."""
    originals: OriginalStore | None = None
    """The uploaded PDFs of source versions, which ``pages`` renders."""
    tracer: Tracer = field(default_factory=NullTracer)  # CITADEL_OTEL_ENDPOINT, else no-op

    def close(self) -> None:
        for closer in self.closers:
            closer.close()


def default_parsers(settings: Settings) -> Sequence[DocumentParser]:
    return (
        PdfParser(max_pages=settings.max_pages),
        EpubParser(),
        HtmlParser(max_pages=settings.max_pages),
        MarkdownParser(),
        PlainTextParser(),
    )


def build(
    settings: Settings,
    *,
    generator: AnswerGenerator | None = None,
    embedder: Embedder | None = None,
    retrieval: Retrieval | None = None,
    serving: bool = False,
    tracer: Tracer | None = None,
    relevance: RelevanceScorer | None = None,
) -> Services:
    """Wire the services for ``settings``; tests pass fakes as keyword overrides.

    ``retrieval`` is what answers search with instead of the local index (split
    mode: a ``GrpcRetrievalClient``); the services close it with themselves.
    ``serving``: a long-running server, which builds a missing HNSW index in the
    background (searching exactly meanwhile) rather than in its first search.
    ``relevance``: the scorer the answerability decision uses (``_answerability``).
    """
    library, users, audit_log = _stores(settings, serving)
    clock = SystemClock()
    chosen_embedder = embedder or _embedder(settings)
    vectors = library if chosen_embedder is not None else None
    metrics = PrometheusMetrics()
    tracer = tracer or tracer_for(settings.otel_endpoint)
    search = SearchService(
        library,
        library,
        settings.limits,
        vectors=vectors,
        embedder=chosen_embedder,
        fusion=settings.fusion,
        candidates=settings.search_candidates,
        metrics=metrics,
        tracer=tracer,
    )
    scorer = relevance if relevance is not None else relevance_scorer(settings)
    chosen = generator or _generator(settings, chosen_embedder, scorer)
    policy = _link_policy(settings)
    checker = support_checker(settings)
    quoting = frozenset({ExtractiveGenerator.name, *([chosen.name] if chosen.quotes else [])})
    audit = AuditService(
        audit_log,
        clock,
        settings.limits,
        support=checker,
        chunks=library,
        sources=library,
        quoting=quoting,
    )
    viewer = ViewerSigner(_viewer_secret(settings))
    resolver = CitationResolver(
        library, lambda url: _safe_href(policy, url), viewer, metrics=metrics, tracer=tracer
    )
    originals = kept_originals(library, settings.home, settings.originals_cache_bytes)
    names = NameRegister(users, library)  # new names are checked against users' and ACLs'
    images = page_images(settings, metrics)  # bootstrap/pages.py
    return Services(
        settings=settings,
        ingest=IngestService(
            library,
            clock,
            embedder=chosen_embedder,
            vectors=vectors,
            retain_versions=settings.retain_versions,
            check_url=lambda url: _registered_url(policy, url),
            metrics=metrics,
            units=stored_units,
            names=names,
            originals=originals,
        ),
        documents=FileDocuments(default_parsers(settings), max_file_bytes=settings.max_file_bytes),
        reindex=ReindexService(library, chosen_embedder, units=(library, stored_units)),
        library=LibraryService(library, library, originals, names),
        users=UserService(users, clock, names),
        search=search,
        answer=AnswerService(
            retrieval or search,
            chosen,
            settings.limits,
            sources=library,
            cache=AnswerCache(settings.answer_cache_size, settings.answer_cache_ttl_s),
            resolver=resolver,
            audit=audit,
            metrics=metrics,
            circuit=CircuitBreaker(settings.circuit_failures, settings.circuit_cooldown_s),
            support=SupportStep(
                judged(settings, checker), SupportPolicy(settings.support_policy), metrics
            ),
            relevance=_answerability(settings, scorer),
            tracer=tracer,
            near_top=settings.fusion.near_top,
        ),
        audit=audit,
        resolver=resolver,
        metrics=metrics,
        viewer=viewer,
        registry=library,
        chunks=library,
        closers=(*([] if retrieval is None else [retrieval]), images, search, originals, library),
        pages=images,
        originals=originals,
        tracer=tracer,
    )


def _stores(settings: Settings, serving: bool) -> tuple[_Library, UserStore, AuditLog]:
    """The library, the user store and the audit log on the database ``CITADEL_DB`` names:
    a SQLite file (the default) or PostgreSQL. The audit chain's key is a file beside
    viewer.key, never in the database: split mode's services and the HTTP edge share
    CITADEL_HOME, so they share the key (as do several servers on one PostgreSQL)."""
    key_file = settings.home / "audit.key"
    if settings.postgres_url is not None:
        from citadel.adapters.postgres.audit import PostgresAuditLog
        from citadel.adapters.postgres.library import PostgresLibrary
        from citadel.adapters.postgres.users import PostgresUsers

        shared = PostgresLibrary(
            settings.postgres_url,
            weights=settings.bm25_weights,
            max_term_share=settings.max_term_share,
            hnsw_min_vectors=settings.hnsw_min_vectors,
            hnsw_background=serving,
        )
        return shared, PostgresUsers(shared.database), PostgresAuditLog(shared.database, key_file)
    library = SqliteLibrary(
        settings.db_path,
        weights=settings.bm25_weights,
        max_term_share=settings.max_term_share,
        hnsw_min_vectors=settings.hnsw_min_vectors,
        hnsw_background=serving,
    )
    return library, SqliteUsers(library.database), SqliteAuditLog(library.database, key_file)


def migrate_library(
    settings: Settings,
    target_url: str,
    *,
    force: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> MigrationReport:
    """``citadel db migrate``: copy the SQLite library ``settings`` names into the
    PostgreSQL database at ``target_url``, verified, in one transaction
    (``adapters/postgres/migrate.py``); the audit key is CITADEL_HOME's."""
    from citadel.adapters.postgres.database import Database
    from citadel.adapters.postgres.migrate import migrate

    db = Database(target_url)
    try:
        return migrate(
            settings.db_path,
            db,
            settings.home / "audit.key",
            force=force,
            progress=progress,
            originals=settings.home / "originals",
        )
    finally:
        db.close()


def _answerability(settings: Settings, scorer: RelevanceScorer | None) -> AnswerabilityStep | None:
    """The answerability decision before every answer: ``scorer`` (``CITADEL_RELEVANCE``,
    or a caller's) under ``CITADEL_ANSWERABILITY_THRESHOLD`` (unset: the scorer's own,
    measured for its weights) and ``_PASSAGES``; None (no decision) without a scorer."""
    if scorer is None:
        return None
    threshold = settings.answerability_threshold
    if threshold is None:
        threshold = float(getattr(scorer, "threshold", DEFAULT_THRESHOLD))
    return AnswerabilityStep(scorer, threshold, settings.answerability_passages)


def _link_policy(settings: Settings) -> LinkPolicy:
    try:
        return LinkPolicy.parse(settings.link_allowed_hosts)
    except InvalidValue as exc:
        raise ConfigError(f"CITADEL_LINK_ALLOWED_HOSTS: {exc}") from None


def _safe_href(policy: LinkPolicy, url: str) -> str | None:
    """At display: the URL as the policy normalises it, or None (policies change)."""
    verdict = policy.evaluate(url)
    return verdict.url if isinstance(verdict, Link) else None


def _registered_url(policy: LinkPolicy, url: str) -> str:
    """At registration: the normalised URL, or a clear refusal."""
    verdict = policy.evaluate(url)
    if isinstance(verdict, Link):
        return verdict.url
    allowed = ", ".join(policy.allowed_hosts) or "none (set CITADEL_LINK_ALLOWED_HOSTS)"
    raise InvalidValue(f"the URL is refused ({verdict.value}); allowed hosts: {allowed}")


def _viewer_secret(settings: Settings) -> bytes:
    """CITADEL_LINK_SECRET, else a random key created once in the data directory (0600)."""
    if settings.link_secret:
        return settings.link_secret.get_secret_value().encode("utf-8")
    path = settings.home / "viewer.key"
    secret = key_files.read_or_create(path, 32)
    if len(secret) < 32:
        raise ConfigError(f"{path} holds fewer than 32 bytes; remove it to make a new key")
    return secret


def _embedder(settings: Settings) -> Embedder | None:
    if settings.embedder in ("minilm", "minilm-float"):
        precision = "float" if settings.embedder == "minilm-float" else "int8"
        return MiniLmEmbedder(threads=settings.embedder_threads, precision=precision)
    if settings.embedder == "hashing":
        return HashingEmbedder()
    return None


def _generator(
    settings: Settings, embedder: Embedder | None, relevance: RelevanceScorer | None
) -> AnswerGenerator:
    if settings.generator == "extractive":
        # The search's own embedder: one model loaded, and sentences chosen by meaning.
        # Not the relevance scorer: choosing by it cited the gold passage less often on
        # the team's QA set (docs/answers.md); ``ExtractiveGenerator(relevance=...)``.
        return ExtractiveGenerator(settings.limits, embedder=embedder)
    if settings.generator == "openai":
        llm = settings.llm
        try:
            return OpenAICompatibleGenerator(
                llm.base_url,
                llm.model,
                llm.api_key,
                ca_file=llm.ca_file,
                deadline_s=settings.limits.generator_deadline_s,
                max_output_tokens=settings.limits.max_output_tokens,
            )
        except GeneratorConfigError as exc:
            raise ConfigError(str(exc)) from None
    raise ValueError(f"unknown generator {settings.generator!r}")


def load_beir_dataset(directory: Path, split: str) -> BeirDataset:
    """Read a BEIR data set from disk (the entrypoints may not import adapters)."""
    return load_beir(directory, split)
