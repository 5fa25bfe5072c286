"""The support checker adapters (the ``SupportChecker`` port).

``entailment.EntailmentSupportChecker`` is the one the answer path uses by default
(``bootstrap/support.py``: ``CITADEL_SUPPORT_CHECKER``): quotations, then the
packaged three-way cross-encoder. ``default_checker()`` is the ``features`` checker
and the fallback when that model cannot load: quotation detection, the pure
features and MiniLM's static word-piece alignment, combined by the committed
logistic regression (docs/support.md: its time per 8-segment answer). Pass an
embedder (``default_checker(embedder)``) to add its sentence cosine — measurably
more costly. ``lexical_checker()`` needs no model file at all (tests).
"""

from __future__ import annotations

from citadel.adapters.support.checker import (
    FEATURES,
    FeatureSupportChecker,
    VectorCache,
    pair_features,
)
from citadel.adapters.support.combiner import Combiner, load_combiner
from citadel.adapters.support.static_tokens import StaticTokens
from citadel.app.ports import Embedder

_TOKENS = StaticTokens()
"""One table per process: 12 MB of int8 codes, loaded on the first check."""


def default_checker(embedder: Embedder | None = None) -> FeatureSupportChecker:
    """The shipped checker: ``static`` features, or ``embedder`` ones when given one."""
    kind = "embedder" if embedder is not None else "static"
    return FeatureSupportChecker(load_combiner(kind), embedder=embedder, tokens=_TOKENS)


def lexical_checker() -> FeatureSupportChecker:
    """Quotation detection and the pure features only: no model file, for tests."""
    return FeatureSupportChecker(load_combiner("lexical"))


__all__ = [
    "FEATURES",
    "Combiner",
    "FeatureSupportChecker",
    "StaticTokens",
    "VectorCache",
    "default_checker",
    "lexical_checker",
    "load_combiner",
    "pair_features",
]
