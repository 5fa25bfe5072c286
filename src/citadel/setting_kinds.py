"""What a setting is: one environment variable, the kind of value it takes, its default.

A kind's ``parse(name, raw)`` returns the value, or ``None`` for "take the
default" (an empty value, for most kinds), and raises ``ConfigError`` naming the
variable and what it expected. ``show(value)`` writes a default as the README
and the CLI help print it. ``citadel.settings_table`` declares the settings;
only ``citadel.config`` reads them.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from citadel.domain.errors import InvalidValue
from citadel.domain.integers import parse_int
from citadel.domain.secrets import SecretStr

POSTGRES_SCHEMES = ("postgresql", "postgres")


class ConfigError(ValueError):
    """A setting is missing or malformed; the message names the variable."""


class Kind(Protocol):
    def parse(self, name: str, raw: str) -> object | None:
        """The value of ``raw`` (the variable's text), or None for the setting's default."""
        ...

    def show(self, value: object) -> str:
        """``value`` as the documentation prints a default (without markup)."""
        ...


_NONE = "—"


def _plain(value: object) -> str:
    return _NONE if value in (None, "", ()) else str(value)


@dataclass(frozen=True, slots=True)
class Integer:
    minimum: int = 1
    bytes: bool = False
    """A byte count: the documentation shows its size in KiB, MiB or GiB beside it."""
    maximum: int | None = None
    """Default: 10**9 (seconds, counts, limits: past it a value only overflows what uses
    it, as a session TTL of 10**20 s did a sign-out's date), 2**50 for byte counts."""

    def parse(self, name: str, raw: str) -> int | None:
        if raw == "":
            return None
        high = self.maximum or ((1 << 50) if self.bytes else 10**9)
        try:
            return parse_int(raw, low=self.minimum, high=high, what=name)
        except InvalidValue as exc:
            raise ConfigError(str(exc)) from None

    def show(self, value: object) -> str:
        return _plain(value)


def size(value: object) -> str:
    """A byte count in the largest unit that divides it: ``(512 MiB)``; else empty."""
    if isinstance(value, int) and value >= 1024:
        for unit, step in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if value % step == 0:
                return f"({value // step} {unit})"
    return ""


@dataclass(frozen=True, slots=True)
class Number:
    zero_ok: bool = False
    maximum: float | None = None
    """The largest value taken (a probability's ``1``); none by default."""

    def parse(self, name: str, raw: str) -> float | None:
        if raw == "":
            return None
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{name} must be a number, got {raw!r}") from None
        if value < 0 or (value == 0 and not self.zero_ok) or not math.isfinite(value):
            kind = "non-negative" if self.zero_ok else "positive"
            raise ConfigError(f"{name} must be {kind}, got {raw!r}")
        if self.maximum is not None and value > self.maximum:
            raise ConfigError(f"{name} must be at most {self.maximum:g}, got {raw!r}")
        return value

    def show(self, value: object) -> str:
        return f"{value:g}" if isinstance(value, float) else _plain(value)


@dataclass(frozen=True, slots=True)
class Choice:
    """One of a few words, case and surrounding space ignored."""

    choices: tuple[str, ...]
    empty_is_default: bool = False

    def parse(self, name: str, raw: str) -> str | None:
        value = raw.strip().lower()
        if value == "" and self.empty_is_default:
            return None
        if value not in self.choices:
            raise ConfigError(f"{name}={value!r} is not one of: {', '.join(self.choices)}")
        return value

    def show(self, value: object) -> str:
        return _plain(value)


@dataclass(frozen=True, slots=True)
class ZeroOrOne:
    """``0`` or ``1``; empty is the default."""

    def parse(self, name: str, raw: str) -> int | None:
        value = raw.strip()
        if value == "":
            return None
        if value not in ("0", "1"):
            raise ConfigError(f"{name} must be 0 or 1, got {value!r}")
        return int(value)

    def show(self, value: object) -> str:
        return _plain(value)


@dataclass(frozen=True, slots=True)
class TrueWord:
    """``true`` in any case (surrounding space ignored) is true; anything else is false.

    The OpenTelemetry specification's rule for its boolean variables (``OTEL_SDK_DISABLED``),
    which its SDK applies too: a value it would take as false is not refused here."""

    def parse(self, name: str, raw: str) -> bool:
        return raw.strip().lower() == "true"

    def show(self, value: object) -> str:
        return str(value).lower() if isinstance(value, bool) else _plain(value)


@dataclass(frozen=True, slots=True)
class Text:
    """Any text; an empty value is kept (it is not the default)."""

    strip: bool = True

    def parse(self, name: str, raw: str) -> str:
        return raw.strip() if self.strip else raw

    def show(self, value: object) -> str:
        return _plain(value)


@dataclass(frozen=True, slots=True)
class PublicUrl:
    """Where browsers reach the server: an ``http(s)://host[:port][/prefix]`` URL with no
    user, query or fragment; its trailing slashes dropped, so links are ``URL + route``.
    Empty means none (links stay relative routes)."""

    def parse(self, name: str, raw: str) -> str:
        value = raw.strip()
        if not value:
            return ""
        example = "like https://citadel.example.org or http://localhost:8000"
        if any(ch.isspace() or ord(ch) < 0x20 or ch == "\\" for ch in value):
            raise ConfigError(f"{name} must not contain spaces, controls or backslashes")
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 -- raises ValueError for a port out of range
        except ValueError:
            raise ConfigError(f"{name} is not a URL ({example})") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise ConfigError(f"{name} must be an http:// or https:// URL ({example})")
        if not parts.hostname:
            raise ConfigError(f"{name} must name a host ({example})")
        if "@" in parts.netloc:
            raise ConfigError(f"{name} must not carry a user or password")
        if "?" in value or "#" in value:
            raise ConfigError(f"{name} must have no query (?) or fragment (#) ({example})")
        return f"{scheme}://{parts.netloc.lower()}{parts.path.rstrip('/')}"

    def show(self, value: object) -> str:
        return _plain(value)


@dataclass(frozen=True, slots=True)
class Directory:
    """A path taken as written (an empty value is the working directory)."""

    def parse(self, name: str, raw: str) -> Path:
        return Path(raw)

    def show(self, value: object) -> str:
        if isinstance(value, Path) and not value.is_absolute():
            return f"./{value}"
        return _plain(value)


@dataclass(frozen=True, slots=True)
class OptionalFile:
    """A file path; empty means none."""

    def parse(self, name: str, raw: str) -> Path | None:
        value = raw.strip()
        return Path(value) if value else None

    def show(self, value: object) -> str:
        return _plain(value)


@dataclass(frozen=True, slots=True)
class Secret:
    """A key that never shows itself; when given, at least ``min_bytes`` long."""

    min_bytes: int = 32
    strip: bool = True

    def parse(self, name: str, raw: str) -> SecretStr:
        value = raw.strip() if self.strip else raw
        if value and len(value.encode("utf-8")) < self.min_bytes:
            raise ConfigError(f"{name} must be at least {self.min_bytes} bytes")
        return SecretStr(value)

    def show(self, value: object) -> str:
        return _NONE  # never the value, whatever it is


@dataclass(frozen=True, slots=True)
class DatabaseLocation:
    """A SQLite file path, or a ``postgresql://`` (``postgres://``) URL. Any other URL is
    refused: as a path it would quietly become a directory named after the scheme."""

    def parse(self, name: str, raw: str) -> str:
        value = raw.strip()
        if "://" in value:
            scheme = value.split("://", 1)[0]
            if scheme.lower() not in POSTGRES_SCHEMES:
                raise ConfigError(
                    f"{name}: {scheme}:// databases are not supported; give a postgresql://"
                    " URL or the path of a SQLite file (or leave it unset for"
                    " $CITADEL_HOME/citadel.db)"
                )
        return value

    def show(self, value: object) -> str:
        text = str(value)
        if "://" in text and "@" in text:
            # Never a password: postgresql://user:secret@host/db shows user:***.
            scheme, rest = text.split("://", 1)
            credentials, host = rest.rsplit("@", 1)
            if ":" in credentials:
                credentials = credentials.split(":", 1)[0] + ":***"
            text = f"{scheme}://{credentials}@{host}"
        return _plain(text)


def is_postgres_url(value: str) -> bool:
    """Whether a ``DatabaseLocation`` value names a PostgreSQL database."""
    return "://" in value and value.split("://", 1)[0].lower() in POSTGRES_SCHEMES


@dataclass(frozen=True, slots=True)
class Addresses:
    """Comma-separated IP addresses or networks (``10.0.0.0/8``); no wildcard: trusting
    every peer would let any client choose the address it is rate-limited by."""

    def parse(self, name: str, raw: str) -> tuple[str, ...]:
        entries: list[str] = []
        for item in raw.split(","):
            part = item.strip()
            if not part:
                continue
            try:
                network = ipaddress.ip_network(part, strict=False)
            except ValueError:
                raise ConfigError(
                    f"{name}: {part!r} is not an IP address or network"
                    " (like 10.0.0.1 or 10.0.0.0/8)"
                ) from None
            single = network.num_addresses == 1
            entries.append(str(network.network_address) if single else str(network))
        return tuple(dict.fromkeys(entries))

    def show(self, value: object) -> str:
        return ",".join(value) if isinstance(value, tuple) and value else _NONE


@dataclass(frozen=True, slots=True)
class Weights:
    """Three non-negative numbers, not all zero, comma-separated."""

    def parse(self, name: str, raw: str) -> tuple[float, float, float] | None:
        if not raw.strip():
            return None
        try:
            values = tuple(float(part) for part in raw.split(","))
        except ValueError:
            raise ConfigError(f"{name} must be three numbers like 4,2,1, got {raw!r}") from None
        if len(values) != 3 or any(v < 0 or math.isnan(v) for v in values) or not any(values):
            raise ConfigError(f"{name} must be three non-negative numbers like 4,2,1, got {raw!r}")
        return (values[0], values[1], values[2])

    def show(self, value: object) -> str:
        if isinstance(value, tuple):
            return ",".join(f"{v:g}" for v in value)
        return _plain(value)


@dataclass(frozen=True, slots=True)
class Setting:
    """One environment variable; a secret's default is never printed, only described."""

    name: str
    field: str
    kind: Kind
    default: object
    help: str
    secret: bool = False
    shown: str = ""
    """Markdown for the default column when the value alone would not say it."""
    note: str = ""
    """Markdown after the shown default, such as ``(off)``."""
    default_factory: Callable[[], object] | None = None
    """Computes the default when unset, at each read (the per-user data directory)."""
    standard: bool = False
    """A standard variable of another project's (OpenTelemetry's ``OTEL_*``), which its
    library reads too; every other setting is named ``CITADEL_*``."""

    def __post_init__(self) -> None:
        prefixed = self.name.startswith("CITADEL_") != self.standard
        if not prefixed or "|" in self.help + self.shown + self.note:
            raise ValueError(f"malformed setting {self.name}")
        if self.secret and not (isinstance(self.kind, Secret) and not self.default):
            raise ValueError(f"{self.name}: a secret is a Secret kind with an empty default")

    def read(self, env: Mapping[str, str]) -> object:
        """This setting's value in ``env``: its default when unset (or, for most, empty)."""
        raw = env.get(self.name)
        value = None if raw is None else self.kind.parse(self.name, raw)
        if value is not None:
            return value
        return self.default if self.default_factory is None else self.default_factory()

    @property
    def group(self) -> str:
        return self.field.rpartition(".")[0]

    @property
    def attribute(self) -> str:
        return self.field.rpartition(".")[2]

    def default_markdown(self) -> str:
        if self.shown:
            text = self.shown
        elif self.secret:
            text = "—"
        else:
            shown = self.kind.show(self.default)
            text = shown if shown == "—" else f"`{shown}`"
        note = self.note or (size(self.default) if _counts_bytes(self.kind) else "")
        return f"{text} {note}" if note else text


def _counts_bytes(kind: Kind) -> bool:
    return isinstance(kind, Integer) and kind.bytes
