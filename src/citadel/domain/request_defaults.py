"""What a caller gets when it does not say: the result counts every edge shares.

The CLI's options, the HTTP API's bodies, the web UI's ask form and the MCP tools'
arguments read their defaults and ranges here, so a question asked without a
``limit`` considers as many passages on every surface:

| request | default | range |
|---|---|---|
| a search: results | 10 | 1–100 (``MAX_REQUEST_LIMIT``) |
| an answer: search results it considers | 20 | 1–50 (CLI, MCP); 1–100 (HTTP API) |
| an answer: evidence score floor | 0 | 0–1 |

(The HTTP API took answer limits up to 100 before the others settled on 50; it still
does, for its callers.) The evidence selected from those results is bounded again
by ``Limits`` (``max_evidence``), whatever the count.
"""

from __future__ import annotations

from dataclasses import dataclass

from citadel.domain.errors import InvalidValue
from citadel.domain.search import MAX_REQUEST_LIMIT


@dataclass(frozen=True, slots=True)
class Count:
    """A count a caller may give: its default, and the range it is taken in."""

    default: int
    low: int
    high: int

    def __post_init__(self) -> None:
        if not 1 <= self.low <= self.default <= self.high:
            raise InvalidValue("a count's default lies in its range, which starts at 1")


SEARCH_RESULTS = Count(default=10, low=1, high=MAX_REQUEST_LIMIT)
"""Results of ``search`` (CLI, ``POST /v1/search``, MCP ``search``)."""

ANSWER_RESULTS = Count(default=20, low=1, high=50)
"""Search results an answer considers (CLI ``ask``, the web UI, ``POST /v1/answer``'s
default, MCP ``ask``)."""

EVIDENCE_FLOOR = 0.0
"""``minimum_evidence_score`` when none is given: every passage found may be evidence."""
