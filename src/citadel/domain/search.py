"""What a search asks and what it finds: filters, the request, ranked evidence."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from citadel.domain.errors import InvalidValue
from citadel.domain.integers import YEAR_MAX, YEAR_MIN, check_int

MAX_REQUEST_LIMIT = 100
"""The most results a caller may ask for, on every surface (HTTP, MCP, gRPC)."""


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Restrictions applied inside retrieval, never after it.

    Empty fields do not restrict. ``authors`` and ``tags_any`` match when the
    source has any of the values; ``tags_all`` when it has every one;
    ``section_prefix`` when a chunk's section path starts with those headings.
    """

    source_ids: frozenset[str] = frozenset()
    authors: frozenset[str] = frozenset()
    tags_any: frozenset[str] = frozenset()
    tags_all: frozenset[str] = frozenset()
    year_min: int | None = None
    year_max: int | None = None
    section_prefix: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("year_min", "year_max"):
            if getattr(self, name) is not None:
                check_int(getattr(self, name), low=YEAR_MIN, high=YEAR_MAX, what=name)
        if (
            self.year_min is not None
            and self.year_max is not None
            and self.year_min > self.year_max
        ):
            raise InvalidValue("year_min is after year_max")

    @property
    def restricts_sources(self) -> bool:
        return bool(
            self.source_ids
            or self.authors
            or self.tags_any
            or self.tags_all
            or self.year_min is not None
            or self.year_max is not None
        )

    def admits_source(
        self, source_id: str, authors: Iterable[str], tags: Iterable[str], year: int | None
    ) -> bool:
        """The source-level part of the filter, for adapters that filter in memory."""
        if self.source_ids and source_id not in self.source_ids:
            return False
        if self.authors and not self.authors & set(authors):
            return False
        tag_set = set(tags)
        if self.tags_any and not self.tags_any & tag_set:
            return False
        if self.tags_all and not self.tags_all <= tag_set:
            return False
        if self.year_min is not None and (year is None or year < self.year_min):
            return False
        return not (self.year_max is not None and (year is None or year > self.year_max))

    def admits_section(self, section_path: Sequence[str]) -> bool:
        prefix = self.section_prefix
        return tuple(section_path[: len(prefix)]) == prefix


class SearchMode(enum.StrEnum):
    HYBRID = "hybrid"
    LEXICAL = "lexical"
    DENSE = "dense"


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """What a caller may ask of retrieval: a query, a result count, filters."""

    query: str
    limit: int = 10
    filters: SearchFilters = SearchFilters()
    mode: SearchMode = SearchMode.HYBRID

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise InvalidValue("limit must be at least 1")


@dataclass(frozen=True, slots=True)
class Evidence:
    """One retrieved chunk, with the stored metadata attribution is built from."""

    evidence_id: str
    source_id: str
    version: int
    chunk_id: str
    title: str
    author: str
    chapter: str
    section: str
    section_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    page_label_start: str | None
    page_label_end: str | None
    score: float
    passage: str
    content_sha256: str
    units: str | None = field(default=None, compare=False, repr=False)
    """The passage's quotable units as cut at ingest (``Chunk.units``), or None."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.score <= 1.0:
            raise InvalidValue(f"evidence score must be normalised to [0, 1], got {self.score}")

    @property
    def pages(self) -> str:
        """Printed page labels as a reader cites them ("17" or "17–18"); physical if unlabeled."""
        start = self.page_label_start or (str(self.page_start) if self.page_start else "")
        end = self.page_label_end or (str(self.page_end) if self.page_end else "")
        if not start:
            return ""
        if not end or end == start:
            return start
        return f"{start}–{end}"


@dataclass(frozen=True, slots=True)
class SearchResult:
    """Ranked evidence, best first. It stands on its own whatever generation does."""

    query: str
    results: tuple[Evidence, ...] = ()
