"""Messages of ``citadel.v1`` to domain values and back.

Requests are parsed strictly: a field this version of the contract does not
define (an unknown field number), an unknown enum value or an invalid value is
an ``InvalidRequest`` naming it — never silently dropped. The actor is never
part of a message (see ``identity``).
"""

from __future__ import annotations

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

from citadel.app.answer import AnswerRequest
from citadel.app.errors import InvalidRequest
from citadel.domain.answer import (
    Answerability,
    AnswerResult,
    CitedSegment,
    Degraded,
    DegradedReason,
    GenerationRecord,
    GroundedAnswer,
)
from citadel.domain.errors import InvalidValue
from citadel.domain.integers import check_int
from citadel.domain.manifest import ContextEvidence, Manifest, ManifestEntry
from citadel.domain.search import (
    MAX_REQUEST_LIMIT,
    Evidence,
    SearchFilters,
    SearchMode,
    SearchRequest,
    SearchResult,
)
from citadel.wire.citations import citation_from_wire, citation_to_wire
from citadel.wire.errors import InvalidMessage
from citadel.wire.gen import answer_pb2 as apb
from citadel.wire.gen import retrieval_pb2 as rpb

_MODES: dict[int, SearchMode] = {
    rpb.SEARCH_MODE_UNSPECIFIED: SearchMode.HYBRID,
    rpb.SEARCH_MODE_HYBRID: SearchMode.HYBRID,
    rpb.SEARCH_MODE_LEXICAL: SearchMode.LEXICAL,
    rpb.SEARCH_MODE_DENSE: SearchMode.DENSE,
}
_MODE_CODES: dict[SearchMode, rpb.SearchMode] = {
    SearchMode.HYBRID: rpb.SEARCH_MODE_HYBRID,
    SearchMode.LEXICAL: rpb.SEARCH_MODE_LEXICAL,
    SearchMode.DENSE: rpb.SEARCH_MODE_DENSE,
}
_REASON_CODES: dict[DegradedReason, apb.DegradedReason] = {
    DegradedReason.NO_EVIDENCE: apb.DEGRADED_REASON_NO_EVIDENCE,
    DegradedReason.GENERATOR_ERROR: apb.DEGRADED_REASON_GENERATOR_ERROR,
    DegradedReason.GENERATOR_TIMEOUT: apb.DEGRADED_REASON_GENERATOR_TIMEOUT,
    DegradedReason.GENERATOR_BUSY: apb.DEGRADED_REASON_GENERATOR_BUSY,
    DegradedReason.INVALID_OUTPUT: apb.DEGRADED_REASON_INVALID_OUTPUT,
    DegradedReason.UNSUPPORTED: apb.DEGRADED_REASON_UNSUPPORTED,
    DegradedReason.NOT_IN_LIBRARY: apb.DEGRADED_REASON_NOT_IN_LIBRARY,
}
_REASONS = {code: reason for reason, code in _REASON_CODES.items()}


def reject_unknown_fields(message: Message, path: str = "") -> None:
    """``InvalidRequest`` when ``message`` or a message inside it has fields we do not define.

    A caller that sends passages, citations or identity fields in a request
    gets a clear refusal instead of having them silently ignored.
    """
    fields = UnknownFieldSet(message)
    unknown = sorted({fields[i].field_number for i in range(len(fields))})
    if unknown:
        where = path or message.DESCRIPTOR.full_name
        numbers = ", ".join(str(n) for n in unknown)
        raise InvalidRequest(
            f"{where} has fields this API does not define (field numbers {numbers});"
            " a request holds a search and minimum_evidence_score only"
        )
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        inner = f"{path or message.DESCRIPTOR.full_name}.{field.name}"
        items = value if field.is_repeated else [value]
        for item in items:
            reject_unknown_fields(item, inner)


# --- search -----------------------------------------------------------------


def search_request_to_wire(request: SearchRequest) -> rpb.SearchRequest:
    f = request.filters
    filters = rpb.SearchFilters(
        source_ids=sorted(f.source_ids),
        authors=sorted(f.authors),
        tags_any=sorted(f.tags_any),
        tags_all=sorted(f.tags_all),
        section_prefix=list(f.section_prefix),
    )
    if f.year_min is not None:
        filters.year_min = f.year_min
    if f.year_max is not None:
        filters.year_max = f.year_max
    return rpb.SearchRequest(
        query=request.query, limit=request.limit, filters=filters, mode=_MODE_CODES[request.mode]
    )


