"""Every setting, declared once: its variable, where it lands, kind, default and meaning.

``citadel.config`` builds ``Settings`` (and its defaults) from this table; the
README's table is ``markdown_table()`` (``scripts/settings_table.py`` writes it, a
test compares); CLI help asks ``cli_default``. A default a lower layer owns
(``Limits``, ``FusionPolicy``, the HNSW threshold) is read from there. Some use
cases' settings are in their own modules (``settings_answer``, ``settings_generation``,
``settings_http``, ``settings_render``, ``settings_search``, ``settings_tracing``), spliced
in at their places. A few are OpenTelemetry's standard variables (``standard``), which
its SDK reads too; the README lists them, and the ones only the SDK reads, after citadel's.

A model family's choices (embedder, generator, support checker, relevance scorer) are
its composition-root table's keys, read from ``citadel.setting_choices``.

``field`` is where the value lands: an attribute of ``Settings``, or
``group.attribute`` for ``limits``, ``fusion``, ``llm``, ``http`` and ``render``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from citadel.adapters.pages.original_cache import DEFAULT_MAX_BYTES as ORIGINALS_CACHE_BYTES
from citadel.adapters.parsers import DEFAULT_MAX_PAGES
from citadel.adapters.storage.search_defaults import DEFAULT_MAX_TERM_SHARE
from citadel.adapters.user_dirs import default_home
from citadel.app import answer_cache
from citadel.app.ingest.service import DEFAULT_RETAIN_VERSIONS
from citadel.domain.secrets import SecretStr
from citadel.setting_choices import GENERATORS, RELEVANCE_SCORERS
from citadel.setting_kinds import (
    Choice,
    DatabaseLocation,
    Directory,
    Integer,
    Number,
    PublicUrl,
    Secret,
    Setting,
    Text,
)
from citadel.settings_answer import ANSWERABILITY_SETTINGS, SUPPORT_SETTINGS
from citadel.settings_generation import GENERATION_SETTINGS, LLM_SETTINGS
from citadel.settings_http import HTTP_SETTINGS
from citadel.settings_oidc import OIDC_SETTINGS
from citadel.settings_render import RENDER_SETTINGS
from citadel.settings_search import SEARCH_SETTINGS
from citadel.settings_tracing import RESOURCE_VARIABLES, TRACING_SETTINGS

_MIB = 1024 * 1024

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "CITADEL_HOME",
        "home",
        Directory(),
        None,
        "data directory: the library, its keys and kept originals; one per user by default,"
        " whatever the working directory (`citadel demo`, every command, `serve` and `mcp`)",
        shown="the per-user data directory",
        note="(Linux: `$XDG_DATA_HOME/citadel`, else `~/.local/share/citadel`;"
        " macOS: `~/Library/Application Support/citadel`; Windows: `%LOCALAPPDATA%\\citadel`)",
        default_factory=default_home,
    ),
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
    *LLM_SETTINGS,
    Setting("CITADEL_TENANT", "tenant", Text(strip=False), "default", "tenant the CLI acts in"),
    *GENERATION_SETTINGS,
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
        "CITADEL_PUBLIC_URL",
        "public_url",
        PublicUrl(),
        "",
        "where browsers reach `citadel serve` (`https://citadel.example.org`, a path prefix"
        " allowed): the CLI and MCP print viewer links under it, else as relative routes",
        note="(relative links)",
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
        "PDFs with more pages, or HTML and Markdown folder books with more files, are refused",
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
    *SEARCH_SETTINGS,
    *HTTP_SETTINGS,
    *OIDC_SETTINGS,
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
    *TRACING_SETTINGS,
)

_BY_NAME = {setting.name: setting for setting in SETTINGS}
_BY_FIELD = {setting.field: setting for setting in SETTINGS}
GROUPS = ("", "limits", "fusion", "llm", "http", "oidc", "render")
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


def is_known_variable(name: str) -> bool:
    """Whether setting ``name`` changes what citadel does: a setting of the table, or one
    of the standard OpenTelemetry variables its tracing honours."""
    return name in _BY_NAME or name in dict(RESOURCE_VARIABLES)


def setting(name: str) -> Setting:
    """The setting read from the environment variable ``name``."""
    return _BY_NAME[name]


def default_of(field: str) -> Any:  # Any: each dataclass field annotates its own type
    """The declared default of the setting landing in ``field``."""
    return _BY_FIELD[field].default


def cli_default(name: str) -> str:
    """How CLI help names a setting's default: ``$CITADEL_HOME or ./.citadel``.

    A computed default is named with its value here: ``$CITADEL_HOME or the per-user
    data directory (/home/ada/.local/share/citadel)``.
    """
    declared = setting(name)
    if declared.default_factory is not None:
        return f"${name} or {declared.shown} ({declared.default_factory()})"
    shown = declared.default_markdown().replace("`", "")
    return f"${name} or {shown}"


def markdown_table() -> str:
    """The README's configuration table, one row per variable."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.name}` | {s.default_markdown()} | {_meaning(s)} |" for s in SETTINGS]
    rows += [
        f"| `{name}` | — | OpenTelemetry's, read by its SDK alone: {meaning} |"
        for name, meaning in RESOURCE_VARIABLES
    ]
    return "\n".join(rows) + "\n"


def _meaning(s: Setting) -> str:
    return f"OpenTelemetry's, read by its SDK too: {s.help}" if s.standard else s.help


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
