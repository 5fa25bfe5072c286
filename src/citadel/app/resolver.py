"""Citation resolution at display time: registry, current authorization, link policy.

A citation is resolved for one reader, now: the model supplied only a ref,
the manifest pinned it to (source, version, chunk, content hash), and this
resolver decides where — if anywhere — the reader may follow it:

- ``forbidden``: the reader may not see the source now (checked on every
  display, even if they could when the answer was made); nothing about the
  source is shown.
- ``deleted``: the source was deleted since.
- ``superseded``: a newer version exists; the link goes to the cited version
  while its text is retained, flagged as changed.
- ``canonical``: the trusted canonical URL registered at ingestion, if it
  still passes the link policy.
- ``viewer``: otherwise, a signed in-product link to the cited span.
- ``unavailable``: no safe destination; a plain label, never a guessed URL.

The same manifest and the same authorization state resolve to the same links
(viewer tokens are stable within a minute).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from citadel.app.ports import SourceRegistry, TrustMetrics
from citadel.app.ports.tracing import NullTracer, Tracer
from citadel.domain.answer import AnswerResult, Citation, CitedSegment, LinkState
from citadel.domain.source import AccessScope, Source
from citadel.domain.users import Actor
from citadel.domain.viewer import ViewerSigner

WITHHELD = "(withheld: this part of the answer cites a source you may no longer read)"
"""A recorded segment's text when its source is no longer the reader's, or was deleted."""

SafeHref = Callable[[str], "str | None"]
"""The link policy: the URL to render (normalised), or None when it is refused."""


@dataclass(frozen=True, slots=True)
class ResolvedLink:
    state: LinkState
    href: str | None
    authorized: bool


@dataclass(frozen=True, slots=True)
class Target:
    """What a citation points at, from the manifest."""

    source_id: str
    version: int
    chunk_id: str
    span: tuple[int, int] | None = None
    """A quotation's span in the chunk: the viewer highlights it, not the whole chunk."""


class NullMetrics:
    """Counts nothing: for wiring without a metrics registry."""

    def answer(self, outcome: str) -> None: ...
    def rejection(self, reason: str) -> None: ...
    def resolution(self, state: str) -> None: ...
    def support(self, label: str) -> None: ...
    def display_denial(self) -> None: ...
    def fabricated_link(self) -> None: ...
    def stage(self, name: str, seconds: float) -> None: ...
    def answerability(self, score: float) -> None: ...


