"""The typed OpenAPI document: error replies, the bearer scheme, the request bodies.

Routes declare their error statuses with ``errors(...)``: each such reply is the
one error body (``ErrorBody``, the shape ``handlers`` writes). ``typed`` then
finishes the document FastAPI generates:

- the JSON request bodies read by ``bodies.json_body`` are published as components;
- (the ``bearer`` and ``session`` schemes are declared by ``auth``'s dependencies, so
  FastAPI applies them to exactly the operations that authenticate);
- FastAPI's own 422 body (``HTTPValidationError``), which this API never sends,
  is replaced by ``ErrorBody``, as is any error reply declared without content.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from citadel.entrypoints.http.bodies import documented
from citadel.entrypoints.http.replies import ErrorBody

ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}

DESCRIPTIONS = {
    401: "No API token, or an unknown one (see WWW-Authenticate)",
    403: "The user is disabled, or its role or the source's ACL does not allow this",
    404: "No such item in the caller's tenant (or not one the caller may know of)",
    409: "It exists already",
    413: "The body is over the size limit",
    422: "A parameter or the body is invalid (unknown fields are refused)",
    429: "Too many requests; see Retry-After",
    503: "A store or service this needs cannot be reached; try again shortly",
    504: "The request's deadline passed",
}

AUTHENTICATED = (401, 403, 422, 429, 503)
"""What any authenticated operation may reply besides its own errors."""


def errors(*statuses: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for these error statuses (plus ``AUTHENTICATED``'s), each an
    ``ErrorBody``; ``descriptions`` (``e404="..."``) say what a status means here."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*AUTHENTICATED, *statuses}):
        text = descriptions.get(f"e{status}", DESCRIPTIONS[status])
        out[status] = {"model": ErrorBody, "description": text}
    return out


def _error_content(operation: dict[str, Any]) -> None:
    for status, reply in operation.get("responses", {}).items():
        if not str(status).isdigit() or int(status) < 400:
            continue
        content = reply.setdefault("content", {})
        schema = content.get("application/json", {}).get("schema", {})
        if not content or schema.get("$ref", "").endswith("/HTTPValidationError"):
            content["application/json"] = {"schema": dict(ERROR_REF)}
            if int(status) == 422:
                reply["description"] = DESCRIPTIONS[422]


def typed(app: FastAPI, bodies: tuple[type[BaseModel], ...]) -> None:
    """Make ``app.openapi()`` the typed document (see the module's docstring)."""
    documented(app, (*bodies, ErrorBody))
    generate = app.openapi
    finished: list[dict[str, Any]] = []

    def openapi() -> dict[str, Any]:
        if not finished:
            finished.append(_finish(generate()))
        return finished[0]

    app.openapi = openapi  # type: ignore[method-assign]


def _finish(schema: dict[str, Any]) -> dict[str, Any]:
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            if "security" in operation:
                # Every authenticated request is charged to its user's rate limit.
                operation["responses"].setdefault("429", {"description": DESCRIPTIONS[429]})
            _error_content(operation)
    components = schema.setdefault("components", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.get("schemas", {}).pop(name, None)
    return schema
