"""Request bodies: exactly the documented fields, anything else is refused (422).

An answer request is a search and a score floor. Passages, citations, user,
role or tenant fields are unknown fields here, so they are refused with a
message naming them; identity comes only from the credentials.

Types are strict (``entrypoints.inputs``, the rule MCP tool arguments share):
JSON ``true`` is not the integer 1, and an integer field takes no ``5.0`` or ``"5"``.
The body itself is read and parsed by ``bodies`` (duplicate keys and
non-standard JSON are refused there).
"""

from __future__ import annotations

from pydantic import Field

from citadel.app.answer import AnswerRequest
from citadel.domain.integers import YEAR_MAX, YEAR_MIN
from citadel.domain.request_defaults import ANSWER_RESULTS, EVIDENCE_FLOOR, SEARCH_RESULTS
from citadel.domain.search import MAX_REQUEST_LIMIT, SearchFilters, SearchMode, SearchRequest
from citadel.domain.users import Role
from citadel.entrypoints.inputs import StrictInput

_Name = Field(min_length=1, max_length=256)


class FiltersBody(StrictInput):
    """Restrictions applied inside retrieval; empty fields do not restrict."""

    source_ids: list[str] = Field(default_factory=list, max_length=100)
    authors: list[str] = Field(default_factory=list, max_length=100)
    tags_any: list[str] = Field(default_factory=list, max_length=100)
    tags_all: list[str] = Field(default_factory=list, max_length=100)
    year_min: int | None = Field(default=None, ge=YEAR_MIN, le=YEAR_MAX, strict=True)
    year_max: int | None = Field(default=None, ge=YEAR_MIN, le=YEAR_MAX, strict=True)
    section_prefix: list[str] = Field(default_factory=list, max_length=20)

    def domain(self) -> SearchFilters:
        return SearchFilters(
            source_ids=frozenset(self.source_ids),
            authors=frozenset(self.authors),
            tags_any=frozenset(self.tags_any),
            tags_all=frozenset(self.tags_all),
            year_min=self.year_min,
            year_max=self.year_max,
            section_prefix=tuple(self.section_prefix),
        )


class SearchBody(StrictInput):
    """A search: what to look for, how many results, which retrieval, which filters."""

    query: str = Field(min_length=1, max_length=2000)
    limit: int = Field(
        default=SEARCH_RESULTS.default, ge=SEARCH_RESULTS.low, le=SEARCH_RESULTS.high, strict=True
    )
    mode: SearchMode = Field(default=SearchMode.HYBRID, strict=False)
    filters: FiltersBody = Field(default_factory=FiltersBody)

    def domain(self) -> SearchRequest:
        return SearchRequest(
            query=self.query, limit=self.limit, filters=self.filters.domain(), mode=self.mode
        )


class AnswerSearchBody(SearchBody):
    """The search an answer runs: a search, but considering ``ANSWER_RESULTS`` results
    when it names no ``limit``, as every other surface's answer does."""

    limit: int = Field(
        default=ANSWER_RESULTS.default, ge=SEARCH_RESULTS.low, le=MAX_REQUEST_LIMIT, strict=True
    )


class AnswerBody(StrictInput):
    """An answer request: a search and a score floor for evidence — nothing else."""

    search: AnswerSearchBody
    minimum_evidence_score: float = Field(
        default=EVIDENCE_FLOOR, ge=0.0, le=1.0, strict=True, allow_inf_nan=False
    )

    def domain(self) -> AnswerRequest:
        return AnswerRequest(self.search.domain(), self.minimum_evidence_score)


class AclBody(StrictInput):
    """The groups that may read a source, replacing the old ones; empty: the whole tenant."""

    groups: list[str] = Field(max_length=100)


class NewUserBody(StrictInput):
    """A user to register in the admin's own tenant; its token is in the reply, once."""

    name: str = Field(min_length=1, max_length=128)
    role: Role = Field(default=Role.READER, strict=False)
    groups: list[str] = Field(default_factory=list, max_length=100)
