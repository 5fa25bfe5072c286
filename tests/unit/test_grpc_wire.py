"""The gRPC contract without a network: who is admitted, and messages to domain values and back."""

from __future__ import annotations

import dataclasses

import pytest

from citadel.adapters.grpc.tls import (
    CIPHER_SUITES_VARIABLE,
    TLS12_CIPHER_SUITES,
    TlsConfigError,
    restrict_handshakes_to_tls13,
)
from citadel.app.answer import AnswerRequest
from citadel.app.errors import Forbidden, InvalidRequest, Unauthenticated
from citadel.domain.answer import (
    Answerability,
    AnswerResult,
    Citation,
    CitedSegment,
    Degraded,
    DegradedReason,
    GenerationRecord,
    GroundedAnswer,
    LinkState,
)
from citadel.domain.limits import Limits
from citadel.domain.manifest import freeze_manifest
from citadel.domain.requests import is_valid_request_id
from citadel.domain.search import SearchFilters, SearchMode, SearchRequest, SearchResult
from citadel.domain.selection import select_evidence
from citadel.domain.support import Support, SupportLabel
from citadel.domain.users import Actor, Role, UserStatus
from citadel.wire.convert import (
    answer_request_from_wire,
    answer_request_to_wire,
    answer_result_from_wire,
    answer_result_to_wire,
    reject_unknown_fields,
    search_request_from_wire,
    search_request_to_wire,
)
from citadel.wire.errors import InvalidMessage
from citadel.wire.gen import answer_pb2, retrieval_pb2
from citadel.wire.identity import (
    ANSWER,
    RETRIEVAL,
    actor_from_metadata,
    actor_metadata,
    check_peer,
    request_id_from_metadata,
)
from tests.builders import make_evidence


def auth(*names: str, version: str = "TLSv1.3", kind: str = "ssl") -> dict[str, list[bytes]]:
    return {
        "transport_security_type": [kind.encode()],
        "ssl_tls_version": [version.encode()],
        "peer_dns": [n.encode() for n in names],
        "x509_subject_alternative_name": [n.encode() for n in names],
    }


def test_only_the_allowlisted_sans_reach_each_service() -> None:
    assert check_peer(auth("edge-api"), ANSWER) == "edge-api"
    assert check_peer(auth("answer-service"), RETRIEVAL) == "answer-service"
    assert check_peer(auth("other", "edge-api"), RETRIEVAL) == "edge-api"
    for name in ("answer-service", "retrieval-service", "Edge-API", "edge-api.", "*", "edge"):
        with pytest.raises(Forbidden, match=r"may not call citadel\.v1\.Answer"):
            check_peer(auth(name), ANSWER)


def test_a_uri_san_does_not_pass_for_a_dns_name() -> None:
    context = auth()
    context["x509_subject_alternative_name"] = [b"edge-api"]  # e.g. a URI SAN "edge-api"
    with pytest.raises(Unauthenticated, match="DNS SAN"):
        check_peer(context, ANSWER)


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.1", ""])
def test_a_channel_below_tls13_is_refused_per_call(version: str) -> None:
    with pytest.raises(Unauthenticated, match=r"TLSv1\.3"):
        check_peer(auth("edge-api", version=version), ANSWER)


def test_an_insecure_channel_is_refused() -> None:
    with pytest.raises(Unauthenticated, match="mutual TLS"):
        check_peer(auth("edge-api", kind="insecure"), ANSWER)


ACTOR = Actor("zoë", "acme", Role.LIBRARIAN, groups=frozenset({"ops", "sre-team"}))


def test_the_actor_travels_in_metadata_and_back() -> None:
    metadata = actor_metadata(ACTOR, "req-1")
    assert all(value.isascii() for _, value in metadata)
    assert actor_from_metadata(metadata, RETRIEVAL) == ACTOR
    assert request_id_from_metadata(metadata) == "req-1"


