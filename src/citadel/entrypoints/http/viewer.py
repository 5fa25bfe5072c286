"""The signed viewer: a version's text around a cited chunk, the chunk highlighted.

Nothing is shown before the token is verified for this reader, this source
and this version, and the reader's authorization is checked again now (the
token proves only that the application once offered the link).
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Query
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from citadel.app.errors import NotFound
from citadel.bootstrap import Services
from citadel.domain.users import Actor
from citadel.domain.viewer import ViewerLinkRefused, ViewerRefusal
from citadel.entrypoints.http.auth import ReaderActor, edge
from citadel.entrypoints.http.pages import page
from citadel.entrypoints.http.presenters import Span, viewer_spans
from citadel.entrypoints.present.labels import chapter_label, pages_label

router = APIRouter(prefix="/v1", tags=["v1"])


@router.get(
    "/sources/{source_id}/versions/{version}/view",
    response_class=HTMLResponse,
    responses={
        401: {"description": "Not signed in"},
        403: {"description": "The link is not valid for you, or you may not read the source"},
        404: {"description": "No such source, version or chunk"},
    },
)
async def view(
    source_id: str,
    version: int,
    request: Request,
    actor: ReaderActor,
    chunk: Annotated[str, Query(max_length=256)],
    token: Annotated[str, Query(max_length=2048)],
) -> Response:
    """The cited span of one version, for the reader the signed link was made for."""
    services = edge(request).services
    title, spans, where = await run_in_threadpool(
        _viewable, services, actor, source_id, version, chunk, token
    )
    return page(
        request,
        "viewer.html",
        title=title,
        version=version,
        where=where,
        spans=spans,
    )


def _viewable(
    services: Services, actor: Actor, source_id: str, version: int, chunk: str, token: str
) -> tuple[str, list[Span], str]:
    grant = services.viewer.verify(
        token, user_id=actor.user_id, source_id=source_id, version=version, now=time.time()
    )
    if grant.chunk_id != chunk:
        raise ViewerLinkRefused(ViewerRefusal.WRONG_TARGET)
    # Authorization now (tenant, groups, deletion, retention), not when the link was made.
    details = services.library.show(source_id, actor)
    chunks = services.library.chunks(source_id, actor, version)
    spans = viewer_spans(chunks, grant.chunk_id, span=grant.span)
    if spans is None:
        raise NotFound(f"version {version} of {source_id} has no chunk {grant.chunk_id}")
    cited = next(c for c in chunks if c.chunk_id == grant.chunk_id)
    pages = ""
    if cited.page_label_start:
        end = cited.page_label_end or cited.page_label_start
        pages = (
            cited.page_label_start
            if end == cited.page_label_start
            else f"{cited.page_label_start}–{end}"
        )
    where = ", ".join(
        p
        for p in (
            chapter_label(cited.chapter),
            f'§ "{cited.section}"' if cited.section and cited.section != cited.chapter else "",
            pages_label(pages),
        )
        if p
    )
    return details.source.title, spans, where
