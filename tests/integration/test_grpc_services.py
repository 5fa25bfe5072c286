"""The gRPC services on loopback: mutual TLS 1.3, SAN allowlists, actors, split mode.

Real servers on ephemeral ports with certificates from ``citadel certs dev``;
the refusals are checked at the layer that refuses (the TLS handshake, or the
call), and split mode (edge -> Answer -> Retrieval, each hop over mTLS with its
own certificate) must answer exactly as the services do in one process.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from citadel.adapters.grpc.clients import GrpcAnswerClient, GrpcRetrievalClient
from citadel.adapters.grpc.tls import load_identity
from citadel.app.answer import AnswerRequest
from citadel.app.errors import Forbidden, InvalidRequest, ServiceUnavailable, Unauthenticated
from citadel.app.ingest import IngestOptions
from citadel.bootstrap import Services, build
from citadel.bootstrap.grpc_wiring import (
    build_answer_client,
    build_retrieval_client,
    grpc_server_credentials,
    mint_dev_certs,
)
from citadel.config import Settings
from citadel.domain.search import SearchRequest, SearchResult
from citadel.domain.users import Actor, Role, UserStatus
from citadel.entrypoints.grpc.server import RunningServer, start_server
from citadel.entrypoints.grpc.services import AnswerServicer, RetrievalServicer
from citadel.entrypoints.present.shapes import answer_json, search_json
from citadel.wire.gen import answer_pb2, retrieval_pb2
from citadel.wire.identity import ANSWER, RETRIEVAL, actor_metadata
from tests.bad_inputs import BAD_INPUTS, BadInput
from tests.builders import operator

T = TypeVar("T")
TENANT = "acme"
READER = Actor("rita", TENANT, Role.READER)
URL = "https://docs.example.org/capacitors.html"
NOTE = (
    "# Capacitors\n\nThe flux capacitor workers restart one at a time after a deploy.\n\n"
    "## Budgets\n\nEach worker keeps a retry budget of three attempts per minute.\n"
)
QUESTION = "How do the flux capacitor workers restart?"


class Loop:
    """An event loop on its own thread: the servers, and the async clients' calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class CountingRetrieval:
    """The local search, recording who asked: proves split mode searched over the wire."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self.actors: list[Actor] = []

    def search(self, request: SearchRequest, actor: Actor) -> SearchResult:
        self.actors.append(actor)
        return self._services.search.search(request, actor)


@dataclass
class Deployment:
    certs: Path
    local: Services
    split: Services
    retrieval: RunningServer
    answer: RunningServer
    split_answer: RunningServer
    strict_answer: RunningServer
    searches: CountingRetrieval
    loop: Loop


def settings_for(home: Path) -> Settings:
    return Settings(home=home, embedder="hashing", link_allowed_hosts="docs.example.org")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("grpc")
    certs = root / "certs"
    mint_dev_certs(certs)
    note = root / "capacitors.md"
    note.write_text(NOTE, encoding="utf-8")
    settings = settings_for(root / "home")
    local = build(settings)
    local.ingest.ingest(
        local.documents.open(note), IngestOptions(tenant=TENANT, url=URL), actor=operator(TENANT)
    )
    # The services confirm every asserted actor against this store (see FORGED below).
    local.users.add("rita", Role.READER, TENANT)
    local.users.add("lib", Role.LIBRARIAN, TENANT)
    local.users.add("olga", Role.ADMIN, "other-tenant")
    local.users.add("dora", Role.READER, TENANT)
    local.users.disable("dora")
    local.users.add("otto", Role.READER, "globex")
    searches = CountingRetrieval(local)
    loop = Loop()
    retrieval_creds = grpc_server_credentials(certs, RETRIEVAL.server_name)
    answer_creds = grpc_server_credentials(certs, ANSWER.server_name)
    retrieval = loop.run(
        start_server(
            RETRIEVAL,
            RetrievalServicer(searches, local.users).handler(),
            "127.0.0.1:0",
            retrieval_creds,
        )
    )
    split = build(settings, retrieval=build_retrieval_client(settings, retrieval.address, certs))
    answer = loop.run(
        start_server(
            ANSWER, AnswerServicer(local.answer, local.users).handler(), "127.0.0.1:0", answer_creds
        )
    )
    split_answer = loop.run(
        start_server(
            ANSWER, AnswerServicer(split.answer, split.users).handler(), "127.0.0.1:0", answer_creds
        )
    )
    admins_only = AnswerServicer(local.answer, local.users, frozenset({Role.LIBRARIAN, Role.ADMIN}))
    strict_answer = loop.run(
        start_server(ANSWER, admins_only.handler(), "127.0.0.1:0", answer_creds)
    )
    yield Deployment(
        certs, local, split, retrieval, answer, split_answer, strict_answer, searches, loop
    )
    for server in (retrieval, answer, split_answer, strict_answer):
        loop.run(server.server.stop(None))
    loop.close()
    split.close()
    local.close()


def raw_call(
    d: Deployment,
    server: RunningServer,
    identity: str | None,
    request: Any,
    metadata: tuple[tuple[str, str], ...] | None = None,
) -> Any:
    """One call with a plain grpc channel presenting ``identity`` (None: no client cert)."""
    ca = (d.certs / "ca.crt").read_bytes()
    if identity is None:
        creds = grpc.ssl_channel_credentials(root_certificates=ca)
    else:
        creds = grpc.ssl_channel_credentials(
            root_certificates=ca,
            private_key=(d.certs / f"{identity}.key").read_bytes(),
            certificate_chain=(d.certs / f"{identity}.crt").read_bytes(),
        )
    service = server.service
    options = [
        ("grpc.ssl_target_name_override", service.server_name),
        ("grpc.use_local_subchannel_pool", 1),
    ]
    with grpc.secure_channel(server.address, creds, options=options) as channel:
        response_type = (
            retrieval_pb2.SearchResponse if service is RETRIEVAL else answer_pb2.AnswerResponse
        )
        call = channel.unary_unary(
            service.method,
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_type.FromString,
        )
        return call(
            request, timeout=10, metadata=actor_metadata(READER) if metadata is None else metadata
        )


def search_message(query: str = "flux capacitor restart") -> retrieval_pb2.SearchRequest:
    return retrieval_pb2.SearchRequest(query=query, limit=5)


def answer_message(query: str = QUESTION) -> answer_pb2.AnswerRequest:
    return answer_pb2.AnswerRequest(search=retrieval_pb2.SearchRequest(query=query))


def refused(code: grpc.StatusCode, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(grpc.RpcError) as caught:
        raw_call(*args, **kwargs)
    error: Any = caught.value
    assert error.code() == code, error.details()
    return str(error.details())


# --- the channel ------------------------------------------------------------


def test_the_allowlisted_certificates_pass(deployment: Deployment) -> None:
    d = deployment
    for peer in ("edge-api", "answer-service"):
        found = raw_call(d, d.retrieval, peer, search_message())
        assert found.results and "flux capacitor" in found.results[0].passage
    answered = raw_call(d, d.answer, "edge-api", answer_message())
    assert answered.WhichOneof("outcome") == "answer"


@pytest.mark.parametrize(
    ("service", "identity"),
    [
        ("answer", "answer-service"),  # chained to the CA, but not on Answer's list
        ("answer", "retrieval-service"),
        ("retrieval", "retrieval-service"),
        ("answer", "test-wrong-san"),
        ("retrieval", "test-wrong-san"),
    ],
)
def test_a_san_off_the_allowlist_is_refused(
    deployment: Deployment, service: str, identity: str
) -> None:
    server = deployment.answer if service == "answer" else deployment.retrieval
    request = answer_message() if service == "answer" else search_message()
    details = refused(grpc.StatusCode.PERMISSION_DENIED, deployment, server, identity, request)
    assert "may not call" in details


@pytest.mark.parametrize("identity", [None, "test-other-ca", "test-expired"])
def test_no_or_an_untrusted_client_certificate_fails_the_handshake(
    deployment: Deployment, identity: str | None
) -> None:
    # No call is made at all: the TLS handshake fails, so the channel never connects.
    d = deployment
    for server, request in ((d.retrieval, search_message()), (d.answer, answer_message())):
        refused(grpc.StatusCode.UNAVAILABLE, d, server, identity, request)


def tls_handshake(d: Deployment, server: RunningServer, version: ssl.TLSVersion) -> str:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = context.maximum_version = version
    context.load_verify_locations(d.certs / "ca.crt")
    context.load_cert_chain(d.certs / "edge-api.crt", d.certs / "edge-api.key")
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection((server.host, server.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=server.service.server_name) as tls,
    ):
        return str(tls.version())


def test_tls12_is_refused_even_with_the_right_certificate(deployment: Deployment) -> None:
    for server in (deployment.retrieval, deployment.answer):
        with pytest.raises((ssl.SSLError, ConnectionError)):
            tls_handshake(deployment, server, ssl.TLSVersion.TLSv1_2)
        # The control: the same client, certificate and server, with TLS 1.3.
        assert tls_handshake(deployment, server, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"


# --- the actor --------------------------------------------------------------


def test_a_missing_actor_is_unauthenticated(deployment: Deployment) -> None:
    d = deployment
    for server, request in ((d.retrieval, search_message()), (d.answer, answer_message())):
        details = refused(grpc.StatusCode.UNAUTHENTICATED, d, server, "edge-api", request, ())
        assert "x-citadel-user-id" in details
    no_tenant = tuple(p for p in actor_metadata(READER) if p[0] != "x-citadel-tenant")
    details = refused(
        grpc.StatusCode.UNAUTHENTICATED, d, d.answer, "edge-api", answer_message(), no_tenant
    )
    assert "tenant" in details


def test_a_disabled_actor_is_refused(deployment: Deployment) -> None:
    d = deployment
    disabled = actor_metadata(Actor("rita", TENANT, Role.READER, UserStatus.DISABLED))
    for server, request in ((d.retrieval, search_message()), (d.answer, answer_message())):
        details = refused(
            grpc.StatusCode.PERMISSION_DENIED, d, server, "edge-api", request, disabled
        )
        assert "disabled" in details


def test_an_under_privileged_actor_is_refused(deployment: Deployment) -> None:
    d = deployment
    details = refused(
        grpc.StatusCode.PERMISSION_DENIED, d, d.strict_answer, "edge-api", answer_message()
    )
    assert "role reader may not call citadel.v1.Answer" in details
    librarian = actor_metadata(Actor("lib", TENANT, Role.LIBRARIAN))
    assert raw_call(d, d.strict_answer, "edge-api", answer_message(), librarian).answer_id
    guest = tuple((k, "guest" if k == "x-citadel-role" else v) for k, v in librarian)
    refused(grpc.StatusCode.PERMISSION_DENIED, d, d.retrieval, "edge-api", search_message(), guest)


def test_the_actors_scope_applies(deployment: Deployment) -> None:
    outsider = actor_metadata(Actor("olga", "other-tenant", Role.ADMIN))
    found = raw_call(deployment, deployment.retrieval, "edge-api", search_message(), outsider)
    assert list(found.results) == []


# The actor is asserted by the calling service; the user store has the last word.
FORGED = {
    "an unregistered user": (Actor("mallory", TENANT, Role.ADMIN), "not registered"),
    "a reader claiming a group": (
        Actor("rita", TENANT, Role.READER, groups=frozenset({"ops"})),
        "not in group",
    ),
    "a disabled user sent as active": (Actor("dora", TENANT, Role.READER), "disabled"),
    "another tenant's user claiming admin": (Actor("otto", TENANT, Role.ADMIN), "tenant acme"),
    "the CLI's local administrator": (Actor("local", TENANT, Role.ADMIN), "not registered"),
}


@pytest.mark.parametrize("case", list(FORGED))
def test_a_forged_actor_is_refused_by_every_service(deployment: Deployment, case: str) -> None:
    """A stolen service key cannot read as whoever it likes: each service asks its store."""
    d = deployment
    forged, reason = FORGED[case]
    metadata = actor_metadata(forged)
    before = len(d.searches.actors)
    for server, request, peer in (
        (d.retrieval, search_message(), "edge-api"),
        (d.retrieval, search_message(), "answer-service"),
        (d.answer, answer_message(), "edge-api"),
        (d.split_answer, answer_message(), "edge-api"),
    ):
        details = refused(grpc.StatusCode.PERMISSION_DENIED, d, server, peer, request, metadata)
        assert reason in details
    assert d.searches.actors[before:] == [], "nothing was searched for a forged actor"


def test_a_forged_actor_is_refused_through_the_clients(deployment: Deployment) -> None:
    d = deployment
    other_tenant, _ = FORGED["another tenant's user claiming admin"]
    client = GrpcRetrievalClient(d.retrieval.address, load_identity(d.certs, "answer-service"))
    try:
        with pytest.raises(Forbidden, match="tenant acme"):
            client.search(SearchRequest("flux capacitor restart"), other_tenant)
        # The genuine user, on the same channel, still searches.
        assert client.search(SearchRequest("flux capacitor restart"), READER).results
    finally:
        client.close()
    grouped, _ = FORGED["a reader claiming a group"]
    edge = GrpcAnswerClient(d.split_answer.address, load_identity(d.certs, "edge-api"))
    try:
        with pytest.raises(Forbidden, match="not in group"):
            d.loop.run(edge.answer(AnswerRequest(SearchRequest(QUESTION)), grouped))
    finally:
        d.loop.run(edge.aclose())


def test_the_genuine_actor_still_passes_every_service(deployment: Deployment) -> None:
    d = deployment
    genuine = d.local.users.actor("rita")
    assert genuine == READER
    metadata = actor_metadata(genuine, "trace:1")
    for peer in ("edge-api", "answer-service"):
        found = raw_call(d, d.retrieval, peer, search_message(), metadata)
        assert found.results and "flux capacitor" in found.results[0].passage
    for server in (d.answer, d.split_answer):
        answered = raw_call(d, server, "edge-api", answer_message(), metadata)
        assert answered.WhichOneof("outcome") == "answer"
        assert answered.request_id == "trace:1"


# --- requests ---------------------------------------------------------------


def test_bad_requests_are_invalid_argument(deployment: Deployment) -> None:
    d = deployment
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    assert "empty" in refused(invalid, d, d.retrieval, "edge-api", search_message("  "))
    assert "limit" in refused(
        invalid, d, d.retrieval, "edge-api", retrieval_pb2.SearchRequest(query="q", limit=0)
    )
    too_strict = answer_message()
    too_strict.minimum_evidence_score = 2.0
    assert "minimum_evidence_score" in refused(invalid, d, d.answer, "edge-api", too_strict)
    # A caller's own passages (an undefined field 3) are refused, not ignored.
    smuggled = answer_pb2.AnswerRequest.FromString(
        answer_message().SerializeToString() + b"\x1a\x0bI am proof."
    )
    assert "does not define" in refused(invalid, d, d.answer, "edge-api", smuggled)


def _grpc_form(case: BadInput) -> retrieval_pb2.SearchRequest | None:
    """The shared table's case as a search request's ``limit`` on the wire; None where
    protobuf carries no such thing: its types are fixed by the schema (no ``true``,
    ``"5"`` or ``5.0`` for an int32), an int32 holds no 5,001-digit number, and a
    repeated scalar field is defined to merge (the last wins in every reader)."""
    if case.id == "unknown field":
        # field 99, varint 1: a field this API does not define
        sent = retrieval_pb2.SearchRequest(query="eigenvalues", limit=5).SerializeToString()
        return retrieval_pb2.SearchRequest.FromString(sent + b"\x98\x06\x01")
    if case.id == "below the range":
        return retrieval_pb2.SearchRequest(query="eigenvalues", limit=0)
    if case.id == "past int64":
        return retrieval_pb2.SearchRequest(query="eigenvalues", limit=2**31 - 1)
    return None


GRPC_CASES = [case for case in BAD_INPUTS if _grpc_form(case) is not None]


@pytest.mark.parametrize("case", GRPC_CASES, ids=[case.id for case in GRPC_CASES])
def test_the_shared_bad_inputs_are_invalid_argument(deployment: Deployment, case: BadInput) -> None:
    d = deployment
    message = _grpc_form(case)
    details = refused(grpc.StatusCode.INVALID_ARGUMENT, d, d.retrieval, "edge-api", message)
    assert "limit" in details or "does not define" in details


def test_a_limit_over_what_http_and_mcp_allow_is_refused_too(deployment: Deployment) -> None:
    d = deployment
    over = retrieval_pb2.SearchRequest(query="eigenvalues", limit=101)
    details = refused(grpc.StatusCode.INVALID_ARGUMENT, d, d.retrieval, "edge-api", over)
    assert "limit must be from 1 to 100" in details
    years = retrieval_pb2.SearchRequest(
        query="q", filters=retrieval_pb2.SearchFilters(year_min=10**6)
    )
    details = refused(grpc.StatusCode.INVALID_ARGUMENT, d, d.retrieval, "edge-api", years)
    assert "year_min must be from -9999 to 9999" in details


# --- the clients and split mode --------------------------------------------


def test_the_retrieval_client_searches_as_answer_service(deployment: Deployment) -> None:
    d = deployment
    client = GrpcRetrievalClient(d.retrieval.address, load_identity(d.certs, "answer-service"))
    try:
        request = SearchRequest("flux capacitor restart", limit=5)
        assert client.search(request, READER) == d.local.search.search(request, READER)
        with pytest.raises(InvalidRequest, match="empty"):
            client.search(SearchRequest(" "), READER)
        with pytest.raises(Forbidden, match="disabled"):
            client.search(request, Actor("rita", TENANT, status=UserStatus.DISABLED))
    finally:
        client.close()
    wrong = GrpcRetrievalClient(d.retrieval.address, load_identity(d.certs, "retrieval-service"))
    try:
        with pytest.raises(Forbidden, match="retrieval-service may not call"):
            wrong.search(SearchRequest("flux"), READER)
    finally:
        wrong.close()


def comparable(result: Any) -> dict[str, Any]:
    shown = answer_json(result)
    del shown["answer_id"]
    return shown


def test_split_mode_answers_as_in_process(deployment: Deployment) -> None:
    d = deployment
    # A question no other test asks, so neither service has it in its answer cache.
    request = AnswerRequest(SearchRequest("What do flux capacitor workers do after a deploy?"))
    edge = build_answer_client(settings_for(d.certs), d.split_answer.address, d.certs)
    try:
        before = len(d.searches.actors)
        split = d.loop.run(edge.answer(request, READER, request_id="req-42"))
        local = d.loop.run(d.local.answer.answer(request, READER, request_id="req-42"))
        again = d.loop.run(d.split.answer.answer(request, READER, request_id="req-42"))
    finally:
        d.loop.run(edge.aclose())
    assert split.answer is not None, split.degraded
    assert comparable(split) == comparable(local)
    assert comparable(again) | {"generation": None} == comparable(local) | {"generation": None}
    [citation] = [c for s in split.answer.segments for c in s.citations][:1]
    assert (citation.link_state.value, citation.link_href) == ("canonical", URL)
    # The split Answer service searched on Retrieval over gRPC, for the edge's actor.
    assert d.searches.actors[before:] == [READER, READER]
    assert split.request_id == "req-42"
    assert search_json(split.search) == search_json(local.search)


def test_split_mode_carries_refusals_back_to_the_edge(deployment: Deployment) -> None:
    d = deployment
    edge = GrpcAnswerClient(d.split_answer.address, load_identity(d.certs, "edge-api"))
    disabled = Actor("rita", TENANT, status=UserStatus.DISABLED)
    request = AnswerRequest(SearchRequest(QUESTION))
    try:
        with pytest.raises(Forbidden, match="disabled"):
            d.loop.run(edge.answer(request, disabled))
        with pytest.raises(InvalidRequest, match="empty"):
            d.loop.run(edge.answer(AnswerRequest(SearchRequest("  ")), READER))
    finally:
        d.loop.run(edge.aclose())
    intruder = GrpcAnswerClient(d.answer.address, load_identity(d.certs, "answer-service"))
    try:
        with pytest.raises(Forbidden, match=r"may not call citadel\.v1\.Answer"):
            d.loop.run(intruder.answer(request, READER))
    finally:
        d.loop.run(intruder.aclose())


def test_an_unreachable_service_is_unavailable(deployment: Deployment) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = GrpcRetrievalClient(
        f"127.0.0.1:{port}", load_identity(deployment.certs, "answer-service"), timeout_s=5
    )
    try:
        with pytest.raises(ServiceUnavailable, match=r"citadel\.v1\.Retrieval: unavailable"):
            client.search(SearchRequest("flux"), READER)
    finally:
        client.close()


def test_a_malformed_actor_maps_back_to_unauthenticated(deployment: Deployment) -> None:
    client = GrpcRetrievalClient(
        deployment.retrieval.address, load_identity(deployment.certs, "edge-api")
    )
    try:
        with pytest.raises(Unauthenticated, match="whitespace"):
            client.search(SearchRequest("flux"), Actor("rita smith", TENANT))
    finally:
        client.close()
