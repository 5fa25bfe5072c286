"""What the use cases every entrypoint shares count and time: ingests and searches."""

from __future__ import annotations

from typing import Protocol


class OperationMetrics(Protocol):
    """Ingest and search counts and durations (exposed at /metrics by the HTTP layer).

    Label values are closed sets chosen by the caller: a format, an outcome, a
    refusal code, a search mode; never a path, a query or an id."""

    def ingest(self, fmt: str, outcome: str, seconds: float, reason: str | None = None) -> None:
        """One document ingested: ``fmt`` pdf, epub, html, markdown, text or other;
        ``outcome`` created, updated, unchanged, refused (``reason`` its stable code)
        or failed (an unexpected error)."""
        ...

    def search(self, mode: str, seconds: float) -> None:
        """One search answered, by the mode asked (lexical, dense, hybrid)."""
        ...
