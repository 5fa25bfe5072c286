"""Which relevance scorer answers run with: ``CITADEL_RELEVANCE`` (docs/relevance.md).

``model`` (the default) is the packaged cross-encoder blended with the lexical scorer
(``cross-encoder``: the model alone), loaded here, at once, so that
a missing or altered file is found when the services are built and never in the
middle of an answer; it then falls back to ``lexical`` with one warning per process
(the reason in it). ``lexical`` is the model-free scorer; ``off`` is no scorer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from citadel.adapters.relevance import (
    CrossEncoderRelevance,
    GeometricBlend,
    LexicalRelevance,
    RelevanceUnavailable,
)
from citadel.config import ConfigError, Settings

log = logging.getLogger("citadel.bootstrap.relevance")

_warned: set[str] = set()
"""Fallback reasons already logged in this process (each one once)."""


def relevance_scorer(
    settings: Settings,
    *,
    model: Callable[[], CrossEncoderRelevance] = CrossEncoderRelevance,
) -> GeometricBlend | CrossEncoderRelevance | LexicalRelevance | None:
    """The scorer ``settings.relevance`` names; ``None`` for ``off``.

    ``model`` (the default) is the cross-encoder blended with the lexical scorer
    (``GeometricBlend``); ``cross-encoder`` the model alone. Every scorer has a
    ``threshold``: the shipped answerability threshold on its own scores. ``model``
    builds the cross-encoder (tests pass one that fails); it is loaded before it is
    returned.
    """
    if settings.relevance == "off":
        return None
    if settings.relevance == "lexical":
        return LexicalRelevance()
    if settings.relevance not in ("model", "cross-encoder"):
        raise ConfigError(
            "CITADEL_RELEVANCE must be model, cross-encoder, lexical or off,"
            f" not {settings.relevance!r}"
        )
    try:
        scorer = model()
        scorer.load()
    except RelevanceUnavailable as exc:
        reason = str(exc)
        if reason not in _warned:
            _warned.add(reason)
            log.warning(
                "the relevance model cannot be used, scoring relevance lexically instead (%s): %s",
                LexicalRelevance.name,
                reason,
            )
        return LexicalRelevance()
    if settings.relevance == "cross-encoder":
        return scorer
    return GeometricBlend(scorer, LexicalRelevance())
