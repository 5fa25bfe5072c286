# Generated from proto/citadel/v1/*.proto by grpcio-tools: do not edit.
# Regenerate with `make proto` (scripts/gen_proto.py).
from citadel.wire.gen import retrieval_pb2 as _retrieval_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LinkState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LINK_STATE_UNSPECIFIED: _ClassVar[LinkState]
    LINK_STATE_CANONICAL: _ClassVar[LinkState]
    LINK_STATE_VIEWER: _ClassVar[LinkState]
    LINK_STATE_UNAVAILABLE: _ClassVar[LinkState]
    LINK_STATE_FORBIDDEN: _ClassVar[LinkState]
    LINK_STATE_DELETED: _ClassVar[LinkState]
    LINK_STATE_SUPERSEDED: _ClassVar[LinkState]

class SupportLabel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUPPORT_LABEL_UNSPECIFIED: _ClassVar[SupportLabel]
    SUPPORT_LABEL_VERBATIM: _ClassVar[SupportLabel]
    SUPPORT_LABEL_SUPPORTED: _ClassVar[SupportLabel]
    SUPPORT_LABEL_PARTIAL: _ClassVar[SupportLabel]
    SUPPORT_LABEL_UNSUPPORTED: _ClassVar[SupportLabel]
    SUPPORT_LABEL_CONTRADICTED: _ClassVar[SupportLabel]

class DegradedReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEGRADED_REASON_UNSPECIFIED: _ClassVar[DegradedReason]
    DEGRADED_REASON_NO_EVIDENCE: _ClassVar[DegradedReason]
    DEGRADED_REASON_GENERATOR_ERROR: _ClassVar[DegradedReason]
    DEGRADED_REASON_GENERATOR_TIMEOUT: _ClassVar[DegradedReason]
    DEGRADED_REASON_GENERATOR_BUSY: _ClassVar[DegradedReason]
    DEGRADED_REASON_INVALID_OUTPUT: _ClassVar[DegradedReason]
    DEGRADED_REASON_UNSUPPORTED: _ClassVar[DegradedReason]
    DEGRADED_REASON_NOT_IN_LIBRARY: _ClassVar[DegradedReason]
LINK_STATE_UNSPECIFIED: LinkState
LINK_STATE_CANONICAL: LinkState
LINK_STATE_VIEWER: LinkState
LINK_STATE_UNAVAILABLE: LinkState
LINK_STATE_FORBIDDEN: LinkState
LINK_STATE_DELETED: LinkState
LINK_STATE_SUPERSEDED: LinkState
SUPPORT_LABEL_UNSPECIFIED: SupportLabel
SUPPORT_LABEL_VERBATIM: SupportLabel
SUPPORT_LABEL_SUPPORTED: SupportLabel
SUPPORT_LABEL_PARTIAL: SupportLabel
SUPPORT_LABEL_UNSUPPORTED: SupportLabel
SUPPORT_LABEL_CONTRADICTED: SupportLabel
DEGRADED_REASON_UNSPECIFIED: DegradedReason
DEGRADED_REASON_NO_EVIDENCE: DegradedReason
DEGRADED_REASON_GENERATOR_ERROR: DegradedReason
DEGRADED_REASON_GENERATOR_TIMEOUT: DegradedReason
DEGRADED_REASON_GENERATOR_BUSY: DegradedReason
DEGRADED_REASON_INVALID_OUTPUT: DegradedReason
DEGRADED_REASON_UNSUPPORTED: DegradedReason
DEGRADED_REASON_NOT_IN_LIBRARY: DegradedReason

class AnswerRequest(_message.Message):
    __slots__ = ("search", "minimum_evidence_score")
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    MINIMUM_EVIDENCE_SCORE_FIELD_NUMBER: _ClassVar[int]
    search: _retrieval_pb2.SearchRequest
    minimum_evidence_score: float
    def __init__(self, search: _Optional[_Union[_retrieval_pb2.SearchRequest, _Mapping]] = ..., minimum_evidence_score: _Optional[float] = ...) -> None: ...

class Link(_message.Message):
    __slots__ = ("state", "href")
    STATE_FIELD_NUMBER: _ClassVar[int]
    HREF_FIELD_NUMBER: _ClassVar[int]
    state: LinkState
    href: str
    def __init__(self, state: _Optional[_Union[LinkState, str]] = ..., href: _Optional[str] = ...) -> None: ...

class Citation(_message.Message):
    __slots__ = ("ref", "evidence_id", "source_id", "version", "chunk_id", "title", "author", "chapter", "section", "pages", "link", "support")
    REF_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    CHAPTER_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    LINK_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_FIELD_NUMBER: _ClassVar[int]
    ref: str
    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    title: str
    author: str
    chapter: str
    section: str
    pages: str
    link: Link
    support: Support
    def __init__(self, ref: _Optional[str] = ..., evidence_id: _Optional[str] = ..., source_id: _Optional[str] = ..., version: _Optional[int] = ..., chunk_id: _Optional[str] = ..., title: _Optional[str] = ..., author: _Optional[str] = ..., chapter: _Optional[str] = ..., section: _Optional[str] = ..., pages: _Optional[str] = ..., link: _Optional[_Union[Link, _Mapping]] = ..., support: _Optional[_Union[Support, _Mapping]] = ...) -> None: ...

