"""``/v1/sources/{source_id}``: show a source, its versions and sections; delete it,
change who may read it — the CLI's ``citadel sources`` over HTTP.

Each route calls the use case the CLI calls (``LibraryService``), with the
caller as its actor, so the rules are the library's own: reading needs the
source's ACL, writing (delete, ACL) a librarian or admin of its tenant who may
read it. Another tenant's source of the same id is not there (404).
"""

# No ``from __future__ import annotations``: ``json_body``'s dependency is resolved
# by FastAPI from the annotations at run time.

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from citadel.app.library import SourceDetails
from citadel.domain.users import Actor, Role
from citadel.entrypoints.http.admin_replies import (
    DeletedReply,
    SectionsReply,
    SourceDetailsReply,
    VersionsReply,
)
from citadel.entrypoints.http.auth import ApiActor, edge, require
from citadel.entrypoints.http.bodies import body_doc, json_body
from citadel.entrypoints.http.openapi import errors
from citadel.entrypoints.http.presenters import sections_json, source_view
from citadel.entrypoints.http.replies import SourceReply
from citadel.entrypoints.http.schemas import AclBody
from citadel.entrypoints.present.shapes import source_details_json

router = APIRouter(prefix="/v1/sources", tags=["sources"])

SourceId = Annotated[str, Path(description="The source's id in your tenant.")]
# A reader is refused before its body is read; the library checks the write right again
# (``writable``: the one rule the CLI and the web UI are held to as well).
AclJson = Annotated[AclBody, Depends(json_body(AclBody, require(Role.LIBRARIAN, Role.ADMIN)))]

_MISSING = "No such source in your tenant, or it was deleted"
_READ = errors(404, e403="You may not read this source (its ACL)", e404=_MISSING)
_WRITE = errors(
    404,
    e403="Only librarians and admins who may read the source change it",
    e404=_MISSING,
    e503="The source kept changing under the write, or a store cannot be reached; try again",
)


def _details(actor: Actor, details: SourceDetails) -> dict[str, Any]:
    return {**source_view(details.source, actor), "versions": _versions(details)}


def _versions(details: SourceDetails) -> list[dict[str, Any]]:
    versions: list[dict[str, Any]] = source_details_json(details)["versions"]
    return versions


@router.get(
    "/{source_id}",
    response_model=SourceDetailsReply,
    response_model_exclude_unset=True,
    responses=_READ,
)
def show(source_id: SourceId, request: Request, actor: ApiActor) -> dict[str, Any]:
    """A source you may read, with its versions (its server path only to admins)."""
    return _details(actor, edge(request).services.library.show(source_id, actor))


@router.get("/{source_id}/versions", response_model=VersionsReply, responses=_READ)
def versions(source_id: SourceId, request: Request, actor: ApiActor) -> dict[str, Any]:
    """A source's versions, oldest first (``retained`` false once its text is dropped)."""
    details = edge(request).services.library.show(source_id, actor)
    return {"source_id": source_id, "versions": _versions(details)}


@router.get(
    "/{source_id}/sections",
    response_model=SectionsReply,
    responses=errors(
        404,
        e403="You may not read this source (its ACL)",
        e404=f"{_MISSING}; or no such version, or one past retention",
    ),
)
def sections(
    source_id: SourceId,
    request: Request,
    actor: ApiActor,
    version: Annotated[
        int | None, Query(ge=1, le=1_000_000, description="Default: the current version.")
    ] = None,
) -> dict[str, Any]:
    """A version's sections in reading order, each with its chunks and printed pages."""
    library = edge(request).services.library
    shown = version or library.show(source_id, actor).source.current_version
    chunks = library.chunks(source_id, actor, shown)
    return {"source_id": source_id, "version": shown, "sections": sections_json(chunks)}


@router.delete("/{source_id}", response_model=DeletedReply, responses=_WRITE)
async def delete(source_id: SourceId, request: Request, actor: ApiActor) -> dict[str, Any]:
    """Delete a source's text (librarians and admins); a tombstone stays, so its old
    citations resolve to "deleted". Its kept original PDFs are dropped too."""
    services = edge(request).services
    await run_in_threadpool(services.library.delete, source_id, actor)
    return {"source_id": source_id, "status": "deleted"}


@router.put(
    "/{source_id}/acl",
    response_model=SourceReply,
    response_model_exclude_unset=True,
    responses={
        **_WRITE,
        **errors(413, e422="The body is not standard JSON, or a group name is invalid"),
    },
    openapi_extra=body_doc(AclBody),
)
def set_acl(
    source_id: SourceId, request: Request, actor: ApiActor, body: AclJson
) -> dict[str, Any]:
    """Replace the groups that may read a source (librarians and admins); an empty
    list opens it to the whole tenant."""
    changed = edge(request).services.library.set_acl(source_id, body.groups, actor)
    return source_view(changed, actor)
