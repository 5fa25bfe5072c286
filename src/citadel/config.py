"""Settings: the one place the environment is read.

``Settings.from_env(os.environ)`` builds one frozen object from the variables
declared in ``citadel.settings_table`` (which also gives every default here); it
fails fast with a clear message on a malformed value, and logs a warning for a
``CITADEL_*`` variable that is no setting (naming the one it resembles). Secrets
never appear in its repr.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from citadel.adapters.user_dirs import default_home
from citadel.domain.errors import InvalidValue
from citadel.domain.fusion import FusionPolicy
from citadel.domain.limits import Limits
from citadel.domain.secrets import SecretStr
from citadel.setting_choices import EMBEDDERS, GENERATORS
from citadel.setting_kinds import ConfigError, is_postgres_url
from citadel.settings_http import COOKIE_SECURITY
from citadel.settings_table import (
    GROUPS,
    SETTINGS,
    cli_default,
    default_of,
    unknown_variables,
)

log = logging.getLogger("citadel.config")

__all__ = [
    "COOKIE_SECURITY",
    "EMBEDDERS",
    "GENERATORS",
    "ConfigError",
    "HttpSettings",
    "LlmSettings",
    "OidcSettings",
    "RenderSettings",
    "Settings",
    "cli_default",
]


@dataclass(frozen=True, slots=True)
class LlmSettings:
    """Where the OpenAI-compatible provider is; the key never shows in a repr."""

    base_url: str = default_of("llm.base_url")
    model: str = default_of("llm.model")
    api_key: SecretStr = field(default=default_of("llm.api_key"))
    ca_file: Path | None = field(default=default_of("llm.ca_file"))


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """The HTTP edge (``citadel serve``); the session key never shows in a repr.

    What each field means is the help of its variable in ``citadel.settings_table``.
    """

    rate_per_minute: int = default_of("http.rate_per_minute")
    cookie_secure: str = default_of("http.cookie_secure")
    session_secret: SecretStr = field(default=default_of("http.session_secret"))
    """Empty means a random key per process (sessions end on restart)."""
    session_ttl_s: int = default_of("http.session_ttl_s")
    deadline_s: float = default_of("http.deadline_s")
    max_json_bytes: int = default_of("http.max_json_bytes")
    trusted_proxies: tuple[str, ...] = default_of("http.trusted_proxies")
    image_concurrency: int = default_of("http.image_concurrency")
    image_rate_per_minute: int = default_of("http.image_rate_per_minute")


@dataclass(frozen=True, slots=True)
class OidcSettings:
    """Sign-in through an OpenID provider (``settings_oidc``); the secret never shows."""

    issuer: str = default_of("oidc.issuer")
    client_id: str = default_of("oidc.client_id")
    client_secret: SecretStr = field(default=default_of("oidc.client_secret"))
    scopes: str = default_of("oidc.scopes")
    groups_claim: str = default_of("oidc.groups_claim")
    tenant_claim: str = default_of("oidc.tenant_claim")
    label: str = default_of("oidc.label")

    @property
    def enabled(self) -> bool:
        return bool(self.issuer and self.client_id)


@dataclass(frozen=True, slots=True)
class RenderSettings:
    """The page-render pool's bounds; each field's meaning is in ``settings_render``."""

    workers: int = default_of("render.workers")
    queue: int = default_of("render.queue")
    timeout_s: float = default_of("render.timeout_s")
    memory_mb: int = default_of("render.memory_mb")
    niceness: int = default_of("render.niceness")
    remember_s: float = default_of("render.remember_s")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable; each field's variable and meaning are in the settings table."""

    home: Path = field(default_factory=default_home)
    db: str = default_of("db")
    generator: str = default_of("generator")
    support_policy: str = default_of("support_policy")
    support_checker: str = default_of("support_checker")
    """``entailment`` or ``features`` (``bootstrap/support.py``)."""
    support_judge: str = default_of("support_judge")
    """The judge's model; empty: no judge (``bootstrap/support.py``)."""
    support_judge_base_url: str = default_of("support_judge_base_url")
    support_judge_api_key: SecretStr = field(default=default_of("support_judge_api_key"))
    """Empty: the LLM's key when the judge is at the LLM's provider, else none."""
    support_judge_deadline_s: float = default_of("support_judge_deadline_s")
    support_judge_concurrency: int = default_of("support_judge_concurrency")
    answerability_threshold: float | None = default_of("answerability_threshold")
    """None: the relevance scorer's own threshold (``bootstrap._answerability``)."""
    answerability_passages: int = default_of("answerability_passages")
    relevance: str = default_of("relevance")
    """The relevance scorer: ``model``, ``lexical`` or ``off`` (``bootstrap/relevance.py``)."""
    tenant: str = default_of("tenant")
    limits: Limits = field(default_factory=Limits)
    max_file_bytes: int = default_of("max_file_bytes")
    max_pages: int = default_of("max_pages")
    retain_versions: int = default_of("retain_versions")
    originals_cache_bytes: int = default_of("originals_cache_bytes")
    embedder: str = default_of("embedder")
    embedder_threads: int | None = default_of("embedder_threads")
    """None: the embedder chooses."""
    fusion: FusionPolicy = field(default_factory=FusionPolicy)
    bm25_weights: tuple[float, float, float] = default_of("bm25_weights")
    search_candidates: int = default_of("search_candidates")
    max_term_share: float = default_of("max_term_share")
    hnsw_min_vectors: int = default_of("hnsw_min_vectors")
    answer_cache_size: int = default_of("answer_cache_size")
    answer_cache_ttl_s: float = default_of("answer_cache_ttl_s")
    circuit_failures: int = default_of("circuit_failures")
    circuit_cooldown_s: float = default_of("circuit_cooldown_s")
    link_allowed_hosts: str = default_of("link_allowed_hosts")
    link_secret: SecretStr = field(default=default_of("link_secret"))
    """Empty means a key kept in ``$CITADEL_HOME/viewer.key``."""
    public_url: str = default_of("public_url")
    """The server's public base URL (normalised, no trailing slash); empty: none."""
    otel_endpoint: str = default_of("otel_endpoint")
    """Where spans are sent (OTLP/HTTP); empty: where the standard variables say, if any."""
    otel_exporter_endpoint: str = default_of("otel_exporter_endpoint")
    otel_traces_endpoint: str = default_of("otel_traces_endpoint")
    """The standard endpoints: only whether one is set counts here, as the SDK's exporter
    reads the URL itself (``CITADEL_OTEL_ENDPOINT`` wins over both)."""
    otel_sdk_disabled: bool = default_of("otel_sdk_disabled")
    """``OTEL_SDK_DISABLED=true``: no tracing, whatever endpoint is set."""

    @property
    def otel_standard_endpoint(self) -> bool:
        """Whether a standard OTLP endpoint variable is set (not empty)."""
        return bool(self.otel_traces_endpoint or self.otel_exporter_endpoint)

    llm: LlmSettings = field(default_factory=LlmSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    oidc: OidcSettings = field(default_factory=OidcSettings)
    render: RenderSettings = field(default_factory=RenderSettings)

    @property
    def db_path(self) -> Path:
        return Path(self.db) if self.db else self.home / "citadel.db"

    @property
    def postgres_url(self) -> str | None:
        """The PostgreSQL database ``CITADEL_DB`` names, or None (a SQLite file)."""
        return self.db if is_postgres_url(self.db) else None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Every variable of the settings table, parsed and checked in table order."""
        for name, like in unknown_variables(env):
            # Not refused (scripts and shells export their own), but never silent.
            hint = f"; did you mean {like}?" if like else ""
            log.warning("%s is not a citadel setting and changes nothing%s", name, hint)
        values: dict[str, dict[str, Any]] = {group: {} for group in GROUPS}
        for setting in SETTINGS:
            values[setting.group][setting.attribute] = setting.read(env)
        try:
            fusion = FusionPolicy(**values["fusion"])
        except InvalidValue as exc:
            raise ConfigError(f"fusion settings: {exc}") from None
        _check_otel_endpoint(values[""]["otel_endpoint"])
        top = values[""]
        top["support_judge_api_key"] = read_key(
            "CITADEL_SUPPORT_JUDGE_API_KEY",
            top["support_judge_api_key"],
            top.pop("support_judge_api_key_file"),
        )
        return cls(
            **top,
            limits=Limits(**values["limits"]),
            fusion=fusion,
            llm=_llm(**values["llm"]),
            http=HttpSettings(**values["http"]),
            oidc=_oidc(OidcSettings(**values["oidc"])),
            render=RenderSettings(**values["render"]),
        )

    def with_overrides(self, **changes: object) -> Settings:
        """CLI flags win over the environment; None means "not given"."""
        given = {k: v for k, v in changes.items() if v is not None}
        if "generator" in given and given["generator"] not in GENERATORS:
            raise ConfigError(f"--generator must be one of: {', '.join(GENERATORS)}")
        settings = replace(self, **given)  # type: ignore[arg-type]
        if settings.generator == "openai" and not (settings.llm.base_url and settings.llm.model):
            raise ConfigError(
                "the openai generator needs CITADEL_LLM_BASE_URL and CITADEL_LLM_MODEL"
            )
        return settings


def _check_otel_endpoint(url: str) -> None:
    # The URL is not echoed: a collector's URL may carry a user and password.
    parts = urlsplit(url)
    if url and (parts.scheme not in ("http", "https") or not parts.hostname):
        raise ConfigError("CITADEL_OTEL_ENDPOINT must be an http(s) URL, like http://host:4318")


def _llm(
    *, base_url: str, model: str, api_key: SecretStr, api_key_file: str, ca_file: Path | None
) -> LlmSettings:
    """The key comes from CITADEL_LLM_API_KEY or from the file CITADEL_LLM_API_KEY_FILE names."""
    key = read_key("CITADEL_LLM_API_KEY", api_key, api_key_file)
    return LlmSettings(base_url=base_url, model=model, api_key=key, ca_file=ca_file)


def read_key(name: str, value: SecretStr, file: str) -> SecretStr:
    """A provider key from the variable ``name`` or from the file ``name``_FILE names
    (not both), stripped: every key takes this one path."""
    key = value.get_secret_value()
    if key and file:
        raise ConfigError(f"set {name} or {name}_FILE, not both")
    if file:
        try:
            key = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{name}_FILE: cannot read {file}: {exc.strerror}") from None
    return SecretStr(key.strip())


def _oidc(settings: OidcSettings) -> OidcSettings:
    """Half a provider is a mistake worth saying at start-up, not at the first sign-in."""
    if bool(settings.issuer) != bool(settings.client_id):
        raise ConfigError(
            "set both CITADEL_OIDC_ISSUER and CITADEL_OIDC_CLIENT_ID for single sign-on"
            " (or neither)"
        )
    if settings.issuer:
        parts = urlsplit(settings.issuer)
        host = parts.hostname or ""
        if parts.scheme != "https" and host not in ("localhost", "127.0.0.1", "::1"):
            raise ConfigError("CITADEL_OIDC_ISSUER must be an https:// URL (http only to loopback)")
    return settings
