"""Which relevance scorer answers run with: ``CITADEL_RELEVANCE`` (docs/relevance.md).

``model`` (the default) is the packaged cross-encoder blended with the lexical scorer
(``cross-encoder``: the model alone), loaded here, at once, so that
a missing or altered file is found when the services are built and never in the
middle of an answer; it then falls back to ``lexical`` with one warning per process
(the reason in it). ``lexical`` is the model-free scorer; ``off`` is no scorer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from citadel.adapters.relevance import CrossEncoderRelevance, GeometricBlend, LexicalRelevance
from citadel.app.ports import RelevanceScorer
from citadel.bootstrap.fallback import alternatives, built_or_fallback, loaded
from citadel.config import ConfigError, Settings

log = logging.getLogger("citadel.bootstrap.relevance")

_warned: set[str] = set()
"""Fallback reasons already logged in this process (each one once)."""

RelevanceBuilder = Callable[[], RelevanceScorer]

RELEVANCE_SCORERS: Mapping[str, RelevanceBuilder | None] = {
    "model": lambda: GeometricBlend(loaded(CrossEncoderRelevance()), LexicalRelevance()),
    "cross-encoder": lambda: loaded(CrossEncoderRelevance()),
    "lexical": LexicalRelevance,
    "off": None,
}
"""``CITADEL_RELEVANCE``'s choices (``families.py`` says how the settings learn them);
``None`` is no scorer. A scorer with a model loads it here and raises
``ModelUnavailable`` when it cannot, and ``FALLBACK`` is built instead."""
FALLBACK: RelevanceBuilder = LexicalRelevance


def relevance_scorer(
    settings: Settings, *, scorers: Mapping[str, RelevanceBuilder | None] = RELEVANCE_SCORERS
) -> RelevanceScorer | None:
    """The scorer ``settings.relevance`` names in ``scorers``; ``None`` for ``off``.

    Every scorer has a ``threshold``: the shipped answerability threshold on its own
    scores. Tests pass a table whose model fails.
    """
    if settings.relevance not in scorers:
        raise ConfigError(
            f"CITADEL_RELEVANCE must be {alternatives(scorers)}, not {settings.relevance!r}"
        )
    build = scorers[settings.relevance]
    if build is None:
        return None
    return built_or_fallback(
        build,
        FALLBACK,
        warned=_warned,
        log=log,
        message="the relevance model cannot be used, scoring relevance lexically instead (%s): %s",
    )
