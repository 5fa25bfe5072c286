"""A support checker fake: quotations are found, everything else is looked up in a table.

It lets a test say which segment the passages support without depending on a
learned checker's weights; what it returns obeys the port's contract (a
quotation that states something is ``verbatim`` with its span, scores lie in [0, 1]).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from citadel.app.ports.support import JudgeBudget
from citadel.domain.statement import is_statement
from citadel.domain.support import Support, SupportLabel

_SPACE = re.compile(r"\s+")
_SCORES = {"supported": 0.8, "partial": 0.5}


class TableSupport:
    name = "table/1"

    def __init__(
        self,
        labels: Mapping[str, SupportLabel] | None = None,
        default: SupportLabel = SupportLabel.SUPPORTED,
        *,
        by_passage: Mapping[tuple[str, str], SupportLabel] | None = None,
    ) -> None:
        """``labels`` by segment text; ``by_passage`` by (segment text, a word of the
        passage) first, for a segment whose citations disagree."""
        self._labels = dict(labels or {})
        self._by_passage = dict(by_passage or {})
        self._default = default
        self.pairs: list[tuple[str, str]] = []

    def check(
        self, pairs: Sequence[tuple[str, str]], *, budget: JudgeBudget | None = None
    ) -> list[Support]:
        self.pairs.extend(pairs)
        return [self._one(segment, passage) for segment, passage in pairs]

    def _one(self, segment: str, passage: str) -> Support:
        found = [
            label
            for (text, word), label in self._by_passage.items()
            if text == segment and word in passage
        ]
        if found:
            return Support(_SCORES.get(found[0].value, 0.1), found[0])
        if segment in self._labels:
            label = self._labels[segment]
            return Support(_SCORES.get(label.value, 0.1), label)
        start = passage.find(segment)
        if segment and start >= 0 and is_statement(segment):
            return Support(1.0, SupportLabel.VERBATIM, (start, start + len(segment)))
        return Support(0.8 if self._default is SupportLabel.SUPPORTED else 0.1, self._default)
