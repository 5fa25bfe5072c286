"""The gRPC wiring: TLS policy, the services' mTLS credentials and the split-mode clients.

gRPC is imported only when a gRPC feature is used: its core must start after
:func:`prepare_grpc` has set the TLS policy (see ``citadel.adapters.grpc.tls``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from citadel.adapters.grpc.tls import (
    Identity,
    TlsConfigError,
    load_identity,
    restrict_handshakes_to_tls13,
)
from citadel.app.ports.tracing import Tracer
from citadel.bootstrap.tracing import tracer_of
from citadel.config import ConfigError, Settings

if TYPE_CHECKING:
    import grpc

    from citadel.adapters.grpc.clients import GrpcAnswerClient, GrpcRetrievalClient


def prepare_grpc() -> None:
    """Apply the gRPC TLS policy (no TLS 1.2 handshakes); call before anything loads gRPC."""
    try:
        restrict_handshakes_to_tls13()
    except TlsConfigError as exc:
        raise ConfigError(str(exc)) from None


def _identity(certs_dir: Path, name: str) -> Identity:
    try:
        return load_identity(certs_dir, name)
    except TlsConfigError as exc:
        raise ConfigError(f"certificates: {exc}") from None


def grpc_server_credentials(certs_dir: Path, server_name: str) -> grpc.ServerCredentials:
    """mTLS credentials for the service whose certificate is ``server_name`` in ``certs_dir``."""
    prepare_grpc()
    from citadel.adapters.grpc.credentials import server_credentials

    return server_credentials(_identity(certs_dir, server_name))


def build_retrieval_client(
    settings: Settings, target: str, certs_dir: Path, *, tracer: Tracer | None = None
) -> GrpcRetrievalClient:
    """Answer's client for a remote Retrieval service, presenting ``answer-service``."""
    prepare_grpc()
    from citadel.adapters.grpc.clients import GrpcRetrievalClient
    from citadel.wire.identity import ANSWER_SERVICE

    identity = _identity(certs_dir, ANSWER_SERVICE)
    tracer = tracer or tracer_of(settings)
    return GrpcRetrievalClient(target, identity, tracer=tracer)


def build_answer_client(
    settings: Settings, target: str, certs_dir: Path, *, tracer: Tracer | None = None
) -> GrpcAnswerClient:
    """The HTTP edge's client for a remote Answer service, presenting ``edge-api``.

    Its calls default to a deadline a little past the generator's own, so a slow
    generator degrades on the Answer side before the edge gives up.
    """
    prepare_grpc()
    from citadel.adapters.grpc.clients import GrpcAnswerClient
    from citadel.wire.identity import EDGE_API

    timeout_s = settings.limits.generator_deadline_s * (1 + settings.limits.max_repairs) + 30.0
    identity = _identity(certs_dir, EDGE_API)
    tracer = tracer or tracer_of(settings)
    return GrpcAnswerClient(target, identity, timeout_s=timeout_s, tracer=tracer)


def mint_dev_certs(directory: Path) -> list[Path]:
    """A development CA and the service and test certificates (``citadel certs dev``)."""
    from citadel.adapters.grpc.devca import mint_dev_certs as mint

    return mint(directory)