class Support(_message.Message):
    __slots__ = ("label", "score", "span_start", "span_end")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    SPAN_START_FIELD_NUMBER: _ClassVar[int]
    SPAN_END_FIELD_NUMBER: _ClassVar[int]
    label: SupportLabel
    score: float
    span_start: int
    span_end: int
    def __init__(self, label: _Optional[_Union[SupportLabel, str]] = ..., score: _Optional[float] = ..., span_start: _Optional[int] = ..., span_end: _Optional[int] = ...) -> None: ...

class Segment(_message.Message):
    __slots__ = ("text", "citations")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CITATIONS_FIELD_NUMBER: _ClassVar[int]
    text: str
    citations: _containers.RepeatedCompositeFieldContainer[Citation]
    def __init__(self, text: _Optional[str] = ..., citations: _Optional[_Iterable[_Union[Citation, _Mapping]]] = ...) -> None: ...

class GroundedAnswer(_message.Message):
    __slots__ = ("generator", "segments", "limited")
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    LIMITED_FIELD_NUMBER: _ClassVar[int]
    generator: str
    segments: _containers.RepeatedCompositeFieldContainer[Segment]
    limited: bool
    def __init__(self, generator: _Optional[str] = ..., segments: _Optional[_Iterable[_Union[Segment, _Mapping]]] = ..., limited: _Optional[bool] = ...) -> None: ...

class Degraded(_message.Message):
    __slots__ = ("reason", "detail")
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    reason: DegradedReason
    detail: str
    def __init__(self, reason: _Optional[_Union[DegradedReason, str]] = ..., detail: _Optional[str] = ...) -> None: ...

class ManifestEntry(_message.Message):
    __slots__ = ("ref", "evidence_id", "source_id", "version", "chunk_id", "content_sha256")
    REF_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    ref: str
    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    content_sha256: str
    def __init__(self, ref: _Optional[str] = ..., evidence_id: _Optional[str] = ..., source_id: _Optional[str] = ..., version: _Optional[int] = ..., chunk_id: _Optional[str] = ..., content_sha256: _Optional[str] = ...) -> None: ...

class Manifest(_message.Message):
    __slots__ = ("sha256", "entries")
    SHA256_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    sha256: str
    entries: _containers.RepeatedCompositeFieldContainer[ManifestEntry]
    def __init__(self, sha256: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[ManifestEntry, _Mapping]]] = ...) -> None: ...

class Generation(_message.Message):
    __slots__ = ("generator", "model", "prompt_version", "prompt_sha256", "raw_sha256", "attempts", "cached", "shared", "support_checker", "support_policy")
    GENERATOR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROMPT_VERSION_FIELD_NUMBER: _ClassVar[int]
    PROMPT_SHA256_FIELD_NUMBER: _ClassVar[int]
    RAW_SHA256_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_CHECKER_FIELD_NUMBER: _ClassVar[int]
    SUPPORT_POLICY_FIELD_NUMBER: _ClassVar[int]
    generator: str
    model: str
    prompt_version: str
    prompt_sha256: str
    raw_sha256: str
    attempts: int
    cached: bool
    shared: bool
    support_checker: str
    support_policy: str
    def __init__(self, generator: _Optional[str] = ..., model: _Optional[str] = ..., prompt_version: _Optional[str] = ..., prompt_sha256: _Optional[str] = ..., raw_sha256: _Optional[str] = ..., attempts: _Optional[int] = ..., cached: _Optional[bool] = ..., shared: _Optional[bool] = ..., support_checker: _Optional[str] = ..., support_policy: _Optional[str] = ...) -> None: ...

class Answerability(_message.Message):
    __slots__ = ("score", "threshold", "scorer")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    SCORER_FIELD_NUMBER: _ClassVar[int]
    score: float
    threshold: float
    scorer: str
    def __init__(self, score: _Optional[float] = ..., threshold: _Optional[float] = ..., scorer: _Optional[str] = ...) -> None: ...

class AnswerResponse(_message.Message):
    __slots__ = ("answer_id", "request_id", "search", "answer", "degraded", "manifest", "generation", "answerability")
    ANSWER_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    ANSWERABILITY_FIELD_NUMBER: _ClassVar[int]
    answer_id: str
    request_id: str
    search: _retrieval_pb2.SearchResponse
    answer: GroundedAnswer
    degraded: Degraded
    manifest: Manifest
    generation: Generation
    answerability: Answerability
    def __init__(self, answer_id: _Optional[str] = ..., request_id: _Optional[str] = ..., search: _Optional[_Union[_retrieval_pb2.SearchResponse, _Mapping]] = ..., answer: _Optional[_Union[GroundedAnswer, _Mapping]] = ..., degraded: _Optional[_Union[Degraded, _Mapping]] = ..., manifest: _Optional[_Union[Manifest, _Mapping]] = ..., generation: _Optional[_Union[Generation, _Mapping]] = ..., answerability: _Optional[_Union[Answerability, _Mapping]] = ...) -> None: ...