def without(key: str, metadata: tuple[tuple[str, str], ...]) -> list[tuple[str, str | bytes]]:
    return [(k, v) for k, v in metadata if k != key]


def replaced(key: str, value: str) -> list[tuple[str, str | bytes]]:
    return [*without(key, actor_metadata(ACTOR)), (key, value)]


def test_a_missing_or_incomplete_actor_is_unauthenticated() -> None:
    with pytest.raises(Unauthenticated, match="x-citadel-user-id"):
        actor_from_metadata([], ANSWER)
    with pytest.raises(Unauthenticated, match="x-citadel-user-id"):
        actor_from_metadata(replaced("x-citadel-user-id", ""), ANSWER)
    with pytest.raises(Unauthenticated, match="tenant"):
        actor_from_metadata(without("x-citadel-tenant", actor_metadata(ACTOR)), ANSWER)
    with pytest.raises(Unauthenticated, match="more than once"):
        actor_from_metadata([*actor_metadata(ACTOR), ("x-citadel-user-id", "mallory")], ANSWER)
    with pytest.raises(Unauthenticated, match="status"):
        actor_from_metadata(without("x-citadel-status", actor_metadata(ACTOR)), ANSWER)
    with pytest.raises(Unauthenticated, match="whitespace"):
        actor_from_metadata(replaced("x-citadel-user-id", "a%20b"), ANSWER)


def test_a_disabled_or_under_privileged_actor_is_forbidden() -> None:
    with pytest.raises(Forbidden, match="disabled"):
        actor_from_metadata(replaced("x-citadel-status", UserStatus.DISABLED.value), ANSWER)
    with pytest.raises(Forbidden, match="role 'guest'"):
        actor_from_metadata(replaced("x-citadel-role", "guest"), ANSWER)
    with pytest.raises(Forbidden, match="role librarian may not call"):
        actor_from_metadata(actor_metadata(ACTOR), ANSWER, frozenset({Role.ADMIN}))


def test_a_malformed_request_id_is_replaced_not_refused() -> None:
    # The edge's rule (citadel.domain.requests): a bad id gets a fresh one, never a refusal.
    fresh = request_id_from_metadata([("x-request-id", "a b\n")])
    assert fresh != "a b\n" and is_valid_request_id(fresh)
    assert request_id_from_metadata([("x-request-id", "trace:1")]) == "trace:1"
    # A repeated request id is not a malformed actor: the actor still passes.
    repeated = [*actor_metadata(ACTOR, "req-1"), ("x-request-id", "req-2")]
    assert actor_from_metadata(repeated, RETRIEVAL) == ACTOR


def test_a_search_request_round_trips() -> None:
    request = SearchRequest(
        "retry budgets",
        limit=3,
        filters=SearchFilters(
            source_ids=frozenset({"s1"}),
            tags_all=frozenset({"a", "b"}),
            year_min=1999,
            section_prefix=("Part I", "Chapter 2"),
        ),
        mode=SearchMode.LEXICAL,
    )
    assert search_request_from_wire(search_request_to_wire(request)) == request
    assert search_request_from_wire(retrieval_pb2.SearchRequest(query="q")) == SearchRequest("q")


def test_bad_requests_are_invalid() -> None:
    with pytest.raises(InvalidRequest, match="limit"):
        search_request_from_wire(retrieval_pb2.SearchRequest(query="q", limit=0))
    with pytest.raises(InvalidRequest, match="search mode"):
        search_request_from_wire(retrieval_pb2.SearchRequest(query="q", mode=9))  # type: ignore[arg-type]
    bad_years = retrieval_pb2.SearchFilters(year_min=2001, year_max=2000)
    with pytest.raises(InvalidRequest, match="year_min"):
        search_request_from_wire(retrieval_pb2.SearchRequest(query="q", filters=bad_years))
    with pytest.raises(InvalidRequest, match="minimum_evidence_score"):
        answer_request_from_wire(
            answer_pb2.AnswerRequest(
                search=retrieval_pb2.SearchRequest(query="q"), minimum_evidence_score=1.5
            )
        )
    with pytest.raises(InvalidRequest, match="needs a search"):
        answer_request_from_wire(answer_pb2.AnswerRequest())


