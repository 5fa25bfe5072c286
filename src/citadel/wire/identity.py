"""Who may call which service: peer certificates, the TLS version, and the actor.

A call is admitted in two steps, both on every call:

1. the channel: TLS 1.3, and a client certificate (already chained to the
   configured CA by the TLS stack) one of whose subject alternative names is
   exactly on the service's allowlist — :func:`check_peer`;
2. the actor the caller acts for, carried in metadata: a non-empty user id and
   tenant, ``active`` status and a role the service admits — :func:`actor_from_metadata`.

Metadata values are percent-encoded UTF-8 (gRPC metadata is ASCII); groups are
comma-separated (a group name may not contain a comma).

The request id (``x-request-id``) follows the rule of ``citadel.domain.requests``,
the HTTP edge's too: a valid one is kept, anything else (missing, malformed,
binary, sent twice) is replaced by a fresh id — never refused, so an id the edge
accepts and forwards can never fail a call here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, unquote

from citadel.app.errors import Forbidden, Unauthenticated
from citadel.domain.errors import InvalidValue
from citadel.domain.requests import is_valid_request_id, request_id_or_new
from citadel.domain.users import Actor, Role, UserStatus, check_groups, check_name

EDGE_API = "edge-api"
ANSWER_SERVICE = "answer-service"
RETRIEVAL_SERVICE = "retrieval-service"

USER_ID = "x-citadel-user-id"
TENANT = "x-citadel-tenant"
ROLE = "x-citadel-role"
STATUS = "x-citadel-status"
GROUPS = "x-citadel-groups"
REQUEST_ID = "x-request-id"

TLS13 = "TLSv1.3"
ALL_ROLES = frozenset(Role)


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """One gRPC service: its method path, its own certificate name and who may call it."""

    name: str
    method: str
    server_name: str
    """The DNS SAN of the service's own certificate; clients verify the server against it."""
    allowed_peers: frozenset[str]
    """Exact DNS SANs a client certificate must carry (one of them) to call the service."""


RETRIEVAL = ServiceSpec(
    name="citadel.v1.Retrieval",
    method="/citadel.v1.Retrieval/Search",
    server_name=RETRIEVAL_SERVICE,
    allowed_peers=frozenset({EDGE_API, ANSWER_SERVICE}),
)
ANSWER = ServiceSpec(
    name="citadel.v1.Answer",
    method="/citadel.v1.Answer/Answer",
    server_name=ANSWER_SERVICE,
    allowed_peers=frozenset({EDGE_API}),
)

AuthContext = Mapping[str, Iterable[bytes]]
Metadata = Sequence[tuple[str, str | bytes]]


def check_peer(auth: AuthContext, service: ServiceSpec) -> str:
    """The admitted peer's SAN; ``Unauthenticated`` or ``Forbidden`` otherwise.

    ``auth`` is the call's ``auth_context()``. The certificate chain was verified
    by the TLS stack against the configured CA; here the negotiated version must
    be TLS 1.3 and one DNS subject alternative name must equal an allowed name
    exactly (no wildcards, no suffix or case folding).
    """
    if [v.decode("ascii", "replace") for v in auth.get("transport_security_type", ())] != ["ssl"]:
        raise Unauthenticated(f"{service.name} accepts only mutual TLS")
    versions = [v.decode("ascii", "replace") for v in auth.get("ssl_tls_version", ())]
    if versions != [TLS13]:
        shown = ", ".join(versions) or "unknown"
        raise Unauthenticated(f"{service.name} accepts only {TLS13}; this channel uses {shown}")
    # ``peer_dns`` holds the DNS SANs only; ``x509_subject_alternative_name`` mixes in
    # URI, e-mail and IP SANs, and a URI SAN "edge-api" must not pass for the edge.
    names = [v.decode("utf-8", "replace") for v in auth.get("peer_dns", ())]
    if not names:
        raise Unauthenticated(f"{service.name} needs a client certificate with a DNS SAN")
    for name in names:
        if name in service.allowed_peers:
            return name
    allowed = ", ".join(sorted(service.allowed_peers))
    raise Forbidden(
        f"a peer with SAN {', '.join(names)} may not call {service.name} (allowed: {allowed})"
    )