class CitationResolver:
    def __init__(
        self,
        registry: SourceRegistry,
        safe_href: SafeHref,
        signer: ViewerSigner | None,
        *,
        metrics: TrustMetrics | None = None,
        now: Callable[[], float] = time.time,
        tracer: Tracer | None = None,
    ) -> None:
        self._registry = registry
        self._tracer = tracer or NullTracer()
        self._safe_href = safe_href
        self._signer = signer
        self._metrics = metrics or NullMetrics()
        self._now = now

    def resolve(self, targets: Sequence[Target], actor: Actor) -> list[ResolvedLink]:
        """Resolve each target for ``actor`` now; one registry read per distinct source.

        Targets come from an answer of ``actor``'s tenant (the audit log refuses any
        other), and a source id names a source within its tenant: each is looked up
        in ``actor``'s tenant."""
        scope = AccessScope.of(actor)
        now = self._now()
        sources: dict[str, Source | None] = {}
        retained: dict[str, frozenset[int]] = {}
        links: list[ResolvedLink] = []
        for target in targets:
            if target.source_id not in sources:
                sources[target.source_id] = self._registry.get(actor.tenant, target.source_id)
            link = self._resolve(target, sources[target.source_id], scope, actor, now, retained)
            self._metrics.resolution(link.state.value)
            if not link.authorized:
                self._metrics.display_denial()
            links.append(link)
        return links

    def _resolve(
        self,
        target: Target,
        source: Source | None,
        scope: AccessScope,
        actor: Actor,
        now: float,
        retained: dict[str, frozenset[int]],
    ) -> ResolvedLink:
        if source is None:
            # Never registered here (or another store): nothing safe to say or link.
            return ResolvedLink(LinkState.FORBIDDEN, None, authorized=False)
        # Authorization first, on the record as it stands now (tombstones included), so a
        # reader who may not see a source does not even learn that it was deleted.
        if not scope.allows(replace(source, deleted=False)):
            return ResolvedLink(LinkState.FORBIDDEN, None, authorized=False)
        if source.deleted:
            return ResolvedLink(LinkState.DELETED, None, authorized=True)
        if target.version < source.current_version:
            if target.source_id not in retained:
                retained[target.source_id] = frozenset(
                    v.version
                    for v in self._registry.versions(actor.tenant, target.source_id)
                    if v.retained
                )
            href = None
            if target.version in retained[target.source_id] and self._signer is not None:
                href = self._signer.href(
                    actor.user_id,
                    target.source_id,
                    target.version,
                    target.chunk_id,
                    now,
                    target.span,
                )
            return ResolvedLink(LinkState.SUPERSEDED, href, authorized=True)
        if source.canonical_url:
            href = self._safe_href(source.canonical_url)
            if href is not None:
                return ResolvedLink(LinkState.CANONICAL, href, authorized=True)
        if self._signer is not None:
            href = self._signer.href(
                actor.user_id, target.source_id, target.version, target.chunk_id, now, target.span
            )
            return ResolvedLink(LinkState.VIEWER, href, authorized=True)
        return ResolvedLink(LinkState.UNAVAILABLE, None, authorized=True)

    def resolve_answer(self, result: AnswerResult, actor: Actor) -> AnswerResult:
        """The result with every citation's link resolved for ``actor`` now.

        A forbidden citation keeps only its ref: no title, author, chapter,
        section or pages of a source the reader may not see.
        """
        with self._tracer.span("resolution") as span:
            resolved = self._resolved(result, actor)
            shown = resolved.answer.segments if resolved.answer is not None else ()
            states = Counter(c.link_state.value for s in shown for c in s.citations)
            span.set(citations=states.total(), **{f"links_{k}": n for k, n in states.items()})
            return resolved

    def recorded_for(self, result: AnswerResult, actor: Actor) -> AnswerResult:
        """A recorded answer (a conversation's turn) as ``actor`` may see it now, so
        reopening an answer never shows what asking again could not: every citation
        resolved again (``resolve_answer``); the text of a segment that cites a source the
        reader may no longer read, or one deleted since, withheld (``WITHHELD``: the
        segment quotes or restates it), its footnote saying why; and those sources'
        passages left out of the search results."""
        shown = self.resolve_answer(result, actor)
        gone = (LinkState.FORBIDDEN, LinkState.DELETED)
        if shown.answer is not None:
            segments = tuple(
                replace(s, text=WITHHELD) if any(c.link_state in gone for c in s.citations) else s
                for s in shown.answer.segments
            )
            shown = replace(shown, answer=replace(shown.answer, segments=segments))
        scope = AccessScope.of(actor)
        sources: dict[str, Source | None] = {}
        kept = []
        for evidence in shown.search.results:
            if evidence.source_id not in sources:
                sources[evidence.source_id] = self._registry.get(actor.tenant, evidence.source_id)
            source = sources[evidence.source_id]
            if source is not None and scope.allows(source):
                kept.append(evidence)
        return replace(shown, search=replace(shown.search, results=tuple(kept)))

    def _resolved(self, result: AnswerResult, actor: Actor) -> AnswerResult:
        if result.answer is None:
            return result
        started = time.perf_counter()
        citations = [c for segment in result.answer.segments for c in segment.citations]
        for citation in citations:
            if citation.link_href is not None:
                # Only this resolver sets hrefs; one arriving from elsewhere is dropped and counted.
                self._metrics.fabricated_link()
        links = iter(
            self.resolve(
                [
                    Target(
                        c.source_id,
                        c.version,
                        c.chunk_id,
                        c.support.span if c.support is not None else None,
                    )
                    for c in citations
                ],
                actor,
            )
        )
        segments = tuple(
            CitedSegment(
                text=segment.text,
                citations=tuple(_apply(c, next(links)) for c in segment.citations),
            )
            for segment in result.answer.segments
        )
        self._metrics.stage("resolution", time.perf_counter() - started)
        return replace(result, answer=replace(result.answer, segments=segments))


def _apply(citation: Citation, link: ResolvedLink) -> Citation:
    if link.state is LinkState.FORBIDDEN:
        return Citation(
            ref=citation.ref,
            evidence_id="",
            source_id="",
            version=0,
            chunk_id="",
            title="",
            author="",
            chapter="",
            section="",
            pages="",
            link_state=LinkState.FORBIDDEN,
            link_href=None,
        )
    return replace(citation, link_state=link.state, link_href=link.href)