def test_fields_the_contract_does_not_define_are_refused_not_ignored() -> None:
    request = answer_request_to_wire(AnswerRequest(SearchRequest("q"), 0.5))
    # A caller's own "passages" (field 3) and "user_id" inside the search (field 9).
    smuggled = request.SerializeToString() + b"\x1a\x05hello"
    with pytest.raises(InvalidRequest, match=r"citadel.v1.AnswerRequest has fields .* 3"):
        reject_unknown_fields(answer_pb2.AnswerRequest.FromString(smuggled))
    inner = retrieval_pb2.SearchRequest(query="q").SerializeToString() + b"\x4a\x03bob"
    nested = b"\x0a" + bytes([len(inner)]) + inner
    with pytest.raises(InvalidRequest, match=r"AnswerRequest.search has fields .* 9"):
        reject_unknown_fields(answer_pb2.AnswerRequest.FromString(nested))
    reject_unknown_fields(request)


def test_an_answer_result_round_trips_with_its_manifest() -> None:
    evidence = (make_evidence("e1", score=0.9), make_evidence("e2", "Another passage.", score=0.5))
    manifest = freeze_manifest(select_evidence(evidence, Limits(), 0.0))
    citation = Citation(
        ref="E1",
        evidence_id="e1",
        source_id="src-1",
        version=1,
        chunk_id="chunk-of-e1",
        title="Reliable Service Design",
        author="Example Author",
        chapter="Failure Handling",
        section="Retry Budgets",
        pages="42",
        link_state=LinkState.SUPERSEDED,
        link_href="https://docs.example.org/x",
    )
    result = AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult("q", evidence),
        answer=GroundedAnswer("extractive", (CitedSegment("A retry policy.", (citation,)),)),
        degraded=None,
        manifest=manifest,
        generation=GenerationRecord("extractive", "m", "p1", attempts=1),
    )
    back = answer_result_from_wire(answer_result_to_wire(result))
    assert back == result
    assert back.manifest is not None and back.manifest.evidence == manifest.evidence
    degraded = AnswerResult(
        "a2", "r2", SearchResult("q"), None, Degraded(DegradedReason.GENERATOR_BUSY, "full")
    )
    assert answer_result_from_wire(answer_result_to_wire(degraded)) == degraded


def test_support_labels_spans_and_limited_answers_cross_the_wire() -> None:
    """Split mode shows the reader what one process shows: each citation's support."""
    evidence = (make_evidence("e1", score=0.9), make_evidence("e2", "Another passage.", score=0.5))
    manifest = freeze_manifest(select_evidence(evidence, Limits(), 0.0))
    quoted = dataclasses.replace(
        _citation("E1", "e1"), support=Support(1.0, SupportLabel.VERBATIM, (0, 15))
    )
    weak = dataclasses.replace(
        _citation("E2", "e2"), support=Support(0.25, SupportLabel.UNSUPPORTED)
    )
    result = AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult("q", evidence),
        answer=GroundedAnswer(
            "openai", (CitedSegment("A retry policy.", (quoted, weak)),), limited=True
        ),
        degraded=None,
        manifest=manifest,
        generation=GenerationRecord(
            "openai", "m", "p1", attempts=2, support_checker="s/1", support_policy="drop"
        ),
    )
    back = answer_result_from_wire(answer_result_to_wire(result))
    assert back == result
    assert back.answer is not None and back.answer.segments[0].label is SupportLabel.VERBATIM
    refused = AnswerResult(
        "a2", "r2", SearchResult("q"), None, Degraded(DegradedReason.UNSUPPORTED, "segment 1")
    )
    assert answer_result_from_wire(answer_result_to_wire(refused)) == refused


