"""What the viewer shows of a cited version: the grant checked, the page or section, the text.

A PDF's cited page is shown as an image (when its original was kept) beside the
text of that page, with previous and next page; an HTML or EPUB version's
cited section is shown whole under its headings. The cited span is marked in
both: the quoted words of an extractive quotation, else the whole chunk.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from citadel.app.errors import NotFound
from citadel.app.library import SourceDetails
from citadel.bootstrap import Services
from citadel.domain.document import Chunk
from citadel.domain.source import SourceVersion
from citadel.domain.users import Actor
from citadel.domain.viewer import ViewerGrant, ViewerLinkRefused, ViewerRefusal
from citadel.entrypoints.http.presenters import Span, viewer_spans
from citadel.entrypoints.http.returning import safe_next

MAX_SECTION_CHUNKS = 80
"""A section longer than this is shown as the cited chunk's neighbourhood of that many."""


@dataclass(frozen=True, slots=True)
class Cited:
    """A verified grant, and what the reader may read of its version now."""

    grant: ViewerGrant
    details: SourceDetails
    version: SourceVersion
    chunks: Sequence[Chunk]
    cited: Chunk

    @property
    def paged(self) -> bool:
        return self.cited.page_start is not None

    @property
    def quoted(self) -> str:
        """The text to highlight: the quotation when the span fits the chunk, else all."""
        span = self.grant.span
        text = self.cited.text
        if span is not None and 0 <= span[0] < span[1] <= len(text):
            return text[span[0] : span[1]]
        return text

    def cites_page(self, page: int) -> bool:
        first = self.cited.page_start
        if first is None:
            return False
        return first <= page <= (self.cited.page_end or first)


def authorize(
    services: Services, actor: Actor, source_id: str, version: int, chunk: str, token: str
) -> Cited:
    """The grant of ``token`` for this reader and version, and the reader's access now
    (tenant, groups, deletion, retention), not when the link was made."""
    grant = services.viewer.verify(
        token, user_id=actor.user_id, source_id=source_id, version=version, now=time.time()
    )
    if grant.chunk_id != chunk:
        raise ViewerLinkRefused(ViewerRefusal.WRONG_TARGET)
    details = services.library.show(source_id, actor)
    chunks = services.library.chunks(source_id, actor, version)
    cited = next((c for c in chunks if c.chunk_id == grant.chunk_id), None)
    found = next((v for v in details.versions if v.version == version), None)
    if cited is None or found is None:
        raise NotFound(f"version {version} of {source_id} has no chunk {grant.chunk_id}")
    return Cited(grant, details, found, chunks, cited)


def original_pdf(services: Services, actor: Actor, cited: Cited) -> Path | None:
    """The kept original of a PDF version, which the page images are rendered from."""
    if services.pages is None or services.originals is None:
        return None
    if not cited.version.parser.startswith("pdf") or not cited.paged:
        return None
    return services.originals.find(actor.tenant, cited.grant.source_id, cited.grant.version)


def page_spans(cited: Cited, page: int) -> list[Span]:
    """The text beside page ``page``: around the cited chunk on its own pages, else the
    chunks printed on that page."""
    if cited.cites_page(page):
        return viewer_spans(cited.chunks, cited.cited.chunk_id, span=cited.grant.span) or []
    spans: list[Span] = []
    end = -1
    for chunk in cited.chunks:
        first = chunk.page_start
        if first is None or not first <= page <= (chunk.page_end or first):
            continue
        text = chunk.text
        if chunk.char_start < end and len(text) == chunk.char_end - chunk.char_start:
            text = text[end - chunk.char_start :]  # overlapping chunks repeat text
        if text:
            spans.append(Span(text if not spans else " " + text, cited=False))
        end = max(end, chunk.char_end)
    return spans


def section_view(cited: Cited) -> tuple[tuple[str, ...], list[Span]]:
    """The cited chunk's section, whole (or its neighbourhood when very long), and the
    headings above it."""
    path = cited.cited.section_path
    section = [c for c in cited.chunks if c.section_path == path]
    index = next(i for i, c in enumerate(section) if c.chunk_id == cited.cited.chunk_id)
    half = MAX_SECTION_CHUNKS // 2
    window = section[max(0, index - half) : index + half]
    spans = viewer_spans(window, cited.cited.chunk_id, context=len(window), span=cited.grant.span)
    return tuple(path), spans or []


def viewer_href(
    services: Services,
    actor: Actor,
    cited: Cited,
    *,
    page: int | None = None,
    back: str | None = None,
) -> str:
    """The viewer at ``page`` with a freshly signed token for the same span."""
    grant = cited.grant
    href = services.viewer.href(
        actor.user_id, grant.source_id, grant.version, grant.chunk_id, time.time(), grant.span
    )
    extra = [(k, v) for k, v in (("page", str(page) if page else ""), ("back", back or "")) if v]
    return with_params(href, extra)


def with_params(href: str, pairs: Sequence[tuple[str, str]]) -> str:
    """A signed viewer link with ``pairs`` added before its token (which stays last)."""
    if not pairs:
        return href
    head, token_mark, token = href.partition("&token=")
    return f"{head}&{urlencode(pairs)}{token_mark}{token}"


def image_href(cited: Cited, token: str, page: int) -> str:
    """The page image's route, under the same token the viewer was opened with."""
    grant = cited.grant
    return (
        f"/v1/sources/{quote(grant.source_id, safe='')}/versions/{grant.version}"
        f"/pages/{page}.png?" + urlencode({"chunk": grant.chunk_id, "token": token})
    )


def back_link(value: str | None) -> str | None:
    """``value`` when it is an answer's permalink on this site, else None."""
    if value and value.startswith(("/ask?", "/answers/")) and safe_next(value) == value:
        return value
    return None
