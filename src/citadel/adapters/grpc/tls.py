"""The TLS policy of the gRPC services, and the certificates they present.

What is enforced, and how (grpcio has no server-side minimum-version setting):

* TLS 1.0 and 1.1: never — gRPC core's minimum is TLS 1.2.
* TLS 1.2: no handshake completes. gRPC core applies ``GRPC_SSL_CIPHER_SUITES``
  to TLS 1.2 only (BoringSSL's TLS 1.3 suites are fixed and not configurable),
  so :func:`restrict_handshakes_to_tls13` sets it to a single PSK suite. No
  pre-shared key is ever configured, so that suite cannot be chosen and every
  TLS 1.2 ClientHello ends in a handshake failure (``NO_SHARED_CIPHER``). gRPC
  core reads the variable once, when it is loaded, so this must run before
  ``grpc`` is imported; it refuses (``TlsConfigError``) when that is too late.
* TLS 1.3: the only version left, and checked again on every call: the servers
  refuse a call whose auth context does not say ``TLSv1.3``
  (``citadel.wire.identity.check_peer``), whatever the process environment.
* The TLS 1.3 cipher suites are BoringSSL's fixed set (AES-GCM, ChaCha20-Poly1305).

This module does not import gRPC.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

CIPHER_SUITES_VARIABLE = "GRPC_SSL_CIPHER_SUITES"
TLS12_CIPHER_SUITES = "PSK-AES128-CBC-SHA"
"""A TLS 1.2 suite that needs a pre-shared key, which is never configured: no TLS 1.2 at all."""

_GRPC_CORE = "grpc._cython.cygrpc"


class TlsConfigError(ValueError):
    """The TLS policy cannot be applied, or a certificate or key is missing or unreadable."""


def restrict_handshakes_to_tls13(environ: MutableMapping[str, str] | None = None) -> None:
    """Make gRPC refuse TLS 1.2 handshakes; call before ``grpc`` is imported.

    Idempotent. Raises ``TlsConfigError`` when gRPC's core is already loaded
    with another cipher list, because the setting would silently not apply.
    """
    env = os.environ if environ is None else environ
    if env.get(CIPHER_SUITES_VARIABLE) == TLS12_CIPHER_SUITES:
        return
    if _GRPC_CORE in sys.modules:
        raise TlsConfigError(
            "gRPC was loaded before citadel could refuse TLS 1.2 handshakes; start the process"
            f" with {CIPHER_SUITES_VARIABLE}={TLS12_CIPHER_SUITES} or import citadel first"
        )
    env[CIPHER_SUITES_VARIABLE] = TLS12_CIPHER_SUITES


@dataclass(frozen=True, slots=True)
class Identity:
    """A service's certificate and key, and the CA its peers must chain to (PEM bytes)."""

    name: str
    ca: bytes = field(repr=False)
    certificate: bytes = field(repr=False)
    key: bytes = field(repr=False)


def load_identity(certs_dir: Path, name: str) -> Identity:
    """``ca.crt``, ``NAME.crt`` and ``NAME.key`` from ``certs_dir`` (as ``certs dev`` writes)."""

    def read(file_name: str) -> bytes:
        path = certs_dir / file_name
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise TlsConfigError(f"cannot read {path}: {exc.strerror}") from None
        if b"-----BEGIN " not in data:
            raise TlsConfigError(f"{path} is not PEM")
        return data

    return Identity(
        name=name, ca=read("ca.crt"), certificate=read(f"{name}.crt"), key=read(f"{name}.key")
    )
