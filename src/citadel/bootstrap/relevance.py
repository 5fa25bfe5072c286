"""Which relevance scorer answers run with: ``CITADEL_RELEVANCE`` (docs/relevance.md).

``model`` (the default) is the packaged cross-encoder, loaded here, at once, so that
a missing or altered file is found when the services are built and never in the
middle of an answer; it then falls back to ``lexical`` with one warning per process
(the reason in it). ``lexical`` is the model-free scorer; ``off`` is no scorer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from citadel.adapters.relevance import (
    CrossEncoderRelevance,
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
) -> CrossEncoderRelevance | LexicalRelevance | None:
    """The scorer ``settings.relevance`` names; ``None`` for ``off``.

    Both scorers are ``RelevanceScorer`` ports with a ``threshold``: the shipped
    answerability threshold on their own scores. ``model`` builds the cross-encoder
    (tests pass one that fails); it is loaded before it is returned.
    """
    if settings.relevance == "off":
        return None
    if settings.relevance == "lexical":
        return LexicalRelevance()
    if settings.relevance != "model":
        raise ConfigError(
            f"CITADEL_RELEVANCE must be model, lexical or off, not {settings.relevance!r}"
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
    return scorer
