"""gRPC credentials from an ``Identity``: mutual TLS in both directions."""

from __future__ import annotations

import grpc

from citadel.adapters.grpc.tls import Identity


def server_credentials(identity: Identity) -> grpc.ServerCredentials:
    """Present ``identity``; require a client certificate chained to ``identity.ca``."""
    return grpc.ssl_server_credentials(
        [(identity.key, identity.certificate)],
        root_certificates=identity.ca,
        require_client_auth=True,
    )


def channel_credentials(identity: Identity) -> grpc.ChannelCredentials:
    """Present ``identity`` as the client certificate; trust servers chained to ``identity.ca``."""
    return grpc.ssl_channel_credentials(
        root_certificates=identity.ca,
        private_key=identity.key,
        certificate_chain=identity.certificate,
    )


def channel_options(server_name: str) -> list[tuple[str, str | int]]:
    """Verify the server's certificate against ``server_name`` whatever address is dialled."""
    return [
        ("grpc.ssl_target_name_override", server_name),
        ("grpc.default_authority", server_name),
    ]
