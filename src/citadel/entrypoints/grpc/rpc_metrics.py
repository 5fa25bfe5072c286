"""gRPC call metrics: each call a service answers, timed by full method name and status.

A server interceptor. Only methods a service registered are counted (the method
label is then one of a closed set: ``/citadel.v1.Retrieval/Search``, ...); a
call to an unknown method is left to gRPC (UNIMPLEMENTED) and not counted, so
a client cannot create series. The code is the status the call ended with: OK,
the one the servicer aborted with, CANCELLED when the caller went away, else
UNKNOWN.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import grpc
import grpc.aio


class CallMetrics(Protocol):
    def rpc(self, method: str, code: str, seconds: float) -> None: ...


class RpcMetrics(grpc.aio.ServerInterceptor):
    def __init__(self, metrics: CallMetrics) -> None:
        self._metrics = metrics

    # The stubs declare this generic in request and response; the handlers here are any.
    async def intercept_service(  # type: ignore[override]
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        method: str = handler_call_details.method
        inner: Callable[[Any, Any], Awaitable[Any]] = handler.unary_unary  # aio: a coroutine
        metrics = self._metrics

        async def timed(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            started = time.perf_counter()
            code = "UNKNOWN"
            try:
                response = await inner(request, context)
                code = _ended(context, "OK")
                return response
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except BaseException:
                code = _ended(context, "UNKNOWN")
                raise
            finally:
                metrics.rpc(method, code, time.perf_counter() - started)

        return grpc.unary_unary_rpc_method_handler(
            timed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _ended(context: grpc.aio.ServicerContext[Any, Any], default: str) -> str:
    """The status the servicer set on ``context`` (``abort``, ``set_code``), else ``default``."""
    code: object = context.code()  # None until one is set
    if isinstance(code, grpc.StatusCode):
        return code.name
    return default
