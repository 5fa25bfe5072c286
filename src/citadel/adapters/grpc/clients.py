"""gRPC clients for split mode: Answer calls Retrieval, the HTTP edge calls Answer.

Each presents its own certificate (``answer-service``, ``edge-api``), verifies
the server's certificate against the CA and the server's expected name, and
sends the actor in metadata. gRPC failures become application errors here:

=====================  ==============================
gRPC status            application error
=====================  ==============================
INVALID_ARGUMENT       ``InvalidRequest``
UNAUTHENTICATED        ``Unauthenticated``
PERMISSION_DENIED      ``Forbidden``
NOT_FOUND              ``NotFound``
DEADLINE_EXCEEDED      ``RequestDeadlineExceeded``
anything else          ``ServiceUnavailable``
=====================  ==============================
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import grpc
import grpc.aio

from citadel.adapters.grpc.credentials import channel_credentials, channel_options
from citadel.adapters.grpc.tls import Identity
from citadel.app.answer import AnswerRequest
from citadel.app.errors import (
    AppError,
    Forbidden,
    InvalidRequest,
    NotFound,
    RequestDeadlineExceeded,
    ServiceUnavailable,
    Unauthenticated,
)
from citadel.app.ports.tracing import NullTracer, Span, Tracer
from citadel.domain.answer import AnswerResult
from citadel.domain.search import SearchRequest, SearchResult
from citadel.domain.users import Actor
from citadel.wire.convert import (
    answer_request_to_wire,
    answer_result_from_wire,
    search_request_to_wire,
    search_result_from_wire,
)
from citadel.wire.errors import InvalidMessage
from citadel.wire.gen import answer_pb2, retrieval_pb2
from citadel.wire.identity import ANSWER, RETRIEVAL, ServiceSpec, actor_metadata
from citadel.wire.tracing import STATUS, rpc_attributes, span_name, trace_metadata

_ERRORS: dict[grpc.StatusCode, type[AppError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequest,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: Forbidden,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.DEADLINE_EXCEEDED: RequestDeadlineExceeded,
}


def _code(error: grpc.RpcError) -> grpc.StatusCode:
    # Raised errors are also grpc.Call objects, which the type stubs cannot express.
    status = getattr(error, "code", None)
    code = status() if callable(status) else None
    return code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN


def _translate(error: grpc.RpcError, service: ServiceSpec, span: Span | None = None) -> AppError:
    code = _code(error)
    if span is not None:
        span.set(**{STATUS: code.value[0]})
    text = getattr(error, "details", None)
    details = str((text() if callable(text) else None) or code.name.lower())
    kind = _ERRORS.get(code, ServiceUnavailable)
    if kind is ServiceUnavailable:
        return ServiceUnavailable(f"{service.name}: {code.name.lower()}: {details}")
    return kind(details)


def _decoded(message: str, service: ServiceSpec, exc: InvalidMessage) -> ServiceUnavailable:
    return ServiceUnavailable(f"{service.name} sent {message} that breaks the contract: {exc}")


class GrpcRetrievalClient:
    """``Retrieval`` over gRPC: what ``AnswerService`` searches with in split mode."""

    def __init__(
        self,
        target: str,
        identity: Identity,
        *,
        timeout_s: float = 30.0,
        tracer: Tracer | None = None,
    ) -> None:
        self._target = target
        self._timeout_s = timeout_s
        self._tracer = tracer or NullTracer()
        self._channel = grpc.secure_channel(
            target, channel_credentials(identity), options=channel_options(RETRIEVAL.server_name)
        )
        self._search = self._channel.unary_unary(
            RETRIEVAL.method,
            request_serializer=retrieval_pb2.SearchRequest.SerializeToString,
            response_deserializer=retrieval_pb2.SearchResponse.FromString,
        )

    def search(self, request: SearchRequest, actor: Actor) -> SearchResult:
        """Rank the chunks ``actor`` may read, on the Retrieval service."""
        tracer = self._tracer
        with tracer.span(span_name(RETRIEVAL), kind="client") as span:
            span.set(**rpc_attributes(RETRIEVAL))
            try:
                response = self._search(
                    search_request_to_wire(request),
                    timeout=self._timeout_s,
                    metadata=actor_metadata(actor) + trace_metadata(tracer.outgoing()),
                )
            except grpc.RpcError as exc:
                raise _translate(exc, RETRIEVAL, span) from None
            span.set(**{STATUS: grpc.StatusCode.OK.value[0]})
        try:
            return search_result_from_wire(response)
        except InvalidMessage as exc:
            raise _decoded("a search response", RETRIEVAL, exc) from None

    def close(self) -> None:
        self._channel.close()


class GrpcAnswerClient:
    """``Answering`` over gRPC: what the HTTP edge answers with in split mode.

    An asyncio channel belongs to the event loop it was made on, so the channel
    is made on first use in the running loop (and again if a later call runs in
    another loop, as separate ``asyncio.run`` calls do).
    """

    def __init__(
        self,
        target: str,
        identity: Identity,
        *,
        timeout_s: float = 60.0,
        tracer: Tracer | None = None,
    ) -> None:
        self._target = target
        self._identity = identity
        self._timeout_s = timeout_s
        self._tracer = tracer or NullTracer()
        self._lock = threading.Lock()
        self._channel: grpc.aio.Channel | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _call(self) -> grpc.aio.UnaryUnaryMultiCallable[Any, Any]:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._channel is None or self._loop is not loop:
                self._channel = grpc.aio.secure_channel(
                    self._target,
                    channel_credentials(self._identity),
                    options=channel_options(ANSWER.server_name),
                )
                self._loop = loop
            channel = self._channel
        return channel.unary_unary(
            ANSWER.method,
            request_serializer=answer_pb2.AnswerRequest.SerializeToString,
            response_deserializer=answer_pb2.AnswerResponse.FromString,
        )

    async def answer(
        self,
        request: AnswerRequest,
        actor: Actor,
        *,
        request_id: str | None = None,
        deadline_s: float | None = None,
    ) -> AnswerResult:
        """Answer for ``actor`` on the Answer service, within ``deadline_s`` if given."""
        call = self._call()
        tracer = self._tracer
        with tracer.span(span_name(ANSWER), kind="client") as span:
            span.set(**rpc_attributes(ANSWER))
            try:
                response = await call(
                    answer_request_to_wire(request),
                    timeout=deadline_s if deadline_s is not None else self._timeout_s,
                    metadata=actor_metadata(actor, request_id) + trace_metadata(tracer.outgoing()),
                )
            except grpc.aio.AioRpcError as exc:
                raise _translate(exc, ANSWER, span) from None
            span.set(**{STATUS: grpc.StatusCode.OK.value[0]})
        try:
            return answer_result_from_wire(response)
        except InvalidMessage as exc:
            raise _decoded("an answer response", ANSWER, exc) from None

    async def aclose(self) -> None:
        with self._lock:
            channel, self._channel, self._loop = self._channel, None, None
        if channel is not None:
            await channel.close()
