"""What the ask page was asked: the question and its filters, from a form or a permalink.

The same fields arrive as a form post (``question``) and as a permalink's query
string (``q``), so an answer can be reloaded, bookmarked and shared: ``/ask?q=…``
with ``source``, ``tag``, ``year_from`` and ``year_to``. Filters become the API's
domain ``SearchFilters``; a bad year is a message for the reader, not an error page.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from citadel.app.answer import AnswerRequest
from citadel.domain.request_defaults import ANSWER_RESULTS
from citadel.domain.search import SearchFilters, SearchRequest

MAX_QUESTION = 2000
MAX_FIELD = 256
RESULTS = ANSWER_RESULTS.default
"""Search results an answer page considers (and lists as evidence): every surface's."""

_YEAR = re.compile(r"-?\d{1,4}")


@dataclass(frozen=True, slots=True)
class AskQuery:
    question: str = ""
    source: str = ""
    tag: str = ""
    year_from: str = ""
    year_to: str = ""

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> AskQuery:
        """From form fields or query parameters; values are trimmed, overlong ones cut."""

        def get(name: str, limit: int = MAX_FIELD) -> str:
            return str(fields.get(name, "")).strip()[:limit]

        question = fields.get("question", fields.get("q", ""))
        return cls(
            question=str(question).strip()[: MAX_QUESTION + 1],
            source=get("source"),
            tag=get("tag"),
            year_from=get("year_from", 8),
            year_to=get("year_to", 8),
        )

    @property
    def filtered(self) -> bool:
        return bool(self.source or self.tag or self.year_from or self.year_to)

    def problem(self) -> str | None:
        """What is wrong with the query, in the reader's words; None when it can be asked."""
        if not self.question or len(self.question) > MAX_QUESTION:
            return f"Ask a question of 1 to {MAX_QUESTION} characters."
        for label, value in (("from", self.year_from), ("to", self.year_to)):
            if value and not _YEAR.fullmatch(value):
                return f"Years are whole numbers such as 1999; “{value}” (year {label}) is not."
        low, high = _year(self.year_from), _year(self.year_to)
        if low is not None and high is not None and low > high:
            return f"The year range runs backwards: from {low} to {high}."
        return None

    def request(self) -> AnswerRequest:
        """The answer request; only for a query without a ``problem``."""
        filters = SearchFilters(
            source_ids=frozenset({self.source}) if self.source else frozenset(),
            tags_any=frozenset({self.tag}) if self.tag else frozenset(),
            year_min=_year(self.year_from),
            year_max=_year(self.year_to),
        )
        return AnswerRequest(SearchRequest(query=self.question, limit=RESULTS, filters=filters))

    @property
    def permalink(self) -> str:
        """``/ask?q=…`` with the filters that are set: this answer, reloadable and shareable."""
        pairs = [("q", self.question)]
        pairs += [
            (name, value)
            for name, value in (
                ("source", self.source),
                ("tag", self.tag),
                ("year_from", self.year_from),
                ("year_to", self.year_to),
            )
            if value
        ]
        return "/ask?" + urlencode(pairs)

    @property
    def filter_note(self) -> str:
        """The filters in a few words, for the recent questions' list."""
        parts = []
        if self.source:
            parts.append(f"book {self.source}")
        if self.tag:
            parts.append(f"tag {self.tag}")
        if self.year_from or self.year_to:
            parts.append(f"years {self.year_from or '…'}–{self.year_to or '…'}")
        return ", ".join(parts)


def _year(value: str) -> int | None:
    return int(value) if value and _YEAR.fullmatch(value) else None
