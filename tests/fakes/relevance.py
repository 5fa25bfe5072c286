"""A relevance scorer fake: scores looked up in a table, else the share of shared terms.

It lets a test say which passages answer a question without depending on a learned
scorer's weights; what it returns obeys the port's contract (one score in [0, 1] per
text, in order, deterministic, an empty text 0). ``calls`` records every question and
its texts, so a test can assert that the scorer was (or was not) asked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from citadel.domain.text import terms


class TableRelevance:
    name = "table-relevance/1"

    def __init__(self, scores: Mapping[str, float] | None = None) -> None:
        """``scores`` maps a text, or a substring of it, to its score for any question."""
        self._scores = dict(scores or {})
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        self.calls.append((question, tuple(texts)))
        return [self._one(question, text) for text in texts]

    def _one(self, question: str, text: str) -> float:
        if not text.strip():
            return 0.0
        for key, value in self._scores.items():
            if key in text:
                return value
        wanted = set(terms(question))
        if not wanted:
            return 0.0
        return len(wanted & set(terms(text))) / len(wanted)
