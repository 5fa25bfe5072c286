"""Settings from the environment, and the one settings table they are declared in."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from citadel import setting_choices
from citadel.app import answerability
from citadel.bootstrap.families import CHOICES, choices_module
from citadel.config import (
    ConfigError,
    HttpSettings,
    LlmSettings,
    OidcSettings,
    RenderSettings,
    Settings,
)
from citadel.domain.fusion import FusionPolicy
from citadel.domain.limits import Limits
from citadel.entrypoints.cli import app
from citadel.setting_kinds import Choice, Secret, Setting
from citadel.settings_table import SETTINGS, cli_default, markdown_table, setting, table_in


def test_the_database_defaults_to_the_home_and_takes_a_sqlite_path() -> None:
    assert Settings.from_env({"CITADEL_HOME": "h"}).db_path == Path("h") / "citadel.db"
    assert Settings.from_env({"CITADEL_DB": " lib/x.db "}).db_path == Path("lib/x.db")


@pytest.mark.parametrize("url", ["sqlite:///x.db", "mysql://u@localhost/citadel"])
def test_a_database_url_other_than_postgresql_is_refused_not_taken_for_a_path(url: str) -> None:
    scheme = url.split("://", maxsplit=1)[0]
    with pytest.raises(ConfigError, match=f"CITADEL_DB: {scheme}:// databases are not supported"):
        Settings.from_env({"CITADEL_DB": url})


@pytest.mark.parametrize(
    "url", ["postgresql://u@localhost/citadel", "postgres://db/x", "PostgreSQL://u@/x?host=/s"]
)
def test_a_postgresql_url_names_the_database(url: str) -> None:
    assert Settings.from_env({"CITADEL_DB": f" {url} "}).postgres_url == url
    assert Settings.from_env({"CITADEL_DB": "lib/x.db"}).postgres_url is None
    assert Settings.from_env({}).postgres_url is None


def test_a_postgresql_url_is_shown_without_its_password() -> None:
    shown = setting("CITADEL_DB").kind.show("postgresql://citadel:s3cret@db.example:5432/lib")
    assert "s3cret" not in shown
    assert "citadel:***@db.example:5432/lib" in shown


def test_the_cli_refuses_a_database_url_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    env = {"CITADEL_DB": "mysql://u@localhost/citadel", "CITADEL_HOME": str(tmp_path / "h")}
    outcome = CliRunner().invoke(app, ["search", "anything"], env=env)
    assert outcome.exit_code == 2
    assert "mysql:// databases are not supported" in outcome.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["minilm", "minilm-float", "hashing", "none", " MiniLM "])
def test_the_embedders_to_choose_from(name: str) -> None:
    assert Settings.from_env({"CITADEL_EMBEDDER": name}).embedder == name.strip().lower()


def test_an_unknown_embedder_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="minilm, minilm-float, hashing, none"):
        Settings.from_env({"CITADEL_EMBEDDER": "bge"})


def test_the_json_body_cap_defaults_to_one_mebibyte_and_is_configurable() -> None:
    assert Settings.from_env({}).http.max_json_bytes == 1024 * 1024
    assert Settings.from_env({"CITADEL_HTTP_MAX_JSON_BYTES": "4096"}).http.max_json_bytes == 4096
    for bad in ("0", "-1", "1MB"):
        with pytest.raises(ConfigError, match="CITADEL_HTTP_MAX_JSON_BYTES"):
            Settings.from_env({"CITADEL_HTTP_MAX_JSON_BYTES": bad})


def test_the_answerability_threshold_is_a_probability_and_the_passages_a_count() -> None:
    default = Settings.from_env({})  # unset: the scorer's own threshold
    assert (default.answerability_threshold, default.answerability_passages) == (None, 8)
    chosen = Settings.from_env(
        {"CITADEL_ANSWERABILITY_THRESHOLD": "0", "CITADEL_ANSWERABILITY_PASSAGES": "3"}
    )
    assert (chosen.answerability_threshold, chosen.answerability_passages) == (0.0, 3)
    assert Settings.from_env({"CITADEL_ANSWERABILITY_THRESHOLD": "1"}).answerability_threshold == 1
    for bad in ("1.01", "-0.1", "nan", "half"):
        with pytest.raises(ConfigError, match="CITADEL_ANSWERABILITY_THRESHOLD"):
            Settings.from_env({"CITADEL_ANSWERABILITY_THRESHOLD": bad})
    for bad in ("0", "65", "two"):
        with pytest.raises(ConfigError, match="CITADEL_ANSWERABILITY_PASSAGES"):
            Settings.from_env({"CITADEL_ANSWERABILITY_PASSAGES": bad})


def test_trusted_proxies_default_to_none_and_take_addresses_and_networks() -> None:
    assert Settings.from_env({}).http.trusted_proxies == ()
    assert Settings.from_env({"CITADEL_HTTP_TRUSTED_PROXIES": " "}).http.trusted_proxies == ()
    env = {"CITADEL_HTTP_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8,,::1,127.0.0.1/32"}
    assert Settings.from_env(env).http.trusted_proxies == ("127.0.0.1", "10.0.0.0/8", "::1")


@pytest.mark.parametrize("value", ["*", "proxy.internal", "10.0.0.1:8080", "300.1.1.1"])
def test_trusted_proxies_are_addresses_never_wildcards_or_names(value: str) -> None:
    with pytest.raises(ConfigError, match="CITADEL_HTTP_TRUSTED_PROXIES"):
        Settings.from_env({"CITADEL_HTTP_TRUSTED_PROXIES": value})


# The settings table: every variable declared once, and everything derived from it.

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_configuration_table_is_the_rendered_settings_table() -> None:
    written = table_in(README.read_text(encoding="utf-8"))
    assert written == markdown_table(), (
        "README.md's configuration table differs from src/citadel/settings_table.py;"
        " run `.venv/bin/python scripts/settings_table.py --write`"
    )


FAMILY_SETTINGS = {
    "CITADEL_EMBEDDER": "EMBEDDERS",
    "CITADEL_GENERATOR": "GENERATORS",
    "CITADEL_SUPPORT_CHECKER": "SUPPORT_CHECKERS",
    "CITADEL_RELEVANCE": "RELEVANCE_SCORERS",
}


def test_the_model_families_names_are_written_from_the_composition_roots_tables() -> None:
    assert Path(setting_choices.__file__).read_text(encoding="utf-8") == choices_module(), (
        "src/citadel/setting_choices.py differs from the tables in citadel.bootstrap;"
        " run `.venv/bin/python scripts/settings_table.py --write`"
    )
    assert set(FAMILY_SETTINGS.values()) == set(CHOICES)


@pytest.mark.parametrize("variable", sorted(FAMILY_SETTINGS))
def test_a_model_familys_setting_takes_its_tables_names_and_defaults_to_one(variable: str) -> None:
    declared = setting(variable)
    table = CHOICES[FAMILY_SETTINGS[variable]]
    assert isinstance(declared.kind, Choice)
    assert declared.kind.choices == tuple(table)
    assert declared.default in table


class _Recording(dict[str, str]):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def get(self, key: str, default: object = None) -> Any:
        self.asked.append(key)
        return super().get(key, default)


def test_from_env_reads_the_variables_of_the_table_and_no_others() -> None:
    env = _Recording()
    Settings.from_env(env)
    assert env.asked == [s.name for s in SETTINGS]


def test_the_dataclass_defaults_are_the_tables() -> None:
    # repr: SecretStr compares by identity; its repr says whether it is empty.
    assert repr(Settings()) == repr(Settings.from_env({}))
    for s in SETTINGS:
        if s.field in ("llm.api_key_file", "support_judge_api_key_file"):
            continue  # read into the key beside it
        holder: object = Settings()
        for part in s.field.split("."):
            holder = getattr(holder, part)
        assert repr(holder) == repr(s.read({})), s.name  # a computed default: its value now


def test_every_field_has_its_variable() -> None:
    declared = {s.field for s in SETTINGS}
    nested = {"limits", "fusion", "llm", "http", "oidc", "render"}
    top = {f.name for f in fields(Settings)} - nested
    assert top <= declared
    assert {f"http.{f.name}" for f in fields(HttpSettings)} <= declared
    assert {f"llm.{f.name}" for f in fields(LlmSettings)} <= declared
    assert {f"render.{f.name}" for f in fields(RenderSettings)} <= declared
    assert {f"oidc.{f.name}" for f in fields(OidcSettings)} <= declared


def test_half_a_provider_and_a_plain_http_issuer_are_refused_at_start() -> None:
    with pytest.raises(ConfigError, match="both CITADEL_OIDC_ISSUER and CITADEL_OIDC_CLIENT_ID"):
        Settings.from_env({"CITADEL_OIDC_CLIENT_ID": "citadel"})
    with pytest.raises(ConfigError, match="https"):
        Settings.from_env(
            {"CITADEL_OIDC_ISSUER": "http://idp.example", "CITADEL_OIDC_CLIENT_ID": "c"}
        )
    local = Settings.from_env(
        {"CITADEL_OIDC_ISSUER": "http://127.0.0.1:9400/", "CITADEL_OIDC_CLIENT_ID": "c"}
    )
    assert local.oidc.enabled and local.oidc.issuer == "http://127.0.0.1:9400"
    assert not Settings.from_env({}).oidc.enabled


def test_defaults_owned_by_a_lower_layer_are_not_written_again() -> None:
    assert setting("CITADEL_MAX_EVIDENCE").default == Limits().max_evidence
    assert setting("CITADEL_GENERATOR_DEADLINE_S").default == Limits().generator_deadline_s
    assert setting("CITADEL_ANSWER_REPAIRS").default == Limits().max_repairs
    assert setting("CITADEL_FUSION_RRF_K").default == FusionPolicy().rrf_k
    assert setting("CITADEL_FUSION").default == FusionPolicy().method
    assert setting("CITADEL_ANSWERABILITY_THRESHOLD").default is None  # the scorer's own
    assert setting("CITADEL_ANSWERABILITY_PASSAGES").default == answerability.DEFAULT_PASSAGES


@pytest.mark.parametrize("s", [s for s in SETTINGS if s.secret], ids=lambda s: s.name)
def test_a_secret_never_shows_its_value(s: Setting) -> None:
    value = "a-secret-that-is-at-least-32-bytes-long"
    settings = Settings.from_env({s.name: value})
    assert value not in repr(settings)
    assert value not in str(settings)
    assert isinstance(s.kind, Secret)
    assert value not in s.default_markdown()
    row = next(line for line in markdown_table().splitlines() if f"`{s.name}`" in line)
    assert value not in row


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("CITADEL_MAX_FILE_BYTES", "big", "CITADEL_MAX_FILE_BYTES must be a whole number"),
        ("CITADEL_MAX_PAGES", "0", "CITADEL_MAX_PAGES must be from 1 to 1000000000; 0 is not"),
        ("CITADEL_MAX_PAGES", "1" + "0" * 5000, "CITADEL_MAX_PAGES must be a whole number"),
        ("CITADEL_ANSWER_CACHE_SIZE", "-1", "CITADEL_ANSWER_CACHE_SIZE must be from 0 to"),
        ("CITADEL_ANSWER_CACHE_TTL_S", "0", "CITADEL_ANSWER_CACHE_TTL_S must be positive"),
        # From an attack: infinity passed "positive" and switched a bound off, and a
        # 20-digit session TTL was accepted, then overflowed a sign-out's date (500).
        ("CITADEL_RENDER_TIMEOUT_S", "1e999", "CITADEL_RENDER_TIMEOUT_S must be positive"),
        ("CITADEL_GENERATOR_DEADLINE_S", "inf", "CITADEL_GENERATOR_DEADLINE_S must be"),
        ("CITADEL_HTTP_SESSION_TTL_S", "9" * 20, "CITADEL_HTTP_SESSION_TTL_S must be from 1 to"),
        ("CITADEL_MAX_EVIDENCE", "1" + "0" * 20, "CITADEL_MAX_EVIDENCE must be from 1 to"),
        ("CITADEL_FUSION_DENSE_WEIGHT", "x", "CITADEL_FUSION_DENSE_WEIGHT must be a number"),
        ("CITADEL_GENERATOR", "gpt", "CITADEL_GENERATOR='gpt' is not one of: extractive, openai"),
        ("CITADEL_FUSION", "max", "CITADEL_FUSION='max' is not one of: weighted, rrf"),
        ("CITADEL_ANSWER_REPAIRS", " 2 ", "CITADEL_ANSWER_REPAIRS must be 0 or 1, got '2'"),
        ("CITADEL_BM25_WEIGHTS", "1,2", "CITADEL_BM25_WEIGHTS must be three non-negative"),
        ("CITADEL_LINK_SECRET", "short", "CITADEL_LINK_SECRET must be at least 32 bytes"),
        ("CITADEL_HTTP_COOKIE_SECURE", "never", "CITADEL_HTTP_COOKIE_SECURE='never' is not"),
    ],
)
def test_a_malformed_value_names_its_variable_and_what_it_expected(
    name: str, raw: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({name: raw})
    assert str(raised.value).startswith(expected)


def test_empty_values_keep_their_meaning() -> None:
    blank = {
        "CITADEL_MAX_PAGES": "",
        "CITADEL_EMBEDDER_THREADS": "",
        "CITADEL_HTTP_COOKIE_SECURE": " ",
        "CITADEL_BM25_WEIGHTS": " ",
        "CITADEL_ANSWER_REPAIRS": "",
        "CITADEL_LLM_CA_FILE": " ",
    }
    assert repr(Settings.from_env(blank)) == repr(Settings())
    assert Settings.from_env({"CITADEL_TENANT": ""}).tenant == ""  # taken as written
    with pytest.raises(ConfigError, match="CITADEL_GENERATOR=''"):
        Settings.from_env({"CITADEL_GENERATOR": ""})


def test_the_cli_names_the_default_home_from_the_table() -> None:
    assert cli_default("CITADEL_HOME").startswith("$CITADEL_HOME or the per-user data directory")
    assert cli_default("CITADEL_DB") == "$CITADEL_DB or $CITADEL_HOME/citadel.db"
    for command in ("search", "serve", "mcp", "demo"):
        outcome = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
        shown = " ".join(outcome.stdout.split()).replace("- ", "-")  # wrapped at 80, at hyphens too
        assert "$CITADEL_HOME or the per-user data directory" in shown, command


def test_byte_counts_are_shown_with_their_size() -> None:
    assert setting("CITADEL_MAX_FILE_BYTES").default_markdown() == "`536870912` (512 MiB)"
    assert setting("CITADEL_HTTP_MAX_JSON_BYTES").default_markdown() == "`1048576` (1 MiB)"