@pytest.mark.parametrize("label", [label for label in SupportLabel if label.value != "verbatim"])
def test_every_support_label_crosses_the_wire(label: SupportLabel) -> None:
    """A new label (``contradicted``) needs its own wire code: none falls back to another."""
    evidence = (make_evidence("e1", score=0.9), make_evidence("e2", "Another passage.", score=0.5))
    manifest = freeze_manifest(select_evidence(evidence, Limits(), 0.0))
    cited = dataclasses.replace(_citation("E1", "e1"), support=Support(0.3, label))
    quoted = dataclasses.replace(
        _citation("E2", "e2"), support=Support(1.0, SupportLabel.VERBATIM, (0, 15))
    )
    result = AnswerResult(
        answer_id="a1",
        request_id="r1",
        search=SearchResult("q", evidence),
        answer=GroundedAnswer("openai", (CitedSegment("A retry policy.", (cited, quoted)),)),
        degraded=None,
        manifest=manifest,
        generation=GenerationRecord("openai", "m", "p1", support_checker="s/1"),
    )
    back = answer_result_from_wire(answer_result_to_wire(result))
    assert back == result
    segment = back.answer.segments[0] if back.answer else None
    assert segment is not None and segment.citations[0].support == Support(0.3, label)
    # A contradicting citation vetoes the quotation beside it; any other yields to it.
    expected = label if label is SupportLabel.CONTRADICTED else SupportLabel.VERBATIM
    assert segment.label is expected


def test_every_degraded_reason_and_the_answerability_decision_cross_the_wire() -> None:
    evidence = (make_evidence("e1", "A retry policy caps attempts.", score=0.9),)
    for reason in DegradedReason:
        result = AnswerResult(
            "a1",
            "r1",
            SearchResult("q", evidence),
            None,
            Degraded(reason, f"because {reason.value}"),
            answerability=Answerability(0.125, 0.5, "relevance-minilm/1"),
        )
        message = answer_result_to_wire(result)
        assert message.HasField("answerability")
        assert answer_result_from_wire(message) == result
    undecided = AnswerResult(
        "a2", "r2", SearchResult("q"), None, Degraded(DegradedReason.NO_EVIDENCE, "none")
    )
    message = answer_result_to_wire(undecided)
    assert not message.HasField("answerability")
    assert answer_result_from_wire(message).answerability is None
    not_in_library = answer_result_to_wire(result)
    assert (
        answer_result_to_wire(
            dataclasses.replace(
                result, degraded=Degraded(DegradedReason.NOT_IN_LIBRARY, "closest passages")
            )
        ).degraded.reason
        == answer_pb2.DEGRADED_REASON_NOT_IN_LIBRARY
    )
    not_in_library.answerability.score = 1.5  # a peer breaking the contract
    with pytest.raises(InvalidMessage, match="answerability"):
        answer_result_from_wire(not_in_library)


def _citation(ref: str, evidence_id: str) -> Citation:
    return Citation(
        ref=ref,
        evidence_id=evidence_id,
        source_id="src-1",
        version=1,
        chunk_id=f"chunk-of-{evidence_id}",
        title="Reliable Service Design",
        author="Example Author",
        chapter="Failure Handling",
        section="Retry Budgets",
        pages="42",
        link_state=LinkState.VIEWER,
        link_href="/v1/sources/src-1/versions/1/chunks/x",
    )


def test_the_tls_policy_refuses_to_apply_too_late() -> None:
    import grpc  # loads gRPC's core (after conftest applied the policy)

    assert grpc.StatusCode.OK
    env: dict[str, str] = {}
    with pytest.raises(TlsConfigError, match="loaded before"):
        restrict_handshakes_to_tls13(env)
    applied = {CIPHER_SUITES_VARIABLE: TLS12_CIPHER_SUITES}
    restrict_handshakes_to_tls13(applied)  # already in force: nothing to do
