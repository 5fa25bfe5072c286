"""JSON request bodies: read after the caller is known, capped while they arrive, parsed strictly.

FastAPI reads a declared body model before it solves any dependency, so a
body parameter would be read and parsed (whatever its size) before the token
is checked. The ``/v1`` endpoints therefore take their bodies from
``json_body(Model)``, a dependency that depends on the caller first:

- no valid token: 401 (403, 429) from the headers alone, the body never read;
- a declared ``Content-Length`` over ``max_json_bytes`` is refused at once, and
  any body (chunked ones included) as soon as it passes the limit: 413;
- standard JSON only: duplicate keys, ``NaN``/``Infinity`` and bad UTF-8 are 422;
- the model then validates the parsed value (numbers are strict: ``true`` is no 1).

``documented`` keeps the bodies in the published OpenAPI document.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the dependency's
# signature at run time, and ``caller`` in it is a closure variable.

import email.message
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema
from starlette.requests import Request

from citadel.app.errors import InvalidRequest
from citadel.domain import json_input
from citadel.domain.errors import InvalidValue
from citadel.domain.integers import declared_over
from citadel.domain.users import Actor
from citadel.entrypoints.http.auth import api_actor, edge
from citadel.entrypoints.http.errors import TooLarge

M = TypeVar("M", bound=BaseModel)

_REF = "#/components/schemas/{model}"


async def read_capped(request: Request, limit: int) -> bytes:
    """The whole body, refused (``TooLarge``) once it is over ``limit`` bytes: at once
    when ``Content-Length`` says so, else as soon as that many bytes have arrived."""
    declared = request.headers.get("content-length")
    if declared_over(declared, limit):
        raise TooLarge(f"the JSON body is over the {limit}-byte limit")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise TooLarge(f"the JSON body is over the {limit}-byte limit")
    return bytes(body)


def loads_strict(raw: bytes) -> Any:
    """The body's JSON value, read by the domain's one JSON rule (``json_input``):
    unique keys, finite numbers, integer literals of bounded length."""
    try:
        return json_input.loads_strict(raw)
    except InvalidValue as exc:
        raise InvalidRequest(f"the JSON body: {exc}") from None


def _check_content_type(request: Request) -> None:
    value = request.headers.get("content-type")
    if value is None:
        return
    message = email.message.Message()
    message["content-type"] = value
    subtype = message.get_content_subtype()
    if message.get_content_maintype() != "application" or not (
        subtype == "json" or subtype.endswith("+json")
    ):
        raise InvalidRequest("send the body as application/json")


def json_body(
    model: type[M], caller: Callable[..., Actor] = api_actor
) -> Callable[..., Awaitable[M]]:
    """A dependency: the request's JSON body as ``model``, read only once ``caller``
    (a dependency that authenticates, and may check a role) has accepted the request."""

    async def parse(request: Request, actor: Annotated[Actor, Depends(caller)]) -> M:
        _check_content_type(request)
        limit = edge(request).services.settings.http.max_json_bytes
        value = loads_strict(await read_capped(request, limit))
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            for error in errors:
                error["loc"] = ("body", *error.get("loc", ()))
            raise RequestValidationError(errors) from None

    parse.__name__ = f"{model.__name__}_body"
    return parse


def body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """The ``openapi_extra`` of an operation whose body is ``model`` (via ``json_body``)."""
    ref = _REF.format(model=model.__name__)
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": ref}}},
        }
    }


def documented(app: FastAPI, models: tuple[type[BaseModel], ...]) -> None:
    """Publish ``models`` (and what they refer to) among the OpenAPI components."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        schema = generate()
        _, top = models_json_schema([(m, "validation") for m in models], ref_template=_REF)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, definition in top.get("$defs", {}).items():
            components.setdefault(name, definition)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
