# Generated from proto/citadel/v1/*.proto by grpcio-tools: do not edit.
# Regenerate with `make proto` (scripts/gen_proto.py).
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SearchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEARCH_MODE_UNSPECIFIED: _ClassVar[SearchMode]
    SEARCH_MODE_HYBRID: _ClassVar[SearchMode]
    SEARCH_MODE_LEXICAL: _ClassVar[SearchMode]
    SEARCH_MODE_DENSE: _ClassVar[SearchMode]
SEARCH_MODE_UNSPECIFIED: SearchMode
SEARCH_MODE_HYBRID: SearchMode
SEARCH_MODE_LEXICAL: SearchMode
SEARCH_MODE_DENSE: SearchMode

class SearchFilters(_message.Message):
    __slots__ = ("source_ids", "authors", "tags_any", "tags_all", "year_min", "year_max", "section_prefix")
    SOURCE_IDS_FIELD_NUMBER: _ClassVar[int]
    AUTHORS_FIELD_NUMBER: _ClassVar[int]
    TAGS_ANY_FIELD_NUMBER: _ClassVar[int]
    TAGS_ALL_FIELD_NUMBER: _ClassVar[int]
    YEAR_MIN_FIELD_NUMBER: _ClassVar[int]
    YEAR_MAX_FIELD_NUMBER: _ClassVar[int]
    SECTION_PREFIX_FIELD_NUMBER: _ClassVar[int]
    source_ids: _containers.RepeatedScalarFieldContainer[str]
    authors: _containers.RepeatedScalarFieldContainer[str]
    tags_any: _containers.RepeatedScalarFieldContainer[str]
    tags_all: _containers.RepeatedScalarFieldContainer[str]
    year_min: int
    year_max: int
    section_prefix: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, source_ids: _Optional[_Iterable[str]] = ..., authors: _Optional[_Iterable[str]] = ..., tags_any: _Optional[_Iterable[str]] = ..., tags_all: _Optional[_Iterable[str]] = ..., year_min: _Optional[int] = ..., year_max: _Optional[int] = ..., section_prefix: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "limit", "filters", "mode")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    query: str
    limit: int
    filters: SearchFilters
    mode: SearchMode
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ..., filters: _Optional[_Union[SearchFilters, _Mapping]] = ..., mode: _Optional[_Union[SearchMode, str]] = ...) -> None: ...

class Evidence(_message.Message):
    __slots__ = ("evidence_id", "source_id", "version", "chunk_id", "title", "author", "chapter", "section", "section_path", "page_start", "page_end", "page_label_start", "page_label_end", "score", "passage", "content_sha256")
    EVIDENCE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    CHAPTER_FIELD_NUMBER: _ClassVar[int]
    SECTION_FIELD_NUMBER: _ClassVar[int]
    SECTION_PATH_FIELD_NUMBER: _ClassVar[int]
    PAGE_START_FIELD_NUMBER: _ClassVar[int]
    PAGE_END_FIELD_NUMBER: _ClassVar[int]
    PAGE_LABEL_START_FIELD_NUMBER: _ClassVar[int]
    PAGE_LABEL_END_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    PASSAGE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SHA256_FIELD_NUMBER: _ClassVar[int]
    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    title: str
    author: str
    chapter: str
    section: str
    section_path: _containers.RepeatedScalarFieldContainer[str]
    page_start: int
    page_end: int
    page_label_start: str
    page_label_end: str
    score: float
    passage: str
    content_sha256: str
    def __init__(self, evidence_id: _Optional[str] = ..., source_id: _Optional[str] = ..., version: _Optional[int] = ..., chunk_id: _Optional[str] = ..., title: _Optional[str] = ..., author: _Optional[str] = ..., chapter: _Optional[str] = ..., section: _Optional[str] = ..., section_path: _Optional[_Iterable[str]] = ..., page_start: _Optional[int] = ..., page_end: _Optional[int] = ..., page_label_start: _Optional[str] = ..., page_label_end: _Optional[str] = ..., score: _Optional[float] = ..., passage: _Optional[str] = ..., content_sha256: _Optional[str] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("query", "results")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    query: str
    results: _containers.RepeatedCompositeFieldContainer[Evidence]
    def __init__(self, query: _Optional[str] = ..., results: _Optional[_Iterable[_Union[Evidence, _Mapping]]] = ...) -> None: ...
