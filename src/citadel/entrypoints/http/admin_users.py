"""``/v1/users`` and the audit log: the CLI's ``citadel users`` and ``citadel audit``
over HTTP, calling the same use cases (``UserService``, ``AuditService``).

The CLI's user commands are for whoever runs the server (they open its store);
over HTTP they are for admins only, and an admin manages the users of its own
tenant: a new user joins it, and a user of another tenant is, to this admin,
not there (404, as an unknown name). Tokens are in a reply once, when a user
is added or its token replaced, and never again.

An answer's audit record is shown to the user who asked and to the admins of
its tenant (the audit use case decides); verifying the whole chain, which
spans every tenant, is for admins.
"""

# No ``from __future__ import annotations``: ``json_body``'s dependency is resolved
# by FastAPI from the annotations at run time.

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from starlette.requests import Request

from citadel.app.errors import NotFound
from citadel.domain.users import Actor, Role, User
from citadel.entrypoints.http.admin_replies import (
    AuditRecordReply,
    ChainReply,
    TokenReply,
    UserPage,
    UserReply,
)
from citadel.entrypoints.http.auth import ApiActor, edge, require
from citadel.entrypoints.http.bodies import body_doc, json_body
from citadel.entrypoints.http.openapi import errors
from citadel.entrypoints.http.paging import DEFAULT_LIMIT, Cursor, Limit, page_of
from citadel.entrypoints.http.schemas import NewUserBody
from citadel.entrypoints.present.shapes import user_json

users = APIRouter(prefix="/v1/users", tags=["users"])
audit = APIRouter(prefix="/v1", tags=["audit"])

Admin = Annotated[Actor, Depends(require(Role.ADMIN))]
NewUserJson = Annotated[NewUserBody, Depends(json_body(NewUserBody, require(Role.ADMIN)))]
UserName = Annotated[str, Path(description="The user's name.")]

_ADMIN = "This needs the admin role (or the caller is disabled)"
_UNKNOWN = "No user of that name in your tenant"
_ONE_USER = errors(404, e403=_ADMIN, e404=_UNKNOWN)


def _own(request: Request, name: str, admin: Actor) -> User:
    """The user ``name`` when it is of ``admin``'s tenant; else not found, as a name
    no one has (which names exist in other tenants is not this admin's to know)."""
    user = edge(request).services.users.get(name)
    if user.tenant != admin.tenant:
        raise NotFound(f"no user {name}")
    return user


def _token(user: User, token: str) -> dict[str, Any]:
    return {"user": user_json(user), "token": token}


@users.post(
    "",
    status_code=201,
    response_model=TokenReply,
    responses=errors(
        409,
        413,
        e403=_ADMIN,
        e409="A user of that name exists (names are unique across tenants)",
        e422="The body is invalid: an unknown field, role or an invalid name or group",
    ),
    openapi_extra=body_doc(NewUserBody),
)
def add(request: Request, admin: Admin, body: NewUserJson) -> dict[str, Any]:
    """Register a user in your tenant; the reply holds its API token, the only time
    it is shown (the store keeps its hash)."""
    added, token = edge(request).services.users.add(body.name, body.role, admin.tenant, body.groups)
    return _token(added, token)


@users.get(
    "",
    response_model=UserPage,
    responses=errors(e403=_ADMIN, e422="An invalid limit, or a cursor this list did not return"),
)
def list_users(
    request: Request, admin: Admin, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> dict[str, Any]:
    """Your tenant's users by name, a page at a time; tokens are never shown."""
    found = edge(request).services.users.list(admin.tenant)
    page = page_of(found, lambda u: u.name, "users", limit, cursor)
    return {"items": [user_json(u) for u in page.items], "next_cursor": page.next_cursor}


@users.post(
    "/{name}/disable",
    response_model=UserReply,
    responses=errors(
        404,
        409,
        e403=_ADMIN,
        e404=_UNKNOWN,
        e409="The user is you, or the tenant's last enabled admin (code last_admin)",
    ),
)
def disable(name: UserName, request: Request, admin: Admin) -> dict[str, Any]:
    """Disable a user: its token stops acting at once (disabling twice is harmless).
    Not yourself, and never the tenant's last enabled admin."""
    _own(request, name, admin)
    return user_json(edge(request).services.users.disable(name, by=admin))


@users.post("/{name}/enable", response_model=UserReply, responses=_ONE_USER)
def enable(name: UserName, request: Request, admin: Admin) -> dict[str, Any]:
    """Enable a disabled user again, with the token it had."""
    _own(request, name, admin)
    return user_json(edge(request).services.users.enable(name))


@users.post("/{name}/rotate", response_model=TokenReply, responses=_ONE_USER)
def rotate(name: UserName, request: Request, admin: Admin) -> dict[str, Any]:
    """Replace a user's API token; the reply holds the new one, shown only this once.
    The old token and the browser sessions signed in with it stop acting at once."""
    _own(request, name, admin)
    rotated, token = edge(request).services.users.rotate(name)
    return _token(rotated, token)


@audit.get(
    "/answers/{answer_id}/audit",
    response_model=AuditRecordReply,
    responses=errors(
        404,
        e403="The user is disabled, or the record quotes a source the caller may no longer read",
        e404="No audit record of that answer that you may read",
    ),
)
def audit_record(answer_id: str, request: Request, actor: ApiActor) -> dict[str, Any]:
    """An answer's audit record: actor, manifest, model and prompt, verdict, citations.
    Yours, or any of your tenant's as an admin."""
    record = edge(request).services.audit.show(answer_id, actor)
    shown: dict[str, Any] = json.loads(record.to_json())
    return shown


@audit.get("/audit/verify", response_model=ChainReply, responses=errors(e403=_ADMIN))
def audit_verify(request: Request, admin: Admin) -> dict[str, Any]:
    """Check every record's hash and link and the head (admins): ``intact`` false and
    the problems listed when anything was edited or removed."""
    report = edge(request).services.audit.verify()
    return {
        "records": report.records,
        "intact": report.intact,
        "problems": list(report.problems),
        "keyed_from": report.keyed_from,
        "unkeyed": report.unkeyed,
    }
