"""Settings: the one place the environment is read.

``Settings.from_env(os.environ)`` builds one frozen object; it fails fast with
a clear message on a malformed value. Secrets never appear in its repr.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from citadel.domain.model import Limits

GENERATORS = ("extractive",)


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


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
        limits = Limits(
            generator_deadline_s=_float(env, "CITADEL_GENERATOR_DEADLINE_S", 30.0),
            max_concurrent_generations=_int(env, "CITADEL_MAX_CONCURRENT_GENERATIONS", 4),
        )
        return cls(
            home=home,
            db=env.get("CITADEL_DB", ""),
            generator=generator,
            tenant=env.get("CITADEL_TENANT", "default"),
            limits=limits,
            max_file_bytes=_int(env, "CITADEL_MAX_FILE_BYTES", 512 * 1024 * 1024),
            max_pages=_int(env, "CITADEL_MAX_PAGES", 5000),
            retain_versions=_int(env, "CITADEL_RETAIN_VERSIONS", 5),
        )

    def with_overrides(self, **changes: object) -> Settings:
        """CLI flags win over the environment; None means "not given"."""
        given = {k: v for k, v in changes.items() if v is not None}
        if "generator" in given and given["generator"] not in GENERATORS:
            raise ConfigError(f"--generator must be one of: {', '.join(GENERATORS)}")
        return replace(self, **given)  # type: ignore[arg-type]


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be at least 1, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not value > 0:
        raise ConfigError(f"{name} must be positive, got {value}")
    return value
