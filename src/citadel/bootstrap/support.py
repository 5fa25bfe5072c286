"""Which support checker answers run with: ``CITADEL_SUPPORT_CHECKER`` (docs/support.md).

``entailment`` (the default) is the packaged three-way cross-encoder, loaded here, at
once, so that a missing or altered file is found when the services are built and
never in the middle of an answer; it then falls back to ``features`` with one
warning per process (the reason in it). ``features`` is the lexical features and
static word-piece alignment under the learned combiner: no transformer pass.

``CITADEL_SUPPORT_JUDGE`` adds the span-support judge on top (``judged``): answers are
checked by the local checker and then the judge; an audit replay recomputes with the
local checker and applies the recorded verdicts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from citadel.adapters.generators.contract import GeneratorConfigError
from citadel.adapters.support import default_checker
from citadel.adapters.support.entailment import EntailmentSupportChecker
from citadel.adapters.support.judge import JudgedSupportChecker, SpanJudge
from citadel.app.ports.support import SupportChecker
from citadel.bootstrap.fallback import alternatives, built_or_fallback, loaded
from citadel.config import ConfigError, Settings
from citadel.domain.secrets import SecretStr

log = logging.getLogger("citadel.bootstrap.support")

_warned: set[str] = set()
"""Fallback reasons already logged in this process (each one once)."""

SupportBuilder = Callable[[], SupportChecker]

SUPPORT_CHECKERS: Mapping[str, SupportBuilder] = {
    "entailment": lambda: loaded(EntailmentSupportChecker()),
    "features": default_checker,
}
"""``CITADEL_SUPPORT_CHECKER``'s choices (``families.py`` says how the settings learn
them); a checker with a model loads it here and raises ``ModelUnavailable`` when it
cannot, and ``FALLBACK`` is built instead."""
FALLBACK: SupportBuilder = default_checker


def support_checker(
    settings: Settings, *, checkers: Mapping[str, SupportBuilder] = SUPPORT_CHECKERS
) -> SupportChecker:
    """The checker ``settings.support_checker`` names in ``checkers`` (tests pass a
    table whose model fails), loaded before it is returned."""
    build = checkers.get(settings.support_checker)
    if build is None:
        raise ConfigError(
            f"CITADEL_SUPPORT_CHECKER must be {alternatives(checkers)},"
            f" not {settings.support_checker!r}"
        )
    return built_or_fallback(
        build,
        FALLBACK,
        warned=_warned,
        log=log,
        message=f"the {settings.support_checker} model cannot be used,"
        " checking support with %s instead: %s",
    )


def judged(settings: Settings, local: SupportChecker) -> SupportChecker:
    """``local`` with the judge ``settings.support_judge`` names on top, or ``local``."""
    if not settings.support_judge:
        return local
    base_url = settings.support_judge_base_url or settings.llm.base_url
    if not base_url:
        raise ConfigError(
            "CITADEL_SUPPORT_JUDGE needs a provider: set CITADEL_SUPPORT_JUDGE_BASE_URL"
            " or CITADEL_LLM_BASE_URL"
        )
    try:
        judge = SpanJudge(
            base_url,
            settings.support_judge,
            judge_key(settings),
            deadline_s=settings.support_judge_deadline_s,
            concurrency=settings.support_judge_concurrency,
            ca_file=settings.llm.ca_file,
        )
    except GeneratorConfigError as exc:
        raise ConfigError(f"CITADEL_SUPPORT_JUDGE: {exc}") from None
    return JudgedSupportChecker(local, judge)


def judge_key(settings: Settings) -> SecretStr:
    """The judge's own key; without one, the LLM's key only when the judge is at the
    LLM's provider: a key is never sent to a provider it was not issued for."""
    if settings.support_judge_api_key.get_secret_value():
        return settings.support_judge_api_key
    base_url = settings.support_judge_base_url
    if not base_url or base_url.rstrip("/") == settings.llm.base_url.rstrip("/"):
        return settings.llm.api_key
    return SecretStr("")
