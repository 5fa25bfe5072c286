"""Running the gRPC servers: listen with mutual TLS only, report, serve until a signal.

What each service does with a call is in ``citadel.entrypoints.grpc.services``.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import grpc
import grpc.aio

from citadel.app.errors import InvalidRequest, ServiceUnavailable
from citadel.wire.identity import ServiceSpec


@dataclass(frozen=True, slots=True)
class RunningServer:
    service: ServiceSpec
    server: grpc.aio.Server
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


async def start_server(
    service: ServiceSpec,
    handler: grpc.GenericRpcHandler,
    address: str,
    credentials: grpc.ServerCredentials,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
) -> RunningServer:
    """Serve ``handler`` on ``address`` (HOST:PORT; port 0 picks a free one) with mTLS only,
    through ``interceptors`` (the call metrics: ``rpc_metrics``)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InvalidRequest(f"{address!r} is not HOST:PORT")
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)], interceptors=interceptors)
    server.add_generic_rpc_handlers((handler,))
    try:
        bound = server.add_secure_port(address, credentials)
    except RuntimeError as exc:
        raise ServiceUnavailable(f"cannot listen on {address}: {exc}") from None
    if not bound:
        raise ServiceUnavailable(f"cannot listen on {address}")
    await server.start()
    return RunningServer(service, server, host.strip("[]"), bound)


async def serve_until_stopped(
    starting: Sequence[Callable[[], Awaitable[RunningServer]]],
    on_ready: Callable[[Sequence[RunningServer]], None],
    grace_s: float = 5.0,
) -> None:
    """Start the servers, report them, and serve until SIGINT or SIGTERM."""
    running: list[RunningServer] = []
    try:
        for start in starting:
            running.append(await start())
        on_ready(running)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await asyncio.gather(*(r.server.stop(grace_s) for r in running))
