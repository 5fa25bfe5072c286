"""The composition root: the one place adapters are chosen and wired."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citadel.adapters.beir import load_beir
from citadel.adapters.clock import SystemClock
from citadel.adapters.files import FileDocuments
from citadel.adapters.generators.extractive import ExtractiveGenerator
from citadel.adapters.generators.extractive.stored import stored_units
from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.app.answer import AnswerService
from citadel.app.answer_cache import AnswerCache
from citadel.app.answerability import DEFAULT_THRESHOLD, AnswerabilityStep
from citadel.app.audit import AuditService
from citadel.app.circuit import CircuitBreaker
from citadel.app.citation_golden import GoldenCitationCheck
from citadel.app.conversations import ConversationService
from citadel.app.evaluation import BeirDataset
from citadel.app.ingest import IngestService
from citadel.app.library import LibraryService
from citadel.app.names import NameRegister
from citadel.app.ports import (
    AnswerGenerator,
    ChunkStore,
    DocumentReader,
    Embedder,
    RelevanceScorer,
    Retrieval,
    SourceRegistry,
)
from citadel.app.ports.pages import OriginalStore, PageImages
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.app.reindex import ReindexService
from citadel.app.resolver import CitationResolver
from citadel.app.search import SearchService
from citadel.app.shadow import ShadowService
from citadel.app.sign_in import ExternalSignIn
from citadel.app.support import SupportStep
from citadel.app.users import UserService
from citadel.bootstrap.families import default_parsers, embedder_for, generator_for
from citadel.bootstrap.links import link_policy, registered_url, safe_href, viewer_secret
from citadel.bootstrap.originals import kept_originals
from citadel.bootstrap.pages import page_images
from citadel.bootstrap.relevance import relevance_scorer
from citadel.bootstrap.sign_in import external_sign_in
from citadel.bootstrap.stores import migrate_library, stores
from citadel.bootstrap.support import judged, support_checker
from citadel.bootstrap.tracing import tracer_of
from citadel.config import Settings
from citadel.domain.support import SupportPolicy
from citadel.domain.viewer import ViewerSigner

__all__ = ["Services", "build", "default_parsers", "load_beir_dataset", "migrate_library"]


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
    conversations: ConversationService
    """Each reader's conversations; every turn an ask through ``answer``."""
    registry: SourceRegistry
    chunks: ChunkStore
    audit: AuditService
    resolver: CitationResolver
    metrics: PrometheusMetrics
    viewer: ViewerSigner
    """Mints (through the resolver) and verifies the signed viewer links."""
    shadow: ShadowService
    """Classifies another assistant's citations by the registry (``citadel shadow``)."""
    golden_citations: GoldenCitationCheck
    """Checks the golden citation set on the library (``citadel eval citations``)."""
    closers: tuple[Any, ...] = ()
    pages: PageImages | None = None
    """Renders a cited PDF page for the viewer; None shows text only."""
    originals: OriginalStore | None = None
    """The uploaded PDFs of source versions, which ``pages`` renders."""
    tracer: Tracer = field(default_factory=NullTracer)  # bootstrap.tracing.tracer_of
    sign_in: ExternalSignIn | None = None
    """Single sign-on through the configured OpenID provider; None without one."""

    def close(self) -> None:
        for closer in self.closers:
            closer.close()


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
    kept = stores(settings, serving)
    library, users, audit_log = kept.library, kept.users, kept.audit
    clock = SystemClock()
    chosen_embedder = embedder or embedder_for(settings)
    vectors = library if chosen_embedder is not None else None
    metrics = PrometheusMetrics()
    tracer = tracer or tracer_of(settings)
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
    chosen = generator or generator_for(settings, chosen_embedder, scorer)
    policy = link_policy(settings)
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
    viewer = ViewerSigner(viewer_secret(settings))
    resolver = CitationResolver(
        library, lambda url: safe_href(policy, url), viewer, metrics=metrics, tracer=tracer
    )
    originals = kept_originals(library, settings.home, settings.originals_cache_bytes)
    names = NameRegister(users, library)  # new names are checked against users' and ACLs'
    images = page_images(settings, metrics)  # bootstrap/pages.py
    users_service = UserService(users, clock, names)
    answer = AnswerService(
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
    )
    return Services(
        settings=settings,
        ingest=IngestService(
            library,
            clock,
            embedder=chosen_embedder,
            vectors=vectors,
            retain_versions=settings.retain_versions,
            check_url=lambda url: registered_url(policy, url),
            metrics=metrics,
            units=stored_units,
            names=names,
            originals=originals,
        ),
        documents=FileDocuments(default_parsers(settings), max_file_bytes=settings.max_file_bytes),
        reindex=ReindexService(library, chosen_embedder, units=(library, stored_units)),
        library=LibraryService(library, library, originals, names),
        users=users_service,
        search=search,
        answer=answer,
        conversations=ConversationService(kept.conversations, answer, clock),
        audit=audit,
        resolver=resolver,
        metrics=metrics,
        viewer=viewer,
        shadow=ShadowService(library, users_service.reader),
        golden_citations=GoldenCitationCheck(library, library, resolver, users_service.reader),
        registry=library,
        chunks=library,
        closers=(*([] if retrieval is None else [retrieval]), images, search, originals, library),
        pages=images,
        originals=originals,
        tracer=tracer,
        sign_in=external_sign_in(settings, users_service),
    )


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


def load_beir_dataset(directory: Path, split: str) -> BeirDataset:
    """Read a BEIR data set from disk (the entrypoints may not import adapters)."""
    return load_beir(directory, split)
