"""Settings: the one place the environment is read.

``Settings.from_env(os.environ)`` builds one frozen object; it fails fast with
a clear message on a malformed value. Secrets never appear in its repr.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from citadel.adapters.generators.openai import SecretStr
from citadel.adapters.sqlite.hnsw import DEFAULT_MIN_VECTORS
from citadel.domain.errors import InvalidValue
from citadel.domain.fusion import FusionPolicy
from citadel.domain.limits import Limits

GENERATORS = ("extractive", "openai")
EMBEDDERS = ("minilm", "minilm-float", "hashing", "none")


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


@dataclass(frozen=True, slots=True)
class LlmSettings:
    """Where the OpenAI-compatible provider is; the key never shows in a repr."""

    base_url: str = ""
    model: str = ""
    api_key: SecretStr = field(default_factory=lambda: SecretStr(""))
    ca_file: Path | None = None


COOKIE_SECURITY = ("auto", "always")


@dataclass(frozen=True, slots=True)
class HttpSettings:
    """The HTTP edge (``citadel serve``); the session key never shows in a repr."""

    rate_per_minute: int = 120
    """Requests per user per minute (a token bucket; bursts up to the same number)."""
    cookie_secure: str = "auto"
    """``auto``: cookies are ``Secure`` except over plain http on loopback (local
    development); ``always``: ``Secure`` everywhere."""
    session_secret: SecretStr = field(default_factory=lambda: SecretStr(""))
    """Signs session cookies; empty means a random key per process (sessions end on restart)."""
    session_ttl_s: int = 8 * 3600
    deadline_s: float = 60.0
    """Each answer request's own deadline (the generator's sits inside it)."""
    max_json_bytes: int = 1024 * 1024
    """The largest JSON request body under ``/v1``; larger ones are refused (413) while
    they arrive, and only after the caller's credentials were accepted."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses (or networks) of reverse proxies whose ``X-Forwarded-For`` and
    ``X-Forwarded-Proto`` are believed; empty: forwarded headers are ignored."""


@dataclass(frozen=True, slots=True)
class Settings:
    home: Path = Path(".citadel")
    db: str = ""
    generator: str = "extractive"
    tenant: str = "default"
    limits: Limits = field(default_factory=Limits)
    max_file_bytes: int = 512 * 1024 * 1024
    max_pages: int = 5000
    retain_versions: int = 5
    embedder: str = "minilm"
    embedder_threads: int | None = None
    fusion: FusionPolicy = field(default_factory=FusionPolicy)
    bm25_weights: tuple[float, float, float] = (2.0, 2.0, 1.0)
    search_candidates: int = 100
    max_term_share: float = 1.0
    hnsw_min_vectors: int = DEFAULT_MIN_VECTORS
    """Dense search goes through an HNSW index from this many vectors (0 = always exact)."""
    answer_cache_size: int = 256
    """Validated answers kept in memory (0 turns the cache off)."""
    answer_cache_ttl_s: float = 3600.0
    circuit_failures: int = 5
    """Consecutive provider failures that open the generator's circuit."""
    circuit_cooldown_s: float = 30.0
    link_allowed_hosts: str = ""
    """Hosts a canonical URL may point at: exact names or ``*.suffix``, comma-separated."""
    link_secret: SecretStr = field(default_factory=lambda: SecretStr(""))
    """Signs viewer links; empty means a key kept in ``$CITADEL_HOME/viewer.key``."""
    llm: LlmSettings = field(default_factory=LlmSettings)
    http: HttpSettings = field(default_factory=HttpSettings)

    @property
    def db_path(self) -> Path:
        return Path(self.db) if self.db else self.home / "citadel.db"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        home = Path(env.get("CITADEL_HOME", ".citadel"))
        generator = env.get("CITADEL_GENERATOR", "extractive").strip().lower()
        if generator not in GENERATORS:
            raise ConfigError(
                f"CITADEL_GENERATOR={generator!r} is not one of: {', '.join(GENERATORS)}"
            )
        embedder = env.get("CITADEL_EMBEDDER", "minilm").strip().lower()
        if embedder not in EMBEDDERS:
            raise ConfigError(
                f"CITADEL_EMBEDDER={embedder!r} is not one of: {', '.join(EMBEDDERS)}"
            )
        try:
            fusion = FusionPolicy(
                method=env.get("CITADEL_FUSION", "weighted").strip().lower(),
                lexical_weight=_float(env, "CITADEL_FUSION_LEXICAL_WEIGHT", 0.4, zero_ok=True),
                dense_weight=_float(env, "CITADEL_FUSION_DENSE_WEIGHT", 0.6, zero_ok=True),
                rrf_k=_int(env, "CITADEL_FUSION_RRF_K", 60),
            )
        except InvalidValue as exc:
            raise ConfigError(f"fusion settings: {exc}") from None
        limits = Limits(
            generator_deadline_s=_float(env, "CITADEL_GENERATOR_DEADLINE_S", 30.0),
            max_concurrent_generations=_int(env, "CITADEL_MAX_CONCURRENT_GENERATIONS", 4),
            max_repairs=_repairs(env),
            max_evidence=_int(env, "CITADEL_MAX_EVIDENCE", 8),
            max_output_tokens=_int(env, "CITADEL_MAX_OUTPUT_TOKENS", 1024),
        )
        return cls(
            home=home,
            db=_db(env),
            generator=generator,
            tenant=env.get("CITADEL_TENANT", "default"),
            limits=limits,
            max_file_bytes=_int(env, "CITADEL_MAX_FILE_BYTES", 512 * 1024 * 1024),
            max_pages=_int(env, "CITADEL_MAX_PAGES", 5000),
            retain_versions=_int(env, "CITADEL_RETAIN_VERSIONS", 5),
            embedder=embedder,
            embedder_threads=_int(env, "CITADEL_EMBEDDER_THREADS", 0) or None,
            fusion=fusion,
            search_candidates=_int(env, "CITADEL_SEARCH_CANDIDATES", 100),
            bm25_weights=_weights(env, "CITADEL_BM25_WEIGHTS", (2.0, 2.0, 1.0)),
            llm=_llm(env),
            max_term_share=_float(env, "CITADEL_MAX_TERM_SHARE", 1.0),
            hnsw_min_vectors=_int(
                env, "CITADEL_HNSW_MIN_VECTORS", DEFAULT_MIN_VECTORS, zero_ok=True
            ),
            answer_cache_size=_int(env, "CITADEL_ANSWER_CACHE_SIZE", 256, zero_ok=True),
            answer_cache_ttl_s=_float(env, "CITADEL_ANSWER_CACHE_TTL_S", 3600.0),
            circuit_failures=_int(env, "CITADEL_CIRCUIT_FAILURES", 5),
            circuit_cooldown_s=_float(env, "CITADEL_CIRCUIT_COOLDOWN_S", 30.0),
            link_allowed_hosts=env.get("CITADEL_LINK_ALLOWED_HOSTS", "").strip(),
            link_secret=_link_secret(env),
            http=_http(env),
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


def _int(env: Mapping[str, str], name: str, default: int, *, zero_ok: bool = False) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < (0 if zero_ok else 1):
        raise ConfigError(f"{name} must be at least {0 if zero_ok else 1}, got {value}")
    return value


def _db(env: Mapping[str, str]) -> str:
    """A SQLite file path. A URL (``postgresql://…``, named in ARCHITECTURE.md for
    scale-out) is refused: there is no such adapter yet, and as a path it would
    quietly become a directory named after the scheme."""
    raw = env.get("CITADEL_DB", "").strip()
    if "://" in raw:
        scheme = raw.split("://", 1)[0]
        raise ConfigError(
            f"CITADEL_DB: {scheme}:// databases are not supported yet; give the path of a"
            " SQLite file (or leave it unset for $CITADEL_HOME/citadel.db)"
        )
    return raw


def _link_secret(env: Mapping[str, str]) -> SecretStr:
    raw = env.get("CITADEL_LINK_SECRET", "").strip()
    if raw and len(raw.encode("utf-8")) < 32:
        raise ConfigError("CITADEL_LINK_SECRET must be at least 32 bytes")
    return SecretStr(raw)


def _http(env: Mapping[str, str]) -> HttpSettings:
    cookie_secure = env.get("CITADEL_HTTP_COOKIE_SECURE", "auto").strip().lower() or "auto"
    if cookie_secure not in COOKIE_SECURITY:
        raise ConfigError(
            f"CITADEL_HTTP_COOKIE_SECURE={cookie_secure!r} is not one of: auto, always"
        )
    secret = env.get("CITADEL_HTTP_SESSION_SECRET", "").strip()
    if secret and len(secret.encode("utf-8")) < 32:
        raise ConfigError("CITADEL_HTTP_SESSION_SECRET must be at least 32 bytes")
    return HttpSettings(
        rate_per_minute=_int(env, "CITADEL_HTTP_RATE_LIMIT", 120),
        cookie_secure=cookie_secure,
        session_secret=SecretStr(secret),
        session_ttl_s=_int(env, "CITADEL_HTTP_SESSION_TTL_S", 8 * 3600),
        deadline_s=_float(env, "CITADEL_HTTP_DEADLINE_S", 60.0),
        max_json_bytes=_int(env, "CITADEL_HTTP_MAX_JSON_BYTES", 1024 * 1024),
        trusted_proxies=_trusted_proxies(env, "CITADEL_HTTP_TRUSTED_PROXIES"),
    )


def _trusted_proxies(env: Mapping[str, str], name: str) -> tuple[str, ...]:
    """Comma-separated IP addresses or networks (``10.0.0.0/8``); no wildcard: trusting
    every peer would let any client choose the address it is rate-limited by."""
    entries: list[str] = []
    for raw in env.get(name, "").split(","):
        part = raw.strip()
        if not part:
            continue
        try:
            network = ipaddress.ip_network(part, strict=False)
        except ValueError:
            raise ConfigError(
                f"{name}: {part!r} is not an IP address or network (like 10.0.0.1 or 10.0.0.0/8)"
            ) from None
        entries.append(str(network.network_address) if network.num_addresses == 1 else str(network))
    return tuple(dict.fromkeys(entries))


def _repairs(env: Mapping[str, str]) -> int:
    raw = env.get("CITADEL_ANSWER_REPAIRS", "").strip()
    if raw in ("", "1"):
        return 1
    if raw == "0":
        return 0
    raise ConfigError(f"CITADEL_ANSWER_REPAIRS must be 0 or 1, got {raw!r}")


def _float(env: Mapping[str, str], name: str, default: float, *, zero_ok: bool = False) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if value < 0 or (value == 0 and not zero_ok) or math.isnan(value):
        raise ConfigError(
            f"{name} must be {'non-negative' if zero_ok else 'positive'}, got {raw!r}"
        )
    return value


def _weights(
    env: Mapping[str, str], name: str, default: tuple[float, float, float]
) -> tuple[float, float, float]:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        values = tuple(float(part) for part in raw.split(","))
    except ValueError:
        raise ConfigError(f"{name} must be three numbers like 4,2,1, got {raw!r}") from None
    if len(values) != 3 or any(v < 0 or math.isnan(v) for v in values) or not any(values):
        raise ConfigError(f"{name} must be three non-negative numbers like 4,2,1, got {raw!r}")
    return (values[0], values[1], values[2])


def _llm(env: Mapping[str, str]) -> LlmSettings:
    key = env.get("CITADEL_LLM_API_KEY", "")
    key_file = env.get("CITADEL_LLM_API_KEY_FILE", "").strip()
    if key and key_file:
        raise ConfigError("set CITADEL_LLM_API_KEY or CITADEL_LLM_API_KEY_FILE, not both")
    if key_file:
        try:
            key = Path(key_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"CITADEL_LLM_API_KEY_FILE: cannot read {key_file}: {exc.strerror}"
            ) from None
    ca_file = env.get("CITADEL_LLM_CA_FILE", "").strip()
    return LlmSettings(
        base_url=env.get("CITADEL_LLM_BASE_URL", "").strip(),
        model=env.get("CITADEL_LLM_MODEL", "").strip(),
        api_key=SecretStr(key.strip()),
        ca_file=Path(ca_file) if ca_file else None,
    )
