"""Every setting, declared once: its variable, where it lands, kind, default and meaning.

``citadel.config`` builds ``Settings`` (and its defaults) from this table; the
README's table is ``markdown_table()`` (``scripts/settings_table.py`` writes it, a
test compares); CLI help asks ``cli_default``. A default a lower layer owns
(``Limits``, ``FusionPolicy``, the HNSW threshold) is read from there.

``field`` is where the value lands: an attribute of ``Settings``, or
``group.attribute`` for ``limits``, ``fusion``, ``llm``, ``http`` and ``render``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from citadel.adapters.pages.original_cache import DEFAULT_MAX_BYTES as ORIGINALS_CACHE_BYTES
from citadel.adapters.parsers import DEFAULT_MAX_PAGES
from citadel.adapters.storage.search_defaults import DEFAULT_MAX_TERM_SHARE
from citadel.app import answer_cache, circuit
from citadel.app.ingest.service import DEFAULT_RETAIN_VERSIONS
from citadel.domain.limits import Limits
from citadel.domain.secrets import SecretStr
from citadel.setting_kinds import (
    Addresses,
    Choice,
    DatabaseLocation,
    Directory,
    Integer,
    Number,
    OptionalFile,
    Secret,
    Setting,
    Text,
    ZeroOrOne,
)
from citadel.settings_answer import ANSWERABILITY_SETTINGS, SUPPORT_SETTINGS
from citadel.settings_render import RENDER_SETTINGS
from citadel.settings_search import SEARCH_SETTINGS

GENERATORS = ("extractive", "openai")
EMBEDDERS = ("minilm", "minilm-float", "hashing", "none")
RELEVANCE_SCORERS = ("model", "cross-encoder", "lexical", "off")
COOKIE_SECURITY = ("auto", "always")
_LIMITS = Limits()
_MIB = 1024 * 1024

SETTINGS: tuple[Setting, ...] = (
    Setting("CITADEL_HOME", "home", Directory(), Path(".citadel"), "data directory"),
    Setting(
        "CITADEL_DB",
        "db",
        DatabaseLocation(),
        "",
        "SQLite database path, or a `postgresql://` URL (PostgreSQL with pgvector, which"
        " several servers may share: docs/postgres.md; deploying several servers,"
        " `citadel db migrate --to` from SQLite and `scripts/pg-dev`: docs/deployment.md)",
        shown="`$CITADEL_HOME/citadel.db`",
    ),
    Setting(
        "CITADEL_GENERATOR",
        "generator",
        Choice(GENERATORS),
        "extractive",
        "answer generator: `extractive` or `openai`",
    ),
    *SUPPORT_SETTINGS,
    *ANSWERABILITY_SETTINGS,
    Setting(
        "CITADEL_RELEVANCE",
        "relevance",
        Choice(RELEVANCE_SCORERS),
        "model",
        "the question-passage relevance scorer: `model` (the packaged cross-encoder and the"
        " lexical scorer, their geometric mean; when the model cannot load, `lexical` with a"
        " warning), `cross-encoder` (the model alone), `lexical` (the share of the question's"
        " terms a text holds, no model) or `off` (docs/relevance.md)",
    ),
    Setting(
        "CITADEL_LLM_BASE_URL",
        "llm.base_url",
        Text(),
        "",
        "the OpenAI-compatible provider's base URL (needed for `openai`)",
    ),
    Setting(
        "CITADEL_LLM_MODEL", "llm.model", Text(), "", "the provider's model (needed for `openai`)"
    ),
    Setting(
        "CITADEL_LLM_API_KEY",
        "llm.api_key",
        Secret(min_bytes=0, strip=False),
        SecretStr(""),
        "its key (never logged or shown)",
        secret=True,
    ),
    Setting(
        "CITADEL_LLM_API_KEY_FILE",
        "llm.api_key_file",
        Text(),
        "",
        "a file holding the key instead (set one of the two, not both)",
    ),
    Setting(
        "CITADEL_LLM_CA_FILE",
        "llm.ca_file",
        OptionalFile(),
        None,
        "a private CA (PEM file) to check the provider's certificate with, instead of the system's",
    ),
    Setting("CITADEL_TENANT", "tenant", Text(strip=False), "default", "tenant the CLI acts in"),
    Setting(
        "CITADEL_GENERATOR_DEADLINE_S",
        "limits.generator_deadline_s",
        Number(),
        _LIMITS.generator_deadline_s,
        "the generator's own deadline; past it the answer degrades",
    ),
    Setting(
        "CITADEL_MAX_CONCURRENT_GENERATIONS",
        "limits.max_concurrent_generations",
        Integer(),
        _LIMITS.max_concurrent_generations,
        "bulkhead size; when full, answers degrade at once",
    ),
    Setting(
        "CITADEL_MAX_EVIDENCE",
        "limits.max_evidence",
        Integer(),
        _LIMITS.max_evidence,
        "passages the generator may see (fewer suits small local models)",
    ),
    Setting(
        "CITADEL_MAX_OUTPUT_TOKENS",
        "limits.max_output_tokens",
        Integer(),
        _LIMITS.max_output_tokens,
        "`max_tokens` asked of the provider",
    ),
    Setting(
        "CITADEL_CIRCUIT_FAILURES",
        "circuit_failures",
        Integer(),
        circuit.DEFAULT_THRESHOLD,
        "consecutive provider failures that open the generator's circuit: calls to it"
        " stop (`/readyz` reports the state)",
    ),
    Setting(
        "CITADEL_CIRCUIT_COOLDOWN_S",
        "circuit_cooldown_s",
        Number(),
        circuit.DEFAULT_COOLDOWN_S,
        "how long an open circuit stops calls before trying the provider again",
    ),
    Setting(
        "CITADEL_ANSWER_REPAIRS",
        "limits.max_repairs",
        ZeroOrOne(),
        _LIMITS.max_repairs,
        "regenerations after a refused candidate: `0` or `1`",
    ),
    Setting(
        "CITADEL_LINK_ALLOWED_HOSTS",
        "link_allowed_hosts",
        Text(),
        "",
        "hosts a canonical URL may point at, exact names or `*.suffix`, comma-separated:"
        " `docs.example.org,*.python.org`",
        note="(no canonical links)",
    ),
    Setting(
        "CITADEL_LINK_SECRET",
        "link_secret",
        Secret(),
        SecretStr(""),
        "signs viewer links (at least 32 bytes)",
        secret=True,
        shown="a random key in `$CITADEL_HOME/viewer.key`",
    ),
    Setting(
        "CITADEL_ANSWER_CACHE_SIZE",
        "answer_cache_size",
        Integer(minimum=0),
        answer_cache.DEFAULT_CAPACITY,
        "validated answers kept in memory (`0` = off)",
    ),
    Setting(
        "CITADEL_ANSWER_CACHE_TTL_S",
        "answer_cache_ttl_s",
        Number(),
        answer_cache.DEFAULT_TTL_S,
        "how long a validated answer stays in the cache",
    ),
    Setting(
        "CITADEL_MAX_FILE_BYTES",
        "max_file_bytes",
        Integer(bytes=True),
        512 * _MIB,
        "larger files are refused",
    ),
    Setting(
        "CITADEL_MAX_PAGES",
        "max_pages",
        Integer(),
        DEFAULT_MAX_PAGES,
        "PDFs with more pages, or HTML folder books with more files, are refused",
    ),
    Setting(
        "CITADEL_RETAIN_VERSIONS",
        "retain_versions",
        Integer(),
        DEFAULT_RETAIN_VERSIONS,
        "versions per source that keep their text",
    ),
    Setting(
        "CITADEL_ORIGINALS_CACHE_BYTES",
        "originals_cache_bytes",
        Integer(bytes=True),
        ORIGINALS_CACHE_BYTES,
        "on PostgreSQL: the bound of this server's cache of kept PDF originals"
        " (`$CITADEL_HOME/originals-cache`, least recently used go first;"
        " docs/deployment.md)",
    ),
    Setting(
        "CITADEL_EMBEDDER",
        "embedder",
        Choice(EMBEDDERS),
        "minilm",
        "`minilm` (int8 arithmetic, `all-MiniLM-L6-v2-w8a8-win`), `minilm-float` (the float"
        " graph, `all-MiniLM-L6-v2-int8-win`: other vectors; `-win`: long texts are read in"
        " 256-piece windows, libraries built before windowing need `citadel reindex`;"
        " int8 is exact and the same on every CPU, but only CPUs with VNNI or AMX run it"
        " fast), `hashing` (a deterministic test fake) or `none` (lexical only); after a"
        " change, run `citadel reindex`",
    ),
    Setting(
        "CITADEL_EMBEDDER_THREADS",
        "embedder_threads",
        Integer(),
        None,
        "threads for embedding: one session on that many threads for queries, and that many"
        " single-threaded sessions side by side for bulk ingestion",
        shown="`2` (`1` on one core)",
    ),
    *SEARCH_SETTINGS,
    Setting(
        "CITADEL_HTTP_RATE_LIMIT",
        "http.rate_per_minute",
        Integer(),
        120,
        "requests per user per minute (a token bucket, bursts up to the same number; 429 past it)",
    ),
    Setting(
        "CITADEL_HTTP_COOKIE_SECURE",
        "http.cookie_secure",
        Choice(COOKIE_SECURITY, empty_is_default=True),
        "auto",
        "`auto`: cookies `Secure` except over plain http on loopback (local development);"
        " `always`: `Secure` everywhere",
    ),
    Setting(
        "CITADEL_HTTP_SESSION_SECRET",
        "http.session_secret",
        Secret(),
        SecretStr(""),
        "signs session cookies (at least 32 bytes; set it to keep sessions across restarts)",
        secret=True,
        shown="a random key per process",
    ),
    Setting(
        "CITADEL_HTTP_SESSION_TTL_S",
        "http.session_ttl_s",
        Integer(),
        8 * 3600,
        "how long a browser session lasts",
    ),
    Setting(
        "CITADEL_HTTP_DEADLINE_S",
        "http.deadline_s",
        Number(),
        60.0,
        "each answer request's own deadline, the generator's inside it (504 past it)",
    ),
    Setting(
        "CITADEL_HTTP_MAX_JSON_BYTES",
        "http.max_json_bytes",
        Integer(bytes=True),
        _MIB,
        "the largest JSON body under `/v1`: 413 as soon as `Content-Length` says more or more"
        " bytes arrive (chunked bodies too); read only after the token is accepted",
    ),
    Setting(
        "CITADEL_HTTP_TRUSTED_PROXIES",
        "http.trusted_proxies",
        Addresses(),
        (),
        "comma-separated addresses or networks (`10.0.0.1,10.1.0.0/16`) of reverse proxies"
        " whose `X-Forwarded-For`/`X-Forwarded-Proto` are believed (client address for rate"
        " limits, https for cookies); from anyone else they are ignored",
        note="(trust none)",
    ),
    Setting(
        "CITADEL_MAX_TERM_SHARE",
        "max_term_share",
        Number(),
        DEFAULT_MAX_TERM_SHARE,
        "drop query terms found in more than this share of chunks (faster, slightly worse;"
        " `docs/benchmarks.md`)",
        note="(off)",
    ),
    *RENDER_SETTINGS,
    Setting(
        "CITADEL_OTEL_ENDPOINT", "otel_endpoint", Text(), "", "an OTLP/HTTP collector for traces"
    ),
)

_BY_NAME = {setting.name: setting for setting in SETTINGS}
_BY_FIELD = {setting.field: setting for setting in SETTINGS}
GROUPS = ("", "limits", "fusion", "llm", "http", "render")
if len(_BY_NAME) != len(SETTINGS) or len(_BY_FIELD) != len(SETTINGS):
    raise ValueError("a variable or a field is declared twice")
if not {s.group for s in SETTINGS} <= set(GROUPS):
    raise ValueError(f"a setting lands outside the groups {GROUPS}")


NOT_SETTINGS = frozenset(
    {
        "CITADEL_TEST_PG_URL",
        "CITADEL_PG_DIR",
        "CITADEL_PG_PORT",
        "CITADEL_PG_DATABASE",
        "CITADEL_LLM_VENV",
        "CITADEL_LLM_PORT",
    }
)
"""Variables of citadel's prefix that its test suite and ``scripts/`` read, never citadel."""


