"""The signed viewer: the cited page of a PDF as printed, or the cited section, span marked.

Nothing is shown before the token is verified for this reader, this source
and this version, and the reader's authorization is checked again now (the
token proves only that the application once offered the link). The page image
is its own route under the same token, so every image request is checked again
in the same way; it exists only for a PDF version whose original was kept (an
upload), and the viewer shows text only otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path as FilePath
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from citadel.app.errors import NotFound, PageUnrenderable, RenderBusy
from citadel.bootstrap import Services
from citadel.domain.document import Chunk
from citadel.domain.users import Actor
from citadel.entrypoints.http.auth import ReaderActor, edge
from citadel.entrypoints.http.pages import page as html_page
from citadel.entrypoints.http.presenters import with_code
from citadel.entrypoints.http.viewer_pages import (
    Cited,
    authorize,
    back_link,
    image_href,
    original_pdf,
    page_spans,
    section_view,
    viewer_href,
)
from citadel.entrypoints.present.labels import chapter_label, pages_label

router = APIRouter(prefix="/v1", tags=["v1"])

MAX_PAGE = 100_000

_REFUSALS: dict[int | str, dict[str, Any]] = {
    401: {"description": "Not signed in"},
    403: {"description": "The link is not valid for you, or you may not read the source"},
    404: {"description": "No such source, version, chunk or page"},
}


@router.get(
    "/sources/{source_id}/versions/{version}/view",
    response_class=HTMLResponse,
    responses=_REFUSALS,
)
async def view(
    source_id: str,
    version: int,
    request: Request,
    actor: ReaderActor,
    chunk: Annotated[str, Query(max_length=256)],
    token: Annotated[str, Query(max_length=2048)],
    page: Annotated[int | None, Query(ge=1, le=MAX_PAGE)] = None,
    back: Annotated[str | None, Query(max_length=2048)] = None,
) -> Response:
    """The cited span of one version, for the reader the signed link was made for: a
    PDF's page (``page``, the cited one by default) or the cited section."""
    the_edge = edge(request)
    services = the_edge.services
    cited = await run_in_threadpool(authorize, services, actor, source_id, version, chunk, token)
    count = cited.version.page_count
    shown = page or cited.cited.page_start or 1
    pdf: FilePath | None = None
    why: str | None = None
    if cited.paged and services.pages is not None:
        try:  # fetched and hashed on threads of their own, counted by a render worker
            pdf, why = await the_edge.originals.run(_original, services, actor, cited, shown)
            if pdf is not None:
                count = await services.pages.page_count(pdf)
        except (ValueError, PageUnrenderable):
            pdf = None
        except RenderBusy:
            pdf = None  # the count kept at ingest, the text without the image for now
    context = await run_in_threadpool(
        _viewable, services, actor, cited, pdf, why, count, token, page, back
    )
    return html_page(request, "viewer.html", **context)


@router.get(
    "/sources/{source_id}/versions/{version}/pages/{page}.png",
    response_class=Response,
    responses={
        200: {"content": {"image/png": {}}},
        **_REFUSALS,
        422: {"description": "The page ran past its render limits, now or recently"},
        429: {"description": "Too many of your page images at once or this minute"},
        503: {"description": "Every page renderer is busy (render_busy); see Retry-After"},
    },
)
async def page_image(
    source_id: str,
    version: int,
    page: Annotated[int, Path(ge=1, le=MAX_PAGE)],
    request: Request,
    actor: ReaderActor,
    chunk: Annotated[str, Query(max_length=256)],
    token: Annotated[str, Query(max_length=2048)],
) -> Response:
    """One page of a PDF version as a PNG, the cited span highlighted on its pages.

    Drawn by a render worker within its limits (docs/ui.md): awaited here, so no
    thread waits for it; 429 past the reader's own image limits, 503 ``render_busy``
    when every worker is busy and the queue full, 422 ``page_unrenderable`` for a page
    that ran past its limits (now, or recently)."""
    the_edge = edge(request)
    services = the_edge.services
    # The reader's own limits first, before any work is done for the request.
    with the_edge.images.admitted(f"{actor.tenant}:{actor.user_id}"):
        cited = await run_in_threadpool(
            authorize, services, actor, source_id, version, chunk, token
        )
        pdf, why = await the_edge.originals.run(_original, services, actor, cited, page)
        if pdf is None or services.pages is None:
            raise NotFound(f"no page image is kept for version {version} of {source_id}")
        if why is not None:
            raise PageUnrenderable(why)
        highlight = cited.quoted if cited.cites_page(page) else None
        try:
            image = await services.pages.render(pdf, page, highlight)
        except IndexError:
            raise NotFound(f"version {version} of {source_id} has no page {page}") from None
        except ValueError as exc:
            raise NotFound(f"page {page} cannot be shown: {exc}") from None
    return Response(
        image.png, media_type="image/png", headers={"Cache-Control": "private, no-store"}
    )


def _original(
    services: Services, actor: Actor, cited: Cited, page: int
) -> tuple[FilePath | None, str | None]:
    """The kept original to draw ``page`` from, and why that page is refused if it ran
    past its limits recently (both read or hash the original: OriginalWork's threads)."""
    pdf = original_pdf(services, actor, cited)
    if pdf is None or services.pages is None:
        return None, None
    return pdf, services.pages.refusal(pdf, page)


def _viewable(
    services: Services,
    actor: Actor,
    cited: Cited,
    pdf: FilePath | None,
    why: str | None,
    count: int,
    token: str,
    page: int | None,
    back: str | None,
) -> dict[str, Any]:
    source_id, version = cited.grant.source_id, cited.grant.version
    back = back_link(back)
    context: dict[str, Any] = {
        "title": cited.details.source.title,
        "version": version,
        "where": _where(cited.cited),
        "back": back,
        "headings": (),
        "image": None,
        "image_note": None,
        "shown": None,
    }
    if not cited.paged:
        if page is not None:
            raise NotFound(f"version {version} of {source_id} has no pages")
        context["headings"], spans = section_view(cited)
        context["spans"] = with_code(spans)
        return context
    shown = page or cited.cited.page_start or 1
    if shown > count:
        raise NotFound(f"version {version} of {source_id} has no page {shown}")
    if pdf is not None and why is not None:
        context["image_note"] = f"The page as printed is not shown ({why}); its text is."
        pdf = None
    context.update(
        spans=with_code(page_spans(cited, shown)),
        shown=shown,
        count=count,
        label=_label(cited.chunks, shown),
        cited_here=cited.cites_page(shown),
        image=image_href(cited, token, shown) if pdf is not None else None,
        cited_page=cited.cited.page_start,
        previous=viewer_href(services, actor, cited, page=shown - 1, back=back)
        if shown > 1
        else None,
        next=viewer_href(services, actor, cited, page=shown + 1, back=back)
        if shown < count
        else None,
        cited_href=viewer_href(services, actor, cited, back=back),
    )
    return context


def _label(chunks: Sequence[Chunk], page: int) -> str:
    """The printed label of physical page ``page``, from a chunk that starts there."""
    return next((c.page_label_start or "" for c in chunks if c.page_start == page), "")


def _where(cited: Chunk) -> str:
    pages = ""
    if cited.page_label_start:
        end = cited.page_label_end or cited.page_label_start
        pages = (
            cited.page_label_start
            if end == cited.page_label_start
            else f"{cited.page_label_start}–{end}"
        )
    return ", ".join(
        p
        for p in (
            chapter_label(cited.chapter),
            f'§ "{cited.section}"' if cited.section and cited.section != cited.chapter else "",
            pages_label(pages),
        )
        if p
    )
