"""A development certificate authority for the gRPC services (``citadel certs dev DIR``).

It mints what a loopback deployment and the tests need, with ``cryptography``:

========================  =======================================================
``ca.crt`` / ``ca.key``   the development CA the services trust
``edge-api.*``            the HTTP edge's client certificate (SAN ``edge-api``)
``answer-service.*``      Answer's server and client certificate
``retrieval-service.*``   Retrieval's server certificate
``test-wrong-san.*``      chained to the CA, but its SAN is on no allowlist
``test-other-ca.*``       SAN ``edge-api``, issued by a CA nobody trusts
``test-expired.*``        SAN ``edge-api``, chained to the CA, expired yesterday
========================  =======================================================

Keys are ECDSA P-256 in unencrypted PKCS#8 PEM, written with mode 0600 (they are
development keys: anyone who can read the directory is the service).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from citadel.wire.identity import ANSWER_SERVICE, EDGE_API, RETRIEVAL_SERVICE

SERVICE_NAMES = (EDGE_API, ANSWER_SERVICE, RETRIEVAL_SERVICE)
WRONG_SAN = "edge-api.intruder.invalid"

_LEAF_DAYS = 365
_CA_DAYS = 5 * 365
# Clocks of a few minutes apart must not make a fresh certificate "not yet valid".
_SKEW = dt.timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class _Issuer:
    name: x509.Name
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "citadel development"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _ca(common_name: str, now: dt.datetime) -> _Issuer:
    key = _key()
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
        .not_valid_after(now + dt.timedelta(days=_CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _Issuer(name, key, cert)


def _leaf(
    issuer: _Issuer, dns_name: str, not_before: dt.datetime, not_after: dt.datetime
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_name))
        .issuer_name(issuer.name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        # Every service is a TLS server, a TLS client, or (Answer) both.
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name)]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()),
            critical=False,
        )
        .sign(issuer.key, hashes.SHA256())
    )
    return cert, key


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    data = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def mint_dev_certs(directory: Path, *, now: dt.datetime | None = None) -> list[Path]:
    """Write a development CA, the three service certificates and the test certificates.

    Existing files of the same names are replaced. Returns the paths written.
    """
    now = now or dt.datetime.now(dt.UTC)
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def pair(stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        _write_cert(directory / f"{stem}.crt", cert)
        _write_key(directory / f"{stem}.key", key)
        written.extend((directory / f"{stem}.crt", directory / f"{stem}.key"))

    ca = _ca("citadel development CA", now)
    pair("ca", ca.cert, ca.key)
    valid_until = now + dt.timedelta(days=_LEAF_DAYS)
    for service in SERVICE_NAMES:
        pair(service, *_leaf(ca, service, now - _SKEW, valid_until))
    pair("test-wrong-san", *_leaf(ca, WRONG_SAN, now - _SKEW, valid_until))
    stranger = _ca("citadel untrusted CA", now)
    pair("test-other-ca", *_leaf(stranger, EDGE_API, now - _SKEW, valid_until))
    expired = _leaf(ca, EDGE_API, now - dt.timedelta(days=30), now - dt.timedelta(days=1))
    pair("test-expired", *expired)
    return written
