"""gRPC call metrics on a real loopback server: by method and the status each call ended with."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import grpc
import grpc.aio
import pytest

from citadel.adapters.metrics.prometheus import PrometheusMetrics
from citadel.entrypoints.grpc.rpc_metrics import RpcMetrics
from citadel.entrypoints.grpc.server import start_server
from citadel.wire.identity import RETRIEVAL

SERVICE = "test.v1.Echo"


@dataclass
class Recorded:
    calls: list[tuple[str, str]] = field(default_factory=list)

    def rpc(self, method: str, code: str, seconds: float) -> None:
        assert 0 <= seconds < 10
        self.calls.append((method, code))


async def echo(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
    if request == b"refuse":
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "refused")
    if request == b"crash":
        raise RuntimeError("servicer bug")
    return request


def handler() -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        SERVICE, {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
    )


async def calls(recorded: Recorded | PrometheusMetrics) -> list[grpc.StatusCode]:
    running = await start_server(
        RETRIEVAL,
        handler(),
        "127.0.0.1:0",
        grpc.local_server_credentials(grpc.LocalConnectionType.LOCAL_TCP),
        interceptors=(RpcMetrics(recorded),),
    )
    codes = []
    try:
        credentials = grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP)
        async with grpc.aio.secure_channel(running.address, credentials) as channel:
            for method, body in (
                ("Echo", b"hello"),
                ("Echo", b"refuse"),
                ("Echo", b"crash"),
                ("NoSuchMethod-a1b2c3", b"x"),
            ):
                call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                    f"/{SERVICE}/{method}"
                )
                try:
                    await call(body, timeout=10)
                    codes.append(grpc.StatusCode.OK)
                except grpc.aio.AioRpcError as exc:
                    codes.append(exc.code())
    finally:
        await running.server.stop(0)
    return codes


def test_each_call_is_recorded_with_its_method_and_final_code() -> None:
    recorded = Recorded()
    codes = asyncio.run(calls(recorded))
    assert codes == [
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.UNIMPLEMENTED,
    ]
    method = f"/{SERVICE}/Echo"
    # The unknown method is not counted: a client cannot make series.
    assert recorded.calls == [(method, "OK"), (method, "INVALID_ARGUMENT"), (method, "UNKNOWN")]


@pytest.mark.parametrize("code", ["OK", "INVALID_ARGUMENT", "UNKNOWN"])
def test_the_registry_exposes_the_call_histogram(code: str) -> None:
    metrics = PrometheusMetrics()
    asyncio.run(calls(metrics))
    text = metrics.exposition().decode()
    line = (
        f'citadel_grpc_request_duration_seconds_count{{code="{code}",method="/{SERVICE}/Echo"}} 1.0'
    )
    assert line in text
    assert "NoSuchMethod" not in text
