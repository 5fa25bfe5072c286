"""The model-free relevance scorer: the share of the question's terms a text holds.

The fallback when the cross-encoder cannot load (``CITADEL_RELEVANCE=model`` with a
missing or altered file), or the choice (``CITADEL_RELEVANCE=lexical``). A question's
content terms (``citadel.domain.text.terms``: no stop words, lightly stemmed) are
counted once each; the share a text contains, without idf (no corpus statistics:
the same pair gets the same score in any library), goes through a fixed logistic,
so the score lies in (0, 1) and the threshold 0.5 means half the terms. Coarse by
design: it cannot tell a passage that answers from one that only talks about the
same things, which is what the learned scorer is for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from citadel.domain.text import terms

STEEPNESS = 10.0
MIDPOINT = 0.5
"""``sigmoid(STEEPNESS * (share - MIDPOINT))``: share 0 scores 0.007, all terms 0.993."""
THRESHOLD = 0.5
"""The answerability threshold that reads as "half the question's terms"."""


class LexicalRelevance:
    """The RelevanceScorer port without a model: deterministic, thread-safe (no state)."""

    name = "relevance-lexical/1"
    threshold = THRESHOLD

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        wanted = frozenset(terms(question))
        return [self._one(wanted, text) for text in texts]

    @staticmethod
    def _one(wanted: frozenset[str], text: str) -> float:
        if not wanted or not text.strip():
            return 0.0
        share = len(wanted.intersection(terms(text))) / len(wanted)
        return 1.0 / (1.0 + math.exp(-STEEPNESS * (share - MIDPOINT)))
