"""The library's pages: the list of sources, uploads, and one page per source.

A source's page shows its versions (ingest date, pages, sections, chunks), the
current version's sections with their chunk counts, and — for librarians and
admins, who may change it — who may read it, a form to upload its next version
(the library's upload route, naming this source) and a delete button. Deleting
asks for confirmation on a page of its own first; both steps are CSRF-checked
posts, and deleting drops the source's kept original PDFs too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from urllib.parse import quote

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from citadel.app.errors import Forbidden, IngestError, NotFound
from citadel.bootstrap import Services
from citadel.domain.document import Chunk
from citadel.domain.users import Actor, Role
from citadel.entrypoints.http.auth import RecentIngest, edge
from citadel.entrypoints.http.pages import page
from citadel.entrypoints.http.presenters import source_view
from citadel.entrypoints.http.security import CSRF_FIELD
from citadel.entrypoints.http.shelf import shelf_row
from citadel.entrypoints.http.uploads import OPTION_FIELDS, ingest_upload, received, spool_root
from citadel.entrypoints.http.web import Reader, check_csrf, form_fields
from citadel.entrypoints.present.labels import human_bytes, page_count_text

router = APIRouter(include_in_schema=False)

MANAGERS = frozenset({Role.LIBRARIAN, Role.ADMIN})


def source_href(source_id: str) -> str:
    return f"/library/{quote(source_id, safe='')}"


@dataclass(frozen=True, slots=True)
class SectionRow:
    heading: str
    depth: int
    chunks: int
    pages: str
    first_chunk: str = ""
    """The chunk a link to the section opens at; empty for a chapter whose text is
    all in its sections (it has no passage of its own to open)."""
    href: str = ""


def section_rows(chunks: Sequence[Chunk]) -> list[SectionRow]:
    """Each section of a version in reading order, with its chunks and printed pages;
    a chapter that holds no text of its own is shown too, above its sections (else a
    section would read as if it were in the chapter before)."""
    rows: list[tuple[tuple[str, ...], int, str, str, str]] = []
    seen: set[tuple[str, ...]] = set()
    for chunk in chunks:
        path = tuple(chunk.section_path)
        first = chunk.page_label_start or ""
        last = chunk.page_label_end or first
        if rows and rows[-1][0] == path:
            key, count, start, end, opens = rows[-1]
            rows[-1] = (key, count + 1, start or first, last or end, opens)
            continue
        for depth in range(1, len(path)):
            enclosing = path[:depth]
            if enclosing not in seen:
                seen.add(enclosing)
                rows.append((enclosing, 0, first, "", ""))
        seen.add(path)
        rows.append((path, 1, first, last, chunk.chunk_id))
    return [
        SectionRow(
            heading=path[-1] if path else "(before the first heading)",
            depth=max(len(path) - 1, 0),
            chunks=count,
            pages=start if not end or end == start else f"{start}–{end}",
            first_chunk=opens,
        )
        for path, count, start, end, opens in rows
    ]


def linked(
    rows: Sequence[SectionRow], services: Services, actor: Actor, source_id: str, version: int
) -> list[SectionRow]:
    """The rows, each section with text of its own a signed viewer link for ``actor``."""
    now = time.time()
    return [
        replace(
            row,
            href=services.viewer.href(actor.user_id, source_id, version, row.first_chunk, now),
        )
        if row.first_chunk
        else row
        for row in rows
    ]


def _library(request: Request, actor: Actor, status: int = 200, **notes: str | None) -> Response:
    state = edge(request)
    shelved = state.services.library.shelf(actor)
    return page(
        request,
        "library.html",
        status,
        sources=[{**source_view(b.source, actor), **shelf_row(b)} for b in shelved],
        # The same access rule as the listing: uploads of sources shown above, and one's own.
        recent=state.recent_for(actor, {b.source.source_id for b in shelved}),
        may_upload=actor.role in MANAGERS,
        max_size=human_bytes(state.services.settings.max_file_bytes),
        message=notes.get("message"),
        error=notes.get("error"),
    )


@router.get("/library")
def library(request: Request, actor: Reader) -> Response:
    return _library(request, actor)


@router.post("/library")
async def upload(request: Request, actor: Reader) -> Response:
    if actor.role not in MANAGERS:
        raise Forbidden("only librarians and admins add sources")
    state = edge(request)
    allowed = (*OPTION_FIELDS, CSRF_FIELD)
    limit = state.services.settings.max_file_bytes
    async with received(request, limit, allowed, spool_root(state.services)) as file:
        check_csrf(request, file.fields.pop(CSRF_FIELD, None))
        try:
            report = await run_in_threadpool(ingest_upload, state.services, file, actor)
        except IngestError as exc:
            state.remember(actor.tenant, RecentIngest(actor.user_id, exc.path, "failed", str(exc)))
            return _library(request, actor, 422, error=str(exc))
    detail = (
        f"source {report.source_id} v{report.version}: {page_count_text(report.pages)}"
        f"{report.sections} sections, {report.chunks} chunks"
        + "".join(f"; warning: {w}" for w in report.warnings)
    )
    state.remember(
        actor.tenant,
        RecentIngest(actor.user_id, report.path, report.status, detail, report.source_id),
    )
    return _library(request, actor, message=f"{report.status}: {report.title} ({detail})")


@router.get("/library/{source_id}")
def source_page(source_id: str, request: Request, actor: Reader) -> Response:
    """One source the reader may read: its versions, sections and chunk count."""
    services = edge(request).services
    details = services.library.show(source_id, actor)
    source = details.source
    versions = sorted(details.versions, key=lambda v: v.version, reverse=True)
    current = next((v for v in versions if v.version == source.current_version), None)
    try:
        sections = linked(
            section_rows(services.library.chunks(source_id, actor)),
            services,
            actor,
            source_id,
            source.current_version,
        )
    except NotFound:
        sections = []  # the current version's text is past retention
    return page(
        request,
        "source.html",
        source=source_view(source, actor),
        versions=versions,
        current=current,
        first_ingested=min((v.created_at for v in versions), default=""),
        sections=sections,
        may_manage=actor.role in MANAGERS,
        href=source_href(source_id),
        max_size=human_bytes(services.settings.max_file_bytes),
    )


@router.post("/library/{source_id}/delete")
async def delete_source(source_id: str, request: Request, actor: Reader) -> Response:
    """Delete a source (librarians and admins), once confirmed on the page this post
    shows without ``confirm=yes``; its citations then resolve as "deleted"."""
    if actor.role not in MANAGERS:
        raise Forbidden("only librarians and admins delete sources")
    fields = await form_fields(request)
    check_csrf(request, fields.get(CSRF_FIELD))
    services = edge(request).services
    source = services.library.show(source_id, actor).source
    if fields.get("confirm") != "yes":
        return page(
            request,
            "source_delete.html",
            source=source_view(source, actor),
            href=source_href(source_id),
        )
    await run_in_threadpool(services.library.delete, source_id, actor)
    return _library(request, actor, message=f"deleted: {source.title} ({source_id})")
