"""The gRPC services: ``citadel.v1.Retrieval`` and ``citadel.v1.Answer`` behind mutual TLS.

Thin, like every entrypoint: admit the call (the channel, then the actor; see
``citadel.wire.identity``), parse the message strictly, call one use case,
serialise. Application errors map to statuses in one table; anything else is
INTERNAL with no detail (it is logged here, never sent).

The actor a caller asserts is not taken on its word: after its form is checked,
the user store confirms it (``UserService.confirm``) — an unknown or disabled
user, or a claim beyond the stored tenant, role and groups, is PERMISSION_DENIED.
The certificate says which service calls; the store says who the user is. The
legitimate callers assert store users only: the HTTP edge its authenticated
users, and the Answer service (split mode) the same actor it was called for.
The CLI's local administrator never goes over gRPC (CLI commands run their use
cases in process) and, not being in the store, is refused if asserted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import grpc
import grpc.aio

from citadel.app.answer import Answering
from citadel.app.errors import (
    AppError,
    Forbidden,
    InvalidRequest,
    NotFound,
    RequestDeadlineExceeded,
    ServiceUnavailable,
    Unauthenticated,
)
from citadel.app.ports import Retrieval
from citadel.app.ports.tracing import NullTracer, Span, Tracer
from citadel.domain.errors import InvalidValue
from citadel.domain.users import Actor, Role
from citadel.wire.convert import (
    answer_request_from_wire,
    answer_result_to_wire,
    reject_unknown_fields,
    search_request_from_wire,
    search_result_to_wire,
)
from citadel.wire.gen import answer_pb2, retrieval_pb2
from citadel.wire.identity import (
    ALL_ROLES,
    ANSWER,
    RETRIEVAL,
    ServiceSpec,
    actor_from_metadata,
    check_peer,
    request_id_from_metadata,
)
from citadel.wire.tracing import STATUS, rpc_attributes, span_name, trace_carrier

log = logging.getLogger("citadel.grpc")
T = TypeVar("T")


class ConfirmsActors(Protocol):
    """The user store's word on an asserted actor (``citadel.app.users.UserService``)."""

    def confirm(self, asserted: Actor) -> Actor:
        """The actor to run for; ``Forbidden`` for an unknown, disabled or over-claiming one."""
        ...


_STATUS: dict[type[AppError], grpc.StatusCode] = {
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    Forbidden: grpc.StatusCode.PERMISSION_DENIED,
    NotFound: grpc.StatusCode.NOT_FOUND,
    RequestDeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    ServiceUnavailable: grpc.StatusCode.UNAVAILABLE,
}


def status_for(error: AppError) -> grpc.StatusCode:
    """The status an application error is reported with (the most specific class wins)."""
    for kind in type(error).__mro__:
        if kind in _STATUS:
            return _STATUS[kind]
    return grpc.StatusCode.INTERNAL


async def _admitted(
    context: grpc.aio.ServicerContext[object, object],
    service: ServiceSpec,
    users: ConfirmsActors,
    roles: frozenset[Role],
    work: Callable[[Actor, str], Awaitable[T]],
    tracer: Tracer,
) -> T:
    """Run ``work`` for an admitted call; otherwise end the call with the status that says why.

    Admitted: a peer on the service's allowlist, a well-formed active actor of
    an admitted role, and that actor confirmed by the user store. The call is a
    server span continuing the caller's trace (``traceparent`` in its metadata).
    """
    metadata = [(m[0], m[1]) for m in context.invocation_metadata() or ()]
    with tracer.span(span_name(service), kind="server", parent=trace_carrier(metadata)) as span:
        span.set(**rpc_attributes(service))
        try:
            check_peer(context.auth_context(), service)
            asserted = actor_from_metadata(metadata, service, roles)
            actor = await asyncio.to_thread(users.confirm, asserted)
            request_id = request_id_from_metadata(metadata)
            result = await work(actor, request_id)
            span.set(**{STATUS: grpc.StatusCode.OK.value[0]})
            return result
        except AppError as exc:
            code = status_for(exc)
            log.info("%s refused: %s", service.name, code.name)
            _ended(span, code, exc)
            await context.abort(code, str(exc))
        except InvalidValue as exc:
            _ended(span, grpc.StatusCode.INVALID_ARGUMENT, exc)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except Exception as exc:
            log.exception("%s failed", service.name)
            _ended(span, grpc.StatusCode.INTERNAL, exc)
            await context.abort(grpc.StatusCode.INTERNAL, "internal error")


def _ended(span: Span, code: grpc.StatusCode, exc: Exception) -> None:
    """The span of a call that ends with ``code``: failed, by the error's type only."""
    span.set(**{STATUS: code.value[0]})
    span.fail(type(exc).__name__)


class RetrievalServicer:
    """``citadel.v1.Retrieval``: search within the scope of the actor the store confirms."""

    def __init__(
        self,
        search: Retrieval,
        users: ConfirmsActors,
        roles: frozenset[Role] = ALL_ROLES,
        *,
        tracer: Tracer | None = None,
    ) -> None:
        self._search = search
        self._users = users
        self._roles = roles
        self._tracer = tracer or NullTracer()

    async def search(
        self,
        message: retrieval_pb2.SearchRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> retrieval_pb2.SearchResponse:
        async def run(actor: Actor, _: str) -> retrieval_pb2.SearchResponse:
            reject_unknown_fields(message)
            request = search_request_from_wire(message)
            result = await asyncio.to_thread(self._search.search, request, actor)
            return search_result_to_wire(result)

        return await _admitted(context, RETRIEVAL, self._users, self._roles, run, self._tracer)

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            RETRIEVAL.name,
            {
                "Search": grpc.unary_unary_rpc_method_handler(
                    self.search,
                    request_deserializer=retrieval_pb2.SearchRequest.FromString,
                    response_serializer=retrieval_pb2.SearchResponse.SerializeToString,
                )
            },
        )


class AnswerServicer:
    """``citadel.v1.Answer``: an answer with proven citations, or the search and why not.

    In split mode the answers search on Retrieval over gRPC for the same
    (confirmed) actor, which Retrieval confirms again against its store.
    """

    def __init__(
        self,
        answers: Answering,
        users: ConfirmsActors,
        roles: frozenset[Role] = ALL_ROLES,
        *,
        tracer: Tracer | None = None,
    ) -> None:
        self._answers = answers
        self._users = users
        self._roles = roles
        self._tracer = tracer or NullTracer()

    async def answer(
        self,
        message: answer_pb2.AnswerRequest,
        context: grpc.aio.ServicerContext[object, object],
    ) -> answer_pb2.AnswerResponse:
        async def run(actor: Actor, request_id: str) -> answer_pb2.AnswerResponse:
            reject_unknown_fields(message)
            request = answer_request_from_wire(message)
            result = await self._answers.answer(
                request, actor, request_id=request_id, deadline_s=context.time_remaining()
            )
            return answer_result_to_wire(result)

        return await _admitted(context, ANSWER, self._users, self._roles, run, self._tracer)

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            ANSWER.name,
            {
                "Answer": grpc.unary_unary_rpc_method_handler(
                    self.answer,
                    request_deserializer=answer_pb2.AnswerRequest.FromString,
                    response_serializer=answer_pb2.AnswerResponse.SerializeToString,
                )
            },
        )
