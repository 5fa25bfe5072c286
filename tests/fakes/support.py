"""A support checker fake: quotations are found, everything else is looked up in a table.

It lets a test say which segment the passages support without depending on a
learned checker's weights; what it returns obeys the port's contract (a
quotation is ``verbatim`` with its span, scores lie in [0, 1]).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from citadel.domain.support import Support, SupportLabel

_SPACE = re.compile(r"\s+")


class TableSupport:
    name = "table/1"

    def __init__(
        self,
        labels: Mapping[str, SupportLabel] | None = None,
        default: SupportLabel = SupportLabel.SUPPORTED,
    ) -> None:
        self._labels = dict(labels or {})
        self._default = default
        self.pairs: list[tuple[str, str]] = []

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[Support]:
        self.pairs.extend(pairs)
        return [self._one(segment, passage) for segment, passage in pairs]

    def _one(self, segment: str, passage: str) -> Support:
        if segment in self._labels:
            label = self._labels[segment]
            score = {"supported": 0.8, "partial": 0.5}.get(label.value, 0.1)
            return Support(score, label)
        start = passage.find(segment)
        if segment and start >= 0:
            return Support(1.0, SupportLabel.VERBATIM, (start, start + len(segment)))
        return Support(0.8 if self._default is SupportLabel.SUPPORTED else 0.1, self._default)