def search_request_from_wire(message: rpb.SearchRequest) -> SearchRequest:
    """The domain request; ``InvalidRequest`` with the reason when it is not one."""
    mode = _MODES.get(message.mode)
    if mode is None:
        raise InvalidRequest(f"unknown search mode {message.mode}")
    f = message.filters
    try:
        filters = SearchFilters(
            source_ids=frozenset(f.source_ids),
            authors=frozenset(f.authors),
            tags_any=frozenset(f.tags_any),
            tags_all=frozenset(f.tags_all),
            year_min=f.year_min if f.HasField("year_min") else None,
            year_max=f.year_max if f.HasField("year_max") else None,
            section_prefix=tuple(f.section_prefix),
        )
        return SearchRequest(
            query=message.query,
            limit=(
                check_int(message.limit, low=1, high=MAX_REQUEST_LIMIT, what="limit")
                if message.HasField("limit")
                else 10
            ),
            filters=filters,
            mode=mode,
        )
    except InvalidValue as exc:
        raise InvalidRequest(str(exc)) from None


def evidence_to_wire(e: Evidence) -> rpb.Evidence:
    message = rpb.Evidence(
        evidence_id=e.evidence_id,
        source_id=e.source_id,
        version=e.version,
        chunk_id=e.chunk_id,
        title=e.title,
        author=e.author,
        chapter=e.chapter,
        section=e.section,
        section_path=list(e.section_path),
        score=e.score,
        passage=e.passage,
        content_sha256=e.content_sha256,
    )
    if e.page_start is not None:
        message.page_start = e.page_start
    if e.page_end is not None:
        message.page_end = e.page_end
    if e.page_label_start is not None:
        message.page_label_start = e.page_label_start
    if e.page_label_end is not None:
        message.page_label_end = e.page_label_end
    return message


def evidence_from_wire(m: rpb.Evidence) -> Evidence:
    try:
        return Evidence(
            evidence_id=m.evidence_id,
            source_id=m.source_id,
            version=m.version,
            chunk_id=m.chunk_id,
            title=m.title,
            author=m.author,
            chapter=m.chapter,
            section=m.section,
            section_path=tuple(m.section_path),
            page_start=m.page_start if m.HasField("page_start") else None,
            page_end=m.page_end if m.HasField("page_end") else None,
            page_label_start=m.page_label_start if m.HasField("page_label_start") else None,
            page_label_end=m.page_label_end if m.HasField("page_label_end") else None,
            score=m.score,
            passage=m.passage,
            content_sha256=m.content_sha256,
        )
    except InvalidValue as exc:
        raise InvalidMessage(str(exc)) from None


def search_result_to_wire(result: SearchResult) -> rpb.SearchResponse:
    return rpb.SearchResponse(
        query=result.query, results=[evidence_to_wire(e) for e in result.results]
    )


def search_result_from_wire(message: rpb.SearchResponse) -> SearchResult:
    return SearchResult(
        query=message.query, results=tuple(evidence_from_wire(e) for e in message.results)
    )


# --- answer -----------------------------------------------------------------


def answer_request_to_wire(request: AnswerRequest) -> apb.AnswerRequest:
    return apb.AnswerRequest(
        search=search_request_to_wire(request.search),
        minimum_evidence_score=request.minimum_evidence_score,
    )


def answer_request_from_wire(message: apb.AnswerRequest) -> AnswerRequest:
    if not message.HasField("search"):
        raise InvalidRequest("an answer request needs a search request")
    return AnswerRequest(
        search_request_from_wire(message.search),
        minimum_evidence_score=message.minimum_evidence_score,
    )