def unknown_variables(env: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The ``CITADEL_*`` variables of ``env`` that are no setting (a typo, or a name from
    stale docs: setting one changes nothing), each with the setting it most resembles."""
    names = [s.name for s in SETTINGS]
    return [
        (name, next(iter(difflib.get_close_matches(name, names, n=1, cutoff=0.6)), None))
        for name in sorted(env)
        if name.startswith("CITADEL_") and name not in _BY_NAME and name not in NOT_SETTINGS
    ]


def setting(name: str) -> Setting:
    """The setting read from the environment variable ``name``."""
    return _BY_NAME[name]


def default_of(field: str) -> Any:  # Any: each dataclass field annotates its own type
    """The declared default of the setting landing in ``field``."""
    return _BY_FIELD[field].default


def cli_default(name: str) -> str:
    """How CLI help names a setting's default: ``$CITADEL_HOME or ./.citadel``."""
    shown = setting(name).default_markdown().replace("`", "")
    return f"${name} or {shown}"


def markdown_table() -> str:
    """The README's configuration table, one row per variable."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.name}` | {s.default_markdown()} | {s.help} |" for s in SETTINGS]
    return "\n".join(rows) + "\n"


TABLE_BEGIN = "<!-- settings table: written by scripts/settings_table.py, do not edit -->\n"
TABLE_END = "<!-- end of settings table -->\n"


def table_in(text: str) -> str:
    """The settings table between the markers of ``text`` (the README)."""
    start = text.index(TABLE_BEGIN) + len(TABLE_BEGIN)
    return text[start : text.index(TABLE_END, start)]


def with_table(text: str) -> str:
    """``text`` with the table between its markers written afresh."""
    start = text.index(TABLE_BEGIN) + len(TABLE_BEGIN)
    return text[:start] + markdown_table() + text[text.index(TABLE_END, start) :]