def actor_metadata(actor: Actor, request_id: str | None = None) -> tuple[tuple[str, str], ...]:
    """The metadata that carries ``actor`` (and a request id) to a service.

    A request id the shared rule would replace is not sent (the service makes its own).
    """
    pairs = [
        (USER_ID, _encode(actor.user_id)),
        (TENANT, _encode(actor.tenant)),
        (ROLE, actor.role.value),
        (STATUS, actor.status.value),
        (GROUPS, ",".join(_encode(g) for g in sorted(actor.groups))),
    ]
    if is_valid_request_id(request_id):
        pairs.append((REQUEST_ID, request_id))
    return tuple(pairs)


def actor_from_metadata(
    metadata: Metadata, service: ServiceSpec, roles: frozenset[Role] = ALL_ROLES
) -> Actor:
    """The actor a call runs for, validated; never defaulted.

    ``Unauthenticated`` when the identity is missing or malformed (no user id,
    no tenant, an unknown role or status); ``Forbidden`` when the user is not
    active or its role is not one the service admits.
    """
    values = _single_values(metadata)
    user_id = _decoded(values, USER_ID, "user id")
    tenant = _decoded(values, TENANT, "tenant")
    if not user_id:
        raise Unauthenticated(f"{service.name} needs an actor: metadata {USER_ID} is missing")
    if not tenant:
        raise Unauthenticated(f"{service.name} needs the actor's tenant in {TENANT}")
    try:
        check_name("user", user_id)
        check_name("tenant", tenant)
        groups = check_groups(_decode(g, "group") for g in values.get(GROUPS, "").split(",") if g)
    except InvalidValue as exc:
        raise Unauthenticated(f"malformed actor: {exc}") from None
    status_text = values.get(STATUS, "")
    try:
        status = UserStatus(status_text)
    except ValueError:
        raise Unauthenticated(
            f"{STATUS} must be one of {', '.join(s.value for s in UserStatus)}"
        ) from None
    role_text = values.get(ROLE, "")
    try:
        role = Role(role_text)
    except ValueError:
        raise Forbidden(f"role {role_text or '(none)'!r} may not call {service.name}") from None
    if status is not UserStatus.ACTIVE:
        raise Forbidden(f"user {user_id} is {status.value}; nothing runs on its behalf")
    if role not in roles:
        allowed = ", ".join(sorted(r.value for r in roles)) or "none"
        raise Forbidden(f"role {role.value} may not call {service.name} (allowed: {allowed})")
    return Actor(user_id=user_id, tenant=tenant, role=role, status=status, groups=groups)


def request_id_from_metadata(metadata: Metadata) -> str:
    """The caller's request id when it sent exactly one valid id, else a fresh one.

    The rule is ``citadel.domain.requests``'s, the HTTP edge's too: an invalid id
    is replaced, never refused (and never echoed into logs).
    """
    sent = [value for key, value in metadata if key == REQUEST_ID]
    return request_id_or_new(sent[0] if len(sent) == 1 else None)


def _single_values(metadata: Metadata) -> dict[str, str]:
    values: dict[str, str] = {}
    for key, value in metadata:
        if not key.startswith("x-citadel-"):
            continue
        if isinstance(value, bytes):
            raise Unauthenticated(f"metadata {key} must be text")
        if key in values:
            # Two user ids would leave it to the reader which one counts: refuse.
            raise Unauthenticated(f"metadata {key} was sent more than once")
        values[key] = value
    return values


def _encode(value: str) -> str:
    return quote(value, safe="")


def _decode(value: str, what: str) -> str:
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise Unauthenticated(f"the actor's {what} is not percent-encoded UTF-8") from None


def _decoded(values: Mapping[str, str], key: str, what: str) -> str:
    return _decode(values.get(key, ""), what)