def answer_result_to_wire(result: AnswerResult) -> apb.AnswerResponse:
    message = apb.AnswerResponse(
        answer_id=result.answer_id,
        request_id=result.request_id,
        search=search_result_to_wire(result.search),
    )
    if result.answer is not None:
        message.answer.CopyFrom(
            apb.GroundedAnswer(
                generator=result.answer.generator,
                segments=[
                    apb.Segment(text=s.text, citations=[citation_to_wire(c) for c in s.citations])
                    for s in result.answer.segments
                ],
                limited=result.answer.limited,
            )
        )
    if result.degraded is not None:
        message.degraded.CopyFrom(
            apb.Degraded(
                reason=_REASON_CODES[result.degraded.reason], detail=result.degraded.detail
            )
        )
    if result.manifest is not None:
        message.manifest.CopyFrom(
            apb.Manifest(
                sha256=result.manifest.sha256,
                entries=[
                    apb.ManifestEntry(
                        ref=e.ref,
                        evidence_id=e.evidence_id,
                        source_id=e.source_id,
                        version=e.version,
                        chunk_id=e.chunk_id,
                        content_sha256=e.content_sha256,
                    )
                    for e in result.manifest.entries
                ],
            )
        )
    g = result.generation
    if g is not None:
        # The model's decoded output stays with the audit record of the service that ran it.
        message.generation.CopyFrom(
            apb.Generation(
                generator=g.generator,
                model=g.model,
                prompt_version=g.prompt_version,
                prompt_sha256=g.prompt_sha256,
                raw_sha256=g.raw_sha256,
                attempts=g.attempts,
                cached=g.cached,
                shared=g.shared,
                support_checker=g.support_checker,
                support_policy=g.support_policy,
            )
        )
    decided = result.answerability
    if decided is not None:
        message.answerability.CopyFrom(
            apb.Answerability(
                score=decided.score, threshold=decided.threshold, scorer=decided.scorer
            )
        )
    return message


def answer_result_from_wire(message: apb.AnswerResponse) -> AnswerResult:
    """The domain result; ``InvalidMessage`` when the response breaks the contract."""
    search = search_result_from_wire(message.search)
    answer: GroundedAnswer | None = None
    degraded: Degraded | None = None
    outcome = message.WhichOneof("outcome")
    if outcome == "answer":
        answer = GroundedAnswer(
            generator=message.answer.generator,
            segments=tuple(
                CitedSegment(
                    text=s.text, citations=tuple(citation_from_wire(c) for c in s.citations)
                )
                for s in message.answer.segments
            ),
            limited=message.answer.limited,
        )
    elif outcome == "degraded":
        reason = _REASONS.get(message.degraded.reason)
        if reason is None:
            raise InvalidMessage(f"unknown degraded reason {message.degraded.reason}")
        degraded = Degraded(reason, message.degraded.detail)
    else:
        raise InvalidMessage("an answer response has neither an answer nor a degraded reason")
    manifest = (
        _manifest_from_wire(message.manifest, search) if message.HasField("manifest") else None
    )
    generation = None
    if message.HasField("generation"):
        g = message.generation
        generation = GenerationRecord(
            generator=g.generator,
            model=g.model,
            prompt_version=g.prompt_version,
            prompt_sha256=g.prompt_sha256,
            raw_sha256=g.raw_sha256,
            attempts=g.attempts,
            cached=g.cached,
            shared=g.shared,
            support_checker=g.support_checker,
            support_policy=g.support_policy,
        )
    return AnswerResult(
        answer_id=message.answer_id,
        request_id=message.request_id,
        search=search,
        answer=answer,
        degraded=degraded,
        manifest=manifest,
        generation=generation,
        answerability=(
            _answerability_from_wire(message.answerability)
            if message.HasField("answerability")
            else None
        ),
    )


def _answerability_from_wire(message: apb.Answerability) -> Answerability:
    try:
        return Answerability(message.score, message.threshold, message.scorer)
    except InvalidValue as exc:
        raise InvalidMessage(str(exc)) from None


def _manifest_from_wire(message: apb.Manifest, search: SearchResult) -> Manifest:
    by_id = {e.evidence_id: e for e in search.results}
    entries: list[ManifestEntry] = []
    evidence: list[ContextEvidence] = []
    for m in message.entries:
        found = by_id.get(m.evidence_id)
        if found is None:
            raise InvalidMessage(f"manifest ref {m.ref} names evidence the search did not return")
        entries.append(
            ManifestEntry(
                ref=m.ref,
                evidence_id=m.evidence_id,
                source_id=m.source_id,
                version=m.version,
                chunk_id=m.chunk_id,
                content_sha256=m.content_sha256,
            )
        )
        evidence.append(ContextEvidence(found))
    return Manifest(entries=tuple(entries), sha256=message.sha256, evidence=tuple(evidence))
